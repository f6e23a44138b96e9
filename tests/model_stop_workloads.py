"""Child processes for tests/ge/test_model_execution_stops.py (issue 29, items 1 and 5): each
loads an endless model (a Loop that never ends) and does one hostile thing while it runs.

    python tests/model_stop_workloads.py SCENARIO OM_PATH

Prints "RUNNING" once the model is running (the parent may then signal it) and "DONE ..." at
the end of a scenario that returns.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import npurt.acl as acl
from npurt.acl import constants as C
from npurt.ge import constants as G

OK = 0


def ok(ret, what):
    if ret != OK:
        raise AssertionError(f"{what} returned {ret}: {acl.get_recent_err_msg()}")


def setup(om_path):
    ok(acl.init(), "init")
    ok(acl.rt.set_device(0), "set_device")
    model_id, ret = acl.mdl.load_from_file(om_path)
    ok(ret, "load_from_file")
    x = np.zeros(4, np.float32)
    ptrs = []
    for _ in range(2):
        p, ret = acl.rt.malloc(16, 0)
        ok(ret, "malloc")
        ptrs.append(p)
    ok(acl.rt.memcpy(ptrs[0], 16, x.ctypes.data, 16, C.ACL_MEMCPY_HOST_TO_DEVICE), "memcpy")
    ins, outs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    acl.mdl.add_dataset_buffer(ins, acl.create_data_buffer(ptrs[0], 16))
    acl.mdl.add_dataset_buffer(outs, acl.create_data_buffer(ptrs[1], 16))
    return model_id, ins, outs


def start_async(om_path):
    model_id, ins, outs = setup(om_path)
    stream, ret = acl.rt.create_stream()
    ok(ret, "create_stream")
    ok(acl.mdl.execute_async(model_id, ins, outs, stream), "execute_async")
    time.sleep(0.3)  # let a worker enter ONNX Runtime (the scenario must hold either way)
    print("RUNNING", flush=True)
    return model_id, stream


def scenario_exit(om_path):
    start_async(om_path)  # the script ends with the model running


def scenario_raise(om_path):
    start_async(om_path)
    raise RuntimeError("the script failed while a model ran")


def scenario_interrupted(om_path):
    start_async(om_path)
    time.sleep(120)  # Ctrl-C (SIGINT from the parent) lands here while the model runs


def scenario_unload(om_path):
    model_id, stream = start_async(om_path)
    ret = acl.mdl.unload(model_id)
    sync = acl.rt.synchronize_stream(stream)  # the stopped execution is the stream's error
    print(f"DONE unload {ret} sync {sync}", flush=True)


def scenario_reset(om_path):
    start_async(om_path)
    ret = acl.rt.reset_device(0)
    print(f"DONE reset {ret}", flush=True)


def scenario_finalize(om_path):
    start_async(om_path)
    ret = acl.finalize()
    print(f"DONE finalize {ret}", flush=True)


def scenario_ctrl_c(om_path):
    model_id, ins, outs = setup(om_path)
    print("RUNNING", flush=True)
    try:
        ret = acl.mdl.execute(model_id, ins, outs)
        print(f"DONE no interrupt {ret}", flush=True)
        return
    except KeyboardInterrupt:
        pass
    # the runtime goes on: the model is usable (its next run stops at a short stream timeout)
    stream, ret = acl.rt.create_stream()
    ok(ret, "create_stream")
    config = acl.mdl.create_exec_config_handle()
    ok(acl.mdl.set_exec_config_opt(config, G.ACL_MDL_STREAM_SYNC_TIMEOUT, 200), "set_exec_config_opt")
    ret = acl.mdl.execute_v2(model_id, ins, outs, stream, config)
    print(f"DONE interrupted, then {ret}", flush=True)
    ok(acl.mdl.unload(model_id), "unload")


if __name__ == "__main__":
    globals()[f"scenario_{sys.argv[1]}"](sys.argv[2])
