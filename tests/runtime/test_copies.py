"""Synchronous copies and sets: memcpy kinds (strict and inferred), dest_max / count,
bounds, memcpy2d, memset (issue 2, scope 5), plus the constraints of their async forms."""
from __future__ import annotations

import ctypes
import threading
import time

import numpy as np
import pytest

import npurt

from npurt.runtime import constants as C
from npurt.runtime import memops
from npurt.runtime.kernel import GM, kernel, launch
from npurt.runtime.errors import (AddressUnalignedError, FeatureNotSupportedError,
                                  InvalidValueError)

H2H, H2D, D2H, D2D, DEFAULT = (C.ACL_MEMCPY_HOST_TO_HOST, C.ACL_MEMCPY_HOST_TO_DEVICE,
                               C.ACL_MEMCPY_DEVICE_TO_HOST, C.ACL_MEMCPY_DEVICE_TO_DEVICE,
                               C.ACL_MEMCPY_DEFAULT)
MiB = 1 << 20


def _random(n: int) -> np.ndarray:
    return np.random.default_rng().integers(0, 256, n, dtype=np.uint8)


def _upload(rt, data: np.ndarray) -> int:
    ptr = rt.malloc(data.nbytes)
    rt.memcpy(ptr, data.nbytes, data.ctypes.data, data.nbytes, H2D)
    return ptr


def _download(rt, ptr: int, n: int) -> np.ndarray:
    out = np.empty(n, np.uint8)
    rt.memcpy(out.ctypes.data, n, ptr, n, D2H)
    return out


@pytest.fixture
def infer_rt(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_MEMCPY_KIND", "infer")
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    return fresh_runtime


# ---------------------------------------------------------------- the four directions
def test_memcpy_kind_constants_have_their_real_values():
    assert (H2H, H2D, D2H, D2D, DEFAULT) == (0, 1, 2, 3, 4)


def test_memcpy_host_to_host(rt):
    src, dst = _random(1000), np.zeros(1000, np.uint8)
    rt.memcpy(dst.ctypes.data, 1000, src.ctypes.data, 1000, H2H)
    assert np.array_equal(dst, src)


def test_memcpy_host_to_device_and_back(rt):
    data = _random(5000)
    assert np.array_equal(_download(rt, _upload(rt, data), 5000), data)


def test_memcpy_device_to_device(rt):
    data = _random(5000)
    a = _upload(rt, data)
    b = rt.malloc(5000)
    rt.memcpy(b, 5000, a, 5000, D2D)
    assert np.array_equal(_download(rt, b, 5000), data)


# ------------------------------------------- a synchronous copy and the writers in flight
# hicann/runtime's example/1_basic_features/memory/5_d2d_sync_memory_copy launches a kernel and
# at once copies its output: on hardware the kernel is done before the driver copy reads. The
# copy waits (bounded) for runnable writers of its source (memops.await_writers)
@kernel
def _fill(ctx, out: GM, n: np.int32, value: np.int32):
    ctx.gm(out, np.uint8, n, "w")[:] = value


@kernel
def _slow(ctx, other: GM):  # keeps what is queued behind it in flight; gates nothing
    time.sleep(0.05)


RELEASE: dict[int, threading.Event] = {}


@kernel
def _held(ctx, out: GM, key: np.int32):  # runs until the test releases it: endless for a copy
    RELEASE[int(key)].wait(120)


def _held_key() -> int:
    key = len(RELEASE)
    RELEASE[key] = threading.Event()
    return key


def _copy_returns(rt, *args) -> bool:
    """rt.memcpy(*args) in a thread of the caller's context; True if it returned (without
    an error) within 60 s."""
    ctx, done = rt.get_context(), []

    def copy():
        rt.set_context(ctx)
        rt.memcpy(*args)
        done.append(True)

    t = threading.Thread(target=copy, daemon=True)
    t.start()
    t.join(60)
    return done == [True]


@pytest.fixture
def patient(monkeypatch):
    """Bounds too long to reach in a test: a copy that waited for what it must not would hang."""
    monkeypatch.setattr(memops, "WRITER_STALL_S", 3600.0)
    monkeypatch.setattr(memops, "WRITER_CAP_S", 3600.0)


@pytest.mark.parametrize("kind", [D2D, D2H])
def test_a_synchronous_copy_waits_for_a_runnable_kernel_still_writing_its_source(rt, kind):
    src, other = rt.malloc(4096), rt.malloc(4096)
    rt.memset(src, 4096, 0, 4096)
    dst = rt.malloc(4096) if kind == D2D else rt.malloc_host(4096)
    s = rt.create_stream()
    launch(_slow, 1, (other,), s)
    launch(_fill, 1, (src, 4096, 7), s)
    rt.memcpy(dst, 4096, src, 4096, kind)
    got = _download(rt, dst, 4096) if kind == D2D else \
        np.ctypeslib.as_array((ctypes.c_uint8 * 4096).from_address(dst))
    assert (got == 7).all()
    rt.synchronize_stream(s)


def test_a_synchronous_copy_waits_for_a_queued_copy_into_its_source(rt):
    data = _random(4096)
    host = rt.malloc_host(4096)
    np.ctypeslib.as_array((ctypes.c_uint8 * 4096).from_address(host))[:] = data
    src, dst, other = rt.malloc(4096), rt.malloc(4096), rt.malloc(4096)
    s = rt.create_stream()
    launch(_slow, 1, (other,), s)
    rt.memcpy_async(src, 4096, host, 4096, H2D, s)
    rt.memcpy(dst, 4096, src, 4096, D2D)
    assert (_download(rt, dst, 4096) == data).all()


def test_a_synchronous_copy_does_not_wait_for_readers_of_its_source_nor_writers_of_its_destination(
        rt, patient):
    src, dst, spare, other = (rt.malloc(4096) for _ in range(4))
    rt.memset(src, 4096, 5, 4096)
    s, key = rt.create_stream(), _held_key()
    launch(_held, 1, (other, key), s)
    rt.memcpy_async(spare, 4096, src, 4096, D2D, s)  # reads the source
    rt.memset_async(dst, 4096, 9, 4096, s)           # writes the destination
    assert _copy_returns(rt, dst, 4096, src, 4096, D2D)
    RELEASE[key].set()
    rt.synchronize_stream(s)
    assert (_download(rt, dst, 4096) == 9).all()  # the queued set landed after the copy


@pytest.mark.parametrize("gate", ["host function", "event wait", "notify wait"])
def test_a_synchronous_copy_does_not_wait_for_a_writer_behind_a_gate(rt, patient, gate):
    src, dst = rt.malloc(4096), rt.malloc(4096)
    rt.memset(src, 4096, 0, 4096)
    s, other = rt.create_stream(), rt.create_stream()
    if gate == "host function":
        opened = threading.Event()
        rt.launch_host_func(s, opened.wait, 120)
        release = opened.set
    elif gate == "event wait":  # the record it waits for is queued behind a kernel still running
        key = _held_key()
        launch(_held, 1, (rt.malloc(64), key), other)
        ev = rt.create_event()
        rt.record_event(ev, other)
        rt.stream_wait_event(s, ev)
        release = RELEASE[key].set
    else:
        n = rt.create_notify()
        rt.wait_and_reset_notify(n, s, 0)
        release = lambda: rt.record_notify(n, other)  # noqa: E731
    launch(_fill, 1, (src, 4096, 7), s)
    assert _copy_returns(rt, dst, 4096, src, 4096, D2D)
    assert (_download(rt, dst, 4096) == 0).all()  # it read what was there: the program's race
    release()
    rt.synchronize_device()
    assert (_download(rt, src, 4096) == 7).all()


def test_an_endless_writer_does_not_hang_a_synchronous_copy(rt, monkeypatch):
    monkeypatch.setattr(memops, "WRITER_STALL_S", 0.2)
    src, dst = rt.malloc(4096), rt.malloc(4096)
    rt.memset(src, 4096, 3, 4096)
    s, key = rt.create_stream(), _held_key()
    launch(_held, 1, (src, key), s)  # running, and never done while the copy waits
    assert _copy_returns(rt, dst, 4096, src, 4096, D2D)
    RELEASE[key].set()
    rt.synchronize_stream(s)
    assert (_download(rt, dst, 4096) == 3).all()


def test_a_synchronous_copy_inside_a_host_function_does_not_wait_for_its_own_stream(rt, patient):
    src, dst = rt.malloc(4096), rt.malloc(4096)
    s = rt.create_stream()
    done, ctx = [], rt.get_context()

    def copy():
        rt.set_context(ctx)
        done.append(rt.memcpy(dst, 4096, src, 4096, D2D))

    rt.launch_host_func(s, copy)
    launch(_fill, 1, (src, 4096, 3), s)  # cannot run before the host function returns
    rt.synchronize_stream(s)
    assert done == [None] and (_download(rt, src, 4096) == 3).all()


@pytest.mark.parametrize("direction", ["H2H", "H2D", "D2H", "D2D"])
def test_memcpy_default_infers_the_direction(rt, direction):
    data = _random(3000)
    host_src = data
    dev_src = _upload(rt, data)
    host_dst = np.zeros(3000, np.uint8)
    dev_dst = rt.malloc(3000)
    src = host_src.ctypes.data if direction[0] == "H" else dev_src
    dst = host_dst.ctypes.data if direction[2] == "H" else dev_dst
    rt.memcpy(dst, 3000, src, 3000, DEFAULT)
    result = host_dst if direction[2] == "H" else _download(rt, dev_dst, 3000)
    assert np.array_equal(result, data)


def test_memcpy_at_offsets_inside_allocations(rt):
    data = _random(4096)
    ptr = _upload(rt, data)
    out = np.zeros(100, np.uint8)
    rt.memcpy(out.ctypes.data, 100, ptr + 3996, 100, D2H)  # ends exactly at the end
    assert np.array_equal(out, data[3996:])


def test_memcpy_of_zero_bytes_is_a_no_op(rt):
    ptr = rt.malloc(16)
    rt.memset(ptr, 16, 7, 16)
    buf = np.ones(16, np.uint8)
    rt.memcpy(ptr, 16, buf.ctypes.data, 0, H2D)
    assert (_download(rt, ptr, 16) == 7).all()


def test_memcpy_of_64_mib_is_exact(rt):
    n = 64 * MiB
    data = _random(n)
    dev = rt.malloc(n)
    rt.memcpy(dev, n, data.ctypes.data, n, H2D)
    dev2 = rt.malloc(n)
    rt.memcpy(dev2, n, dev, n, D2D)
    out = np.empty(n, np.uint8)
    rt.memcpy(out.ctypes.data, n, dev2, n, D2H)
    assert np.array_equal(out, data)


def test_memcpy_between_devices_needs_peer_access(rt):
    data = _random(256)
    a = _upload(rt, data)
    rt.set_device(1)
    b = rt.malloc(256)
    with pytest.raises(InvalidValueError, match="peer access"):
        rt.memcpy(b, 256, a, 256, D2D)
    rt.device_enable_peer_access(0, 0)  # current device 1 -> peer 0
    rt.memcpy(b, 256, a, 256, D2D)
    assert np.array_equal(_download(rt, b, 256), data)


# ---------------------------------------------------------------- strict kind checking
@pytest.fixture
def strict_rt(rt, monkeypatch):
    monkeypatch.setattr(rt.RUNTIME.settings, "memcpy_kind", "strict")
    return rt


def test_strict_mode_refuses_a_wrong_kind_naming_what_each_address_is(strict_rt):
    rt = strict_rt
    host = np.zeros(64, np.uint8)
    dev = rt.malloc(64)
    with pytest.raises(InvalidValueError) as info:
        rt.memcpy(dev, 64, host.ctypes.data, 64, D2H)  # really host -> device
    msg = str(info.value)
    assert info.value.code == C.ACL_ERROR_INVALID_PARAM
    assert f"0x{dev:x} is device memory of device 0" in msg
    assert f"0x{host.ctypes.data:x} is pageable host memory" in msg
    assert "ACL_MEMCPY_HOST_TO_DEVICE" in msg  # the kind it should have been


def test_strict_mode_names_pinned_host_memory(strict_rt):
    pinned = strict_rt.malloc_host(64)
    dev = strict_rt.malloc(64)
    with pytest.raises(InvalidValueError, match="pinned host memory"):
        strict_rt.memcpy(pinned, 64, dev, 64, H2D)  # really device -> host


def test_strict_mode_refuses_device_pointers_where_host_ones_are_claimed(strict_rt):
    a, b = strict_rt.malloc(64), strict_rt.malloc(64)
    with pytest.raises(InvalidValueError, match="contradicts"):
        strict_rt.memcpy(a, 64, b, 64, H2H)


def test_strict_mode_refuses_host_pointers_where_device_ones_are_claimed(strict_rt):
    a, b = np.zeros(64, np.uint8), np.zeros(64, np.uint8)
    with pytest.raises(InvalidValueError, match="contradicts"):
        strict_rt.memcpy(a.ctypes.data, 64, b.ctypes.data, 64, D2D)


@pytest.mark.parametrize("kind", [99, -1, 8, 6, 7, "1", None, 1.0])
def test_unknown_memcpy_kind_is_invalid_param(rt, kind):
    # aclrt_memory.cpp MemcpyKindTranslate: only 0..5 (INNER/INTER_DEVICE_TO_DEVICE are not copy kinds)
    host = np.zeros(64, np.uint8)
    dev = rt.malloc(64)
    with pytest.raises(InvalidValueError, match="kind") as info:
        rt.memcpy(dev, 64, host.ctypes.data, 64, kind)
    assert info.value.code == C.ACL_ERROR_INVALID_PARAM


def test_a_wrong_kind_copies_by_address_by_default(rt):
    data = _random(128)
    dev = rt.malloc(128)
    with pytest.warns(npurt.MemcpyKindWarning, match="ACL_MEMCPY_HOST_TO_DEVICE"):
        rt.memcpy(dev, 128, data.ctypes.data, 128, D2H)  # wrong kind, right addresses
    assert np.array_equal(_download(rt, dev, 128), data)


def test_infer_mode_is_the_default_address_mode(infer_rt):
    data = _random(128)
    dev = infer_rt.malloc(128)
    with pytest.warns(npurt.MemcpyKindWarning):
        infer_rt.memcpy(dev, 128, data.ctypes.data, 128, D2H)
    assert np.array_equal(_download(infer_rt, dev, 128), data)


def test_infer_mode_still_refuses_unknown_kinds(infer_rt):
    dev = infer_rt.malloc(128)
    host = np.zeros(128, np.uint8)
    with pytest.raises(InvalidValueError):
        infer_rt.memcpy(dev, 128, host.ctypes.data, 128, 42)


# ---------------------------------------------------------------- dest_max / count / bounds
def test_count_larger_than_dest_max_is_invalid_param(rt):
    dev = rt.malloc(1000)
    host = np.zeros(1000, np.uint8)
    with pytest.raises(InvalidValueError, match="dest_max") as info:
        rt.memcpy(dev, 500, host.ctypes.data, 501, H2D)
    assert info.value.code == C.ACL_ERROR_RT_PARAM_INVALID  # checked in the runtime layer (api_error.cc)


@pytest.mark.parametrize("dest_max, count", [(-1, 5), (10, -1), (10.0, 5), (10, "5")])
def test_negative_or_non_int_sizes_are_invalid_param(rt, dest_max, count):
    dev = rt.malloc(16)
    host = np.zeros(16, np.uint8)
    with pytest.raises(InvalidValueError):
        rt.memcpy(dev, dest_max, host.ctypes.data, count, H2D)


def test_copy_running_past_the_end_of_the_destination_allocation(rt):
    dev = rt.malloc(100)  # usable: ALIGN_UP(100, 32) + 32 = 160 bytes
    host = np.zeros(200, np.uint8)
    with pytest.raises(InvalidValueError, match="past the end") as info:
        rt.memcpy(dev, 200, host.ctypes.data, 161, H2D)
    assert "by 1 bytes" in str(info.value) and "100 bytes requested, 160 usable" in str(info.value)


def test_copy_running_past_the_end_of_the_source_allocation(rt):
    dev = rt.malloc(100)
    host = np.zeros(200, np.uint8)
    with pytest.raises(InvalidValueError, match="past the end"):
        rt.memcpy(host.ctypes.data, 200, dev + 50, 111, D2H)


def test_copy_running_past_the_end_of_pinned_host_memory(rt):
    pinned = rt.malloc_host(100)
    dev = rt.malloc(200)
    with pytest.raises(InvalidValueError, match="past the end"):
        rt.memcpy(dev, 200, pinned, 150, H2D)


def test_copy_from_freed_device_memory_is_refused(rt):
    dev = rt.malloc(100)
    rt.malloc(100)
    rt.free(dev)
    host = np.zeros(100, np.uint8)
    with pytest.raises(InvalidValueError, match="freed"):
        rt.memcpy(host.ctypes.data, 100, dev, 100, D2H)


def test_copy_from_an_unmapped_host_address_is_refused_not_a_crash(rt):
    dev = rt.malloc(100)
    with pytest.raises(InvalidValueError, match="not mapped"):
        rt.memcpy(dev, 100, 0x1000, 100, H2D)


def test_null_address_is_refused(rt):
    dev = rt.malloc(100)
    with pytest.raises(InvalidValueError, match="null"):
        rt.memcpy(dev, 100, 0, 100, H2D)


def test_runtime_keeps_working_after_refused_copies(rt):
    dev = rt.malloc(100)
    host = np.zeros(200, np.uint8)
    for bad in (lambda: rt.memcpy(dev, 200, host.ctypes.data, 161, H2D),
                lambda: rt.memcpy(dev, 100, host.ctypes.data, 100, 77),
                lambda: rt.memcpy(dev, 10, host.ctypes.data, 100, H2D)):
        with pytest.raises(InvalidValueError):
            bad()
    data = _random(100)
    rt.memcpy(dev, 100, data.ctypes.data, 100, H2D)
    assert np.array_equal(_download(rt, dev, 100), data)


# ---------------------------------------------------------------- memcpy2d
def test_memcpy2d_host_to_device_and_back_with_pitches(rt):
    rows, width, spitch, dpitch = 7, 10, 16, 32
    src = _random(spitch * rows)
    dev = rt.malloc(dpitch * rows)
    rt.memset(dev, dpitch * rows, 0, dpitch * rows)
    rt.memcpy2d(dev, dpitch, src.ctypes.data, spitch, width, rows, H2D)
    back = np.zeros(width * rows, np.uint8)
    rt.memcpy2d(back.ctypes.data, width, dev, dpitch, width, rows, D2H)
    expect = src.reshape(rows, spitch)[:, :width]
    assert np.array_equal(back.reshape(rows, width), expect)
    on_device = _download(rt, dev, dpitch * rows).reshape(rows, dpitch)
    assert not on_device[:, width:].any()  # the gap between rows is untouched


@pytest.mark.parametrize("kind", [D2D, H2H])
def test_sync_memcpy2d_supports_only_h2d_and_d2h(rt, kind):
    a, b = (rt.malloc(64), rt.malloc(64)) if kind == D2D else (rt.malloc_host(64), rt.malloc_host(64))
    with pytest.raises(InvalidValueError, match="memcpy2d supports only"):
        rt.memcpy2d(a, 8, b, 8, 8, 8, kind)


def test_async_memcpy2d_also_supports_device_to_device(rt):
    s = rt.create_stream()
    data = _random(8 * 16)
    a = _upload(rt, data)
    b = rt.malloc(8 * 8)
    rt.memcpy2d_async(b, 8, a, 16, 8, 8, D2D, s)
    rt.synchronize_stream(s)
    assert np.array_equal(_download(rt, b, 64).reshape(8, 8), data.reshape(8, 16)[:, :8])


def test_memcpy2d_width_larger_than_a_pitch_is_invalid(rt):
    dev = rt.malloc(1000)
    host = np.zeros(1000, np.uint8)
    with pytest.raises(InvalidValueError, match="width"):
        rt.memcpy2d(dev, 8, host.ctypes.data, 16, 10, 4, H2D)


def test_memcpy2d_past_the_end_of_the_allocation_is_invalid(rt):
    dev = rt.malloc(100)
    host = np.zeros(1000, np.uint8)
    with pytest.raises(InvalidValueError, match="past the end"):
        rt.memcpy2d(dev, 32, host.ctypes.data, 32, 32, 6, H2D)  # needs 192 bytes; 160 are usable


# ---------------------------------------------------------------- memset
def test_memset_fills_device_memory(rt):
    dev = rt.malloc(1000)
    rt.memset(dev, 1000, 0x3C, 600)
    out = _download(rt, dev, 600)
    assert (out == 0x3C).all()


def test_memset_uses_the_low_byte_of_the_value(rt):
    dev = rt.malloc(16)
    rt.memset(dev, 16, 0x1234, 16)
    assert (_download(rt, dev, 16) == 0x34).all()


def test_memset_works_on_host_memory(rt):
    pinned = rt.malloc_host(64)
    rt.memset(pinned, 64, 7, 64)
    assert (np.frombuffer((ctypes.c_ubyte * 64).from_address(pinned), np.uint8) == 7).all()


def test_memset_count_larger_than_max_count_is_invalid(rt):
    dev = rt.malloc(100)
    with pytest.raises(InvalidValueError, match="dest_max|capacity"):
        rt.memset(dev, 50, 0, 60)


def test_memset_past_the_end_is_invalid(rt):
    dev = rt.malloc(100)
    with pytest.raises(InvalidValueError, match="past the end"):
        rt.memset(dev, 200, 0, 161)


@pytest.mark.parametrize("value", [1 << 31, "a", 1.0])
def test_memset_value_outside_int32_is_invalid(rt, value):
    dev = rt.malloc(100)
    with pytest.raises(InvalidValueError):
        rt.memset(dev, 100, value, 10)


def test_memset_async_fills_in_stream_order(rt):
    s = rt.create_stream()
    dev = rt.malloc(256)
    rt.memset_async(dev, 256, 1, 256, s)
    rt.memset_async(dev, 256, 2, 128, s)
    rt.synchronize_stream(s)
    out = _download(rt, dev, 256)
    assert (out[:128] == 2).all() and (out[128:] == 1).all()


# ---------------------------------------------------------------- async constraints
def test_memcpy_async_needs_64_byte_aligned_addresses(rt):
    s = rt.create_stream()
    dev = rt.malloc(256)
    pinned = rt.malloc_host(256)
    with pytest.raises(AddressUnalignedError) as info:
        rt.memcpy_async(dev + 32, 128, pinned, 128, H2D, s)
    assert info.value.code == C.ACL_ERROR_RT_ADDR_UNALIGNED
    assert f"0x{dev + 32:x}" in str(info.value)


def test_memcpy_async_host_to_host_is_not_supported(rt):
    s = rt.create_stream()
    a, b = rt.malloc_host(64), rt.malloc_host(64)
    with pytest.raises(FeatureNotSupportedError):
        rt.memcpy_async(a, 64, b, 64, H2H, s)


def test_memcpy_async_from_pageable_memory_has_finished_on_return(rt):
    s = rt.create_stream()
    raw = _random(1 * MiB + 64)
    skip = -raw.ctypes.data % 64
    src = raw[skip:skip + 1 * MiB]  # pageable (numpy) memory, 64-byte aligned
    dev = rt.malloc(1 * MiB)
    rt.memcpy_async(dev, 1 * MiB, src.ctypes.data, 1 * MiB, H2D, s)
    src[:] = 0  # the pageable buffer may be reused at once: the copy has already happened
    assert rt.stream_query(s) == C.ACL_STREAM_STATUS_COMPLETE
    rt.synchronize_stream(s)
    assert not np.array_equal(_download(rt, dev, 1 * MiB), src)


@pytest.mark.parametrize("kind", [H2D, D2H, D2D, DEFAULT])
def test_memcpy_async_all_kinds_with_pinned_memory(rt, kind):
    s = rt.create_stream()
    data = _random(4096)
    pinned_src = rt.malloc_host(4096)
    np.frombuffer((ctypes.c_ubyte * 4096).from_address(pinned_src), np.uint8)[:] = data
    dev_src = _upload(rt, data)
    pinned_dst = rt.malloc_host(4096)
    dev_dst = rt.malloc(4096)
    src = dev_src if kind in (D2H, D2D) else pinned_src
    dst = pinned_dst if kind in (D2H, DEFAULT) else dev_dst
    if kind == DEFAULT:
        src = dev_src  # D2H by inference
    rt.memcpy_async(dst, 4096, src, 4096, kind, s)
    rt.synchronize_stream(s)
    if dst == pinned_dst:
        out = np.frombuffer((ctypes.c_ubyte * 4096).from_address(pinned_dst), np.uint8).copy()
    else:
        out = _download(rt, dev_dst, 4096)
    assert np.array_equal(out, data)


def test_memcpy_async_checks_the_kind_too_in_strict_mode(strict_rt):
    s = strict_rt.create_stream()
    dev, pinned = strict_rt.malloc(64), strict_rt.malloc_host(64)
    with pytest.raises(InvalidValueError, match="contradicts"):
        strict_rt.memcpy_async(dev, 64, pinned, 64, D2H, s)


def test_the_runtime_takes_exact_int_sizes_and_says_so_for_numpy_integers(rt):
    # pyACL parses sizes and counts with format "k" (rt_memory.cpp), which requires a Python
    # int: a numpy integer is a TypeError there, so the runtime refuses it too (the facade
    # raises the extension's TypeError, see test_conformance_arguments)
    n = np.prod((16, 16)) * 4  # numpy.int64
    with pytest.raises(InvalidValueError, match="malloc size must be an int, got int64"):
        rt.malloc(n)
    dev = rt.malloc(int(n))
    with pytest.raises(InvalidValueError, match="count must be an int"):
        rt.memcpy(dev, int(n), _random(16).ctypes.data, np.int64(16), H2D)
