"""Teardown racing with use (issue 11): destroying one stream from two threads, destroying a
context while another thread creates streams in it, destroying an event a thread waits on."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.errors import ContextError, EventError, InvalidHandleError, NpuError, ResourceExhaustedError


def _in_threads(n: int, fn) -> list:
    """Run fn() in n threads released together; their results or exceptions."""
    barrier = threading.Barrier(n)
    out = [None] * n

    def run(i):
        barrier.wait()
        try:
            out[i] = fn()
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test checks
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out


def test_two_threads_destroying_one_stream_get_one_success_and_one_invalid_handle(rt):
    ctx = rt.get_context()
    available = rt.get_stream_available_num()
    for _ in range(10):
        s = rt.create_stream()
        rt.launch_host_func(s, time.sleep, 0.01)  # both destroyers get past the first checks

        def destroy():
            rt.set_context(ctx)
            rt.destroy_stream(s)
            return "ok"

        outcomes = _in_threads(2, destroy)
        assert outcomes.count("ok") == 1, outcomes
        assert any(isinstance(o, InvalidHandleError) for o in outcomes), outcomes
    assert rt.get_stream_available_num() == available


def test_destroy_context_racing_create_stream_leaves_no_stream_behind(rt):
    available = rt.get_stream_available_num()
    ctx = rt.create_context(0)
    rt.launch_host_func(None, time.sleep, 0.05)  # destroy_context waits on the default stream
    made, stop = [], threading.Event()

    def create():
        rt.set_context(ctx)
        while not stop.is_set():
            try:
                made.append(rt.create_stream())
            except (ContextError, InvalidHandleError):
                return
            except ResourceExhaustedError:   # a slow host: every stream made before the destroy
                stop.wait(0.001)             # came; the race is still the destroy's
        return

    creator = threading.Thread(target=create)
    creator.start()
    time.sleep(0.01)
    rt.destroy_context(ctx)
    stop.set()
    creator.join(30)
    assert made and all(s.destroyed for s in made)
    rt.set_device(0)
    assert rt.get_stream_available_num() == available


def test_a_thread_waiting_on_an_event_that_is_destroyed_is_woken(rt):
    ev = rt.create_event()
    outcome = []

    def wait():
        try:
            rt.synchronize_event(ev)
            outcome.append("returned")
        except NpuError as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    time.sleep(0.05)
    rt.destroy_event(ev)
    waiter.join(10)
    assert not waiter.is_alive(), "the waiter was never woken"
    assert outcome == ["returned"] or isinstance(outcome[0], (InvalidHandleError, EventError)), outcome


def test_a_stream_waiting_on_an_event_that_is_destroyed_goes_on(rt):
    s = rt.create_stream()
    ev = rt.create_event(C.ACL_EVENT_SYNC)  # a semaphore: a wait blocks until a record of it completes
    rt.stream_wait_event(s, ev)
    out = []
    rt.launch_host_func(s, out.append, 1)
    time.sleep(0.05)
    rt.destroy_event(ev)
    with pytest.raises(NpuError, match="destroyed"):
        rt.synchronize_stream(s, 10_000)  # the wait fails: its event is gone
    assert out == [1]  # and the stream went on


def test_two_threads_destroying_one_event_get_one_success_and_one_invalid_handle(rt):
    available = rt.get_event_avail_num()
    for _ in range(20):
        ev = rt.create_event()

        def destroy():
            rt.destroy_event(ev)
            return "ok"

        outcomes = _in_threads(2, destroy)
        assert outcomes.count("ok") == 1, outcomes
        assert any(isinstance(o, InvalidHandleError) for o in outcomes), outcomes
    assert rt.get_event_avail_num() == available


def test_two_threads_destroying_one_context_get_one_success(rt):
    available = rt.get_stream_available_num()
    for _ in range(5):
        ctx = rt.create_context(0)
        rt.launch_host_func(None, time.sleep, 0.01)
        rt.set_device(0)
        outcomes = _in_threads(2, lambda: rt.destroy_context(ctx) or "ok")
        assert outcomes.count("ok") == 1, outcomes
        rt.reset_device(0)
    assert rt.get_stream_available_num() == available


def test_a_thread_setting_the_device_while_another_thread_resets_it_gets_a_fresh_device(rt):
    # The last reset_device releases the device (it drains the device's work first); a
    # set_device in another thread meanwhile must not get the context and memory being freed
    # (found as a C program's four threads on two devices: "the source address was released
    # by aclrtResetDevice(1)"). It waits for the release and sets the device afresh.
    from npurt.runtime.runtime import RUNTIME
    release_began, other_thread_went_on = threading.Event(), threading.Event()

    def slow_release(device, reason):
        release_began.set()
        other_thread_went_on.wait(2)  # without the wait in set_device, the other thread mallocs now

    outcome = []

    def other_thread():
        release_began.wait(30)
        rt.set_device(0)
        other_thread_went_on.set()
        try:
            addr = rt.malloc(64)
            rt.memset(addr, 64, 7, 64)
            host = np.zeros(64, np.uint8)
            rt.memcpy(host.ctypes.data, 64, addr, 64, C.ACL_MEMCPY_DEVICE_TO_HOST)
            outcome.append(bool((host == 7).all()))
            rt.free(addr)
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test checks
            outcome.append(exc)
        rt.reset_device(0)

    RUNTIME.release_hooks.append(slow_release)
    try:
        t = threading.Thread(target=other_thread)
        t.start()
        rt.reset_device(0)  # the fixture's reference: the last one, so the device is released
        t.join(30)
    finally:
        RUNTIME.release_hooks.remove(slow_release)
    assert outcome == [True]


def test_a_device_shutdown_waits_for_a_worker_being_started(rt, monkeypatch):
    # aclFinalize returned 500000 under load: the scheduler listed a worker another thread was
    # starting (the watchdog replacing a worker stuck in a timed-out native kernel) and joined
    # its thread before thread.start() had run: RuntimeError "cannot join thread before it is
    # started". Here a worker's start is held until the shutdown has begun
    from npurt.runtime import scheduler as scheduler_module
    sched = rt.get_context().device.scheduler
    starting, go = threading.Event(), threading.Event()

    class SlowStart(threading.Thread):
        def start(self):
            if self.name.startswith("npurt-dev"):  # a worker of the runtime, not a thread of the test
                starting.set()
                go.wait(30)
            super().start()

    monkeypatch.setattr(scheduler_module.threading, "Thread", SlowStart)
    monkeypatch.setattr(sched, "nworkers", len(sched.workers) + 1)
    starter = threading.Thread(target=sched._start_worker)
    starter.start()
    assert starting.wait(30)
    outcome = []

    def shut_down():
        try:
            sched.shutdown()
            outcome.append("done")
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test checks
            outcome.append(exc)

    closer = threading.Thread(target=shut_down)
    closer.start()
    closer.join(0.5)  # it waits for the start in progress (before the fix it raised at once)
    go.set()
    starter.join(30)
    closer.join(30)
    assert outcome == ["done"]
