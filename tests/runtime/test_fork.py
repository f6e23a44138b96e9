"""Processes (issue 11): a child of os.fork() of a process that used npurt gets a fresh,
working runtime, and the parent's objects are a clear error there (naming the 'spawn' start
method), never a hang, even when a thread of the parent held a runtime lock at the fork;
multiprocessing workers of a script under `npurt run` can `import acl`."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from isolation import IsolatedCases

PRELUDE = """
import os, signal, threading, time
import numpy as np
import npurt.acl as acl
from npurt.runtime import constants as C
assert acl.init() == 0 and acl.rt.set_device(0) == 0
stream, _ = acl.rt.create_stream()
dev, _ = acl.rt.malloc(64, 0)
assert acl.rt.memset_async(dev, 64, 1, 64, stream) == 0   # the parent's workers are running
assert acl.rt.synchronize_stream(stream) == 0

def in_child(body):
    '''Run body() in a forked child; its exit status (a hang is killed after 20 s).'''
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)
        status = 1
        try:
            body()
            status = 0
        except BaseException:
            import traceback; traceback.print_exc()
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    return status

def fresh_runtime_works():
    assert acl.init() == 0, "the child starts uninitialized"
    assert acl.rt.set_device(0) == 0
    s, ret = acl.rt.create_stream()
    d, ret = acl.rt.malloc(64, 0)
    host = np.zeros(64, np.uint8)
    assert acl.rt.memset_async(d, 64, 7, 64, s) == 0
    assert acl.rt.synchronize_stream(s) == 0
    assert acl.rt.memcpy(host.ctypes.data, 64, d, 64, C.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    assert (host == 7).all()
"""

CASES = {
    "fresh runtime": """
assert in_child(fresh_runtime_works) == 0
assert acl.rt.memset_async(dev, 64, 2, 64, stream) == 0   # the parent is unaffected
assert acl.rt.synchronize_stream(stream) == 0
""",
    "parent handles": """
def use_parent_stream():
    ret = acl.rt.synchronize_stream(stream)
    assert ret == C.ACL_ERROR_RT_INVALID_HANDLE, ret
    assert "spawn" in acl.get_recent_err_msg()
    ret = acl.rt.memset_async(dev, 64, 3, 64, 0)   # no context here: the parent's was not inherited
    assert ret in (C.ACL_ERROR_RT_CONTEXT_NULL, C.ACL_ERROR_UNINITIALIZE), ret
    assert "os.fork()" in acl.get_recent_err_msg()
assert in_child(use_parent_stream) == 0
""",
    "lock held at the fork": """
from npurt.runtime.runtime import RUNTIME
from npurt.runtime import stream as stream_module
held, release = threading.Event(), threading.Event()
def hold():
    with RUNTIME.lock, stream_module._COND_LOCK, RUNTIME.device(0).memory.lock:
        held.set()
        release.wait()
t = threading.Thread(target=hold)
t.start(); held.wait()
try:
    assert in_child(fresh_runtime_works) == 0
finally:
    release.set(); t.join()
""",
    "pythonic api": """
import npurt
x = npurt.to_device(np.arange(4, dtype=np.float32))
def child():
    s1, s2 = npurt.Stream(), npurt.Stream()
    with s1:
        y = npurt.to_device(np.arange(4, dtype=np.float32)) * 2
    s2.wait_event(s1.record_event())  # s2 waits for s1: a worker has to run s1
    with s2:
        z = y + 1
    assert (z.to_host(stream=s2) == [1, 3, 5, 7]).all()
    try:
        x.to_host()   # an array of the parent's runtime
    except npurt.NpuError as exc:
        assert "spawn" in str(exc), exc
    else:
        raise AssertionError("the parent's array was readable in the child")
assert in_child(child) == 0
assert (x.to_host() == [0, 1, 2, 3]).all()
""",
}


@pytest.fixture(scope="module")
def cases():
    return IsolatedCases(PRELUDE, CASES, timeout=90)


def _ok(cases, name):
    outcome = cases.result(name)
    assert outcome == "ok", outcome


def test_a_forked_child_gets_a_fresh_working_runtime(cases):
    _ok(cases, "fresh runtime")


def test_the_parents_objects_in_a_forked_child_are_an_error_naming_spawn(cases):
    _ok(cases, "parent handles")


def test_a_fork_while_another_thread_holds_runtime_locks_does_not_deadlock_the_child(cases):
    _ok(cases, "lock held at the fork")


def test_the_pythonic_api_works_in_a_forked_child(cases):
    _ok(cases, "pythonic api")


SCRIPT = """
import multiprocessing as mp, sys
import acl

def work(i):
    assert acl.init() in (0, 100002)
    assert acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    dev, _ = acl.rt.malloc(64, 0)
    assert acl.rt.memset_async(dev, 64, i, 64, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    return i * i

if __name__ == "__main__":
    assert acl.init() == 0 and acl.rt.set_device(0) == 0   # the parent uses the runtime first
    with mp.get_context(sys.argv[1]).Pool(2) as pool:
        print("squares", sorted(pool.map(work, range(4))))
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_multiprocessing_workers_of_a_script_under_npurt_run_can_import_acl(tmp_path, method):
    script = tmp_path / "pool.py"
    script.write_text(textwrap.dedent(SCRIPT))
    proc = subprocess.run([sys.executable, "-m", "npurt.cli", "run", str(script), method],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "squares [0, 1, 4, 9]" in proc.stdout


_LOCK_SCAN = """
import importlib, pkgutil, sys, threading
import npurt
from npurt.runtime import forking
for info in pkgutil.walk_packages(npurt.__path__, "npurt."):
    if info.name.startswith(("npurt.apps", "npurt.__main__", "npurt.pytest_plugin", "npurt.cli")):
        continue
    try:
        importlib.import_module(info.name)
    except ImportError:  # an optional extra that is not installed
        pass
kinds = (type(threading.Lock()), type(threading.RLock()), threading.Condition)
registered = {id(lock) for lock in forking._LOCKS}
print(sorted(f"{name}.{attr}" for name, module in list(sys.modules.items())
             if module is not None and (name == "npurt" or name.startswith("npurt."))
             for attr, value in list(vars(module).items())
             if isinstance(value, kinds) and id(value) not in registered))
"""


def test_every_module_level_lock_of_npurt_is_reinitialized_in_a_forked_child():
    """The child reinitializes the locks made by fork_safe_lock (it scans no module): so every
    module-level lock of npurt must be one. This test is the scan (in a process of its own:
    it imports every module)."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _LOCK_SCAN], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", ("module-level locks not made by fork_safe_lock (a forked child "
                                        f"may hang on them): {out.stdout}")
