"""The host-memory probes that keep garbage pointers from crashing the process
(runtime.address.host_readable / host_writable), with madvise(MADV_POPULATE_*) and with the
fallback for kernels older than 5.14."""
from __future__ import annotations

import ctypes
import mmap

import numpy as np
import pytest

from npurt.runtime import address

PAGE = mmap.PAGESIZE
_libc = ctypes.CDLL(None)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


@pytest.fixture(params=["madvise", "fallback"])
def probes(request, monkeypatch):
    if request.param == "madvise" and not address._populate_works:
        pytest.skip("this kernel has no MADV_POPULATE_READ (Linux < 5.14)")
    monkeypatch.setattr(address, "_populate_works", request.param == "madvise")
    return address


@pytest.fixture
def pages():
    """Three pages: read-write, read-only, PROT_NONE; and an unmapped fourth."""
    base = _libc.mmap(None, 4 * PAGE, 3, 0x22, -1, 0)
    _libc.mprotect(base + PAGE, PAGE, 1)
    _libc.mprotect(base + 2 * PAGE, PAGE, 0)
    _libc.munmap(base + 3 * PAGE, PAGE)
    yield base
    _libc.munmap(base, 3 * PAGE)


def test_ordinary_memory_is_readable_and_writable(probes):
    a = np.zeros(3 * PAGE, np.uint8)
    assert probes.host_readable(a.ctypes.data, a.nbytes) and probes.host_writable(a.ctypes.data, a.nbytes)


def test_read_only_memory_is_readable_but_not_writable(probes, pages):
    assert probes.host_readable(pages + PAGE, 100)
    assert not probes.host_writable(pages + PAGE, 100)


def test_a_range_running_into_read_only_memory_is_not_writable(probes, pages):
    assert not probes.host_writable(pages + PAGE - 8, 16)


def test_prot_none_memory_is_neither(probes, pages):
    assert not probes.host_readable(pages + 2 * PAGE, 1)
    assert not probes.host_writable(pages + 2 * PAGE, 1)


def test_unmapped_null_and_device_addresses_are_neither(probes, pages):
    for addr in (pages + 3 * PAGE, 0, 0x1000, address.VA_BASE + 64):
        assert not probes.host_readable(addr, 8) and not probes.host_writable(addr, 8)


def test_the_probe_checks_every_mapping_a_range_spans():
    if not address._populate_works:
        pytest.skip("the fallback checks the first and last page only")
    base = _libc.mmap(None, 3 * PAGE, 3, 0x22, -1, 0)
    try:
        _libc.mprotect(base + PAGE, PAGE, 1)  # read-only in the middle of a writable range
        assert not address.host_writable(base, 3 * PAGE)
        assert address.host_readable(base, 3 * PAGE)
    finally:
        _libc.munmap(base, 3 * PAGE)


@pytest.mark.parametrize("make", [lambda: np.arange(16, dtype=np.float32), lambda: np.zeros((4, 6))[:, ::2],
                                  lambda: np.zeros(0), lambda: np.frombuffer(b"abcd", np.uint8),
                                  lambda: np.arange(10)[::-1], lambda: np.zeros((3, 5)).T,
                                  lambda: np.array(["2026-12-04"], "datetime64[D]")],
                         ids=["contiguous", "strided", "empty", "read-only", "reversed", "transposed",
                              "no-buffer-protocol"])
@pytest.mark.parametrize("way", ["accelerator", "python"])
def test_host_address_is_numpys_data_pointer_for_any_array(make, way, monkeypatch):
    """In C (the accelerator's data_address: the buffer protocol for any array) or, without
    it, through ctypes for a writable C-contiguous array; numpy's interface otherwise."""
    if way == "python":
        monkeypatch.setattr(address, "_data_address", None)
    elif address._data_address is None:
        pytest.skip("no C accelerator here (NPURT_SPEEDUPS=0 or no compiler): the python case covers it")
    arr = make()
    assert address.host_address(arr) == arr.__array_interface__["data"][0]
