"""Host callbacks: launch_callback with blocking and non-blocking types through
subscribe_report / process_report / unsubscribe_report, and the generic host-function task
(issue 3, scope 2)."""
from __future__ import annotations

import threading
import time

import pytest

from npurt.runtime import constants as C
from npurt.runtime.errors import (InvalidValueError, NpuError, SubscriptionError,
                                  SyncTimeoutError, TaskError)

BLOCK, NO_BLOCK = C.ACL_CALLBACK_BLOCK, C.ACL_CALLBACK_NO_BLOCK


@pytest.fixture
def subscribed(rt):
    """A stream whose callbacks the calling (main) thread runs through process_report."""
    s = rt.create_stream()
    tid = threading.get_ident()
    rt.subscribe_report(tid, s)
    yield s, tid
    if s.subscriber is not None and not s.destroyed:
        rt.unsubscribe_report(tid, s)


class Reporter:
    """A host thread that loops on process_report for a stream, as pyACL programs do."""

    def __init__(self, rt, stream):
        self.rt, self.stream = rt, stream
        self.stop = threading.Event()
        self.subscribed = threading.Event()
        self.errors: list = []
        ctx = rt.get_context()
        self.thread = threading.Thread(target=self._loop, args=(ctx,))
        self.thread.start()
        assert self.subscribed.wait(10)

    def _loop(self, ctx):
        rt = self.rt
        rt.set_context(ctx)
        rt.subscribe_report(threading.get_ident(), self.stream)
        self.subscribed.set()
        while not self.stop.is_set():
            try:
                rt.process_report(20)
            except NpuError as exc:
                if exc.code != C.ACL_ERROR_RT_REPORT_TIMEOUT:
                    self.errors.append(exc)
        rt.unsubscribe_report(threading.get_ident(), self.stream)

    def close(self):
        self.stop.set()
        self.thread.join(10)


def test_callback_runs_on_the_subscribed_thread_with_its_user_data(rt):
    s = rt.create_stream()
    reporter = Reporter(rt, s)
    seen = []
    rt.launch_callback(lambda data: seen.append((data, threading.current_thread())), [1, 2], BLOCK, s)
    rt.synchronize_stream(s, 10_000)
    reporter.close()
    assert seen == [([1, 2], reporter.thread)]
    assert not reporter.errors


def test_a_blocking_callback_holds_the_stream_until_it_has_run(rt, subscribed):
    s, _ = subscribed
    out = []
    rt.launch_callback(lambda _: out.append("callback"), None, BLOCK, s)
    rt.launch_host_func(s, out.append, "after")
    with pytest.raises(SyncTimeoutError) as info:
        rt.synchronize_stream(s, 100)  # nobody has called process_report yet
    assert "process_report" in str(info.value)  # names what it is stuck on
    assert out == []
    rt.process_report(1000)
    rt.synchronize_stream(s, 10_000)
    assert out == ["callback", "after"]


def test_a_non_blocking_callback_does_not_hold_the_stream(rt, subscribed):
    s, _ = subscribed
    out = []
    rt.launch_callback(lambda _: out.append("callback"), None, NO_BLOCK, s)
    rt.launch_host_func(s, out.append, "after")
    rt.synchronize_stream(s, 10_000)  # completes although the callback has not run
    assert out == ["after"]
    rt.process_report(1000)
    assert out == ["after", "callback"]


def test_callbacks_run_in_stream_order(rt, subscribed):
    s, _ = subscribed
    out = []
    for i in range(5):
        rt.launch_host_func(s, out.append, f"task{i}")
        rt.launch_callback(out.append, f"cb{i}", NO_BLOCK, s)
    rt.synchronize_stream(s, 10_000)
    rt.process_report(1000)
    assert [x for x in out if x.startswith("cb")] == [f"cb{i}" for i in range(5)]


def test_a_raising_blocking_callback_fails_its_stream(rt, subscribed):
    s, _ = subscribed

    def bad(_):
        raise RuntimeError("callback broke")

    out = []
    rt.launch_callback(bad, None, BLOCK, s)
    rt.launch_host_func(s, out.append, "after")
    rt.process_report(1000)  # the exception stays inside the runtime
    with pytest.raises(TaskError) as info:
        rt.synchronize_stream(s, 10_000)
    assert "callback broke" in str(info.value) and "launch_callback" in str(info.value)
    assert out == ["after"]  # continue-on-failure: the stream went on


def test_a_raising_non_blocking_callback_fails_its_stream_at_the_next_sync(rt, subscribed):
    s, _ = subscribed

    def bad(_):
        raise KeyError("nope")

    rt.launch_callback(bad, None, NO_BLOCK, s)
    rt.synchronize_stream(s, 10_000)
    rt.process_report(1000)
    with pytest.raises(TaskError, match="nope"):
        rt.synchronize_stream(s, 10_000)


def test_launch_callback_without_a_subscription_is_refused(rt):
    s = rt.create_stream()
    with pytest.raises(SubscriptionError) as info:
        rt.launch_callback(print, None, BLOCK, s)
    assert info.value.code == C.ACL_ERROR_RT_STREAM_NO_CB_REG == 107015


def test_subscribing_a_stream_twice_is_repeat_subscribe(rt, subscribed):
    s, tid = subscribed
    with pytest.raises(SubscriptionError) as info:
        rt.subscribe_report(tid, s)
    assert info.value.code == C.ACL_ERROR_REPEAT_SUBSCRIBE


def test_one_thread_may_serve_several_streams_of_a_device(rt, subscribed):
    s, tid = subscribed
    t = rt.create_stream()
    rt.subscribe_report(tid, t)
    out = []
    rt.launch_callback(out.append, "s", NO_BLOCK, s)
    rt.launch_callback(out.append, "t", NO_BLOCK, t)
    rt.synchronize_stream(s)
    rt.synchronize_stream(t)
    while len(out) < 2:
        rt.process_report(1000)
    assert sorted(out) == ["s", "t"]
    rt.unsubscribe_report(tid, t)


def test_a_report_thread_serves_one_device(rt, subscribed):
    _, tid = subscribed
    rt.set_device(1)
    with pytest.raises(SubscriptionError) as info:
        rt.subscribe_report(tid, rt.create_stream())
    assert info.value.code == C.ACL_ERROR_RT_THREAD_SUBSCRIBE


def test_unsubscribe_by_a_thread_that_is_not_subscribed(rt, subscribed):
    s, tid = subscribed
    with pytest.raises(SubscriptionError) as info:
        rt.unsubscribe_report(tid + 1, s)
    assert info.value.code == C.ACL_ERROR_RT_STREAM_SUBSCRIBE


def test_after_unsubscribe_callbacks_are_refused(rt, subscribed):
    s, tid = subscribed
    rt.unsubscribe_report(tid, s)
    with pytest.raises(SubscriptionError):
        rt.launch_callback(print, None, NO_BLOCK, s)


def test_process_report_times_out_when_nothing_arrives(rt, subscribed):
    with pytest.raises(NpuError) as info:
        rt.process_report(20)
    assert info.value.code == C.ACL_ERROR_RT_REPORT_TIMEOUT == 507012


def test_process_report_on_a_thread_with_no_subscription(rt):
    with pytest.raises(SubscriptionError) as info:
        rt.process_report(20)
    assert info.value.code == C.ACL_ERROR_RT_THREAD_SUBSCRIBE == 107012


@pytest.mark.parametrize("timeout", [0, -2, 1.5])
def test_process_report_with_a_bad_timeout_is_invalid(rt, subscribed, timeout):
    with pytest.raises(InvalidValueError):
        rt.process_report(timeout)


@pytest.mark.parametrize("block_type", [2, -1, "1"])
def test_launch_callback_with_an_unknown_block_type_is_invalid(rt, subscribed, block_type):
    s, _ = subscribed
    with pytest.raises(InvalidValueError):
        rt.launch_callback(print, None, block_type, s)


def test_launch_callback_needs_a_callable(rt, subscribed):
    s, _ = subscribed
    with pytest.raises(InvalidValueError):
        rt.launch_callback("print", None, BLOCK, s)


# ---------------------------------------------------------------- host-function tasks
def test_host_func_runs_in_stream_order_with_its_arguments(rt):
    s = rt.create_stream()
    out = []
    rt.launch_host_func(s, lambda a, b: out.append(a + b), 2, 3)
    rt.launch_host_func(s, out.append, "next")
    rt.synchronize_stream(s)
    assert out == [5, "next"]


def test_host_func_returns_the_tasks_sequence_number(rt):
    s = rt.create_stream()
    assert [rt.launch_host_func(s, lambda: None) for _ in range(3)] == [1, 2, 3]


def test_host_func_name_appears_in_its_failure(rt):
    s = rt.create_stream()

    def fail(_):
        raise ValueError("x")

    rt.launch_host_func(s, fail, 1, name="my_kernel")
    with pytest.raises(TaskError, match="host function my_kernel"):
        rt.synchronize_stream(s)


def test_host_func_needs_a_callable(rt):
    with pytest.raises(InvalidValueError):
        rt.launch_host_func(rt.create_stream(), 42)


def test_host_func_does_not_run_at_enqueue(rt):
    s = rt.create_stream()
    gate = threading.Event()
    rt.launch_host_func(s, gate.wait, 30)
    out = []
    rt.launch_host_func(s, out.append, 1)
    time.sleep(0.02)
    assert out == []  # queued behind the blocked task: enqueue returned without running it
    gate.set()
    rt.synchronize_stream(s)
    assert out == [1]


def test_a_captured_callback_is_posted_again_at_every_replay(rt):
    s = rt.create_stream()
    reporter = Reporter(rt, s)
    seen = []
    rt.capture_begin(s, rt.graph.GLOBAL)
    rt.launch_callback(seen.append, "tick", BLOCK, s)
    graph = rt.capture_end(s)
    assert seen == []
    for _ in range(3):
        rt.execute_async(graph, s)
    rt.synchronize_stream(s, 10_000)
    reporter.close()
    rt.destroy_graph(graph)
    assert seen == ["tick"] * 3 and not reporter.errors
