"""Debug modes: launch blocking (NPURT_LAUNCH_BLOCKING / ASCEND_LAUNCH_BLOCKING), enqueue
stacks in asynchronous errors (NPURT_TASK_STACKS), poisoned freed memory
(NPURT_POISON_FREED) (issue 3, scope 8 and 9)."""
from __future__ import annotations

import ctypes
import threading
import time

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.errors import TaskError

N = 4096
D2H = C.ACL_MEMCPY_DEVICE_TO_HOST


def _runtime(rt_module, monkeypatch, **env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    rt_module.init()
    rt_module.set_device(0)
    return rt_module


def _boom():
    raise ValueError("bad value in task")


def _download(rt, ptr, n=N):
    out = np.empty(n, np.uint8)
    rt.memcpy(out.ctypes.data, n, ptr, n, D2H)
    return out


# ---------------------------------------------------------------- launch blocking
@pytest.mark.parametrize("variable", ["NPURT_LAUNCH_BLOCKING", "ASCEND_LAUNCH_BLOCKING"])
def test_launch_blocking_finishes_each_task_before_the_call_returns(fresh_runtime, monkeypatch, variable):
    rt = _runtime(fresh_runtime, monkeypatch, **{variable: "1"})
    s = rt.create_stream()
    out = []
    rt.launch_host_func(s, lambda: (time.sleep(0.02), out.append(1)))
    assert out == [1]
    assert rt.stream_query(s) == C.ACL_STREAM_STATUS_COMPLETE


@pytest.mark.parametrize("variable", ["NPURT_LAUNCH_BLOCKING", "ASCEND_LAUNCH_BLOCKING"])
def test_launch_blocking_raises_the_error_at_the_call_that_caused_it(fresh_runtime, monkeypatch, variable):
    rt = _runtime(fresh_runtime, monkeypatch, **{variable: "1"})
    s = rt.create_stream()
    rt.launch_host_func(s, lambda: None)
    with pytest.raises(TaskError, match="bad value in task") as info:
        rt.launch_host_func(s, _boom)
    assert "task #2" in str(info.value)
    rt.launch_host_func(s, lambda: None)  # the next call is clean
    rt.synchronize_stream(s)


def test_launch_blocking_runs_async_copies_at_enqueue(fresh_runtime, monkeypatch):
    rt = _runtime(fresh_runtime, monkeypatch, NPURT_LAUNCH_BLOCKING="1")
    s = rt.create_stream()
    dev = rt.malloc(N)
    pinned = rt.malloc_host(N)
    rt.memset_async(dev, N, 9, N, s)
    rt.memcpy_async(pinned, N, dev, N, D2H, s)
    assert (np.frombuffer((ctypes.c_ubyte * N).from_address(pinned), np.uint8) == 9).all()


def test_without_launch_blocking_the_error_waits_for_a_synchronize(rt):
    s = rt.create_stream()
    gate = threading.Event()
    rt.launch_host_func(s, gate.wait, 30)
    rt.launch_host_func(s, _boom)  # accepted: it has not run yet
    gate.set()
    with pytest.raises(TaskError):
        rt.synchronize_stream(s)


# ---------------------------------------------------------------- enqueue stacks
def test_task_stacks_put_the_enqueue_site_in_async_errors(fresh_runtime, monkeypatch):
    rt = _runtime(fresh_runtime, monkeypatch, NPURT_TASK_STACKS="1")
    s = rt.create_stream()

    def enqueue_the_bad_task():
        rt.launch_host_func(s, _boom)

    enqueue_the_bad_task()
    with pytest.raises(TaskError) as info:
        rt.synchronize_stream(s)
    msg = str(info.value)
    assert "The task was enqueued at:" in msg
    assert "enqueue_the_bad_task" in msg and "test_debug_modes.py" in msg


def test_task_stacks_work_for_copies_and_events_too(fresh_runtime, monkeypatch):
    rt = _runtime(fresh_runtime, monkeypatch, NPURT_TASK_STACKS="1")
    s = rt.create_stream()
    dev = rt.malloc(N)
    rt.memset_async(dev, N, 1, N, s)
    e = rt.create_event()
    rt.record_event(e, s)
    rt.stream_wait_event(s, e)
    rt.synchronize_stream(s)
    assert (_download(rt, dev) == 1).all()


def test_without_task_stacks_errors_carry_no_stack(rt):
    s = rt.create_stream()
    rt.launch_host_func(s, _boom)
    with pytest.raises(TaskError) as info:
        rt.synchronize_stream(s)
    assert "enqueued at" not in str(info.value)


# ---------------------------------------------------------------- poison
def test_poison_fills_freed_blocks_with_0xa5(fresh_runtime, monkeypatch):
    rt = _runtime(fresh_runtime, monkeypatch, NPURT_POISON_FREED="1")
    dev = rt.malloc(N)
    rt.memset(dev, N, 0x11, N)
    rt.free(dev)
    again = rt.malloc(N)
    assert again == dev  # the same cached block
    assert (_download(rt, again) == 0xA5).all()


def test_poison_fills_a_pending_block_once_its_work_is_done(fresh_runtime, monkeypatch):
    rt = _runtime(fresh_runtime, monkeypatch, NPURT_POISON_FREED="1")
    s = rt.create_stream()
    gate = threading.Event()
    dev = rt.malloc(N)
    rt.memset(dev, N, 0x22, N)
    pinned = rt.malloc_host(N)
    rt.launch_host_func(s, gate.wait, 30)
    rt.memcpy_async(pinned, N, dev, N, D2H, s)
    rt.free(dev)
    gate.set()
    rt.synchronize_stream(s)
    # the queued copy read the data, not the poison
    assert (np.frombuffer((ctypes.c_ubyte * N).from_address(pinned), np.uint8) == 0x22).all()
    again = rt.malloc(N)
    assert again == dev and (_download(rt, again) == 0xA5).all()


def test_without_poison_freed_memory_is_not_overwritten(rt):
    dev = rt.malloc(N)
    rt.memset(dev, N, 0x11, N)
    rt.free(dev)
    again = rt.malloc(N)
    assert again == dev and (_download(rt, again) == 0x11).all()
