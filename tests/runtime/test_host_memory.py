"""Host memory: malloc_host / free_host and host_register / host_unregister (issue 2,
scope 4)."""
from __future__ import annotations

import ctypes
import mmap

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.errors import InvalidValueError, NpuError


def _host_view(ptr: int, n: int) -> np.ndarray:
    return np.frombuffer((ctypes.c_ubyte * n).from_address(ptr), np.uint8)


def _page_aligned(nbytes: int) -> tuple[np.ndarray, int]:
    """A numpy buffer and a 4 KiB-aligned address inside it with `nbytes` after it."""
    raw = np.zeros(nbytes + 8192, np.uint8)
    addr = raw.ctypes.data
    aligned = (addr + 4095) // 4096 * 4096
    return raw, aligned


def test_malloc_host_returns_a_page_aligned_pointer(rt):
    ptr = rt.malloc_host(1000)
    assert ptr % mmap.PAGESIZE == 0
    assert 0 < ptr < 1 << 47  # a host address, not a device one


def test_malloc_host_memory_is_usable_from_the_host(rt):
    n = 3 * 4096 + 17
    ptr = rt.malloc_host(n)
    data = np.random.default_rng().integers(0, 256, n, dtype=np.uint8)
    _host_view(ptr, n)[:] = data
    assert np.array_equal(_host_view(ptr, n), data)


def test_malloc_host_memory_is_pinned(rt):
    ptr = rt.malloc_host(4096)
    attrs = rt.pointer_get_attributes(ptr)
    assert attrs["location"]["type"] == C.ACL_MEM_LOCATION_TYPE_HOST
    assert attrs["allocation"] == ptr and attrs["size"] == 4096


def test_free_host_releases_the_allocation(rt):
    ptr = rt.malloc_host(4096)
    rt.free_host(ptr)
    with pytest.raises(InvalidValueError):
        rt.free_host(ptr)  # a second free is refused, not a crash


@pytest.mark.parametrize("size", [0, -1])
def test_malloc_host_of_zero_or_negative_size_is_invalid(rt, size):
    with pytest.raises(InvalidValueError) as info:
        rt.malloc_host(size)
    assert info.value.code == C.ACL_ERROR_INVALID_PARAM


def test_free_host_of_a_device_pointer_is_invalid_param(rt):
    dev = rt.malloc(100)
    with pytest.raises(InvalidValueError, match="device address"):
        rt.free_host(dev)
    rt.free(dev)  # the device allocation is untouched


def test_free_host_of_an_interior_pointer_is_invalid_param(rt):
    ptr = rt.malloc_host(8192)
    with pytest.raises(InvalidValueError, match="inside"):
        rt.free_host(ptr + 64)
    rt.free_host(ptr)


def test_free_host_of_pageable_memory_is_invalid_param(rt):
    buf = np.zeros(64, np.uint8)
    with pytest.raises(InvalidValueError, match="malloc_host"):
        rt.free_host(buf.ctypes.data)


# ---------------------------------------------------------------- registration
def test_host_register_returns_a_device_side_alias(rt):
    raw, addr = _page_aligned(8192)
    alias = rt.host_register(addr, 8192)
    assert alias >= 1 << 47  # in device address space
    assert rt.host_get_device_pointer(addr) == alias
    assert rt.host_get_device_pointer(addr + 100) == alias + 100
    assert rt.pointer_get_attributes(addr)["location"]["type"] == C.ACL_MEM_LOCATION_TYPE_HOST
    rt.host_unregister(addr)
    del raw


def test_host_register_needs_a_4_kib_aligned_address(rt):
    raw, addr = _page_aligned(8192)
    with pytest.raises(InvalidValueError, match="4 KiB"):
        rt.host_register(addr + 64, 4096)
    del raw


def test_host_register_twice_is_already_registered(rt):
    raw, addr = _page_aligned(8192)
    rt.host_register(addr, 8192)
    with pytest.raises(NpuError) as info:
        rt.host_register(addr, 8192)
    assert info.value.code == C.ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED == 507910
    rt.host_unregister(addr)
    del raw


def test_host_register_of_an_overlapping_range_is_already_registered(rt):
    raw, addr = _page_aligned(3 * 4096)
    rt.host_register(addr + 4096, 4096)
    with pytest.raises(NpuError) as info:
        rt.host_register(addr, 3 * 4096)
    assert info.value.code == 507910
    rt.host_unregister(addr + 4096)
    del raw


def test_host_unregister_of_an_unregistered_address_is_not_registered(rt):
    raw, addr = _page_aligned(4096)
    with pytest.raises(NpuError) as info:
        rt.host_unregister(addr)
    assert info.value.code == C.ACL_ERROR_HOST_MEMORY_NOT_REGISTERED == 507911
    del raw


def test_host_unregister_twice_is_not_registered(rt):
    raw, addr = _page_aligned(4096)
    rt.host_register(addr, 4096)
    rt.host_unregister(addr)
    with pytest.raises(NpuError) as info:
        rt.host_unregister(addr)
    assert info.value.code == 507911
    del raw


def test_host_register_of_a_device_pointer_is_invalid_param(rt):
    dev = rt.malloc(8192)
    with pytest.raises(InvalidValueError, match="not a host address"):
        rt.host_register(dev, 4096)


def test_host_register_of_unmapped_memory_is_invalid_param(rt):
    with pytest.raises(InvalidValueError, match="not mapped"):
        rt.host_register(4096, 4096)  # the zero page region is never mapped


@pytest.mark.parametrize("size", [0, -4096])
def test_host_register_of_zero_or_negative_size_is_invalid(rt, size):
    raw, addr = _page_aligned(4096)
    with pytest.raises(InvalidValueError):
        rt.host_register(addr, size)
    del raw


def test_registered_memory_counts_as_pinned_for_async_copies(rt):
    raw, addr = _page_aligned(4096)
    rt.host_register(addr, 4096)
    s = rt.create_stream()
    dev = rt.malloc(4096)
    _host_view(addr, 4096)[:] = 42
    rt.memcpy_async(dev, 4096, addr, 4096, C.ACL_MEMCPY_HOST_TO_DEVICE, s)
    rt.synchronize_stream(s)
    out = np.zeros(4096, np.uint8)
    rt.memcpy(out.ctypes.data, 4096, dev, 4096, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert (out == 42).all()
    rt.host_unregister(addr)
    del raw


def test_the_registered_alias_cannot_be_used_for_memcpy(rt):
    raw, addr = _page_aligned(4096)
    alias = rt.host_register(addr, 4096)
    dev = rt.malloc(4096)
    with pytest.raises(InvalidValueError, match="alias"):
        rt.memcpy(dev, 4096, alias, 4096, C.ACL_MEMCPY_DEVICE_TO_DEVICE)
    rt.host_unregister(addr)
    del raw


def test_free_host_while_a_queued_copy_reads_it_keeps_the_memory_until_the_copy_ran(rt):
    gate = rt.create_event(C.ACL_EVENT_SYNC)  # never recorded yet: holds the copy back
    s = rt.create_stream()
    host = rt.malloc_host(1 << 20)
    _host_view(host, 1 << 20)[:] = 7
    dev = rt.malloc(1 << 20)
    rt.stream_wait_event(s, gate)
    rt.memcpy_async(dev, 1 << 20, host, 1 << 20, C.ACL_MEMCPY_HOST_TO_DEVICE, s)
    rt.free_host(host)  # the copy has not run: the mapping must survive it
    with pytest.raises(InvalidValueError):
        rt.free_host(host)  # but for the API the pointer is gone
    rt.record_event(gate, rt.create_stream())
    rt.synchronize_stream(s)
    out = np.zeros(1 << 20, np.uint8)
    rt.memcpy(out.ctypes.data, out.nbytes, dev, out.nbytes, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert (out == 7).all()
