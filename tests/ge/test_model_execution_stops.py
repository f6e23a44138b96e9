"""Model executions stop (issue 29, items 1 and 5): at the op execute timeout, at an
execute_v2 stream timeout, on Ctrl-C during a synchronous execute, and at unload, reset,
finalize and interpreter exit, without ever tearing ONNX Runtime down under a thread still
inside it. The model here is a Loop that never ends; the children run
tests/model_stop_workloads.py, so a crash (SIGABRT) or a hang fails a test, not pytest."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import onnx_models as M
import npurt.acl as acl
from npurt.acl import constants as C
from npurt.ge import constants as G

OK = 0
WORKLOADS = Path(__file__).resolve().parents[1] / "model_stop_workloads.py"
CHILD_TIMEOUT_S = 120  # generous: the scenarios take about a second


@pytest.fixture(scope="module")
def endless(tmp_path_factory):
    d = tmp_path_factory.mktemp("endless")
    return M.atc(M.save(M.endless_model(), d / "endless.onnx"), d / "endless")


def _child(scenario: str, om_path: str, signal_after_running=None, killed_by=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(WORKLOADS), scenario, om_path], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    try:
        if signal_after_running is not None:
            line = proc.stdout.readline()
            assert line.strip() == "RUNNING", line
            time.sleep(0.5)  # into the execute (the outcome must be the same if not yet)
            proc.send_signal(signal_after_running)
        out, _ = proc.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"{scenario}: hung (no exit within {CHILD_TIMEOUT_S} s)\n{out[-3000:]}")
    if killed_by is None or proc.returncode != -killed_by:
        assert proc.returncode >= 0, f"{scenario}: died with signal {-proc.returncode}\n{out[-3000:]}"
    return proc.returncode, out


# ---------------------------------------------------------------- item 1: nothing dies at exit
def test_a_script_that_ends_while_a_model_runs_exits_cleanly(endless):
    code, out = _child("exit", endless)
    assert code == 0, out[-3000:]


def test_a_script_that_raises_while_a_model_runs_exits_with_its_traceback_not_an_abort(endless):
    code, out = _child("raise", endless)
    assert code == 1 and "RuntimeError: the script failed while a model ran" in out, out[-3000:]


def test_a_script_interrupted_while_a_model_runs_ends_as_interrupted_not_aborted(endless):
    # an uncaught KeyboardInterrupt ends Python by SIGINT (status -2), after the exit hooks
    code, out = _child("interrupted", endless, signal_after_running=signal.SIGINT, killed_by=signal.SIGINT)
    assert code == -signal.SIGINT and "KeyboardInterrupt" in out, (code, out[-3000:])


def test_unload_while_the_model_runs_stops_it_and_the_stream_reports_it(endless):
    code, out = _child("unload", endless)
    assert code == 0, out[-3000:]
    assert f"DONE unload 0 sync {C.ACL_ERROR_RT_DEVICE_TASK_ABORT}" in out, out[-3000:]


@pytest.mark.parametrize("scenario", ["reset", "finalize"])
def test_reset_device_and_finalize_while_a_model_runs_stop_it(endless, scenario):
    code, out = _child(scenario, endless)
    assert code == 0 and f"DONE {scenario} 0" in out, out[-3000:]


# ---------------------------------------------------------------- item 5: timeouts and Ctrl-C
def test_ctrl_c_reaches_a_synchronous_execute_and_the_model_stays_usable(endless):
    code, out = _child("ctrl_c", endless, signal_after_running=signal.SIGINT)
    assert code == 0, out[-3000:]
    assert f"DONE interrupted, then {C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT}" in out, out[-3000:]


@pytest.fixture
def dev(fresh_runtime):
    assert acl.init() == OK
    assert acl.rt.set_device(0) == OK
    yield


def _io():
    x = np.zeros(4, np.float32)
    ptrs = [acl.rt.malloc(16, 0)[0] for _ in range(2)]
    assert acl.rt.memcpy(ptrs[0], 16, x.ctypes.data, 16, C.ACL_MEMCPY_HOST_TO_DEVICE) == OK
    ins, outs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    acl.mdl.add_dataset_buffer(ins, acl.create_data_buffer(ptrs[0], 16))
    acl.mdl.add_dataset_buffer(outs, acl.create_data_buffer(ptrs[1], 16))
    return ins, outs, ptrs


@pytest.mark.timeout(120)  # before issue 29 the model never stopped
def test_an_endless_model_fails_at_the_op_execute_timeout_and_the_stream_goes_on(dev, endless):
    model_id, ret = acl.mdl.load_from_file(endless)
    assert ret == OK
    ins, outs, ptrs = _io()
    stream, _ = acl.rt.create_stream()
    assert acl.rt.set_op_execute_timeout_v2(1)[1] == OK  # the shortest: one interval (about 4.3 s)
    assert acl.mdl.execute_async(model_id, ins, outs, stream) == OK
    assert acl.rt.synchronize_stream(stream) == C.ACL_ERROR_RT_AICORE_TIMEOUT
    assert "op execute timeout" in acl.get_recent_err_msg()
    assert acl.rt.memset_async(ptrs[1], 16, 7, 16, stream) == OK  # the stream goes on
    assert acl.rt.synchronize_stream(stream) == OK
    assert acl.mdl.unload(model_id) == OK
    for p in ptrs:
        acl.rt.free(p)


@pytest.mark.timeout(120)
def test_an_execute_v2_stream_timeout_stops_the_model_and_returns_the_sync_timeout(dev, endless):
    model_id, ret = acl.mdl.load_from_file(endless)
    assert ret == OK
    ins, outs, ptrs = _io()
    stream, _ = acl.rt.create_stream()
    config = acl.mdl.create_exec_config_handle()
    assert acl.mdl.set_exec_config_opt(config, G.ACL_MDL_STREAM_SYNC_TIMEOUT, 300) == OK
    assert acl.mdl.execute_v2(model_id, ins, outs, stream, config) == C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
    # the execution was stopped: the stream's next work runs (it would wait for ever before)
    assert acl.rt.memset_async(ptrs[1], 16, 7, 16, stream) == OK
    assert acl.rt.synchronize_stream(stream) == C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT  # its failure
    assert "stream timeout of 300 ms" in acl.get_recent_err_msg()
    assert acl.rt.synchronize_stream(stream) == OK
    acl.mdl.destroy_exec_config_handle(config)
    assert acl.mdl.unload(model_id) == OK
    for p in ptrs:
        acl.rt.free(p)


def test_finished_executions_do_not_stay_on_the_deadline_heap():
    # every execution is watched until the op execute timeout (1091 s by default): finished
    # ones must not pile up (nor keep their tasks, and the datasets they hold, alive)
    import gc
    import weakref
    from npurt.ge.deadlines import Deadlines

    class Task:
        def expire(self):
            raise AssertionError("not due")

    deadlines, refs = Deadlines(), []
    for _ in range(10_000):
        task = Task()
        refs.append(weakref.ref(task))
        deadlines.watch(task, time.monotonic() + 1000)
        deadlines.unwatch(task)
    del task
    gc.collect()
    assert len(deadlines._heap) < 100
    assert sum(r() is not None for r in refs) < 100
