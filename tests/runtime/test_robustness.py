"""Misuse and edge cases that must leave the runtime usable: raising callbacks and observers,
pageable host memory in async calls, dropped records, concurrent queries, teardown bounds,
freed user memory, alias reuse."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime import kernel_args
from npurt.runtime.kernel import GM, kernel
from npurt.runtime.errors import (EventError, InvalidHandleError, InvalidValueError, NpuError,
                                  StreamAbortedError, TaskError, get_last_error)
from npurt.runtime.observers import HOOKS
from npurt.runtime.runtime import RUNTIME


def _boom():
    raise RuntimeError("boom")


def _gate(rt, stream):
    """Hold `stream` behind an event that is recorded only when the returned function runs."""
    ev = rt.create_event(C.ACL_EVENT_SYNC)  # never recorded: a wait on it holds the stream
    rt.stream_wait_event(stream, ev)
    opener = rt.create_stream()
    return lambda: rt.record_event(ev, opener)


# ---------------------------------------------------------------- callbacks and observers
def test_a_raising_done_callback_leaves_the_stream_usable(rt):
    s = rt.create_stream()
    open_gate = _gate(rt, s)
    seq = rt.launch_host_func(s, lambda: None)
    s.on_retired(seq, _boom)  # registered before the task runs: fired by whoever retires it
    open_gate()
    rt.synchronize_stream(s, 5000)
    out = []
    rt.launch_host_func(s, out.append, 1)
    rt.synchronize_stream(s, 5000)
    assert out == [1]


def test_a_raising_observer_does_not_break_the_scheduler(rt):
    def observer(name, **fields):
        if name == "task_finished":
            raise RuntimeError("observer bug")

    HOOKS.add(observer)
    try:
        s = rt.create_stream()
        out = []
        for i in range(3):
            rt.launch_host_func(s, out.append, i)
        rt.synchronize_stream(s, 5000)
    finally:
        HOOKS.remove(observer)
    assert out == [0, 1, 2]


# ---------------------------------------------------------------- pageable host memory
def test_memset_async_on_pageable_memory_has_finished_on_return(rt):
    s = rt.create_stream()
    host = np.ones(1 << 20, np.uint8)
    rt.memset_async(host.ctypes.data, host.nbytes, 9, host.nbytes, s)
    assert (host == 9).all()  # the caller may free the buffer right away


def test_memcpy_async_from_pageable_memory_leaves_an_earlier_failure_on_the_stream(rt):
    s = rt.create_stream()
    rt.launch_host_func(s, _boom)
    host = np.arange(256, dtype=np.uint8)
    dev = rt.malloc(256)
    assert rt.memcpy_async(dev, 256, host.ctypes.data, 256, C.ACL_MEMCPY_HOST_TO_DEVICE, s) > 0
    with pytest.raises(TaskError, match="boom"):
        rt.synchronize_stream(s)  # the failure is reported here, not by the copy


def test_memcpy_async_accepts_unaligned_pageable_memory_but_not_unaligned_device_memory(rt):
    s = rt.create_stream()
    host = np.arange(256, dtype=np.uint8)
    dev = rt.malloc(512)
    rt.memcpy_async(dev, 256, host[3:].ctypes.data, 200, C.ACL_MEMCPY_HOST_TO_DEVICE, s)
    out = np.zeros(200, np.uint8)
    rt.memcpy(out.ctypes.data, 200, dev, 200, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert (out == host[3:203]).all()
    with pytest.raises(NpuError) as err:
        rt.memcpy_async(dev + 8, 256, host.ctypes.data, 64, C.ACL_MEMCPY_HOST_TO_DEVICE, s)
    assert err.value.code == C.ACL_ERROR_RT_ADDR_UNALIGNED


# ---------------------------------------------------------------- events
def test_synchronize_event_fails_fast_when_the_awaited_record_is_dropped(rt):
    ev = rt.create_event()
    s = rt.create_stream()
    open_gate = _gate(rt, s)
    result = []

    def waiter():
        try:
            rt.synchronize_event(ev, 5000)
            result.append("ok")
        except NpuError as exc:
            result.append(exc)

    rt.record_event(ev, s)  # queued behind the gate ...
    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.05)  # the waiter is blocked on the pending record
    rt.stream_abort(s)  # ... and dropped
    t.join(3)
    assert not t.is_alive(), "synchronize_event kept waiting for a record that was dropped"
    assert isinstance(result[0], (EventError, StreamAbortedError))  # the record will never run
    open_gate()


def test_waiting_on_a_never_recorded_ex_event_does_not_block(rt):
    ev = rt.create_event(C.ACL_EVENT_SYNC, ex=True)
    s = rt.create_stream()
    out = []
    rt.stream_wait_event(s, ev)
    rt.launch_host_func(s, out.append, 1)
    rt.synchronize_stream(s, 2000)
    assert out == [1]


# ---------------------------------------------------------------- queries and teardown
def test_get_mem_info_is_safe_while_other_threads_allocate(rt):
    device = rt.current_device()
    stop = threading.Event()
    errors = []

    def churn():
        try:
            ptrs = []
            while not stop.is_set():
                for size in (512, 4096, 70_000, 300_000, 1 << 20):
                    ptrs.append(rt.malloc_on(device, size))
                while ptrs:
                    rt.free(ptrs.pop())
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=churn)
    t.start()
    try:
        for _ in range(2000):
            free, total = rt.get_mem_info(C.ACL_HBM_MEM)
            assert 0 < free <= total
    finally:
        stop.set()
        t.join()
    assert not errors


def test_releasing_a_device_waits_at_most_its_timeout_in_total(rt):
    never = rt.create_event(C.ACL_EVENT_SYNC)
    for _ in range(3):
        rt.stream_wait_event(rt.create_stream(), never)
    t0 = time.monotonic()
    RUNTIME._release_device(rt.current_device(), "test", timeout_s=0.3)
    assert time.monotonic() - t0 < 1.5  # not 0.3 s per stuck stream


def test_synchronize_device_keeps_the_other_streams_failures_for_them(rt):
    a, b = rt.create_stream(), rt.create_stream()
    rt.launch_host_func(a, _boom)
    rt.launch_host_func(b, _boom)
    with pytest.raises(TaskError):
        rt.synchronize_device()
    failed = 0
    for s in (a, b):
        try:
            rt.synchronize_stream(s)
        except TaskError:
            failed += 1
    assert failed == 1  # one was reported by synchronize_device, the other is still there


def test_a_failure_reported_by_synchronize_is_the_threads_last_error(rt):
    get_last_error()  # clear
    s = rt.create_stream()
    rt.launch_host_func(s, _boom)
    with pytest.raises(TaskError) as err:
        rt.synchronize_stream(s)
    assert get_last_error() == err.value.code


# ---------------------------------------------------------------- host memory
def test_host_register_reuses_the_alias_space_of_unregistered_ranges(rt):
    buf = rt.malloc_host(1 << 16)
    rt.free_host(buf)
    import mmap
    mm = mmap.mmap(-1, 1 << 16)
    addr = np.frombuffer(mm, np.uint8).ctypes.data
    first = rt.host_register(addr, 1 << 16)
    rt.host_unregister(addr)
    second = rt.host_register(addr, 1 << 16)
    rt.host_unregister(addr)
    assert first == second


def test_host_unregister_waits_for_queued_copies_that_use_the_range(rt):
    import mmap
    mm = mmap.mmap(-1, 1 << 16)
    host = np.frombuffer(mm, np.uint8)
    host[:] = 5
    rt.host_register(host.ctypes.data, 1 << 16)
    s = rt.create_stream()
    dev = rt.malloc(1 << 16)
    rt.memcpy_async(dev, 1 << 16, host.ctypes.data, 1 << 16, C.ACL_MEMCPY_HOST_TO_DEVICE, s)
    rt.host_unregister(host.ctypes.data)  # returns only once the copy has read the buffer
    assert s.completed_seq >= s.enqueued_seq
    out = np.zeros(1 << 16, np.uint8)
    rt.memcpy(out.ctypes.data, out.nbytes, dev, out.nbytes, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert (out == 5).all()


def test_kernel_args_in_freed_user_memory_are_refused_not_written(rt):
    @kernel
    def k(ctx, x: GM, n: np.int32):
        pass

    handle_mem = np.zeros(kernel_args.HANDLE_MEM_SIZE, np.uint8)
    import mmap
    mm = mmap.mmap(-1, 4096)
    user = np.frombuffer(mm, np.uint8).ctypes.data
    kernel_args.kernel_args_init_by_user_mem(k, handle_mem.ctypes.data, user, k.args_size)
    del user
    import gc
    gc.collect()
    mm.close()  # the user frees the memory the args live in
    value = np.zeros(1, np.uint64)
    with pytest.raises((InvalidHandleError, InvalidValueError)):
        kernel_args.kernel_args_append(handle_mem.ctypes.data, value.ctypes.data, 8)
