"""Waits that can never end because the waiting thread is what they wait for (issue 11): a
task, done-callback, report-thread callback or kernel block that synchronizes its own stream
(directly, through an event, or through another stream that waits for it) is refused with
DeadlockError (ACL_ERROR_RT_PARAM_INVALID, 107000) where the hardware would hang. The cases
run in a subprocess, so a regression (a hang) fails its test instead of wedging pytest."""
from __future__ import annotations

import pytest

from isolation import IsolatedCases

PRELUDE = """
import threading, time
import numpy as np
import npurt.acl as acl
from npurt import runtime as rt
from npurt.runtime import constants as C
from npurt.runtime.errors import NpuError, TaskError
from npurt.runtime.kernel import GM, kernel, launch
rt.init(); rt.set_device(0)
caught = []

def attempt(fn, *args):
    try:
        fn(*args)
    except NpuError as exc:  # DeadlockError
        caught.append(exc)

def expect_refusal(s):
    try:
        rt.synchronize_stream(s, 20_000)   # the refusal fails no task; a timeout here is the hang
    except TaskError:
        pass
    assert len(caught) == 1 and caught[0].code == C.ACL_ERROR_RT_PARAM_INVALID, caught
    assert "wait forever" in caught[0].message
    caught.clear()
"""

CASES = {
    "host function": """
s = rt.create_stream()
rt.launch_host_func(s, attempt, rt.synchronize_stream, s)
expect_refusal(s)
""",
    "host function run inline by the main thread": """
os_workers = rt.RUNTIME.device(0).scheduler
s = rt.create_stream()
gate = threading.Event()
rt.launch_host_func(s, gate.wait, 30)   # keeps a worker on s until the main thread syncs
rt.launch_host_func(s, attempt, rt.synchronize_stream, s)
gate.set()
expect_refusal(s)
""",
    "done-callback": """
s = rt.create_stream()
gate = threading.Event()
rt.launch_host_func(s, gate.wait, 30)
s.on_retired(s.enqueued_seq, lambda: attempt(rt.synchronize_stream, s))
rt.launch_host_func(s, time.sleep, 0.01)   # queued after: the callback would wait for it
gate.set()
expect_refusal(s)
""",
    "event recorded later on the same stream": """
s = rt.create_stream()
ev = rt.create_event()
rt.launch_host_func(s, lambda: attempt(rt.synchronize_event, ev))
rt.record_event(ev, s)
expect_refusal(s)
""",
    "another stream that waits for this one": """
s, t = rt.create_stream(), rt.create_stream()
ev = rt.create_event()
gate = threading.Event()
rt.launch_host_func(s, gate.wait, 30)
rt.launch_host_func(s, attempt, rt.synchronize_stream, t)
rt.record_event(ev, s)
rt.stream_wait_event(t, ev)
rt.launch_host_func(t, time.sleep, 0)
time.sleep(0.1)   # t parks on s
gate.set()
expect_refusal(s)
rt.synchronize_stream(t, 20_000)
""",
    "synchronize_device": """
s = rt.create_stream()
ctx = rt.get_context()
def sync_device():
    rt.set_context(ctx)   # a task thread has no context of its own
    attempt(rt.synchronize_device)
rt.launch_host_func(s, sync_device)
expect_refusal(s)
""",
    "kernel block on a core-pool thread": """
@kernel
def sync_own(ctx, x: GM):
    attempt(rt.synchronize_stream, ctx.task.stream)
s = rt.create_stream()
buf = rt.malloc(64)
launch(sync_own, 1, (buf,), s)
expect_refusal(s)
launch(sync_own, 4, (buf,), s)
try:
    rt.synchronize_stream(s, 20_000)
except TaskError:
    pass
assert len(caught) == 4 and all(e.code == C.ACL_ERROR_RT_PARAM_INVALID for e in caught), caught
""",
    "launch_callback function": """
assert acl.init() in (0, C.ACL_ERROR_REPEAT_INITIALIZE)
assert acl.rt.set_device(0) == 0
stream, _ = acl.rt.create_stream()
ctx, _ = acl.rt.get_context()
rets = []
def report_loop(args):
    acl.rt.set_context(ctx)  # stream calls need a current context (else 107002)
    while not rets:
        acl.rt.process_report(50)
tid, _ = acl.util.start_thread(report_loop, [])
assert acl.rt.subscribe_report(tid, stream) == 0
def fn(data):
    rets.append(acl.rt.synchronize_stream(stream))
assert acl.rt.launch_callback(fn, [], 1, stream) == 0   # ACL_CALLBACK_BLOCK
assert acl.rt.synchronize_stream_with_timeout(stream, 20_000) == 0
assert rets == [C.ACL_ERROR_RT_PARAM_INVALID], rets
""",
}


@pytest.fixture(scope="module")
def cases():
    return IsolatedCases(PRELUDE, CASES, timeout=60)


@pytest.mark.parametrize("case", list(CASES))
def test_a_self_synchronize_is_refused_with_deadlock_error(cases, case):
    outcome = cases.result(case)
    assert outcome == "ok", outcome
