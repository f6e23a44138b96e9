"""Ctrl-C and other BaseExceptions must neither be swallowed nor wedge a stream (issue 11):
a KeyboardInterrupt while a host thread runs a stream's work inline propagates, and the
stream goes on; SystemExit from a user callback neither kills a worker nor parks a stream
forever. The cases run in a subprocess, so a regression (a hang) fails its test instead of
wedging pytest."""
from __future__ import annotations

import pytest

from isolation import IsolatedCases

PRELUDE = """
import _thread, os, threading, time
os.environ["NPURT_WORKERS"] = "1"
import numpy as np
import npurt.acl as acl
from npurt import runtime as rt
from npurt.runtime import constants as C
from npurt.runtime.errors import SyncTimeoutError, TaskError
rt.init(); rt.set_device(0)

def hold_the_worker():
    '''Keep the only worker busy, so a synchronizing host thread runs work inline.'''
    gate = threading.Event()
    busy = rt.create_stream()
    rt.launch_host_func(busy, gate.wait, 60)
    time.sleep(0.05)
    return gate

def interrupt_after_taking(target):
    '''Make a Ctrl-C land where one can land in Condition.__enter__ (Python code): right after
    the main thread acquired `target`'s lock, before the `with` block is set up.'''
    enter = threading.Condition.__enter__
    def entered(self):
        result = enter(self)
        if self is target and threading.current_thread() is threading.main_thread():
            threading.Condition.__enter__ = enter
            raise KeyboardInterrupt
        return result
    threading.Condition.__enter__ = entered
    return enter

def interrupt_me():
    _thread.interrupt_main()
    for _ in range(200_000):  # Python code: the interrupt lands in here when this is the main thread
        pass
"""

CASES = {
    "interrupt inside a task run inline": """
gate = hold_the_worker()
s = rt.create_stream()
out = []
rt.launch_host_func(s, interrupt_me)
for i in range(100):
    rt.launch_host_func(s, out.append, i)
try:
    rt.synchronize_stream(s)
except KeyboardInterrupt:
    pass
else:
    raise AssertionError("the KeyboardInterrupt was swallowed")
gate.set()
try:
    rt.synchronize_stream(s, 20_000)
except TaskError as exc:
    assert "interrupted" in exc.message, exc.message
assert out == list(range(100)), out[:5]
rt.launch_host_func(s, out.append, 100)
rt.synchronize_stream(s, 20_000)
assert out[-1] == 100
""",
    "interrupt in the bookkeeping after a task ran inline": """
from npurt.runtime.observers import HOOKS
gate = hold_the_worker()
s = rt.create_stream()
out = []
main = threading.main_thread()
fired = []
def observer(name, **fields):  # a Ctrl-C that lands between a task's run and its retirement
    if name == "task_finished" and threading.current_thread() is main and not fired:
        fired.append(1)
        raise KeyboardInterrupt
HOOKS.add(observer)
for i in range(5):
    rt.launch_host_func(s, out.append, i)
try:
    rt.synchronize_stream(s)
except KeyboardInterrupt:
    pass
else:
    raise AssertionError("the KeyboardInterrupt was swallowed")
finally:
    HOOKS.remove(observer)
gate.set()
try:
    rt.synchronize_stream(s, 20_000)
except TaskError:
    pass
assert out == [0, 1, 2, 3, 4], out   # the task whose retirement was cut short ran once
rt.launch_host_func(s, out.append, 5)
rt.synchronize_stream(s, 20_000)
assert out[-1] == 5
""",
    "interrupts at random points of an inline drain": """
import random
rnd = random.Random(7)
gate = hold_the_worker()
s = rt.create_stream()
dev = rt.malloc(64)
host = rt.malloc_host(64)
total = 0
for trial in range(200):
    timer = threading.Timer(rnd.random() * 0.004, _thread.interrupt_main)
    try:  # the interrupt lands wherever the main thread is: enqueueing, running tasks, waiting
        timer.start()
        for _ in range(300):
            rt.memset_async(dev, 64, trial & 0xFF, 64, s)
        s.synchronize(report_errors=False)  # an interrupted task's failure stays on the stream
        timer.join()
        time.sleep(0.01)
    except KeyboardInterrupt:  # the only source: after it no interrupt is pending
        total += 1
gate.set()
for _ in range(3):  # the stream is neither wedged nor out of order
    try:
        rt.synchronize_stream(s, 20_000)
        break
    except TaskError:
        continue
rt.memset_async(dev, 64, 0x5A, 64, s)
rt.memcpy_async(host, 64, dev, 64, C.ACL_MEMCPY_DEVICE_TO_HOST, s)
rt.synchronize_stream(s, 20_000)
assert bytes(rt.RUNTIME.host.ranges[host].mm[:64]) == b"\\x5a" * 64
assert total > 0
""",
    "interrupt right after taking a stream's lock": """
s = rt.create_stream()
gate = threading.Event()
rt.launch_host_func(s, gate.wait, 30)
time.sleep(0.1)  # the worker runs it
ctx = rt.get_context()
finished = []
def other_waiter():
    rt.set_context(ctx)
    rt.synchronize_stream(s, 20_000)
    finished.append(1)
t = threading.Thread(target=other_waiter, daemon=True)
t.start()
time.sleep(0.1)
threading.Timer(0.3, gate.set).start()
enter = interrupt_after_taking(s.cond)
try:
    rt.synchronize_stream(s, 20_000)
except KeyboardInterrupt:
    pass
finally:
    threading.Condition.__enter__ = enter
t.join(15)
assert finished, "the other thread's synchronize never returned: the stream's lock stayed held"
out = []
rt.launch_host_func(s, out.append, 1)
rt.synchronize_stream(s, 20_000)
assert out == [1]
""",
    "interrupt right after taking the watchdog's lock": """
from npurt.runtime.watchdog import WATCHDOG
WATCHDOG.call_at(time.monotonic() + 0.01, lambda: None)  # its thread is running
time.sleep(0.1)
fired = threading.Event()
enter = interrupt_after_taking(WATCHDOG._cond)
try:
    WATCHDOG.call_at(time.monotonic() + 0.05, fired.set)  # as a synchronize's stall check does
except KeyboardInterrupt:
    pass
finally:
    threading.Condition.__enter__ = enter
t = threading.Thread(target=lambda: WATCHDOG.call_at(time.monotonic() + 0.05, fired.set), daemon=True)
t.start()
assert fired.wait(15), "the watchdog fired no timer: its lock stayed held"
""",
    "SystemExit from the exception-info callback": """
def callback(info):
    raise SystemExit(3)
rt.set_exception_info_callback(callback)
s = rt.create_stream()
def boom():
    raise ValueError("boom")
rt.launch_host_func(s, boom)
out = []
rt.launch_host_func(s, out.append, 1)
try:
    rt.synchronize_stream(s, 20_000)
except TaskError:
    pass
assert out == [1]
t = rt.create_stream()  # the worker is alive: other streams still run
rt.launch_host_func(t, out.append, 2)
rt.synchronize_stream(t, 20_000)
assert out == [1, 2]
""",
    "SystemExit from a done-callback": """
s = rt.create_stream()
gate = threading.Event()
rt.launch_host_func(s, gate.wait, 30)
def cb():
    raise SystemExit(4)
s.on_retired(s.enqueued_seq, cb)
out = []
rt.launch_host_func(s, out.append, 1)
gate.set()
rt.synchronize_stream(s, 20_000)
t = rt.create_stream()
rt.launch_host_func(t, out.append, 2)
rt.synchronize_stream(t, 20_000)
assert out == [1, 2]
""",
    "SystemExit from a launch_callback function": """
assert acl.init() in (0, C.ACL_ERROR_REPEAT_INITIALIZE)
assert acl.rt.set_device(0) == 0
stream, _ = acl.rt.create_stream()
exits = []
def report_loop(args):
    try:
        while True:
            acl.rt.process_report(50)
    except SystemExit as exc:
        exits.append(exc.code)
tid, _ = acl.util.start_thread(report_loop, [])
assert acl.rt.subscribe_report(tid, stream) == 0
def fn(data):
    raise SystemExit(5)
assert acl.rt.launch_callback(fn, [], 1, stream) == 0   # ACL_CALLBACK_BLOCK
dev, _ = acl.rt.malloc(64, 0)
assert acl.rt.memset_async(dev, 64, 1, 64, stream) == 0
ret = acl.rt.synchronize_stream_with_timeout(stream, 20_000)
assert ret == C.ACL_ERROR_RT_AICPU_EXCEPTION, ret   # the callback failed; the stream went on
assert exits == [5]   # and SystemExit reached the report thread that ran it
assert acl.rt.synchronize_stream_with_timeout(stream, 20_000) == 0
""",
    "SystemExit from a task's own code on a worker": """
s = rt.create_stream()
def bye():
    raise SystemExit(6)
rt.launch_host_func(s, bye)
try:
    rt.synchronize_stream(s, 20_000)
except TaskError as exc:
    assert "SystemExit" in exc.message
out = []
t = rt.create_stream()
rt.launch_host_func(t, out.append, 1)
rt.synchronize_stream(t, 20_000)
assert out == [1]
""",
}


@pytest.fixture(scope="module")
def cases():
    return IsolatedCases(PRELUDE, CASES, timeout=120)


def _ok(cases, name):
    outcome = cases.result(name)
    assert outcome == "ok", outcome


def test_ctrl_c_while_a_host_thread_runs_a_task_inline_propagates_and_the_stream_goes_on(cases):
    _ok(cases, "interrupt inside a task run inline")


def test_ctrl_c_between_a_task_run_inline_and_its_retirement_leaves_the_stream_running(cases):
    _ok(cases, "interrupt in the bookkeeping after a task ran inline")


def test_ctrl_c_at_random_points_of_an_inline_drain_never_wedges_the_stream(cases):
    _ok(cases, "interrupts at random points of an inline drain")


def test_ctrl_c_right_after_a_host_thread_takes_a_streams_lock_does_not_wedge_other_waiters(cases):
    _ok(cases, "interrupt right after taking a stream's lock")


def test_ctrl_c_right_after_a_host_thread_takes_the_watchdogs_lock_does_not_stop_its_timers(cases):
    _ok(cases, "interrupt right after taking the watchdog's lock")


def test_system_exit_from_the_exception_info_callback_does_not_kill_the_worker(cases):
    _ok(cases, "SystemExit from the exception-info callback")


def test_system_exit_from_a_done_callback_does_not_kill_the_worker(cases):
    _ok(cases, "SystemExit from a done-callback")


def test_system_exit_from_a_launch_callback_fails_it_and_the_stream_goes_on(cases):
    _ok(cases, "SystemExit from a launch_callback function")


def test_system_exit_from_a_task_on_a_worker_fails_the_task_and_the_worker_goes_on(cases):
    _ok(cases, "SystemExit from a task's own code on a worker")
