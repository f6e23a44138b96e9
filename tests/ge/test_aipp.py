"""Static and dynamic AIPP on a YUV420SP (NV12) image input: the model's input is the image,
the AIPP stage inside the model crops, converts the colour space with the config's matrix,
normalises (mean, min, variance) and pads; the result equals an independent reference of the
hardware formulas fed to ONNX Runtime directly."""
from __future__ import annotations

import numpy as np
import pytest

import onnx_models as M
import npurt.acl as acl
from npurt.acl import constants as C
from npurt.ge import constants as G

OK = 0
SRC_W, SRC_H = 20, 16          # the NV12 source image
CROP = (2, 4, 12, 12)          # x, y, w, h (even start, as YUV420SP needs)
PAD = (2, 2, 2, 2)             # top, bottom, left, right -> a 16 x 16 model input
BT601 = [[298, 0, 409], [298, -100, -208], [298, 516, 0]]   # YUV -> RGB, BT.601 narrow range
MEAN, MIN, VAR = (104, 117, 123), (0.5, 0.0, 1.0), (0.017, 0.0175, 0.0171)

CONFIG = f"""
# static AIPP: NV12 camera frame -> normalised RGB
aipp_op {{
    aipp_mode : static
    related_input_rank : 0
    input_format : YUV420SP_U8
    src_image_size_w : {SRC_W}
    src_image_size_h : {SRC_H}
    crop : true
    load_start_pos_w : {CROP[0]}
    load_start_pos_h : {CROP[1]}
    crop_size_w : {CROP[2]}
    crop_size_h : {CROP[3]}
    padding : true
    top_padding_size : {PAD[0]}
    bottom_padding_size : {PAD[1]}
    left_padding_size : {PAD[2]}
    right_padding_size : {PAD[3]}
    csc_switch : true
    rbuv_swap_switch : false
    matrix_r0c0 : 298
    matrix_r0c1 : 0
    matrix_r0c2 : 409
    matrix_r1c0 : 298
    matrix_r1c1 : -100
    matrix_r1c2 : -208
    matrix_r2c0 : 298
    matrix_r2c1 : 516
    matrix_r2c2 : 0
    input_bias_0 : 16
    input_bias_1 : 128
    input_bias_2 : 128
    mean_chn_0 : {MEAN[0]}
    mean_chn_1 : {MEAN[1]}
    mean_chn_2 : {MEAN[2]}
    min_chn_0 : {MIN[0]}
    min_chn_1 : {MIN[1]}
    min_chn_2 : {MIN[2]}
    var_reci_chn_0 : {VAR[0]}
    var_reci_chn_1 : {VAR[1]}
    var_reci_chn_2 : {VAR[2]}
}}
"""


def nv12_image(seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, SRC_W * SRC_H * 3 // 2, dtype=np.uint8)


def reference_aipp(image, crop=CROP, pad=PAD, mean=MEAN, mn=MIN, var=VAR, matrix=BT601) -> np.ndarray:
    """The hardware's formulas, pixel by pixel: [1, 3, H, W] float32 (rounded through fp16)."""
    y_plane = image[:SRC_W * SRC_H].reshape(SRC_H, SRC_W)
    uv = image[SRC_W * SRC_H:].reshape(SRC_H // 2, SRC_W)
    x0, y0, cw, ch = crop
    top, bottom, left, right = pad
    out = np.zeros((3, ch + top + bottom, cw + left + right), np.float32)
    bias = (16, 128, 128)
    for i in range(ch):
        for j in range(cw):
            r, c = y0 + i, x0 + j
            yuv = (int(y_plane[r, c]), int(uv[r // 2, (c // 2) * 2]), int(uv[r // 2, (c // 2) * 2 + 1]))
            for k in range(3):
                v = sum(matrix[k][m] * (yuv[m] - bias[m]) for m in range(3)) >> 8
                v = min(max(v, 0), 255)
                f16 = np.float16((np.float32(v) - np.float32(mean[k]) - np.float32(np.float16(mn[k])))
                                 * np.float32(np.float16(var[k])))
                out[k, top + i, left + j] = np.float32(f16)
    return out[None]


@pytest.fixture(scope="module")
def aipp_models(tmp_path_factory):
    d = tmp_path_factory.mktemp("aipp")
    conf = d / "aipp.cfg"
    conf.write_text(CONFIG)
    out = {"identity_onnx": M.save(M.identity_image(16, 16), d / "ident.onnx"),
           "cnn_onnx": M.save(M.cnn(n=1), d / "cnn.onnx")}
    out["identity"] = M.atc(out["identity_onnx"], d / "ident", insert_op_conf=str(conf))
    out["cnn"] = M.atc(out["cnn_onnx"], d / "cnn", insert_op_conf=str(conf))
    dyn = d / "dyn.cfg"
    dyn.write_text(f"aipp_op {{\n aipp_mode: dynamic\n max_src_image_size: {SRC_W * SRC_H * 3 // 2}\n}}\n")
    out["dynamic"] = M.atc(out["identity_onnx"], d / "ident_dyn", insert_op_conf=str(dyn))
    return out


@pytest.fixture
def dev(fresh_runtime):
    assert acl.init() == OK
    assert acl.rt.set_device(0) == OK
    yield


def _run(model_id, desc, inputs: list[np.ndarray], extra_sizes=()) -> list[int]:
    ins = acl.mdl.create_dataset()
    for a in inputs:
        ptr, _ = acl.rt.malloc(a.nbytes, 0)
        acl.rt.memcpy(ptr, a.nbytes, a.ctypes.data, a.nbytes, 1)
        acl.mdl.add_dataset_buffer(ins, acl.create_data_buffer(ptr, a.nbytes))
    for size in extra_sizes:
        ptr, _ = acl.rt.malloc(size, 0)
        acl.mdl.add_dataset_buffer(ins, acl.create_data_buffer(ptr, size))
    outs = acl.mdl.create_dataset()
    ptrs = []
    for i in range(acl.mdl.get_num_outputs(desc)):
        size = acl.mdl.get_output_size_by_index(desc, i)
        ptr, _ = acl.rt.malloc(size, 0)
        ptrs.append(ptr)
        acl.mdl.add_dataset_buffer(outs, acl.create_data_buffer(ptr, size))
    return ins, outs, ptrs


def _read(ptr, shape):
    out = np.zeros(shape, np.float32)
    acl.rt.memcpy(out.ctypes.data, out.nbytes, ptr, out.nbytes, 2)
    return out


def _load(path):
    model_id, ret = acl.mdl.load_from_file(path)
    assert ret == OK, acl.get_recent_err_msg()
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, model_id)
    return model_id, desc


def test_static_aipp_input_is_the_yuv420sp_image(dev, aipp_models):
    model_id, desc = _load(aipp_models["identity"])
    assert acl.mdl.get_input_data_type(desc, 0) == C.ACL_UINT8
    assert acl.mdl.get_input_format(desc, 0) == G.ACL_FORMAT_NHWC
    assert acl.mdl.get_input_size_by_index(desc, 0) == SRC_W * SRC_H * 3 // 2
    assert acl.mdl.get_input_dims_v2(desc, 0)[0]["dims"] == [1, SRC_H * 3 // 2, SRC_W, 1]
    # aclmdlGetInputDims with static AIPP: NHWC, the source image's H and W, the model's C
    assert acl.mdl.get_input_dims(desc, 0)[0]["dims"] == [1, SRC_H, SRC_W, 3]
    assert acl.mdl.get_aipp_type(model_id, 0) == (G.ACL_DATA_WITH_STATIC_AIPP, G.ACL_INVALID_NODE_INDEX, OK)


def test_static_aipp_crops_converts_normalises_and_pads(dev, aipp_models):
    model_id, desc = _load(aipp_models["identity"])
    image = nv12_image()
    ins, outs, ptrs = _run(model_id, desc, [image])
    assert acl.mdl.execute(model_id, ins, outs) == OK
    np.testing.assert_array_equal(_read(ptrs[0], (1, 3, 16, 16)), reference_aipp(image))


def test_cnn_behind_static_aipp_equals_onnxruntime_on_the_reference_preprocessing(dev, aipp_models):
    model_id, desc = _load(aipp_models["cnn"])
    image = nv12_image(seed=3)
    ins, outs, ptrs = _run(model_id, desc, [image])
    assert acl.mdl.execute(model_id, ins, outs) == OK
    ref = M.reference(aipp_models["cnn_onnx"], {"x": reference_aipp(image)})[0]
    np.testing.assert_array_equal(_read(ptrs[0], ref.shape), ref)


def test_first_aipp_info_reports_the_static_config(dev, aipp_models):
    model_id, _ = _load(aipp_models["identity"])
    info, ret = acl.mdl.get_first_aipp_info(model_id, 0)
    assert ret == OK
    assert (info["inputFormat"], info["srcImageSizeW"], info["srcImageSizeH"]) == (G.ACL_YUV420SP_U8, SRC_W, SRC_H)
    assert (info["cropSwitch"], info["loadStartPosW"], info["loadStartPosH"], info["cropSizeW"]) == (1, 2, 4, 12)
    assert (info["paddingSwitch"], info["topPaddingSize"], info["cscSwitch"]) == (1, 2, 1)
    assert (info["matrixR0C0"], info["matrixR1C1"], info["matrixR2C1"]) == (298, -100, 516)
    assert info["meanChn1"] == 117 and info["varReciChn0"] == pytest.approx(0.017, rel=1e-3)
    assert info["shapeCount"] == 1 and info["outDims"][0]["aippOutdims"]["dims"] == [1, 3, 16, 16]


def test_aipp_queries_on_an_input_without_aipp(dev, aipp_models, tmp_path):
    path = M.atc(M.save(M.identity_image(4, 4), tmp_path / "plain.onnx"), tmp_path / "plain")
    model_id, _ = _load(path)
    assert acl.mdl.get_first_aipp_info(model_id, 0) == (None, C.ACL_ERROR_GE_AIPP_NOT_EXIST)
    assert acl.mdl.get_aipp_type(model_id, 0) == (G.ACL_DATA_WITHOUT_AIPP, G.ACL_INVALID_NODE_INDEX, OK)
    assert acl.mdl.get_aipp_type(model_id, 3)[-1] == C.ACL_ERROR_INVALID_PARAM
    assert acl.mdl.get_first_aipp_info(999, 0) == (None, C.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID)


def _dynamic_params(batch=1, crop=CROP, pad=PAD):
    aipp = acl.mdl.create_aipp(batch)
    assert aipp
    assert acl.mdl.set_aipp_input_format(aipp, G.ACL_YUV420SP_U8) == OK
    assert acl.mdl.set_aipp_src_image_size(aipp, SRC_W, SRC_H) == OK
    m = BT601
    assert acl.mdl.set_aipp_csc_params(aipp, 1, *m[0], *m[1], *m[2], 0, 0, 0, 16, 128, 128) == OK
    assert acl.mdl.set_aipp_crop_params(aipp, 1, *crop, 0) == OK
    assert acl.mdl.set_aipp_padding_params(aipp, 1, *pad, 0) == OK
    assert acl.mdl.set_aipp_dtc_pixel_mean(aipp, *MEAN, 0, 0) == OK
    assert acl.mdl.set_aipp_dtc_pixel_min(aipp, *MIN, 0.0, 0) == OK
    assert acl.mdl.set_aipp_pixel_var_reci(aipp, *VAR, 1.0, 0) == OK
    return aipp


def test_dynamic_aipp_takes_its_parameters_per_execution(dev, aipp_models):
    model_id, desc = _load(aipp_models["dynamic"])
    index, ret = acl.mdl.get_input_index_by_name(desc, G.ACL_DYNAMIC_AIPP_NAME)
    assert ret == OK and index == 1
    assert acl.mdl.get_aipp_type(model_id, 0) == (G.ACL_DATA_WITH_DYNAMIC_AIPP, 1, OK)
    assert acl.mdl.get_aipp_type(model_id, 1) == (G.ACL_DYNAMIC_AIPP_NODE, G.ACL_INVALID_NODE_INDEX, OK)
    size, ret = acl.mdl.get_aipp_data_size(1)
    assert (size, ret) == (64 + 96, OK) and acl.mdl.get_input_size_by_index(desc, 1) == size
    image = nv12_image(seed=5)
    ins, outs, ptrs = _run(model_id, desc, [image], extra_sizes=[size])
    assert acl.mdl.execute(model_id, ins, outs) == C.ACL_ERROR_GE_AIPP_BATCH_EMPTY  # parameters not set yet
    assert "set_input_aipp" in acl.get_recent_err_msg()
    aipp = _dynamic_params()
    assert acl.mdl.set_input_aipp(model_id, ins, index, aipp) == OK
    assert acl.mdl.execute(model_id, ins, outs) == OK
    np.testing.assert_array_equal(_read(ptrs[0], (1, 3, 16, 16)), reference_aipp(image))
    # another crop for the next execution, attached by the image input's index
    crop2, pad2 = (4, 0, 16, 16), (0, 0, 0, 0)
    aipp2 = _dynamic_params(crop=crop2, pad=pad2)
    assert acl.mdl.set_aipp_by_input_index(model_id, ins, 0, aipp2) == OK
    assert acl.mdl.execute(model_id, ins, outs) == OK
    np.testing.assert_array_equal(_read(ptrs[0], (1, 3, 16, 16)), reference_aipp(image, crop2, pad2))
    assert acl.mdl.destroy_aipp(aipp) == OK and acl.mdl.destroy_aipp(aipp2) == OK


def test_dynamic_aipp_parameter_checks(dev, aipp_models):
    aipp = acl.mdl.create_aipp(1)
    assert acl.mdl.set_aipp_crop_params(aipp, 1, 0, 0, 8, 8, 1) == C.ACL_ERROR_INVALID_PARAM  # batch index
    assert acl.mdl.set_aipp_padding_params(aipp, 1, 33, 0, 0, 0, 0) == C.ACL_ERROR_INVALID_PARAM
    assert acl.mdl.set_aipp_src_image_size(aipp, 1, 8) == C.ACL_ERROR_INVALID_PARAM
    assert acl.mdl.set_aipp_input_format(aipp, 99) == C.ACL_ERROR_INVALID_PARAM
    assert acl.mdl.set_aipp_rbuv_swap_switch(aipp, 2) == C.ACL_ERROR_INVALID_PARAM
    with pytest.raises(TypeError, match="acl.mdl.set_aipp_csc_params args parse failed!"):
        acl.mdl.set_aipp_csc_params(aipp, 1, 0)
    model_id, desc = _load(aipp_models["dynamic"])
    ins, _, _ = _run(model_id, desc, [nv12_image()], extra_sizes=[160])
    wrong = _dynamic_params(crop=(0, 0, 8, 8))  # 8 x 8 + padding 4 != the 16 x 16 model input
    assert acl.mdl.set_input_aipp(model_id, ins, 1, wrong) == C.ACL_ERROR_INVALID_PARAM
    assert "model input" in acl.get_recent_err_msg()
    assert acl.mdl.set_input_aipp(model_id, ins, 0, _dynamic_params()) == C.ACL_ERROR_GE_AIPP_MODE_INVALID
    assert acl.mdl.create_aipp(0) == 0


# ---------------------------------------------------------------- the config parser (issue 29)
_CONFIG = "aipp_op {\n  aipp_mode : static\n  input_format : RGB888_U8\n}\n"


@pytest.mark.timeout(60)  # the regex scan before issue 29 took hours on these (16 KB of blanks: 14 s)
@pytest.mark.parametrize("filler", [" " * (1 << 18), "\n\t " * (1 << 16), "x" * (1 << 18)])
def test_the_aipp_config_parser_is_linear_in_long_runs_of_blanks_or_letters(filler):
    from npurt.ge.aipp import AippConfigError, parse_config
    if filler.isspace():
        (block,) = parse_config(filler + _CONFIG + filler)  # blanks around the block are fine
        assert block["aipp_mode"] == "static"
    else:
        with pytest.raises(AippConfigError, match="unexpected text"):
            parse_config(filler + " " + _CONFIG)


def test_the_aipp_config_parser_names_what_is_wrong():
    from npurt.ge.aipp import AippConfigError, parse_config
    for text, message in (("junk aipp_op { aipp_mode : static }", "unexpected text in the AIPP config: 'junk'"),
                          ("other_op { aipp_mode : static }", "unknown block 'other_op'"),
                          ("{ aipp_mode : static }", "unexpected text"),
                          ("aipp_op { aipp_mode : static ", "not closed"),
                          ("aipp_op { aipp_mode : static } trailing", "unexpected text in the AIPP config: 'trailing'"),
                          ("", "no aipp_op block")):
        with pytest.raises(AippConfigError, match=message):
            parse_config(text)
