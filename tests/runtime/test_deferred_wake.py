"""Deferred wake-ups (scheduler.py's module doc): a host thread's launch onto an idle stream
whose last launch the host took itself wakes no worker; the host's synchronize runs it, the
host's next enqueue, query or other wait wakes a worker for it, and otherwise the polling idle
worker starts it within about 0.3 ms. Without the C accelerator, with NPURT_INLINE=0, while a
tool listens and for host functions nothing is deferred."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from npurt.runtime import HOOKS, HostFuncTask, Task
from npurt.runtime import scheduler as scheduler_module
from npurt.runtime.accel import SPEEDUPS

needs_doorbell = pytest.mark.skipif(
    getattr(SPEEDUPS, "Doorbell", None) is None,
    reason="deferred wake-ups need the C accelerator (NPURT_SPEEDUPS=0 or no compiler); "
           "test_without_the_accelerator_nothing_is_deferred covers that case")

ME = threading.get_ident
NEVER_US = 60_000_000  # a grace the poller never reaches within a test


class Work(Task):
    """A task that is not cheap (never runs inline on its own) and notes its thread."""

    __slots__ = ("thread", "ran")
    kind = "kernel"

    def __init__(self):
        self.thread, self.ran = None, threading.Event()

    def run(self) -> None:
        self.thread = ME()
        self.ran.set()


def retired(stream, seq: int, timeout_s: float = 30.0) -> None:
    """Wait for task `seq` without synchronizing (a synchronize would take the work)."""
    deadline = time.monotonic() + timeout_s
    while stream.completed_seq < seq:
        assert time.monotonic() < deadline, f"task #{seq} did not retire"
        time.sleep(0.001)


def until(predicate, timeout_s: float = 30.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"{what} did not happen"
        time.sleep(0.001)


@pytest.fixture
def rt(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_INLINE", "1")
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    return fresh_runtime


def poll_for_the_test(sched, monkeypatch) -> None:
    """Make an idle worker the doorbell's poller for the rest of the test: a worker polls
    for window_us after a launch last tried to defer (one does here, and finds no poller),
    and is woken so that it goes back to sleep polling. A poller also stops when its sleep's
    timeout (IDLE_POLL_S, 1 s) ends, and polls again once it is back asleep: a launch in that
    gap wakes a worker instead of deferring (right, and rare; it failed this file once in CI
    on a loaded machine). So every idle worker is woken to go back to sleep with a timeout
    no test reaches."""
    monkeypatch.setattr(scheduler_module, "IDLE_POLL_S", NEVER_US / 1e6)
    sched.doorbell.window_us = NEVER_US  # however slow the machine
    if sched.doorbell.defer():  # (a worker still polls after the last test's launches)
        assert sched.doorbell.take()
    for _ in range(len(sched.idle)):
        sched._wake()
    until(lambda: len(sched.idle) == len(sched.workers) and sched.doorbell.pollers() == 1,
          what="a worker polling the doorbell")


@pytest.fixture
def polled(rt, monkeypatch):
    """A stream whose last launch the host took, and a scheduler with a worker polling its
    doorbell (one ran a task and went back to sleep); the poller's grace is `grace_us`."""
    s = rt.create_stream()
    sched = s.scheduler
    warm = s.enqueue(Work())  # starts a worker, which runs it and then polls
    retired(s, warm)
    poll_for_the_test(sched, monkeypatch)
    sched.doorbell.grace_us = NEVER_US
    s.sync_follows = True
    yield rt, s, sched
    sched.doorbell.grace_us = sched.doorbell.window_us = 0  # let the poller go


@needs_doorbell
def test_a_launch_then_synchronize_runs_in_the_synchronizing_thread_and_wakes_no_worker(polled, monkeypatch):
    rt, s, sched = polled
    wakes = []
    real_wake = sched._wake
    monkeypatch.setattr(sched, "_wake", lambda: (wakes.append(1), real_wake()))
    work = Work()
    seq = s.enqueue(work)
    assert sched.deferred is not None and sched.deferred[0] is s
    assert s.completed_seq < seq  # deferred, not run
    s.synchronize()
    assert work.thread == ME()
    assert wakes == []
    assert sched.deferred is None
    assert not sched.doorbell.take()  # nothing left pending for the poller
    assert s.sync_follows


@needs_doorbell
def test_a_deferred_launch_nobody_waits_for_starts_on_a_worker_soon(polled):
    rt, s, sched = polled
    sched.doorbell.grace_us = 100
    work = Work()
    seq = s.enqueue(work)
    assert work.ran.wait(30), "the poller did not start the deferred launch"
    assert work.thread != ME()
    retired(s, seq)
    until(lambda: not s.sync_follows, what="the stream forgetting that a wait follows")
    assert sched.deferred is None
    # its next launch is not deferred: the host did not wait for the last one
    nxt = s.enqueue(Work())
    assert sched.deferred is None
    retired(s, nxt)


@needs_doorbell
def test_the_next_enqueue_on_another_stream_wakes_a_worker_for_the_deferred_launch(polled):
    rt, s, sched = polled
    other = rt.create_stream()
    work = Work()
    seq = s.enqueue(work)
    assert sched.deferred is not None
    other.enqueue(Work())
    assert sched.deferred is None
    retired(s, seq)  # a worker ran it: the poller's grace is never reached
    assert work.thread != ME()
    assert not s.sync_follows  # the guess was wrong: the next launch wakes a worker at once


@needs_doorbell
def test_a_copy_through_the_c_enqueue_path_also_wakes_a_worker_for_it(polled):
    from npurt.runtime import constants as C
    rt, s, sched = polled
    other = rt.create_stream()
    src, dst = rt.malloc(64), rt.malloc(64)
    seq = s.enqueue(Work())
    assert sched.deferred is not None
    rt.memcpy_async(dst, 64, src, 64, C.ACL_MEMCPY_DEVICE_TO_DEVICE, other)
    assert sched.deferred is None
    retired(s, seq)


@needs_doorbell
def test_more_work_on_the_same_stream_keeps_it_deferred_for_the_synchronize(polled):
    rt, s, sched = polled
    first, second = Work(), Work()
    s.enqueue(first)
    s.enqueue(second)
    assert sched.deferred is not None and sched.deferred[0] is s
    s.synchronize()
    assert first.thread == second.thread == ME()


@needs_doorbell
@pytest.mark.parametrize("how", ["query", "timed synchronize", "synchronize of another stream"])
def test_a_wait_that_will_not_take_the_work_wakes_a_worker_for_it(polled, how):
    rt, s, sched = polled
    other = rt.create_stream()
    work = Work()
    seq = s.enqueue(work)
    assert sched.deferred is not None
    if how == "query":
        s.query()
        assert sched.deferred is None
        retired(s, seq)
    elif how == "timed synchronize":
        s.synchronize(timeout_ms=30_000)
        assert s.completed_seq >= seq
        assert work.thread != ME()
    else:
        other.synchronize()
        assert sched.deferred is None
        retired(s, seq)


@needs_doorbell
def test_a_synchronize_that_claims_the_ticket_marks_the_stream(rt, monkeypatch):
    s = rt.create_stream()
    sched = s.scheduler
    assert not s.sync_follows
    monkeypatch.setattr(sched, "_wake", lambda: None)  # no worker comes: the ticket waits for us
    work = Work()
    s.enqueue(work)
    s.synchronize()
    assert work.thread == ME()
    assert s.sync_follows


@needs_doorbell
def test_without_a_polling_worker_the_launch_wakes_one_at_once(rt):
    s = rt.create_stream()
    sched = s.scheduler
    s.sync_follows = True
    assert sched.doorbell.pollers() == 0  # no worker has started yet
    seq = s.enqueue(Work())
    assert sched.deferred is None
    retired(s, seq)


@needs_doorbell
def test_no_worker_polls_while_no_launch_tries_to_defer(rt):
    """A pipeline whose launches are not followed by waits has no thread polling."""
    s = rt.create_stream()
    for _ in range(3):
        retired(s, s.enqueue(Work()))  # run by a worker, which then sleeps
    time.sleep(0.05)
    assert s.scheduler.doorbell.pollers() == 0


@needs_doorbell
def test_a_host_function_is_never_deferred(polled):
    rt, s, sched = polled
    ran = threading.Event()
    seq = s.enqueue(HostFuncTask(ran.set))
    assert sched.deferred is None
    assert ran.wait(30)
    retired(s, seq)


@needs_doorbell
def test_a_listening_tool_sees_no_deferral(polled):
    rt, s, sched = polled

    def observer(name, **_fields):
        pass

    HOOKS.add(observer)
    try:
        seq = s.enqueue(Work())
        assert sched.deferred is None
        retired(s, seq)
    finally:
        HOOKS.remove(observer)


@needs_doorbell
def test_with_inline_execution_off_nothing_is_deferred(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_INLINE", "0")
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    s = fresh_runtime.create_stream()
    retired(s, s.enqueue(Work()))
    s.sync_follows = True
    poll_for_the_test(s.scheduler, monkeypatch)
    seq = s.enqueue(Work())
    assert s.scheduler.deferred is None
    retired(s, seq)


@needs_doorbell
def test_many_launches_with_every_kind_of_follow_up_all_run_in_order(polled):
    """A mix of what a host does after a launch: synchronize, nothing, another stream's work,
    a query. Every task runs once, in stream order, and nothing is left pending."""
    rt, s, sched = polled
    sched.doorbell.grace_us = 100
    other = rt.create_stream()
    order = []

    class Step(Work):
        __slots__ = ("i",)

        def __init__(self, i):
            super().__init__()
            self.i = i

        def run(self):
            order.append(self.i)
            super().run()

    last = 0
    for i in range(300):
        last = s.enqueue(Step(i))
        follow = i % 4
        if follow == 0:
            s.synchronize()
        elif follow == 2:
            other.enqueue(Work())
        elif follow == 3:
            s.query()
    s.synchronize()
    other.synchronize()
    assert s.completed_seq == last
    assert order == list(range(300))
    assert sched.deferred is None


@needs_doorbell
def test_the_doorbell_defers_only_while_a_worker_polls():
    bell = SPEEDUPS.Doorbell()
    assert bell.defer() == 0 and not bell.take()  # nobody polls: the caller wakes a worker
    lock = SPEEDUPS.Lock()
    lock.acquire()
    bell.grace_us = bell.window_us = NEVER_US
    results = []
    th = threading.Thread(target=lambda: results.append(bell.wait(lock, 30.0)))
    th.start()
    until(lambda: bell.pollers() == 1, what="the poller")
    stamp = bell.defer()
    assert stamp > 0
    assert bell.defer() == 0  # one at a time: a second launch wakes a worker itself
    assert bell.take(stamp) and not bell.take(stamp)
    lock.release()  # a waker: the poller wakes as woken (1)
    th.join(30)
    assert results == [1] and bell.pollers() == 0


@needs_doorbell
def test_the_poller_answers_an_old_deferral():
    bell = SPEEDUPS.Doorbell()
    lock = SPEEDUPS.Lock()
    lock.acquire()
    bell.grace_us, bell.window_us = 0, NEVER_US
    assert bell.defer() == 0  # a launch tried to defer: a worker that sleeps now polls
    results = []
    th = threading.Thread(target=lambda: results.append(bell.wait(lock, 30.0)))
    th.start()
    until(lambda: bell.pollers() == 1, what="the poller")
    assert bell.defer() > 0
    th.join(30)
    assert results == [2]  # answered: it goes to look for work
    assert not bell.take()


def test_without_the_accelerator_nothing_is_deferred():
    code = (
        "from npurt.runtime import api as rt, Task\n"
        "rt.init(); rt.set_device(0)\n"
        "s = rt.create_stream()\n"
        "class W(Task):\n"
        "    __slots__ = ()\n"
        "    def run(self): pass\n"
        "assert s.scheduler.doorbell is None\n"
        "s.sync_follows = True\n"
        "seq = s.enqueue(W()); s.synchronize()\n"
        "assert s.completed_seq == seq and s.scheduler.deferred is None\n"
        "rt.finalize()\n"
        "print('ok')\n")
    env = dict(os.environ, NPURT_SPEEDUPS="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@needs_doorbell
@pytest.mark.parametrize("what", ["kernel launch", "copy"])
def test_a_launch_or_a_copy_through_the_c_enqueue_defers_as_stream_enqueue_does(polled, monkeypatch, what):
    """The C enqueue (enqueue_task, enqueue_copy) hands a task in as Stream.enqueue does: a host
    thread's enqueue onto the stream whose last launch it took rings the doorbell, and its
    synchronize then runs the work without waking a worker."""
    import numpy as np
    from npurt.ops import launch
    from npurt.runtime import INLINE_MAX_BYTES, Stream, constants as C
    rt, s, sched = polled
    n = INLINE_MAX_BYTES + 4096  # more than a task may touch to run inline
    src, dst = rt.malloc(n), rt.malloc(n)
    python_enqueues, wakes = [], []
    real_enqueue, real_wake = Stream.enqueue, sched._wake
    monkeypatch.setattr(Stream, "enqueue", lambda *a, **k: (python_enqueues.append(1), real_enqueue(*a, **k))[1])
    monkeypatch.setattr(sched, "_wake", lambda: (wakes.append(1), real_wake()))
    if what == "kernel launch":
        seq = launch.elementwise("relu", dst, src, None, n // 4, np.float32, stream=s, num_blocks=1)
    else:
        seq = rt.memcpy_async(dst, n, src, n, C.ACL_MEMCPY_DEVICE_TO_DEVICE, s)
    assert python_enqueues == []  # the C path took it
    assert sched.deferred is not None and sched.deferred[0] is s
    assert s.completed_seq < seq  # deferred, not run
    s.synchronize()
    assert s.completed_seq >= seq
    assert wakes == [] and sched.deferred is None
