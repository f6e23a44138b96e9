"""acl.prof: pyACL's profiling API on npurt's profiler (argument parsing as the real
extension does it, return shapes, error codes, what each switch collects)."""
from __future__ import annotations

import csv
import json
import os
import time

import pytest

import npurt
import npurt.acl as acl
from npurt.acl import constants as C
from npurt.runtime.runtime import RUNTIME
from npurt.runtime.tasks import Task

ALL = C.ACL_PROF_ACL_API | C.ACL_PROF_TASK_TIME | C.ACL_PROF_MSPROFTX | C.ACL_PROF_TASK_MEMORY \
    | C.ACL_PROF_TRAINING_TRACE


@pytest.fixture
def env(fresh_runtime, tmp_path):
    """acl.init + device 0 + a stream; acl.prof left as it was found (finalized)."""
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    yield stream, tmp_path
    from npurt.acl import prof
    if prof._state.initialized:
        acl.prof.finalize()
    for model_id in list(prof._state.subscribed):
        acl.prof.model_unsubscribe(model_id)


def _last():
    return acl.rt.get_last_error(0), acl.get_recent_err_msg()


def _output(path):
    (out,) = list(path.glob("PROF_*/mindstudio_profiler_output"))
    return out


def _rows(out, name):
    with open(out / f"{name}.csv", newline="") as f:
        return list(csv.DictReader(f))


def _session(stream, path, switches=ALL, work=None):
    """init, create_config, start, work(), stop, finalize; returns the output directory."""
    assert acl.prof.init(str(path)) == 0
    config = acl.prof.create_config([0], C.ACL_AICORE_NONE, 0, switches)
    assert config != 0, acl.get_recent_err_msg()
    assert acl.prof.start(config) == 0
    if work is not None:
        work()
    assert acl.prof.stop(config) == 0
    assert acl.prof.destroy_config(config) == 0
    assert acl.prof.finalize() == 0
    return _output(path)


def _copy(stream, nbytes=1 << 16):
    dev, _ = acl.rt.malloc(nbytes, 0)
    host, _ = acl.rt.malloc_host(nbytes)
    assert acl.rt.memcpy_async(dev, nbytes, host, nbytes, C.ACL_MEMCPY_HOST_TO_DEVICE, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0


# ---------------------------------------------------------------- a session
def test_a_session_writes_msprof_layout_with_trace_and_summaries(env):
    stream, path = env
    out = _session(stream, path, work=lambda: _copy(stream))
    assert out.parent.name.startswith("PROF_000001_")
    doc = json.loads((out / "msprof.json").read_text())
    assert any(e.get("name") == "memcpy_async H2D" for e in doc["traceEvents"])
    assert [r["OP Type"] for r in _rows(out, "op_statistic")] == ["memcpy_async H2D"]
    assert {r["API Name"] for r in _rows(out, "api_statistic")} >= {"acl.rt.memcpy_async", "acl.rt.malloc"}


def test_switches_select_what_is_collected(env):
    stream, path = env
    out = _session(stream, path, C.ACL_PROF_TASK_TIME, work=lambda: _copy(stream))
    assert len(_rows(out, "task_time")) == 1 and _rows(out, "api_statistic") == []
    out2 = path / "api_only"
    out2 = _session(stream, out2, C.ACL_PROF_ACL_API, work=lambda: _copy(stream))
    assert _rows(out2, "task_time") == [] and len(_rows(out2, "api_statistic")) >= 3


def test_only_the_configs_devices_are_collected(env):
    stream, path = env
    assert acl.prof.init(str(path)) == 0
    config = acl.prof.create_config([1], C.ACL_AICORE_NONE, 0, C.ACL_PROF_TASK_TIME)
    assert acl.prof.start(config) == 0
    _copy(stream)  # on device 0
    assert acl.rt.set_device(1) == 0
    s1, _ = acl.rt.create_stream()
    _copy(s1)
    assert acl.prof.stop(config) == 0
    assert {r["Device_id"] for r in _rows(_output(path), "task_time")} == {"1"}


def test_each_start_stop_pair_writes_its_own_prof_directory(env):
    stream, path = env
    assert acl.prof.init(str(path)) == 0
    config = acl.prof.create_config([0], C.ACL_AICORE_NONE, 0, C.ACL_PROF_TASK_TIME)
    for _ in range(2):
        assert acl.prof.start(config) == 0
        _copy(stream)
        assert acl.prof.stop(config) == 0
    assert len(list(path.glob("PROF_*/mindstudio_profiler_output/msprof.json"))) == 2


def test_finalize_while_running_writes_the_session_first(env):
    stream, path = env
    assert acl.prof.init(str(path)) == 0
    config = acl.prof.create_config([0], C.ACL_AICORE_NONE, 0, C.ACL_PROF_TASK_TIME)
    assert acl.prof.start(config) == 0
    _copy(stream)
    assert acl.prof.finalize() == 0
    assert len(_rows(_output(path), "task_time")) == 1
    assert acl.prof.stop(config) == C.ACL_ERROR_PROF_NOT_RUN


def test_set_config_path_sets_where_sessions_write(env):
    stream, path = env
    other = path / "elsewhere"
    assert acl.prof.init(str(path / "first")) == 0
    assert acl.prof.set_config(C.ACL_PROF_PATH, str(other)) == 0
    assert acl.prof.set_config(C.ACL_PROF_STORAGE_LIMIT, "200MB") == 0
    config = acl.prof.create_config([0], C.ACL_AICORE_NONE, 0, C.ACL_PROF_TASK_TIME)
    assert acl.prof.start(config) == 0 and acl.prof.stop(config) == 0
    assert list(other.glob("PROF_*")) and not list((path / "first").glob("PROF_*"))


# ---------------------------------------------------------------- msproftx and steps
def test_stamps_push_pop_ranges_and_marks_land_in_msprof_tx(env):
    stream, path = env

    def work():
        stamp = acl.prof.create_stamp()
        assert stamp != 0
        assert acl.prof.set_stamp_trace_message(stamp, "load weights", 4) == 0   # msg_len cuts it
        assert acl.prof.push(stamp) == 0
        rid, ret = acl.prof.range_start(stamp)
        assert ret == 0 and rid > 0
        assert acl.prof.mark(stamp) == 0
        assert acl.prof.range_stop(rid) == 0
        assert acl.prof.pop() == 0
        assert acl.prof.mark_ex("on the stream", stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        assert acl.prof.destroy_stamp(stamp) is None
    out = _session(stream, path, work=work)
    rows = [(r["event_type"], r["message"]) for r in _rows(out, "msprof_tx")]
    assert sorted(rows) == sorted([("push/pop", "load"), ("start/end", "load"), ("marker", "load"),
                                   ("marker", "on the stream")])
    markers = [r for r in _rows(out, "task_time") if r["kernel_type"] == "PROFILER_TRACE"]
    assert [m["kernel_name"] for m in markers] == ["on the stream"]


def test_step_timestamps_make_device_side_steps(env):
    stream, path = env

    def work():
        info = acl.prof.create_step_info()
        assert acl.prof.get_step_timestamp(info, C.ACL_STEP_START, stream) == 0
        _copy(stream, 1 << 20)
        assert acl.prof.get_step_timestamp(info, C.ACL_STEP_END, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        assert acl.prof.destroy_step_info(info) is None
    out = _session(stream, path, work=work)
    steps = [r for r in _rows(out, "overlap") if r["Step"].startswith("step ")]
    assert len(steps) == 1
    copy = next(r for r in _rows(out, "op_summary") if r["OP Type"] == "memcpy_async H2D")
    assert float(steps[0]["Busy(us)"]) >= float(copy["Task Duration(us)"]) - 0.01
    doc = json.loads((out / "msprof.json").read_text())
    assert [e["name"] for e in doc["traceEvents"] if e.get("cat") == "step"] == [steps[0]["Step"]]


def test_marker_calls_outside_a_session_and_unbalanced_ones_return_codes(env):
    stream, path = env
    assert acl.prof.create_stamp() == 0 and _last()[0] == C.ACL_ERROR_PROF_NOT_RUN
    assert acl.prof.pop() == C.ACL_ERROR_PROF_NOT_RUN
    assert acl.prof.range_start(12345) == (0, C.ACL_ERROR_PROF_NOT_RUN)
    assert acl.prof.get_step_timestamp(acl.prof.create_step_info(), 0, stream) == C.ACL_ERROR_PROF_NOT_RUN

    def work():
        stamp = acl.prof.create_stamp()
        assert acl.prof.pop() == C.ACL_ERROR_INVALID_PARAM              # nothing pushed
        assert acl.prof.range_stop(999) == C.ACL_ERROR_INVALID_PARAM    # no such range
        assert acl.prof.mark(stamp + 1) == C.ACL_ERROR_INVALID_PARAM    # not a stamp
        assert acl.prof.mark_ex("x" * 128, stream) == C.ACL_ERROR_INVALID_PARAM
        assert acl.prof.mark_ex("ok", 0x5700_0000_0999) == C.ACL_ERROR_RT_INVALID_HANDLE
        assert acl.prof.set_stamp_trace_message(stamp, "ab", 3) == C.ACL_ERROR_INVALID_PARAM
        info = acl.prof.create_step_info()
        assert acl.prof.get_step_timestamp(info, 2, stream) == C.ACL_ERROR_INVALID_PARAM
        assert acl.prof.get_step_timestamp(info, C.ACL_STEP_END, stream) == C.ACL_ERROR_INVALID_PARAM
        acl.prof.destroy_stamp(stamp)
    _session(stream, path, work=work)


# ---------------------------------------------------------------- the order of calls and bad configs
def test_calls_out_of_order_return_the_prof_codes(env):
    stream, path = env
    config = acl.prof.create_config([0], C.ACL_AICORE_NONE, 0, C.ACL_PROF_TASK_TIME)
    assert acl.prof.start(config) == C.ACL_ERROR_PROF_NOT_RUN          # no init
    assert acl.prof.finalize() == C.ACL_ERROR_PROF_NOT_RUN
    assert acl.prof.init(str(path)) == 0
    assert acl.prof.init(str(path)) == C.ACL_ERROR_PROF_ALREADY_RUN
    assert acl.prof.stop(config) == C.ACL_ERROR_PROF_NOT_RUN           # not started
    assert acl.prof.start(0) == C.ACL_ERROR_INVALID_PARAM
    assert acl.prof.start(config) == 0
    assert acl.prof.start(config) == C.ACL_ERROR_PROF_ALREADY_RUN
    assert acl.prof.set_config(C.ACL_PROF_STORAGE_LIMIT, "500MB") == C.ACL_ERROR_PROF_ALREADY_RUN
    other = acl.prof.create_config([0], C.ACL_AICORE_NONE, 0, C.ACL_PROF_ACL_API)
    assert acl.prof.stop(other) == C.ACL_ERROR_INVALID_PROFILING_CONFIG
    assert "differs" in _last()[1]
    assert acl.prof.stop(config) == 0
    assert acl.prof.destroy_config(config) == 0
    assert acl.prof.destroy_config(config) == C.ACL_ERROR_INVALID_PARAM
    assert acl.prof.destroy_config(0) == C.ACL_ERROR_INVALID_PARAM


def test_init_needs_acl_init_and_a_usable_path(fresh_runtime, tmp_path):
    assert acl.prof.init(str(tmp_path)) == C.ACL_ERROR_UNINITIALIZE
    assert acl.init() == 0
    (tmp_path / "f").write_text("")
    assert acl.prof.init(str(tmp_path / "f")) == C.ACL_ERROR_INVALID_PARAM
    assert "not a directory" in acl.get_recent_err_msg()
    assert acl.prof.init("") == C.ACL_ERROR_INVALID_PARAM
    assert acl.prof.init(str(tmp_path / "new" / "dir")) == 0          # made if missing
    assert os.path.isdir(tmp_path / "new" / "dir")
    assert acl.prof.finalize() == 0


def test_a_session_while_npurt_profiler_runs_is_refused(env):
    stream, path = env
    assert acl.prof.init(str(path)) == 0
    config = acl.prof.create_config([0], C.ACL_AICORE_NONE, 0, C.ACL_PROF_TASK_TIME)
    with npurt.profiler.profile():
        assert acl.prof.start(config) == C.ACL_ERROR_PROF_ALREADY_RUN
    assert acl.prof.start(config) == 0 and acl.prof.stop(config) == 0  # usable afterwards


@pytest.mark.parametrize("args,code", [
    (([5], C.ACL_AICORE_NONE, 0, C.ACL_PROF_TASK_TIME), C.ACL_ERROR_INVALID_PARAM),     # no device 5
    (([0, 0], C.ACL_AICORE_NONE, 0, C.ACL_PROF_TASK_TIME), C.ACL_ERROR_INVALID_PARAM),  # listed twice
    (([], C.ACL_AICORE_NONE, 0, C.ACL_PROF_TASK_TIME), C.ACL_ERROR_INVALID_PARAM),
    (([0], 9, 0, C.ACL_PROF_TASK_TIME), C.ACL_ERROR_INVALID_PARAM),                     # no such metric
    (([0], C.ACL_AICORE_NONE, 1, C.ACL_PROF_TASK_TIME), C.ACL_ERROR_INVALID_PARAM),     # reserved
    (([0], C.ACL_AICORE_NONE, 0, 1 << 50), C.ACL_ERROR_PROF_MODULES_UNSUPPORTED),
])
def test_create_config_returns_0_and_records_the_code_for_a_bad_config(env, args, code):
    assert acl.prof.create_config(*args) == 0
    assert _last()[0] == code


def test_set_config_checks_its_type_and_value(env):
    stream, path = env
    assert acl.prof.set_config(0, "x") == C.ACL_ERROR_INVALID_PARAM            # ACL_PROF_ARGS_MIN
    assert acl.prof.set_config(2, "x") == C.ACL_ERROR_INVALID_PARAM            # not a type
    assert acl.prof.set_config(C.ACL_PROF_ARGS_MAX, "x") == C.ACL_ERROR_INVALID_PARAM
    assert acl.prof.set_config(C.ACL_PROF_STORAGE_LIMIT, "100MB") == C.ACL_ERROR_INVALID_PARAM
    assert acl.prof.set_config(C.ACL_PROF_SYS_HARDWARE_MEM_FREQ, "fast") == C.ACL_ERROR_INVALID_PARAM
    assert acl.prof.set_config(C.ACL_PROF_SYS_HARDWARE_MEM_FREQ, "15") == 0
    assert acl.prof.set_config(C.ACL_PROF_HOST_SYS, "x" * 257) == C.ACL_ERROR_INVALID_PARAM


# ---------------------------------------------------------------- argument parsing (the extension's)
@pytest.mark.parametrize("call,exc,message", [
    (lambda: acl.prof.init(1), TypeError, "acl.prof.Init args parse failed!"),
    (lambda: acl.prof.init(b"dir"), TypeError, "acl.prof.Init args parse failed!"),
    (lambda: acl.prof.init(), TypeError, "acl.prof.Init args parse failed!"),
    (lambda: acl.prof.start(None), TypeError, "acl.prof.start args parse failed!"),
    (lambda: acl.prof.stop(1.0), TypeError, "acl.prof.stop args parse failed!"),
    (lambda: acl.prof.create_config((0,), 0, 0, 2), TypeError, "argument 1 is not list"),
    (lambda: acl.prof.create_config(["0"], 0, 0, 2), TypeError, "the first argument is not list of int"),
    (lambda: acl.prof.create_config([-1], 0, 0, 2), ValueError, "PyLong_AsUnsignedLong failed"),
    (lambda: acl.prof.create_config([0], 0.5, 0, 2), TypeError, "acl.prof.create_config args parse failed!"),
    (lambda: acl.prof.set_config("1", "200MB"), TypeError, "acl.prof.set_config args parse failed!"),
    (lambda: acl.prof.set_config(1 << 40, "200MB"), TypeError, "acl.prof.set_config args parse failed!"),
    (lambda: acl.prof.init("a\0b"), TypeError, "acl.prof.Init args parse failed!"),
    (lambda: acl.prof.set_stamp_trace_message(1, b"m", 1), TypeError, "args parse failed!"),
    (lambda: acl.prof.range_stop("1"), TypeError, "acl.prof.range_stop args parse failed!"),
    (lambda: acl.prof.mark_ex("m"), TypeError, "acl.prof.mark_ex args parse failed!"),
    (lambda: acl.prof.model_subscribe(1, None), TypeError, "acl.prof.model_subscribe args parse failed"),
    (lambda: acl.prof.create_subscribe_config(2.0, 0, 1), TypeError, "args parse failed"),
])
def test_malformed_arguments_raise_as_the_extension_does(env, call, exc, message):
    with pytest.raises(exc, match=message.replace("(", r"\(")):
        call()


def test_keywords_are_refused_and_handles_wrap_as_unsigned_long(env):
    with pytest.raises(TypeError):
        acl.prof.init(profiler_result_path="x")
    assert acl.prof.destroy_config(-1) == C.ACL_ERROR_INVALID_PARAM  # 2**64 - 1: not a config
    assert acl.prof.pop("ignored", "too") == C.ACL_ERROR_PROF_NOT_RUN  # no parsing: extra args ignored


def test_profiling_constants_are_the_headers_values():
    assert (C.ACL_PROF_ACL_API, C.ACL_PROF_TASK_TIME, C.ACL_PROF_MSPROFTX, C.ACL_PROF_TASK_TIME_L0) == \
        (0x1, 0x2, 0x80, 0x800)
    assert (C.ACL_PROF_GE_API_L1, C.ACL_PROF_API_STATS, C.ACL_PROF_AICORE_SHAPE) == (0x01000000, 0x400000000,
                                                                                      0x800000000)
    assert (C.ACL_AICORE_NONE, C.ACL_STEP_END, C.ACL_PROF_PATH, C.ACL_PROF_ARGS_MAX) == (0xFF, 1, 16, 17)
    assert acl.ACL_PROF_TASK_TIME == acl.rt.ACL_PROF_TASK_TIME == 2
    assert "ACL_PROF_MSPROFTX" in C.GROUPS["profiling (acl.prof)"]


# ---------------------------------------------------------------- model subscription
class _ModelRun(Task):
    __slots__ = ()
    kind = "model_execute"

    def run(self):
        time.sleep(0.001)

    def details(self):
        t = time.perf_counter_ns()
        return {"name": "net", "model_id": 7,
                "ops": [("conv1", "Conv2D", t - 3000_000, t - 2000_000), ("relu1", "Relu", t - 2000_000, t - 1000_000)]}


def test_a_subscribed_models_executions_write_op_records_the_getters_read(env, monkeypatch):
    from npurt.acl import _prof_subscribe
    from npurt.runtime import api
    stream, _ = env
    monkeypatch.setattr(_prof_subscribe, "_loaded_model", lambda model_id: object() if model_id == 7 else None)
    r, w = os.pipe()
    try:
        sub = acl.prof.create_subscribe_config(1, C.ACL_AICORE_NONE, w)
        assert sub != 0
        assert acl.prof.model_subscribe(7, sub) == 0
        assert acl.prof.model_subscribe(7, sub) == C.ACL_ERROR_PROF_REPEAT_SUBSCRIBE
        assert acl.prof.init("/tmp") == C.ACL_ERROR_PROF_API_CONFLICT
        api.enqueue(RUNTIME.streams.get(stream), _ModelRun())  # what a model execution is to the runtime
        assert acl.rt.synchronize_stream(stream) == 0
        size, ret = acl.prof.get_op_desc_size()
        assert ret == 0
        data = os.read(r, 2 * size)
        assert acl.prof.model_unsubscribe(7) == 0
        assert acl.prof.model_un_subscribe(7) == C.ACL_ERROR_INVALID_PARAM
        assert acl.prof.destroy_subscribe_config(sub) == 0
    finally:
        os.close(r)
        os.close(w)
    ptr = acl.util.bytes_to_ptr(data)
    assert acl.prof.get_op_num(ptr, len(data)) == (2, 0)
    assert acl.prof.get_op_type(ptr, len(data), 0, 65) == ("Conv2D", 0)
    assert acl.prof.get_op_name(ptr, len(data), 1, 257) == ("relu1", 0)
    assert acl.prof.get_op_type_v2(ptr, len(data), 1) == ("Relu", 0)
    assert acl.prof.get_op_name_v2(ptr, len(data), 0) == ("conv1", 0)
    assert acl.prof.get_op_type_len(ptr, len(data), 0) == (len("Conv2D") + 1, 0)
    assert acl.prof.get_op_name_len(ptr, len(data), 1) == (len("relu1") + 1, 0)
    assert acl.prof.get_op_duration(ptr, len(data), 0) == 1000
    assert acl.prof.get_op_end(ptr, len(data), 0) - acl.prof.get_op_start(ptr, len(data), 0) == 1000
    assert acl.prof.get_model_id(ptr, len(data), 1) == 7
    assert acl.prof.get_op_type(ptr, len(data), 0, 3) == ("", C.ACL_ERROR_INVALID_PARAM)    # buffer too small
    assert acl.prof.get_op_type(ptr, len(data), 0, 5000) == ("", C.ACL_ERROR_INVALID_PARAM)  # over 4096
    assert acl.prof.get_op_name_v2(ptr, len(data), 2) == (None, C.ACL_ERROR_INVALID_PARAM)  # no third op
    assert acl.prof.get_op_num(ptr, len(data) - 1) == (0, C.ACL_ERROR_INVALID_PARAM)
    assert acl.prof.get_op_start(ptr, len(data), 9) == 0


def test_subscribing_an_unknown_model_or_with_a_bad_config_fails(env):
    r, w = os.pipe()
    try:
        sub = acl.prof.create_subscribe_config(1, C.ACL_AICORE_NONE, w)
        assert acl.prof.model_subscribe(99, sub) == 145003  # ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
        assert acl.prof.model_subscribe(99, 0) == C.ACL_ERROR_INVALID_PARAM
        assert acl.prof.model_unsubscribe(99) == C.ACL_ERROR_INVALID_PARAM
    finally:
        os.close(r)
        os.close(w)
    assert acl.prof.create_subscribe_config(1, C.ACL_AICORE_NONE, 10_000) == 0   # not an open fd
    assert acl.prof.create_subscribe_config(2, C.ACL_AICORE_NONE, 1) == 0       # switch is 0 or 1


def test_a_real_models_executions_reach_its_subscribers_pipe_and_the_timeline(env, tmp_path):
    M = pytest.importorskip("onnx_models")
    import numpy as np
    path = M.atc(M.save(M.mlp(), tmp_path / "mlp.onnx"), tmp_path / "mlp", input_shape="x:3,16")
    model_id, ret = acl.mdl.load_from_file(path)
    assert ret == 0, acl.get_recent_err_msg()
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == 0
    x = np.ones((3, 16), np.float32)
    ptrs = []

    def dataset(size, data=None):
        ptr, _ = acl.rt.malloc(size, 0)
        ptrs.append(ptr)
        if data is not None:
            raw = data.tobytes()
            assert acl.rt.memcpy(ptr, size, acl.util.bytes_to_ptr(raw), len(raw), C.ACL_MEMCPY_HOST_TO_DEVICE) == 0
        ds = acl.mdl.create_dataset()
        acl.mdl.add_dataset_buffer(ds, acl.create_data_buffer(ptr, size))
        return ds
    inputs = dataset(x.nbytes, x)
    outputs = dataset(acl.mdl.get_output_size_by_index(desc, 0))
    r, w = os.pipe()
    try:
        sub = acl.prof.create_subscribe_config(1, C.ACL_AICORE_NONE, w)
        assert acl.prof.model_subscribe(model_id, sub) == 0
        for _ in range(2):
            assert acl.mdl.execute(model_id, inputs, outputs) == 0
        size, _ = acl.prof.get_op_desc_size()
        data = os.read(r, 2 * size)
        assert acl.prof.model_unsubscribe(model_id) == 0
    finally:
        os.close(r)
        os.close(w)
    ptr = acl.util.bytes_to_ptr(data)
    assert acl.prof.get_op_num(ptr, len(data)) == (2, 0)
    assert [acl.prof.get_model_id(ptr, len(data), i) for i in range(2)] == [model_id, model_id]
    assert acl.prof.get_op_duration(ptr, len(data), 0) == \
        acl.prof.get_op_end(ptr, len(data), 0) - acl.prof.get_op_start(ptr, len(data), 0)

    out = _session(None, tmp_path / "prof", C.ACL_PROF_TASK_TIME,
                   work=lambda: acl.mdl.execute(model_id, inputs, outputs))
    (row,) = [r for r in _rows(out, "op_summary") if r["Task Type"] == "MODEL_EXECUTE"]
    assert row["Model ID"] == str(model_id) and row["Op Name"] == row["Model Name"]
    assert acl.mdl.unload(model_id) == 0


def test_an_unknown_name_in_acl_prof_is_an_attribute_error_as_in_the_extension():
    with pytest.raises(AttributeError):
        acl.prof.no_such_profiling_call  # noqa: B018
