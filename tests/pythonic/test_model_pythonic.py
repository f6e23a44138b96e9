"""npurt.Model: the graph engine for the Pythonic API (device arrays in, device arrays out,
on a stream), equal to ONNX Runtime run directly."""
from __future__ import annotations

import numpy as np
import pytest

import onnx_models as M
import npurt

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("pymodels")
    out = {"cnn_onnx": M.save(M.cnn(), d / "cnn.onnx"), "multi_onnx": M.save(M.multi_io(), d / "multi.onnx"),
           "nz_onnx": M.save(M.nonzero_model(), d / "nz.onnx")}
    out["cnn"] = M.atc(out["cnn_onnx"], d / "cnn", input_shape="x:2,3,16,16")
    out["batch"] = M.atc(out["cnn_onnx"], d / "batch", input_shape="x:-1,3,16,16", dynamic_batch_size="1,3")
    out["multi"] = M.atc(out["multi_onnx"], d / "multi")
    out["nz"] = M.atc(out["nz_onnx"], d / "nz", input_shape="x:1~32")
    return out


def test_model_call_returns_device_arrays_equal_to_onnxruntime(fresh_runtime, paths):
    x = RNG.standard_normal((2, 3, 16, 16)).astype(np.float32)
    with npurt.Model(paths["cnn"]) as model:
        assert [i.shape for i in model.inputs] == [(2, 3, 16, 16)] and model.outputs[0].shape == (2, 10)
        y = model(npurt.to_device(x))
        assert isinstance(y, npurt.DeviceArray) and y.shape == (2, 10) and y.dtype == np.float32
        np.testing.assert_array_equal(y.to_host(), M.reference(paths["cnn_onnx"], {"x": x})[0])


def test_model_runs_on_the_given_stream_in_order_with_other_work(fresh_runtime, paths):
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    k = np.arange(4, dtype=np.int32)
    s = npurt.Stream()
    with npurt.Model(paths["multi"]) as model:
        da = npurt.zeros((2, 3), stream=s)
        da.copy_from_host(a, stream=s)
        total, prod, k2 = model(da, da, npurt.to_device(k), stream=s)
        s.synchronize()
        np.testing.assert_array_equal(total.to_host(), a + a)
        np.testing.assert_array_equal(prod.to_host(), a * a)
        np.testing.assert_array_equal(k2.to_host(), k + k)


def test_dynamic_batch_gear_is_chosen_from_the_input_shape(fresh_runtime, paths):
    with npurt.Model(paths["batch"]) as model:
        assert model.gears == [[1], [3]]
        for n in (1, 3):
            x = RNG.standard_normal((n, 3, 16, 16)).astype(np.float32)
            y = model(x)  # numpy input is copied in
            np.testing.assert_array_equal(y.to_host(), M.reference(paths["cnn_onnx"], {"x": x})[0])
        with pytest.raises(npurt.InvalidValueError, match="gears"):
            model(np.zeros((2, 3, 16, 16), np.float32))


def test_data_dependent_output_shapes_come_back_exact(fresh_runtime, paths):
    x = np.array([0, 1, 0, 2, 0, 0, 3], np.float32)
    with npurt.Model(paths["nz"]) as model:
        y = model(x)
        ref = M.reference(paths["nz_onnx"], {"x": x})[0]
        assert y.shape == ref.shape
        np.testing.assert_array_equal(y.to_host(), ref)


def test_bad_inputs_raise_clear_errors_and_the_model_stays_usable(fresh_runtime, paths):
    with npurt.Model(paths["cnn"]) as model:
        with pytest.raises(npurt.InvalidValueError, match="takes 1 input"):
            model()
        with pytest.raises(npurt.InvalidValueError, match="float32"):
            model(np.zeros((2, 3, 16, 16), np.float64))
        with pytest.raises(npurt.InvalidValueError, match="dims"):
            model(np.zeros((2, 3, 8, 8), np.float32))
        assert model(np.zeros((2, 3, 16, 16), np.float32)).shape == (2, 10)
    with pytest.raises(npurt.InvalidValueError, match="closed"):
        model(np.zeros((2, 3, 16, 16), np.float32))


def test_a_failing_execution_raises_at_synchronize(fresh_runtime, tmp_path):
    path = M.atc(M.save(M.gather_model(), tmp_path / "g.onnx"), tmp_path / "g")
    s = npurt.Stream()
    with npurt.Model(path) as model:
        model(np.arange(4, dtype=np.float32), np.array([0, 8], np.int64), stream=s)
        with pytest.raises(npurt.TaskError, match="Gather"):
            s.synchronize()


@pytest.mark.npurt_schedules(6)
def test_numpy_inputs_are_ordered_before_the_execution_under_every_schedule(npurt_schedule_seed, fresh_runtime,
                                                                           tmp_path):
    # found by a controlled schedule: the upload went to the current stream, the execution to
    # `stream`, with nothing ordering them (the execution could read the indices before they landed)
    path = M.atc(M.save(M.gather_model(), tmp_path / "g.onnx"), tmp_path / "g")
    s = npurt.Stream()
    with npurt.Model(path) as model:
        model(np.arange(4, dtype=np.float32), np.array([0, 8], np.int64), stream=s)
        with pytest.raises(npurt.TaskError, match="Gather"):
            s.synchronize()
