"""The runtime's observer hooks: what tools (sanitizer, profiler) are told, and when."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import npurt
from npurt.runtime import constants as C
from npurt.runtime.errors import InvalidValueError
from npurt.runtime.kernel import GM, kernel, launch
from npurt.runtime.observers import HOOKS

H2D, D2H = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST


@pytest.fixture
def events():
    """The (name, fields) of every hook event while the test runs."""
    seen: list = []
    lock = threading.Lock()

    def observer(name, **fields):
        with lock:
            seen.append((name, fields))

    HOOKS.add(observer)
    yield seen
    HOOKS.remove(observer)


def named(events, name):
    return [f for n, f in events if n == name]


@kernel
def read_only_input(ctx, x: GM, n: np.int32):
    ctx.gm(x, np.float32, n, "r")[0] = 1.0  # writing an input view must fail


@kernel
def declared(ctx, x: GM, y: GM, n: np.int32):
    np.negative(ctx.gm(x, np.float32, n, "r"), out=ctx.gm(y, np.float32, n, "w"))


def test_task_enqueued_is_emitted_before_the_task_starts(rt, events):
    s = rt.create_stream()
    dev = rt.malloc(64)
    for _ in range(50):
        rt.memset_async(dev, 64, 0, 64, s)
    s.synchronize()
    order = [(n, f["task"].seq) for n, f in events if n in ("task_enqueued", "task_started")]
    for seq in range(1, 51):
        assert order.index(("task_enqueued", seq)) < order.index(("task_started", seq))


def test_tasks_list_the_memory_they_read_and_write(rt, events):
    s = rt.create_stream()
    a, b = rt.malloc(256), rt.malloc(256)
    rt.memset_async(a, 256, 1, 256, s)
    rt.memcpy_async(b, 256, a, 256, C.ACL_MEMCPY_DEVICE_TO_DEVICE, s)
    s.synchronize()
    memset, copy = (f["task"] for f in named(events, "task_enqueued"))
    assert memset.accesses() == ((a, 256, "w"),)
    assert copy.accesses() == ((a, 256, "r"), (b, 256, "w"))


def test_stream_synchronize_reports_the_wait_and_its_end(rt, events):
    s = rt.create_stream()
    dev = rt.malloc(64)
    seq = rt.memset_async(dev, 64, 0, 64, s)
    rt.synchronize_stream(s)
    assert [f["seq"] for f in named(events, "host_wait")] == [seq]
    done = named(events, "host_wait_done")
    assert done[0]["seq"] == seq and done[0]["ok"] is True
    assert named(events, "host_sync")[0]["what"] == "stream"


def test_a_timed_out_wait_ends_without_ordering(rt, events):
    s = rt.create_stream()
    gate = threading.Event()
    rt.launch_host_func(s, gate.wait)
    with pytest.raises(npurt.SyncTimeoutError):
        s.synchronize(timeout_ms=20)
    gate.set()
    s.synchronize()
    assert named(events, "host_wait_done")[0]["ok"] is False


def test_a_query_that_reports_complete_tells_the_host_it_is_ordered(rt, events):
    s = rt.create_stream()
    ev = rt.create_event()
    rt.record_event(ev, s)
    s.synchronize()
    events.clear()
    assert rt.stream_query(s) == C.ACL_STREAM_STATUS_COMPLETE
    assert rt.query_event_status(ev) == C.ACL_EVENT_RECORDED_STATUS_COMPLETE
    assert [(f["stream"], f["seq"]) for f in named(events, "host_synced")] == [(s, 1), (s, 1)]


def test_allocations_say_who_owns_them(rt, events):
    raw = rt.malloc(100)
    rt.free(raw)
    arr = npurt.empty((10,), np.float32)
    ptr = arr.ptr
    del arr
    allocs = named(events, "mem_alloc")
    frees = named(events, "mem_free")
    assert [(a["addr"], a["size"], a["managed"]) for a in allocs] == [(raw, 100, False), (ptr, 40, True)]
    assert [(f["addr"], f["managed"]) for f in frees] == [(raw, False), (ptr, True)]


def test_a_free_reports_the_queued_work_it_waits_for(rt, events):
    s = rt.create_stream()
    gate = threading.Event()
    rt.launch_host_func(s, gate.wait)
    dev = rt.malloc(64)
    seq = rt.memset_async(dev, 64, 0, 64, s)
    rt.free(dev)
    gate.set()
    s.synchronize()
    assert named(events, "mem_free")[0]["uses"] == {s: seq}


def test_host_memory_allocation_and_registration_are_reported(rt, events):
    host = rt.malloc_host(4096)
    rt.free_host(host)
    buf = np.zeros(8192, np.uint8)
    base = (buf.ctypes.data + 4095) // 4096 * 4096
    alias = rt.host_register(base, 4096)
    rt.host_unregister(base)
    assert named(events, "mem_alloc")[0]["device"] is None
    assert named(events, "mem_free")[0]["addr"] == host
    assert named(events, "host_register")[0]["alias"] == alias
    assert named(events, "host_unregister")[0]["addr"] == base


def test_a_double_free_is_reported_before_the_error(rt, events):
    dev = rt.malloc(64)
    rt.free(dev)
    with pytest.raises(InvalidValueError):
        rt.free(dev)
    errors = named(events, "mem_error")
    assert [(e["kind"], e["addr"]) for e in errors] == [("invalid_free", dev)]


def test_a_copy_past_the_allocation_is_reported_as_out_of_bounds(rt, events):
    dev = rt.malloc(64)
    host = np.zeros(128, np.uint8)
    with pytest.raises(InvalidValueError):
        rt.memcpy(dev, 128, host.ctypes.data, 128, H2D)
    assert named(events, "mem_error")[0]["kind"] == "out_of_bounds"


def test_a_copy_from_freed_memory_is_reported_as_use_after_free(rt, events):
    dev = rt.malloc(64)
    rt.free(dev)
    host = np.zeros(64, np.uint8)
    with pytest.raises(InvalidValueError):
        rt.memcpy(host.ctypes.data, 64, dev, 64, D2H)
    assert named(events, "mem_error")[0]["kind"] == "use_after_free"


def test_synchronous_copies_are_host_accesses(rt, events):
    dev = rt.malloc(64)
    host = np.ones(64, np.uint8)
    rt.memcpy(dev, 64, host.ctypes.data, 64, H2D)
    rt.memset(dev, 64, 0, 64)
    got = [(f["addr"], f["nbytes"], f["mode"]) for f in named(events, "host_access")]
    assert got == [(host.ctypes.data, 64, "r"), (dev, 64, "w"), (dev, 64, "w")]


def test_kernel_views_report_their_declared_mode(rt, events):
    x, y = rt.malloc(16), rt.malloc(16)
    launch(declared, 1, (x, y, 4))
    rt.synchronize_device()
    assert [(f["addr"], f["mode"]) for f in named(events, "mem_access")] == [(x, "r"), (y, "w")]


def test_a_kernel_cannot_write_a_view_declared_as_input(rt):
    x = rt.malloc(16)
    launch(read_only_input, 1, (x, 4))
    with pytest.raises(npurt.TaskError, match="read-only"):
        rt.synchronize_device()


def test_a_bad_gm_mode_fails_the_kernel(rt):
    @kernel
    def bad_mode(ctx, x: GM):
        ctx.gm(x, np.float32, 1, "x")

    x = rt.malloc(16)
    launch(bad_mode, 1, (x,))
    with pytest.raises(npurt.TaskError, match="mode"):
        rt.synchronize_device()


def test_device_reset_and_finalize_are_announced(rt, events):
    rt.reset_device(0)
    rt.finalize()
    assert named(events, "device_release")[0]["reason"] == "reset_device(0)"
    assert [n for n, _ in events if n == "runtime_finalize"] == ["runtime_finalize"]


def test_launch_callback_runs_between_callback_events(rt, events):
    s = rt.create_stream()
    tid = threading.get_ident()
    rt.subscribe_report(tid, s)
    ran = []
    seq = rt.launch_callback(ran.append, "data", C.ACL_CALLBACK_BLOCK, s)
    rt.process_report(1000)
    s.synchronize()
    assert ran == ["data"]
    started, finished = named(events, "callback_started"), named(events, "callback_finished")
    assert (started[0]["stream"], started[0]["seq"]) == (s, seq)
    assert finished[0]["block"] is True
