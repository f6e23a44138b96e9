"""Kernels that never return (issue 11): the watchdog fails an overdue kernel with
ACL_ERROR_RT_AICORE_TIMEOUT (507014) at its deadline and its stream goes on; kernels that hang
on every worker do not starve the device's other streams; a device reset does not wait for
them. The cases run in a subprocess, so a regression (a hang) fails its test instead of
wedging pytest."""
from __future__ import annotations

import pytest

from isolation import IsolatedCases

PRELUDE = """
import threading, time
import numpy as np
from npurt import runtime as rt
from npurt.runtime import constants as C
from npurt.runtime.errors import TaskError
from npurt.runtime.kernel import GM, kernel, launch
rt.init(); rt.set_device(0)
spins = [0]

@kernel
def spin(ctx, x: GM):  # Python code that never returns
    while True:
        spins[0] += 1

@kernel
def sleeper(ctx, x: GM):  # stuck inside one C call
    time.sleep(3600)

@kernel
def fill(ctx, x: GM, v: np.int32):
    ctx.gm(x, np.int32, 16)[:] = v

TIMEOUT_100MS = [{"id": C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US, "value": 100_000}]
buf = rt.malloc(64)
host = np.zeros(16, np.int32)

def read(stream=None):
    rt.memcpy(host.ctypes.data, 64, buf, 64, C.ACL_MEMCPY_DEVICE_TO_HOST)
    return host.copy()
"""

CASES = {
    "an endless kernel fails at its timeout": """
s = rt.create_stream()
launch(spin, 1, (buf,), s, cfg=TIMEOUT_100MS)
launch(fill, 1, (buf, 7), s)
try:
    rt.synchronize_stream(s, 20_000)
except TaskError as exc:
    assert exc.code == C.ACL_ERROR_RT_AICORE_TIMEOUT, exc
    assert "aborted at its deadline" in exc.message, exc.message
else:
    raise AssertionError("no timeout reported")
assert (read() == 7).all()   # the stream went on
before = spins[0]
time.sleep(0.2)
assert spins[0] == before    # and the aborted kernel's body stopped
""",
    "a multi-block endless kernel fails at its timeout": """
s = rt.create_stream()
launch(spin, 8, (buf,), s, cfg=TIMEOUT_100MS)
launch(fill, 1, (buf, 8), s)
try:
    rt.synchronize_stream(s, 20_000)
except TaskError as exc:
    assert exc.code == C.ACL_ERROR_RT_AICORE_TIMEOUT, exc
assert (read() == 8).all()
before = spins[0]
time.sleep(0.2)
assert spins[0] == before
""",
    "a kernel stuck in C fails at its timeout": """
s = rt.create_stream()
launch(sleeper, 1, (buf,), s, cfg=TIMEOUT_100MS)
launch(fill, 1, (buf, 9), s)
try:
    rt.synchronize_stream(s, 20_000)
except TaskError as exc:
    assert exc.code == C.ACL_ERROR_RT_AICORE_TIMEOUT, exc
assert (read() == 9).all()
""",
    "the op execute timeout applies to launches without their own": """
rt.set_op_execute_timeout_us(100_000)
s = rt.create_stream()
launch(spin, 1, (buf,), s)
try:
    rt.synchronize_stream(s, 20_000)
except TaskError as exc:
    assert exc.code == C.ACL_ERROR_RT_AICORE_TIMEOUT, exc
else:
    raise AssertionError("no timeout reported")
rt.set_op_execute_timeout_us(0)
""",
    "endless kernels on every worker do not starve other streams": """
hung = [rt.create_stream() for _ in range(3)]   # more than the workers (NPURT_WORKERS=2)
for h in hung:
    launch(spin, 1, (buf,), h)              # the default timeout: 1091 s
time.sleep(0.3)
s = rt.create_stream()
launch(fill, 1, (buf, 11), s)
rt.synchronize_stream(s, 20_000)
assert (read() == 11).all()
rt.reset_device(0)  # aborts the endless kernels (they would burn CPU for the next cases)
rt.set_device(0)
buf = rt.malloc(64)
""",
    "reset_device does not wait for an endless kernel": """
s = rt.create_stream()
launch(spin, 1, (buf,), s)
time.sleep(0.2)
rt.reset_device(0)          # returns within the subprocess timeout (it used to take 30 s)
rt.set_device(0)
t = rt.create_stream()
out = []
rt.launch_host_func(t, out.append, 1)
rt.synchronize_stream(t, 20_000)
assert out == [1]
""",
}


@pytest.fixture(scope="module")
def cases():
    return IsolatedCases(PRELUDE, CASES, timeout=25)


def _ok(cases, name):
    outcome = cases.result(name)
    assert outcome == "ok", outcome


def test_an_endless_kernel_fails_with_aicore_timeout_at_its_deadline_and_the_stream_goes_on(cases):
    _ok(cases, "an endless kernel fails at its timeout")


def test_an_endless_kernel_of_many_blocks_is_aborted_on_every_core(cases):
    _ok(cases, "a multi-block endless kernel fails at its timeout")


def test_a_kernel_stuck_in_a_c_call_fails_at_its_deadline_and_the_stream_goes_on(cases):
    _ok(cases, "a kernel stuck in C fails at its timeout")


def test_the_op_execute_timeout_aborts_kernels_launched_without_their_own(cases):
    _ok(cases, "the op execute timeout applies to launches without their own")


def test_endless_kernels_on_every_worker_do_not_starve_the_other_streams(cases):
    _ok(cases, "endless kernels on every worker do not starve other streams")


def test_reset_device_does_not_wait_for_an_endless_kernel(cases):
    _ok(cases, "reset_device does not wait for an endless kernel")
