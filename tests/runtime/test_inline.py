"""Inline execution (runtime/inline.py): a cheap task enqueued on an idle stream runs in the
enqueuing thread, with the same sequence numbers, order, errors and tool view as on a worker;
bursts, host functions, tools and NPURT_INLINE=0 keep the workers."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from gates import Gate
from npurt.runtime import HOOKS, INLINE_MAX_BYTES, RUNTIME, HostFuncTask, Task, TaskError
from npurt.runtime import constants as C
from npurt.runtime.inline import STREAK

D2D = C.ACL_MEMCPY_DEVICE_TO_DEVICE


class Probe(Task):
    """A cheap task that notes the thread it ran in (and fails when asked to)."""

    __slots__ = ("thread", "fail")
    cheap = True

    def __init__(self, fail: bool = False):
        self.thread, self.fail = None, fail

    def run(self) -> None:
        self.thread = threading.get_ident()
        if self.fail:
            raise ValueError("probe failed")


def retired(stream, seq: int, timeout_s: float = 30.0) -> None:
    """Wait for task `seq` without synchronizing (a synchronize would run it in this thread)."""
    deadline = time.monotonic() + timeout_s
    while stream.completed_seq < seq:
        assert time.monotonic() < deadline, f"task #{seq} did not retire"
        time.sleep(0.001)


ME = threading.get_ident


@pytest.fixture
def rt(fresh_runtime, monkeypatch):
    """The runtime with inline execution on (the suite also runs with NPURT_INLINE=0)."""
    monkeypatch.setenv("NPURT_INLINE", "1")
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    return fresh_runtime


def test_a_cheap_task_on_an_idle_stream_has_run_when_the_enqueue_returns(rt):
    s = rt.create_stream()
    probe = Probe()
    seq = s.enqueue(probe)
    assert s.completed_seq == seq == s.enqueued_seq  # retired before the call returned
    assert probe.thread == ME()


def test_a_small_copy_runs_inline_and_a_large_one_goes_to_a_worker(rt):
    s = rt.create_stream()
    small, large = INLINE_MAX_BYTES, INLINE_MAX_BYTES + 64
    src, dst = rt.malloc(large), rt.malloc(large)
    rt.memset(src, large, 7, large)
    seq = rt.memcpy_async(dst, large, src, small, D2D, s)
    assert s.completed_seq == seq
    big = rt.memcpy_async(dst, large, src, large, D2D, s)
    s.synchronize()
    assert s.completed_seq == big
    host = np.zeros(large, np.uint8)
    rt.memcpy(host.ctypes.data, large, dst, large, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert (host == 7).all()


def test_an_event_record_on_an_idle_stream_completes_at_once(rt):
    s = rt.create_stream()
    event = rt.create_event()
    rt.record_event(event, s)
    assert rt.query_event_status(event) == C.ACL_EVENT_RECORDED_STATUS_COMPLETE


def test_a_burst_goes_to_the_workers_after_the_streak_and_a_wait_starts_a_new_one(rt):
    s = rt.create_stream()
    probes = [Probe() for _ in range(STREAK + 3)]
    seqs = [s.enqueue(p) for p in probes]
    retired(s, seqs[-1])
    threads = [p.thread for p in probes]
    assert threads[:STREAK] == [ME()] * STREAK
    assert ME() not in threads[STREAK:]  # the rest of the burst ran on a worker
    s.synchronize()
    again = Probe()
    s.enqueue(again)
    assert again.thread == ME()


def test_work_behind_a_busy_stream_is_not_run_inline_and_keeps_its_order(rt):
    s = rt.create_stream()
    gate = Gate(s)
    order = []

    class Noting(Probe):
        __slots__ = ("name",)

        def __init__(self, name):
            super().__init__()
            self.name = name

        def run(self):
            super().run()
            order.append(self.name)

    first, second = Noting("first"), Noting("second")
    s.enqueue(first)
    s.enqueue(second)
    assert order == [] and s.completed_seq == 0  # the gate's wait (#1) holds the stream
    other = rt.create_stream()
    gate.record(other)
    s.synchronize()
    assert order == ["first", "second"]


def test_host_functions_never_run_inline(rt):
    s = rt.create_stream()
    ran = []
    seq = s.enqueue(HostFuncTask(lambda: ran.append(threading.get_ident())))
    retired(s, seq)
    assert ran and ran[0] != ME()


def test_a_failing_inline_task_is_reported_at_the_next_synchronize_and_to_the_exception_callback(rt):
    s = rt.create_stream()
    infos = []
    rt.set_exception_info_callback(infos.append)
    try:
        probe = Probe(fail=True)
        seq = s.enqueue(probe)  # returns normally, as an asynchronous launch does
        assert probe.thread == ME() and s.completed_seq == seq
        assert len(infos) == 1
        with pytest.raises(TaskError, match="probe failed"):
            s.synchronize()
        s.synchronize()  # reported once
        assert s.enqueue(Probe()) == seq + 1  # the stream goes on
    finally:
        rt.set_exception_info_callback(None)


def test_nothing_runs_inline_while_a_tool_listens_and_the_tool_sees_the_same_events(fresh_runtime, monkeypatch):
    """An observer turns inline execution off: its view of a program is the one it gets with
    NPURT_INLINE=0 (event names and sequence numbers, in order)."""
    def program(rt):
        s = rt.create_stream()
        src, dst = rt.malloc(64), rt.malloc(64)
        rt.memcpy_async(dst, 64, src, 64, D2D, s)
        rt.record_event(rt.create_event(), s)
        probe = Probe()
        s.enqueue(probe)
        s.synchronize()
        return probe.thread

    views = {}
    for inline in ("1", "0"):
        monkeypatch.setenv("NPURT_INLINE", inline)
        fresh_runtime.init()
        fresh_runtime.set_device(0)
        seen = []

        def observer(name, **fields):
            task = fields.get("task")
            if task is not None:
                seen.append((name, task.kind, task.seq))
        HOOKS.add(observer)
        try:
            thread = program(fresh_runtime)
        finally:
            HOOKS.remove(observer)
        views[inline] = seen
        fresh_runtime.finalize()
        RUNTIME.finalized = False
    assert views["1"] == views["0"] and len(views["1"]) == 9
    assert thread is not None


def test_npurt_inline_0_sends_every_task_to_the_workers(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_INLINE", "0")
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    s = fresh_runtime.create_stream()
    probe = Probe()
    seq = s.enqueue(probe)
    retired(s, seq)
    assert probe.thread != ME()


def test_launch_blocking_turns_inline_execution_off(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_LAUNCH_BLOCKING", "1")
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    s = fresh_runtime.create_stream()
    probe = Probe()
    seq = s.enqueue(probe)  # waited for at the call, as every launch then is
    assert s.completed_seq == seq and s.streak == 0


def test_armed_task_faults_turn_inline_execution_off(rt):
    import npurt
    s = rt.create_stream()
    npurt.faults.inject("task:kernel@1")  # armed for kernels: no task runs inline meanwhile
    try:
        probe = Probe()
        seq = s.enqueue(probe)
        retired(s, seq)
        assert probe.thread != ME()
    finally:
        npurt.faults.clear()


def test_a_worker_never_runs_a_task_of_another_stream_inline(rt):
    s, other = rt.create_stream(), rt.create_stream()
    probe = Probe()
    seen = []

    def host_function():  # on a worker: its enqueue hands `other` to the workers
        other.enqueue(probe)
        seen.append((threading.get_ident(), probe.thread))
    seq = s.enqueue(HostFuncTask(host_function))
    retired(s, seq)
    retired(other, 1)
    worker, ran_in_it = seen[0]
    assert worker != ME() and ran_in_it != worker
