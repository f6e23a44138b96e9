"""acl.mdl on the simulated NPU: models converted by `npurt atc` from ONNX graphs built here,
loaded and run through pyACL exactly as an application does, and compared with ONNX
Runtime run directly on the same inputs."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import onnx_models as M
import npurt.acl as acl
from npurt.acl import constants as C
from npurt.ge import constants as G

OK = 0
INVALID = C.ACL_ERROR_INVALID_PARAM
H2D, D2H = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST


# ---------------------------------------------------------------- models (converted once)
@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    out = {}
    out["cnn_onnx"] = M.save(M.cnn(), d / "cnn.onnx")
    out["cnn"] = M.atc(out["cnn_onnx"], d / "cnn", input_shape="x:2,3,16,16")
    out["mlp_onnx"] = M.save(M.mlp(), d / "mlp.onnx")
    out["mlp"] = M.atc(out["mlp_onnx"], d / "mlp", input_shape="x:3,16")
    out["multi_onnx"] = M.save(M.multi_io(), d / "multi.onnx")
    out["multi"] = M.atc(out["multi_onnx"], d / "multi")
    out["batch"] = M.atc(out["cnn_onnx"], d / "cnn_batch", input_shape="x:-1,3,16,16", dynamic_batch_size="1,2,4")
    out["feat_onnx"] = M.save(M.conv_features(), d / "feat.onnx")
    out["hw"] = M.atc(out["feat_onnx"], d / "feat_hw", input_shape="x:1,3,-1,-1",
                      dynamic_image_size="8,8;16,12")
    out["dims"] = M.atc(out["mlp_onnx"], d / "mlp_dims", input_shape="x:-1,16", dynamic_dims="1;5",
                        input_format="ND")
    out["gather_onnx"] = M.save(M.gather_model(), d / "gather.onnx")
    out["gather"] = M.atc(out["gather_onnx"], d / "gather")
    out["nonzero_onnx"] = M.save(M.nonzero_model(), d / "nonzero.onnx")
    out["nonzero"] = M.atc(out["nonzero_onnx"], d / "nonzero", input_shape="x:1~16")
    out["dir"] = d
    return out


@pytest.fixture
def dev(fresh_runtime):
    assert acl.init() == OK
    assert acl.rt.set_device(0) == OK
    yield
    acl.rt.set_exception_info_callback(None)


class Mem:
    """Device buffers for a test: freed at the end."""

    def __init__(self):
        self.ptrs = []

    def put(self, array: np.ndarray, size: int | None = None) -> tuple[int, int]:
        a = np.ascontiguousarray(array)
        size = size or a.nbytes
        ptr, ret = acl.rt.malloc(size, 0)
        assert ret == OK
        self.ptrs.append(ptr)
        if a.nbytes:
            assert acl.rt.memcpy(ptr, size, a.ctypes.data, a.nbytes, H2D) == OK
        return ptr, size

    def empty(self, size: int) -> tuple[int, int]:
        ptr, ret = acl.rt.malloc(size, 0)
        assert ret == OK
        self.ptrs.append(ptr)
        return ptr, size


def dataset(*pairs) -> int:
    ds = acl.mdl.create_dataset()
    for ptr, size in pairs:
        _, ret = acl.mdl.add_dataset_buffer(ds, acl.create_data_buffer(ptr, size))
        assert ret == OK
    return ds


def read(ptr: int, shape, dtype=np.float32) -> np.ndarray:
    out = np.zeros(shape, dtype)
    if out.nbytes:
        assert acl.rt.memcpy(out.ctypes.data, out.nbytes, ptr, out.nbytes, D2H) == OK
    return out


def load(path) -> tuple[int, int]:
    model_id, ret = acl.mdl.load_from_file(path)
    assert ret == OK, acl.get_recent_err_msg()
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == OK
    return model_id, desc


def outputs_for(desc, mem: Mem) -> list[tuple[int, int]]:
    return [mem.empty(acl.mdl.get_output_size_by_index(desc, i)) for i in range(acl.mdl.get_num_outputs(desc))]


RNG = np.random.default_rng(42)


# ---------------------------------------------------------------- the resnet50 sample's sequence
def test_cnn_runs_as_the_resnet_sample_drives_it_and_equals_onnxruntime(dev, models):
    model_id, desc = load(models["cnn"])
    assert acl.mdl.get_num_inputs(desc) == 1 and acl.mdl.get_num_outputs(desc) == 1
    x = RNG.standard_normal((2, 3, 16, 16)).astype(np.float32)
    assert acl.mdl.get_input_size_by_index(desc, 0) == x.nbytes
    mem = Mem()
    ins = dataset(mem.put(x))
    out_ptr, out_size = mem.empty(acl.mdl.get_output_size_by_index(desc, 0))
    outs = dataset((out_ptr, out_size))
    assert acl.mdl.execute(model_id, ins, outs) == OK
    # as the sample does: destroy buffers and datasets before reading the outputs
    for ds in (ins, outs):
        for i in range(acl.mdl.get_dataset_num_buffers(ds)):
            assert acl.destroy_data_buffer(acl.mdl.get_dataset_buffer(ds, i)) == OK
        assert acl.mdl.destroy_dataset(ds) == OK
    dims, ret = acl.mdl.get_cur_output_dims(desc, 0)
    assert ret == OK and dims["dims"] == [2, 10]
    y = read(out_ptr, dims["dims"])
    ref = M.reference(models["cnn_onnx"], {"x": x})[0]
    np.testing.assert_array_equal(y, ref)
    assert acl.mdl.unload(model_id) == OK
    assert acl.mdl.get_num_outputs(desc) == 1  # the desc outlives the model
    assert acl.mdl.destroy_desc(desc) == OK


def test_mlp_equals_onnxruntime(dev, models):
    model_id, desc = load(models["mlp"])
    x = RNG.standard_normal((3, 16)).astype(np.float32)
    mem = Mem()
    outs = outputs_for(desc, mem)
    assert acl.mdl.execute(model_id, dataset(mem.put(x)), dataset(*outs)) == OK
    np.testing.assert_array_equal(read(outs[0][0], (3, 4)), M.reference(models["mlp_onnx"], {"x": x})[0])


def test_synchronous_execute_runs_the_model_in_the_calling_thread(dev, models):
    import threading

    from npurt.runtime.observers import HOOKS
    model_id, desc = load(models["mlp"])
    mem = Mem()
    ins, outs = dataset(mem.put(np.ones((3, 16), np.float32))), dataset(*outputs_for(desc, mem))
    runners = []

    def observer(name, **fields):
        if name == "task_started" and fields["task"].kind == "model_execute":
            runners.append(threading.get_ident())
    HOOKS.add(observer)
    try:
        for _ in range(3):
            assert acl.mdl.execute(model_id, ins, outs) == OK
    finally:
        HOOKS.remove(observer)
    assert runners == [threading.get_ident()] * 3  # no hand-off to a scheduler worker


def test_multi_input_multi_output_model_equals_onnxruntime(dev, models):
    model_id, desc = load(models["multi"])
    assert acl.mdl.get_num_inputs(desc) == 3 and acl.mdl.get_num_outputs(desc) == 3
    a, b = RNG.standard_normal((2, 3)).astype(np.float32), RNG.standard_normal((2, 3)).astype(np.float32)
    k = np.array([1, -2, 3, 40], np.int32)
    assert acl.mdl.get_input_data_type(desc, 2) == C.ACL_INT32
    assert acl.mdl.get_output_data_type(desc, 2) == C.ACL_INT32
    mem = Mem()
    outs = outputs_for(desc, mem)
    assert acl.mdl.execute(model_id, dataset(mem.put(a), mem.put(b), mem.put(k)), dataset(*outs)) == OK
    ref = M.reference(models["multi_onnx"], {"a": a, "b": b, "k": k})
    for (ptr, _), r in zip(outs, ref):
        np.testing.assert_array_equal(read(ptr, r.shape, r.dtype), r)


def test_load_from_mem_as_acllite_does(dev, models):
    data = open(models["mlp"], "rb").read()
    model_id, ret = acl.mdl.load_from_mem(acl.util.bytes_to_ptr(data), len(data))
    assert ret == OK
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == OK
    assert acl.mdl.get_input_dims(desc, 0) == ({"name": "x", "dimCount": 2, "dims": [3, 16]}, OK)
    assert acl.mdl.unload(model_id) == OK


# ---------------------------------------------------------------- descriptions
def test_model_description_queries(dev, models):
    model_id, desc = load(models["cnn"])
    assert acl.mdl.get_input_name_by_index(desc, 0) == "x"
    assert acl.mdl.get_output_name_by_index(desc, 0) == "prob"
    assert acl.mdl.get_input_format(desc, 0) == G.ACL_FORMAT_NCHW
    assert acl.mdl.get_output_format(desc, 0) == G.ACL_FORMAT_ND
    assert acl.mdl.get_input_data_type(desc, 0) == C.ACL_FLOAT
    assert acl.mdl.get_input_index_by_name(desc, "x") == (0, OK)
    assert acl.mdl.get_output_index_by_name(desc, "prob") == (0, OK)
    assert acl.mdl.get_output_dims(desc, 0) == ({"name": "prob", "dimCount": 2, "dims": [2, 10]}, OK)
    assert acl.mdl.get_input_dims_v2(desc, 0) == acl.mdl.get_input_dims(desc, 0)
    assert acl.mdl.get_input_dims_range(desc, 0) == ({"rangeCount": 4, "range": [[2, 2], [3, 3], [16, 16],
                                                                                   [16, 16]]}, OK)
    assert acl.mdl.get_dynamic_batch(desc) == ({"batchCount": 0, "batch": []}, OK)
    assert acl.mdl.get_tensor_real_name(desc, "x") == "x"


def test_bad_index_queries_return_their_sentinels(dev, models):
    _, desc = load(models["cnn"])
    assert acl.mdl.get_input_size_by_index(desc, 5) == 0
    assert acl.mdl.get_input_format(desc, 5) == G.ACL_FORMAT_UNDEFINED
    assert acl.mdl.get_output_data_type(desc, 5) == C.ACL_DT_UNDEFINED
    assert acl.mdl.get_input_dims(desc, 5) == ({}, INVALID)
    assert acl.mdl.get_cur_output_dims(desc, 9) == ({}, INVALID)
    assert acl.mdl.get_input_index_by_name(desc, "nope") == (0, INVALID)
    assert acl.mdl.get_input_name_by_index(desc, 5) == ""
    assert acl.mdl.get_num_inputs(0) == 0


def test_desc_from_file_and_query_size_need_no_load(dev, models):
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc_from_file(desc, models["cnn"]) == OK
    assert acl.mdl.get_input_size_by_index(desc, 0) == 2 * 3 * 16 * 16 * 4
    work, weight, ret = acl.mdl.query_size(models["cnn"])
    assert ret == OK and weight >= (8 * 3 * 9 + 8 + 16 * 8 * 9 + 16 + 160 + 10) * 4 and work > 0
    data = open(models["cnn"], "rb").read()
    assert acl.mdl.query_size_from_mem(acl.util.bytes_to_ptr(data), len(data)) == (work, weight, OK)


# ---------------------------------------------------------------- memory the application provides
def test_load_with_application_memory_puts_the_weights_there(dev, models):
    work_size, weight_size, _ = acl.mdl.query_size(models["cnn"])
    mem = Mem()
    work, _ = mem.empty(work_size)
    weight, _ = mem.empty(weight_size)
    model_id, ret = acl.mdl.load_from_file_with_mem(models["cnn"], work, work_size, weight, weight_size)
    assert ret == OK
    w1 = read(weight, (8, 3, 3, 3))  # the first initializer sits at the start of weight memory
    np.testing.assert_array_equal(w1, M.onnx.numpy_helper.to_array(M.onnx.load(models["cnn_onnx"]).graph.initializer[0]))
    x = RNG.standard_normal((2, 3, 16, 16)).astype(np.float32)
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, model_id)
    outs = outputs_for(desc, mem)
    assert acl.mdl.execute(model_id, dataset(mem.put(x)), dataset(*outs)) == OK
    np.testing.assert_array_equal(read(outs[0][0], (2, 10)), M.reference(models["cnn_onnx"], {"x": x})[0])
    assert acl.mdl.unload(model_id) == OK
    assert acl.rt.free(weight) == OK and acl.rt.free(work) == OK  # still the application's
    mem.ptrs.clear()


def test_load_with_too_little_application_memory_is_ge_param_invalid(dev, models):
    work_size, weight_size, _ = acl.mdl.query_size(models["cnn"])
    mem = Mem()
    weight, _ = mem.empty(weight_size)
    model_id, ret = acl.mdl.load_from_file_with_mem(models["cnn"], 0, 0, weight, weight_size - 64)
    assert (model_id, ret) == (0, C.ACL_ERROR_GE_PARAM_INVALID)
    assert "query_size" in acl.get_recent_err_msg()


# ---------------------------------------------------------------- asynchronous execution
def test_execute_async_is_ordered_with_copies_on_the_stream(dev, models):
    model_id, desc = load(models["mlp"])
    stream, _ = acl.rt.create_stream()
    mem = Mem()
    x = RNG.standard_normal((3, 16)).astype(np.float32)
    in_ptr, in_size = mem.empty(x.nbytes)
    outs = outputs_for(desc, mem)
    host, _ = acl.rt.malloc_host(x.nbytes)
    np.frombuffer((np.ctypeslib.as_array((np.ctypeslib.ctypes.c_ubyte * x.nbytes).from_address(host))),
                  np.uint8)[:] = x.view(np.uint8).ravel()
    y_host, _ = acl.rt.malloc_host(outs[0][1])
    # copy in, execute, copy out: all queued, nothing has run when the calls return
    assert acl.rt.memcpy_async(in_ptr, in_size, host, x.nbytes, H2D, stream) == OK
    assert acl.mdl.execute_async(model_id, dataset((in_ptr, in_size)), dataset(*outs), stream) == OK
    assert acl.rt.memcpy_async(y_host, outs[0][1], outs[0][0], outs[0][1], D2H, stream) == OK
    assert acl.rt.synchronize_stream(stream) == OK
    y = np.frombuffer((np.ctypeslib.ctypes.c_ubyte * outs[0][1]).from_address(y_host), np.float32).reshape(3, 4)
    np.testing.assert_array_equal(y, M.reference(models["mlp_onnx"], {"x": x})[0])
    acl.rt.free_host(host)
    acl.rt.free_host(y_host)


def test_execution_reads_its_inputs_when_it_runs_not_when_enqueued(dev, models):
    """An event wait holds the stream; the input is written after execute_async returned."""
    model_id, desc = load(models["mlp"])
    stream, _ = acl.rt.create_stream()
    event, _ = acl.rt.create_event_with_flag(C.ACL_EVENT_SYNC)  # a wait before any record holds the stream
    mem = Mem()
    x = RNG.standard_normal((3, 16)).astype(np.float32)
    in_ptr, in_size = mem.put(np.zeros_like(x))
    outs = outputs_for(desc, mem)
    assert acl.rt.stream_wait_event(stream, event) == OK
    assert acl.mdl.execute_async(model_id, dataset((in_ptr, in_size)), dataset(*outs), stream) == OK
    assert acl.rt.memcpy(in_ptr, in_size, x.ctypes.data, x.nbytes, H2D) == OK
    assert acl.rt.record_event(event, 0) == OK
    assert acl.rt.synchronize_stream(stream) == OK
    np.testing.assert_array_equal(read(outs[0][0], (3, 4)), M.reference(models["mlp_onnx"], {"x": x})[0])


def test_a_failing_execution_is_reported_at_synchronize(dev, models):
    model_id, desc = load(models["gather"])
    stream, _ = acl.rt.create_stream()
    mem = Mem()
    outs = outputs_for(desc, mem)
    ins = dataset(mem.put(np.arange(4, dtype=np.float32)), mem.put(np.array([0, 9], np.int64)))
    assert acl.mdl.execute_async(model_id, ins, dataset(*outs), stream) == OK  # accepted: fails when it runs
    assert acl.rt.synchronize_stream(stream) == C.ACL_ERROR_RT_MODEL_EXECUTE
    message = acl.get_recent_err_msg()
    assert "model" in message and "gather" in message
    # the stream and the model stay usable
    good = dataset(mem.put(np.arange(4, dtype=np.float32)), mem.put(np.array([3, 1], np.int64)))
    assert acl.mdl.execute_async(model_id, good, dataset(*outs), stream) == OK
    assert acl.rt.synchronize_stream(stream) == OK
    np.testing.assert_array_equal(read(outs[0][0], (2,)), [3.0, 1.0])


def test_synchronous_execute_returns_the_execution_failure(dev, models):
    model_id, desc = load(models["gather"])
    mem = Mem()
    ins = dataset(mem.put(np.arange(4, dtype=np.float32)), mem.put(np.array([7, 0], np.int64)))
    assert acl.mdl.execute(model_id, ins, dataset(*outputs_for(desc, mem))) == C.ACL_ERROR_RT_MODEL_EXECUTE


def test_an_input_dataset_short_of_a_buffer_is_ge_failure_and_extra_buffers_are_not_read(dev, models):
    """GE's CopyInputData reads the model's inputs only: a missing one fails (FAILED, which
    the ACL layer reports as ACL_ERROR_GE_FAILURE), an extra one is ignored."""
    model_id, desc = load(models["multi"])
    mem = Mem()
    a, b = RNG.standard_normal((2, 3)).astype(np.float32), RNG.standard_normal((2, 3)).astype(np.float32)
    k = np.arange(4, dtype=np.int32)
    outs = outputs_for(desc, mem)
    assert acl.mdl.execute(model_id, dataset(mem.put(a), mem.put(b)), dataset(*outs)) == C.ACL_ERROR_GE_FAILURE
    assert "input dataset holds 2 buffer" in acl.get_recent_err_msg()
    extra = mem.put(np.full(64, np.nan, np.float32))
    assert acl.mdl.execute(model_id, dataset(mem.put(a), mem.put(b), mem.put(k), extra), dataset(*outs)) == OK
    expected = M.reference(models["multi_onnx"], {"a": a, "b": b, "k": k})
    np.testing.assert_array_equal(read(outs[0][0], (2, 3)), expected[0])
    np.testing.assert_array_equal(read(outs[2][0], (4,), np.int32), expected[2])


def test_an_output_dataset_of_another_size_is_ge_failure(dev, models):
    model_id, desc = load(models["mlp"])
    mem = Mem()
    ins = dataset(mem.put(np.ones((3, 16), np.float32)))
    outs = outputs_for(desc, mem)
    assert acl.mdl.execute(model_id, ins, dataset()) == C.ACL_ERROR_GE_FAILURE
    assert acl.mdl.execute(model_id, ins, dataset(*outs, mem.empty(64))) == C.ACL_ERROR_GE_FAILURE
    assert acl.mdl.execute(model_id, ins, dataset(*outs)) == OK  # the model is still usable


def test_executing_on_a_stream_of_another_device_is_a_model_context_error(dev, models):
    model_id, desc = load(models["mlp"])
    mem = Mem()
    ins, outs = dataset(mem.put(np.ones((3, 16), np.float32))), dataset(*outputs_for(desc, mem))
    assert acl.rt.set_device(1) == OK
    other, _ = acl.rt.create_stream()
    assert acl.mdl.execute_async(model_id, ins, outs, other) == C.ACL_ERROR_RT_MODEL_CONTEXT
    assert acl.rt.destroy_stream(other) == OK
    assert acl.rt.set_device(0) == OK
    assert acl.mdl.execute(model_id, ins, outs) == OK


def test_failed_model_task_is_described_by_create_and_get_op_desc(dev, models):
    model_id, desc = load(models["gather"])
    infos = []
    assert acl.rt.set_exception_info_callback(infos.append) == OK
    stream, _ = acl.rt.create_stream()
    mem = Mem()
    ins = dataset(mem.put(np.arange(4, dtype=np.float32)), mem.put(np.array([9, 9], np.int64)))
    acl.mdl.execute_async(model_id, ins, dataset(*outputs_for(desc, mem)), stream)
    acl.rt.synchronize_stream(stream)
    info = infos[0]
    task_id = acl.rt.get_task_id_from_exception_info(info)
    stream_id = acl.rt.get_stream_id_from_exception_info(info)
    name, in_desc, n_in, out_desc, n_out, ret = acl.mdl.create_and_get_op_desc(0, stream_id, task_id, 64)
    assert ret == OK and name == "gather" and (n_in, n_out) == (2, 1)
    assert acl.get_tensor_desc_type(acl.get_tensor_desc_by_index(in_desc, 1)) == C.ACL_INT64


def test_runtime_allocated_outputs_for_synchronous_execute(dev, models):
    model_id, desc = load(models["mlp"])
    mem = Mem()
    x = RNG.standard_normal((3, 16)).astype(np.float32)
    out_buf = acl.create_data_buffer(0, 0)
    outs = acl.mdl.create_dataset()
    acl.mdl.add_dataset_buffer(outs, out_buf)
    assert acl.mdl.execute(model_id, dataset(mem.put(x)), outs) == OK
    ptr, size = acl.get_data_buffer_addr(out_buf), acl.get_data_buffer_size_v2(out_buf)
    assert ptr and size == 3 * 4 * 4
    np.testing.assert_array_equal(read(ptr, (3, 4)), M.reference(models["mlp_onnx"], {"x": x})[0])
    assert acl.rt.free(ptr) == OK  # the application frees it
    assert acl.update_data_buffer(out_buf, 0, 0) == OK


# ---------------------------------------------------------------- dynamic batch / image size / dims
def _mbatch(desc) -> int:
    index, ret = acl.mdl.get_input_index_by_name(desc, G.ACL_DYNAMIC_TENSOR_NAME)
    assert ret == OK
    return index


def test_dynamic_batch_model_reports_its_gears_and_the_extra_input(dev, models):
    model_id, desc = load(models["batch"])
    assert acl.mdl.get_num_inputs(desc) == 2 and _mbatch(desc) == 1  # placed last, as acllite expects
    assert acl.mdl.get_dynamic_batch(desc) == ({"batchCount": 3, "batch": [1, 2, 4]}, OK)
    assert acl.mdl.get_input_dims(desc, 0)[0]["dims"] == [-1, 3, 16, 16]
    assert acl.mdl.get_input_size_by_index(desc, 0) == 4 * 3 * 16 * 16 * 4  # the largest gear
    assert acl.mdl.get_output_size_by_index(desc, 0) == 4 * 10 * 4
    assert acl.mdl.get_input_dims_range(desc, 0) == ({"rangeCount": 0, "range": []}, OK)


@pytest.mark.parametrize("batch", [1, 2, 4])
def test_dynamic_batch_selects_the_gear_at_run_time(dev, models, batch):
    model_id, desc = load(models["batch"])
    mem = Mem()
    x = RNG.standard_normal((batch, 3, 16, 16)).astype(np.float32)
    in_size = acl.mdl.get_input_size_by_index(desc, 0)
    ins = dataset(mem.put(x, in_size), mem.empty(acl.mdl.get_input_size_by_index(desc, 1)))
    outs = outputs_for(desc, mem)
    assert acl.mdl.set_dynamic_batch_size(model_id, ins, _mbatch(desc), batch) == OK
    assert acl.mdl.execute(model_id, ins, dataset(*outs)) == OK
    dims, _ = acl.mdl.get_cur_output_dims(desc, 0)
    assert dims["dims"] == [batch, 10]
    np.testing.assert_array_equal(read(outs[0][0], (batch, 10)), M.reference(models["cnn_onnx"], {"x": x})[0])


def test_dynamic_setter_writes_the_gear_into_the_shape_data_buffer(dev, models):
    model_id, desc = load(models["batch"])
    mem = Mem()
    shape_ptr, shape_size = mem.empty(acl.mdl.get_input_size_by_index(desc, 1))
    ins = dataset(mem.empty(acl.mdl.get_input_size_by_index(desc, 0)), (shape_ptr, shape_size))
    assert acl.mdl.set_dynamic_batch_size(model_id, ins, 1, 4) == OK
    assert read(shape_ptr, (1,), np.uint64)[0] == 4


def test_batch_that_is_not_a_gear_is_refused(dev, models):
    model_id, desc = load(models["batch"])
    mem = Mem()
    ins = dataset(mem.empty(acl.mdl.get_input_size_by_index(desc, 0)), mem.empty(8))
    assert acl.mdl.set_dynamic_batch_size(model_id, ins, 1, 3) == C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
    assert "gear" in acl.get_recent_err_msg()
    assert acl.mdl.set_dynamic_batch_size(model_id, ins, 1, 0) == INVALID
    assert acl.mdl.set_dynamic_batch_size(model_id, ins, 7, 2) == INVALID  # no buffer at that index


def test_dynamic_setter_on_a_static_model_is_refused(dev, models):
    model_id, desc = load(models["mlp"])
    mem = Mem()
    ins = dataset(mem.empty(acl.mdl.get_input_size_by_index(desc, 0)))
    assert acl.mdl.set_dynamic_batch_size(model_id, ins, 0, 2) == C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID


def test_dynamic_image_size_runs_each_gear(dev, models):
    model_id, desc = load(models["hw"])
    assert acl.mdl.get_dynamic_hw(desc, -1) == ({"hwCount": 2, "hw": [[8, 8], [16, 12]]}, OK)
    mem = Mem()
    for h, w in ((16, 12), (8, 8)):
        x = RNG.standard_normal((1, 3, h, w)).astype(np.float32)
        ins = dataset(mem.put(x, acl.mdl.get_input_size_by_index(desc, 0)), mem.empty(16))
        outs = outputs_for(desc, mem)
        assert acl.mdl.set_dynamic_hw_size(model_id, ins, _mbatch(desc), h, w) == OK
        assert acl.mdl.execute(model_id, ins, dataset(*outs)) == OK
        assert acl.mdl.get_cur_output_dims(desc, 0)[0]["dims"] == [1, 4, h, w]
        feat, pooled = M.reference(models["feat_onnx"], {"x": x})
        np.testing.assert_array_equal(read(outs[0][0], feat.shape), feat)
        np.testing.assert_array_equal(read(outs[1][0], pooled.shape), pooled)
    assert acl.mdl.set_dynamic_hw_size(model_id, ins, 1, 8, 12) == C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
    assert acl.mdl.set_dynamic_hw_size(model_id, ins, 1, 0, 8) == INVALID


def test_dynamic_dims_take_every_dim_of_every_input(dev, models):
    model_id, desc = load(models["dims"])
    assert acl.mdl.get_input_dynamic_gear_count(desc, -1) == (2, OK)
    gears, ret = acl.mdl.get_input_dynamic_dims(desc, -1, 2)
    assert ret == OK and [g["dims"] for g in gears] == [[1, 16], [5, 16]]
    mem = Mem()
    x = RNG.standard_normal((5, 16)).astype(np.float32)
    ins = dataset(mem.put(x, acl.mdl.get_input_size_by_index(desc, 0)), mem.empty(8))
    outs = outputs_for(desc, mem)
    assert acl.mdl.set_input_dynamic_dims(model_id, ins, 1, {"name": "", "dimCount": 2, "dims": [5, 16]}) == OK
    assert acl.mdl.execute(model_id, ins, dataset(*outs)) == OK
    np.testing.assert_array_equal(read(outs[0][0], (5, 4)), M.reference(models["mlp_onnx"], {"x": x})[0])
    assert acl.mdl.set_input_dynamic_dims(model_id, ins, 1, {"dimCount": 2, "dims": [3, 16]}) == \
        C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID
    assert acl.mdl.set_input_dynamic_dims(model_id, ins, 1, {"dimCount": 2, "dims": [5, 15]}) == \
        C.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID
    assert acl.mdl.set_input_dynamic_dims(model_id, ins, 1, {"dimCount": 0, "dims": []}) == INVALID
    with pytest.raises(TypeError, match="argument 4 is not dict"):
        acl.mdl.set_input_dynamic_dims(model_id, ins, 1, [5, 16])
    assert acl.mdl.get_input_dynamic_dims(desc, -1, 5000) == (None, INVALID)


def test_dynamic_shape_model_takes_the_real_shape_from_the_dataset_and_reports_the_output_shape(dev, models):
    model_id, desc = load(models["nonzero"])
    assert acl.mdl.get_input_dims(desc, 0)[0]["dims"] == [-1]
    assert acl.mdl.get_input_dims_range(desc, 0) == ({"rangeCount": 1, "range": [[1, 16]]}, OK)
    x = np.array([0, 3, 0, 0, 5, 6, 0], np.float32)
    mem = Mem()
    ins = dataset(mem.put(x))
    out_ptr, out_size = mem.empty(16 * 8)
    outs = dataset((out_ptr, out_size))
    assert acl.mdl.execute(model_id, ins, outs) == INVALID  # no real shape given
    assert "set_dataset_tensor_desc" in acl.get_recent_err_msg()
    shape = acl.create_tensor_desc(C.ACL_FLOAT, [7], G.ACL_FORMAT_ND)
    _, ret = acl.mdl.set_dataset_tensor_desc(ins, shape, 0)
    assert ret == OK
    assert acl.mdl.execute(model_id, ins, outs) == OK
    out_desc = acl.mdl.get_dataset_tensor_desc(outs, 0)
    assert acl.get_tensor_desc_num_dims(out_desc) == 2
    dims = [acl.get_tensor_desc_dim(out_desc, i) for i in range(2)]
    ref = M.reference(models["nonzero_onnx"], {"x": x})[0]
    assert dims == list(ref.shape)
    np.testing.assert_array_equal(read(out_ptr, ref.shape, np.int64), ref)
    assert acl.mdl.destroy_dataset(outs) == OK  # frees the output desc it held


# ---------------------------------------------------------------- execute_v2, config handles, bundles
def test_execute_v2_synchronizes_its_stream(dev, models):
    model_id, desc = load(models["mlp"])
    cfg = acl.mdl.create_exec_config_handle()
    assert acl.mdl.set_exec_config_opt(cfg, G.ACL_MDL_STREAM_SYNC_TIMEOUT, 5000) == OK
    stream, _ = acl.rt.create_stream()
    mem = Mem()
    x = RNG.standard_normal((3, 16)).astype(np.float32)
    outs = outputs_for(desc, mem)
    assert acl.mdl.execute_v2(model_id, dataset(mem.put(x)), dataset(*outs), stream, cfg) == OK
    np.testing.assert_array_equal(read(outs[0][0], (3, 4)), M.reference(models["mlp_onnx"], {"x": x})[0])
    assert acl.mdl.execute_v2(model_id, dataset(mem.put(x)), dataset(*outs), stream, 0) == INVALID
    assert acl.mdl.destroy_exec_config_handle(cfg) == OK


def test_load_with_config_from_file_and_from_memory(dev, models):
    cfg = acl.mdl.create_config_handle()
    assert acl.mdl.load_with_config(cfg) == (0, INVALID)  # no load type
    assert acl.mdl.set_config_opt(cfg, G.ACL_MDL_LOAD_TYPE_SIZET, G.ACL_MDL_LOAD_FROM_FILE) == OK
    assert acl.mdl.load_with_config(cfg) == (0, INVALID)  # no path
    assert acl.mdl.set_config_opt(cfg, G.ACL_MDL_PATH_PTR, models["mlp"]) == OK
    assert acl.mdl.set_config_opt(cfg, G.ACL_MDL_PRIORITY_INT32, 3) == OK
    model_id, ret = acl.mdl.load_with_config(cfg)
    assert ret == OK and model_id
    data = open(models["mlp"], "rb").read()
    cfg2 = acl.mdl.create_config_handle()
    acl.mdl.set_config_opt(cfg2, G.ACL_MDL_LOAD_TYPE_SIZET, G.ACL_MDL_LOAD_FROM_MEM)
    acl.mdl.set_config_opt(cfg2, G.ACL_MDL_MEM_ADDR_PTR, acl.util.bytes_to_ptr(data))
    acl.mdl.set_config_opt(cfg2, G.ACL_MDL_MEM_SIZET, len(data))
    model2, ret = acl.mdl.load_with_config(cfg2)
    assert ret == OK and model2 != model_id
    assert acl.mdl.set_config_opt(cfg, G.ACL_MDL_PRIORITY_INT32, 9) == INVALID
    with pytest.raises(TypeError):
        acl.mdl.set_config_opt(cfg, G.ACL_MDL_PATH_PTR, 5)
    assert acl.mdl.destroy_config_handle(cfg) == OK and acl.mdl.destroy_config_handle(cfg2) == OK


def test_a_bundle_of_one_model(dev, models):
    bundle, ret = acl.mdl.bundle_load_from_file(models["mlp"])
    assert ret == OK
    assert acl.mdl.bundle_get_model_num(bundle) == (1, OK)
    model_id, ret = acl.mdl.bundle_get_model_id(bundle, 0)
    assert ret == OK
    assert acl.mdl.unload(model_id) == INVALID  # bundled models are unloaded with the bundle
    assert acl.mdl.bundle_unload(bundle) == OK
    assert acl.mdl.bundle_get_model_num(bundle) == (0, C.ACL_ERROR_INVALID_BUNDLE_MODEL_ID)
