"""acl.mdl as the official Ascend samples drive it (found by running them unmodified under
`npurt run`; docs/compatibility.md, "Real applications run unmodified"). Each test is a small
application written the way those samples are: models converted with `npurt atc` from ONNX
graphs built here, datasets over device buffers sized by the model description, host data
handed over with acl.util.bytes_to_ptr, results compared with ONNX Runtime."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import onnx_models as M
import npurt.acl as acl
from onnx_models import TensorProto, helper, numpy_helper

OK = 0
H2D, D2H = 1, 2
HUGE_FIRST = 0


# ---------------------------------------------------------------- the application's plumbing
def check(what, ret):
    assert ret == OK, f"{what} failed ret={ret}: {acl.get_recent_err_msg()}"


class App:
    """init / load / datasets / execute / results, as the resnet50 and YOLO samples do."""

    def __init__(self, path):
        check("acl.init", acl.init())
        check("acl.rt.set_device", acl.rt.set_device(0))
        self.model_id, ret = acl.mdl.load_from_file(path)
        check("acl.mdl.load_from_file", ret)
        self.desc = acl.mdl.create_desc()
        check("acl.mdl.get_desc", acl.mdl.get_desc(self.desc, self.model_id))
        self.ins = [self._buffer(acl.mdl.get_input_size_by_index(self.desc, i))
                    for i in range(acl.mdl.get_num_inputs(self.desc))]
        self.outs = [self._buffer(acl.mdl.get_output_size_by_index(self.desc, i))
                     for i in range(acl.mdl.get_num_outputs(self.desc))]

    @staticmethod
    def _buffer(size):
        ptr, ret = acl.rt.malloc(size, HUGE_FIRST)
        check("acl.rt.malloc", ret)
        return ptr, size

    @staticmethod
    def dataset(buffers):
        dataset = acl.mdl.create_dataset()
        for ptr, size in buffers:
            _, ret = acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(ptr, size))
            check("acl.mdl.add_dataset_buffer", ret)
        return dataset

    def feed(self, index, array):
        data = np.ascontiguousarray(array).tobytes()
        ptr, size = self.ins[index]
        check("acl.rt.memcpy", acl.rt.memcpy(ptr, size, acl.util.bytes_to_ptr(data), len(data), H2D))

    def execute(self, inputs=None, setup=None):
        ins, outs = self.dataset(inputs or self.ins), self.dataset(self.outs)
        if setup:
            setup(ins)
        ret = acl.mdl.execute(self.model_id, ins, outs)
        for dataset in (ins, outs):
            acl.mdl.destroy_dataset(dataset)
        return ret

    def result(self, index, dtype, shape):
        """Copied into the buffer of a bytes object, as acllite's AclLiteModel does."""
        ptr, size = self.outs[index]
        host = bytes(size)
        check("acl.rt.memcpy", acl.rt.memcpy(acl.util.bytes_to_ptr(host), size, ptr, size, D2H))
        return np.frombuffer(host, dtype=dtype)[:int(np.prod(shape))].reshape(shape)


@pytest.fixture
def app_env(fresh_runtime):
    yield
    acl.finalize()


# ---------------------------------------------------------------- models
def detection_model():
    """The YOLOv3 sample's I/O (data + img_info -> box_out float, box_out_num int32) with the
    constant tensors real exported graphs carry: Reshape shapes, Gather indices and Pad pads
    (int64 initializers whose values ONNX shape inference reads) and small float constants."""
    rng = np.random.default_rng(11)
    k = 3
    nodes = [helper.make_node("Conv", ["data", "w"], ["c"], strides=[4, 4]),
             helper.make_node("GlobalAveragePool", ["c"], ["g"]),
             helper.make_node("Reshape", ["g", "flat"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["z"], transB=1),
             helper.make_node("Sigmoid", ["z"], ["s"]),
             helper.make_node("Reshape", ["s", "rows"], ["frac"]),
             helper.make_node("Gather", ["img_info", "width_index"], ["iw"], axis=1),
             helper.make_node("Mul", ["frac", "iw"], ["coords"]),
             helper.make_node("Mul", ["coords", "half"], ["boxes"]),
             helper.make_node("Reshape", ["boxes", "one_row"], ["row"]),
             helper.make_node("Pad", ["row", "pads"], ["box_out"]),
             helper.make_node("Identity", ["count"], ["box_out_num"])]
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((4 * k, 4)).astype(np.float32), "fc"),
             numpy_helper.from_array(np.array([1, 4], np.int64), "flat"),
             numpy_helper.from_array(np.array([4, k], np.int64), "rows"),
             numpy_helper.from_array(np.array([2], np.int64), "width_index"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array([1, 4 * k], np.int64), "one_row"),
             numpy_helper.from_array(np.array([0, 0, 0, 64 - 4 * k], np.int64), "pads"),
             numpy_helper.from_array(np.array([[k, 0, 0, 0, 0, 0, 0, 0]], np.int32), "count")]
    return M._model(nodes, [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 3, 32, 32]),
                            helper.make_tensor_value_info("img_info", TensorProto.FLOAT, [1, 4])],
                    [helper.make_tensor_value_info("box_out", TensorProto.FLOAT, [1, 64]),
                     helper.make_tensor_value_info("box_out_num", TensorProto.INT32, [1, 8])], inits)


def features_model(seed=5):
    """x [1, 3, H, W] -> logits [1, 10]: conv, global average pool, dense."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["logits"], transB=1)]
    inits = [numpy_helper.from_array((rng.standard_normal((6, 3, 3, 3)) * 0.05).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((10, 6)).astype(np.float32), "fc")]
    return M._model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
                    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("app_models")
    out = {"det_onnx": M.save(detection_model(), d / "yolo.onnx")}
    out["det"] = M.atc(out["det_onnx"], d / "yolov3_yuv")
    out["mlp_onnx"] = M.save(M.mlp(), d / "mlp.onnx")
    out["mlp"] = M.atc(out["mlp_onnx"], d / "mlp", input_shape="x:1,16")
    out["feat_onnx"] = M.save(features_model(), d / "feat.onnx")
    yuv = d / "aipp_yuv.cfg"
    yuv.write_text("aipp_op {\n aipp_mode : static\n input_format : YUV420SP_U8\n csc_switch : true\n"
                   " src_image_size_w : 32\n src_image_size_h : 24\n}\n")
    out["yuv"] = M.atc(out["feat_onnx"], d / "feat_yuv", input_shape="x:1,3,24,32", insert_op_conf=str(yuv))
    rgb = d / "aipp_rgb.cfg"
    rgb.write_text("aipp_op {\n aipp_mode: static\n input_format : RGB888_U8\n mean_chn_0 : 124\n"
                   " mean_chn_1 : 117\n mean_chn_2 : 104\n}\n")
    out["hw"] = M.atc(out["feat_onnx"], d / "feat_hw", input_shape="x:1,3,-1,-1",
                      dynamic_image_size="16,16;24,32", insert_op_conf=str(rgb))
    return out


# ---------------------------------------------------------------- tests
def test_detection_model_with_shape_constants_loads_and_equals_onnxruntime(app_env, models):
    app = App(models["det"])
    image = np.random.default_rng(1).uniform(0, 1, (1, 3, 32, 32)).astype(np.float32)
    info = np.array([[32, 32, 32, 32]], np.float32)
    app.feed(0, image)
    app.feed(1, info)
    check("acl.mdl.execute", app.execute())
    boxes, count = M.reference(models["det_onnx"], {"data": image, "img_info": info})
    np.testing.assert_allclose(app.result(0, np.float32, (1, 64)), boxes, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(app.result(1, np.int32, (1, 8)), count)
    assert int(app.result(1, np.int32, (1, 8))[0, 0]) == 3


def test_input_buffer_bigger_than_the_model_input_is_read_up_to_the_model_size(app_env, models, caplog):
    app = App(models["mlp"])
    x = np.random.default_rng(2).uniform(-1, 1, (1, 16)).astype(np.float32)
    size = acl.mdl.get_input_size_by_index(app.desc, 0)
    big, ret = acl.rt.malloc(size * 3, HUGE_FIRST)
    check("acl.rt.malloc", ret)
    data = np.concatenate([x.ravel(), np.full(32, 7.0, np.float32)]).tobytes()  # the model reads only x
    check("acl.rt.memcpy", acl.rt.memcpy(big, size * 3, acl.util.bytes_to_ptr(data), len(data), H2D))
    with caplog.at_level(logging.WARNING, logger="npurt.ge"):
        check("acl.mdl.execute", app.execute(inputs=[(big, size * 3)]))
    np.testing.assert_allclose(app.result(0, np.float32, (1, 4)), M.reference(models["mlp_onnx"], {"x": x})[0],
                               rtol=1e-5, atol=1e-6)
    assert any("more than the model's input size" in r.getMessage() for r in caplog.records)


def test_static_aipp_input_dims_are_nhwc_as_the_samples_read_width_and_height(app_env, models):
    app = App(models["yuv"])
    dims, ret = acl.mdl.get_input_dims(app.desc, 0)
    check("acl.mdl.get_input_dims", ret)
    width, height = dims["dims"][2], dims["dims"][1]  # "format of om used in this app is NHWC"
    assert (width, height) == (32, 24) and dims["dims"] == [1, 24, 32, 3]
    v2, ret = acl.mdl.get_input_dims_v2(app.desc, 0)
    assert v2["dims"] == [1, 36, 32, 1]
    assert int(np.prod(v2["dims"])) == acl.mdl.get_input_size_by_index(app.desc, 0) == 32 * 24 * 3 // 2


def _rgb_aipp_reference(image):
    """RGB888_U8 with mean 124, 117, 104: (pixel - mean) in float16, NCHW."""
    x = image.astype(np.float32) - np.array([124, 117, 104], np.float32)
    return x.astype(np.float16).astype(np.float32).transpose(2, 0, 1)[None]


def test_static_aipp_on_dynamic_image_size_gears_feeds_each_gear(app_env, models):
    app = App(models["hw"])
    dims, _ = acl.mdl.get_input_dims(app.desc, 0)
    assert dims["dims"] == [1, -1, -1, 3]
    assert acl.mdl.get_input_size_by_index(app.desc, 0) == 24 * 32 * 3  # the largest gear's image
    index, ret = acl.mdl.get_input_index_by_name(app.desc, "ascend_mbatch_shape_data")
    check("acl.mdl.get_input_index_by_name", ret)
    gears, ret = acl.mdl.get_dynamic_hw(app.desc, index)
    assert gears["hw"] == [[16, 16], [24, 32]]
    rng = np.random.default_rng(3)
    for h, w in gears["hw"]:
        image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        app.feed(0, image)
        check("acl.mdl.execute", app.execute(
            setup=lambda ins: check("set_dynamic_hw_size", acl.mdl.set_dynamic_hw_size(app.model_id, ins, index, h, w))))
        ref = M.reference(models["feat_onnx"], {"x": _rgb_aipp_reference(image)})[0]
        np.testing.assert_allclose(app.result(0, np.float32, (1, 10)), ref, rtol=1e-4, atol=1e-4)


def test_a_model_with_gears_takes_a_bigger_input_buffer_without_a_warning(app_env, models, caplog):
    app = App(models["hw"])
    index, _ = acl.mdl.get_input_index_by_name(app.desc, "ascend_mbatch_shape_data")
    size = acl.mdl.get_input_size_by_index(app.desc, 0)
    big, ret = acl.rt.malloc(size * 2, HUGE_FIRST)
    check("acl.rt.malloc", ret)
    image = np.random.default_rng(4).integers(0, 256, (16, 16, 3), dtype=np.uint8)
    data = image.tobytes()
    check("acl.rt.memcpy", acl.rt.memcpy(big, size * 2, acl.util.bytes_to_ptr(data), len(data), H2D))
    with caplog.at_level(logging.WARNING, logger="npurt.ge"):
        check("acl.mdl.execute", app.execute(
            inputs=[(big, size * 2)] + app.ins[1:],
            setup=lambda ins: check("set_dynamic_hw_size", acl.mdl.set_dynamic_hw_size(app.model_id, ins, index, 16, 16))))
    ref = M.reference(models["feat_onnx"], {"x": _rgb_aipp_reference(image)})[0]
    np.testing.assert_allclose(app.result(0, np.float32, (1, 10)), ref, rtol=1e-4, atol=1e-4)
    assert not [r for r in caplog.records if r.name == "npurt.ge"]
