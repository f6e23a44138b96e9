"""`npurt atc`: ATC's command line converting ONNX models to .om files, the .om format (the
real 256-byte header), and what loading refuses."""
from __future__ import annotations

import json
import struct
import subprocess
import sys

import numpy as np
import pytest

import onnx_models as M
import npurt.acl as acl
from npurt.acl import constants as C
from npurt.ge import atc

OK = 0


@pytest.fixture(scope="module")
def mlp_onnx(tmp_path_factory):
    return M.save(M.mlp(), tmp_path_factory.mktemp("atc") / "mlp.onnx")


@pytest.fixture
def dev(fresh_runtime):
    assert acl.init() == OK
    assert acl.rt.set_device(0) == OK
    yield


def run_atc(*args) -> tuple[int, str]:
    return atc.main(list(args)), ""


def test_the_cli_converts_like_atc(mlp_onnx, tmp_path):
    result = subprocess.run([sys.executable, "-m", "npurt.cli", "atc", f"--model={mlp_onnx}", "--framework=5",
                             f"--output={tmp_path / 'net'}", "--soc_version=Ascend910B3", "--input_shape=x:2,16"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "ATC run success" in result.stdout
    assert (tmp_path / "net.om").is_file()  # .om appended


def test_om_starts_with_the_real_model_file_header(mlp_onnx, tmp_path):
    path = M.atc(mlp_onnx, tmp_path / "net", input_shape="x:2,16")
    data = open(path, "rb").read()
    magic, headsize = struct.unpack_from("<II", data, 0)
    assert (magic, headsize) == (0x444F4D49, 256) and data[:4] == b"IMOD"
    (length,) = struct.unpack_from("<I", data, 76)
    assert length == len(data) - 256
    assert data[160:180].rstrip(b"\0") == b"Ascend910B3"  # platform_version
    assert struct.unpack_from("<Q", data, 184)[0] == length  # model_length
    assert data[193] == 0  # is_unknow_model: static shapes


@pytest.mark.parametrize("framework,name", [("0", "Caffe"), ("3", "TensorFlow"), ("1", "MindSpore")])
def test_other_frameworks_are_refused_naming_the_onnx_route(mlp_onnx, tmp_path, capsys, framework, name):
    assert atc.main([f"--model={mlp_onnx}", f"--framework={framework}", f"--output={tmp_path / 'n'}",
                     "--soc_version=Ascend910B3"]) == 1
    err = capsys.readouterr().err
    assert name in err and "ONNX" in err and "--framework=5" in err


@pytest.mark.parametrize("args,words", [
    (["--framework=5", "--output=x"], "--soc_version is required"),
    (["--framework=5", "--soc_version=Ascend910B3"], "--output is required"),
    (["--framework=5", "--output=x", "--soc_version=Ascend999"], "npurt simulates"),
    (["--framework=5", "--output=x", "--soc_version=Ascend910B3", "--input_shape=y:1,16"], "not an input"),
    (["--framework=5", "--output=x", "--soc_version=Ascend910B3", "--input_shape=x:1,15"], "fixes it to 16"),
    (["--framework=5", "--output=x", "--soc_version=Ascend910B3", "--input_shape=x:-1,16",
      "--dynamic_batch_size=4"], "2 to 100 gears"),
    (["--framework=5", "--output=x", "--soc_version=Ascend910B3", "--input_shape=x:2,16",
      "--dynamic_batch_size=1,2"], "needs -1"),
    (["--framework=5", "--output=x", "--soc_version=Ascend910B3", "--input_shape=x:-1,16",
      "--dynamic_batch_size=1,2", "--dynamic_dims=1;2"], "mutually exclusive"),
    (["--framework=5", "--output=x", "--soc_version=Ascend910B3", "--output_type=FP64"], "--output_type"),
    (["--framework=5", "--output=x", "--soc_version=Ascend910B3", "--input_format=NC1HWC0"], "--input_format"),
    (["--framework=5", "--output=x", "--soc_version=Ascend910B3", "--mode=9"], "--mode=9"),
    (["--framework=5", "--output=x", "--soc_version=Ascend910B3", "--log=loud"], "--log"),
])
def test_bad_options_fail_with_the_reason(mlp_onnx, tmp_path, capsys, args, words):
    args = [a.replace("--output=x", f"--output={tmp_path / 'x'}") for a in args]
    assert atc.main([f"--model={mlp_onnx}", *args]) == 1
    assert words in capsys.readouterr().err


def test_an_option_atc_does_not_have_is_a_usage_error(mlp_onnx, tmp_path, capsys):
    assert atc.main([f"--model={mlp_onnx}", "--framework=5", f"--output={tmp_path / 'x'}",
                     "--soc_version=Ascend910B3", "--no_such_flag=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: npurt atc --model=") and "unrecognized arguments: --no_such_flag=1" in err


def test_no_arguments_print_the_usage_and_exit_2(capsys):
    assert atc.main([]) == 2
    assert "usage: npurt atc" in capsys.readouterr().err


def test_every_atc_option_has_its_help():
    assert set(atc.HELP) == atc.FLAGS
    assert atc.main(["--help"]) == 0


def test_a_missing_or_broken_model_file_fails(tmp_path, capsys):
    assert atc.main(["--model=/nonexistent.onnx", "--framework=5", f"--output={tmp_path / 'x'}",
                     "--soc_version=Ascend910B3"]) == 1
    assert "does not exist" in capsys.readouterr().err
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf at all")
    assert atc.main([f"--model={bad}", "--framework=5", f"--output={tmp_path / 'x'}",
                     "--soc_version=Ascend910B3"]) == 1
    assert "not a readable ONNX model" in capsys.readouterr().err


def test_an_operator_onnxruntime_cannot_run_fails_the_conversion(tmp_path, capsys):
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"], domain="npurt.test")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("npurt.test", 1)])
    path = M.save(m, tmp_path / "bad_op.onnx")
    assert atc.main([f"--model={path}", "--framework=5", f"--output={tmp_path / 'x'}",
                     "--soc_version=Ascend910B3"]) == 1
    assert "cannot be compiled" in capsys.readouterr().err


def test_ascend_operators_in_the_default_domain_fail_the_conversion_naming_them(tmp_path, capsys):
    # the YOLOv7 sample's post-processing graph: YoloPreDetection nodes in ONNX's own domain
    from onnx import TensorProto, helper
    nodes = [helper.make_node("YoloPreDetection", ["x"], ["c", "o", "p"], boxes=3, name="yolo_pre_node_0"),
             helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 255, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = M.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)]), tmp_path / "yolo_pre.onnx")
    assert atc.main([f"--model={path}", "--framework=5", f"--output={tmp_path / 'x'}",
                     "--soc_version=Ascend910B3"]) == 1
    err = capsys.readouterr().err
    assert "not ONNX operators: YoloPreDetection (node(s) yolo_pre_node_0)" in err and "Relu" not in err


def test_mode_1_writes_the_description_and_mode_6_prints_it(mlp_onnx, tmp_path, capsys):
    path = M.atc(mlp_onnx, tmp_path / "net", input_shape="x:2,16")
    assert atc.main(["--mode=1", f"--om={path}", f"--json={tmp_path / 'net.json'}"]) == 0
    doc = json.loads((tmp_path / "net.json").read_text())
    assert doc["model"]["inputs"][0]["dims"] == [2, 16] and doc["header"]["magic"] == 0x444F4D49
    assert atc.main(["--mode=6", f"--om={path}"]) == 0
    assert "input x" in capsys.readouterr().out


def test_mode_3_checks_without_writing(mlp_onnx, tmp_path):
    assert atc.main([f"--model={mlp_onnx}", "--framework=5", "--mode=3", "--soc_version=Ascend910B3",
                     f"--output={tmp_path / 'x'}"]) == 0
    assert not (tmp_path / "x.om").exists()


def test_output_type_casts_the_outputs(dev, mlp_onnx, tmp_path):
    path = M.atc(mlp_onnx, tmp_path / "fp16", input_shape="x:2,16", output_type="FP16")
    model_id, ret = acl.mdl.load_from_file(path)
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, model_id)
    assert acl.mdl.get_output_data_type(desc, 0) == C.ACL_FLOAT16
    assert acl.mdl.get_output_size_by_index(desc, 0) == 2 * 4 * 2


def test_input_fp16_nodes_makes_the_input_half_precision(dev, mlp_onnx, tmp_path):
    path = M.atc(mlp_onnx, tmp_path / "in16", input_shape="x:2,16", input_fp16_nodes="x")
    model_id, _ = acl.mdl.load_from_file(path)
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, model_id)
    assert acl.mdl.get_input_data_type(desc, 0) == C.ACL_FLOAT16
    x = np.random.default_rng(0).standard_normal((2, 16)).astype(np.float16)
    ptr, _ = acl.rt.malloc(x.nbytes, 0)
    acl.rt.memcpy(ptr, x.nbytes, x.ctypes.data, x.nbytes, 1)
    out, _ = acl.rt.malloc(32, 0)
    ins, outs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    acl.mdl.add_dataset_buffer(ins, acl.create_data_buffer(ptr, x.nbytes))
    acl.mdl.add_dataset_buffer(outs, acl.create_data_buffer(out, 32))
    assert acl.mdl.execute(model_id, ins, outs) == OK
    y = np.zeros((2, 4), np.float32)
    acl.rt.memcpy(y.ctypes.data, 32, out, 32, 2)
    np.testing.assert_array_equal(y, M.reference(mlp_onnx, {"x": x.astype(np.float32)})[0])


def test_out_nodes_select_the_outputs(dev, tmp_path):
    src = M.save(M.cnn(n=1), tmp_path / "cnn.onnx")
    path = M.atc(src, tmp_path / "logits", out_nodes="fc:0")
    model_id, _ = acl.mdl.load_from_file(path)
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, model_id)
    assert acl.mdl.get_output_name_by_index(desc, 0) == "logits"
    assert acl.mdl.get_output_dims(desc, 0)[0]["dims"] == [1, 10]


# ---------------------------------------------------------------- what loading refuses
def test_missing_model_file_is_path_invalid(dev):
    assert acl.mdl.load_from_file("/no/such/model.om") == (0, C.ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID)
    assert "does not exist" in acl.get_recent_err_msg()


def test_a_file_shorter_than_the_header_or_with_a_wrong_magic_is_data_size_invalid(dev, tmp_path):
    short = tmp_path / "short.om"
    short.write_bytes(b"IMOD" + bytes(100))
    assert acl.mdl.load_from_file(str(short)) == (0, C.ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID)
    junk = tmp_path / "junk.om"
    junk.write_bytes(bytes(1024))
    assert acl.mdl.load_from_file(str(junk)) == (0, C.ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID)
    assert "magic" in acl.get_recent_err_msg()


def test_a_truncated_om_is_data_size_invalid(dev, mlp_onnx, tmp_path):
    data = open(M.atc(mlp_onnx, tmp_path / "net", input_shape="x:2,16"), "rb").read()
    cut = tmp_path / "cut.om"
    cut.write_bytes(data[:-10])
    assert acl.mdl.load_from_file(str(cut)) == (0, C.ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID)
    assert "truncated" in acl.get_recent_err_msg()


def test_an_om_built_by_canns_atc_is_refused_naming_the_fix(dev, tmp_path):
    header = struct.pack("<III64sIBBBB32sI32sII20sB3xQBB62s", 0x444F4D49, 256, 1, bytes(64), 512, 0, 0, 1, 0,
                         b"resnet50", 100, b"", 9, 1, b"Ascend310P3", 0, 512, 0, 0, b"")
    real = tmp_path / "resnet50.om"
    real.write_bytes(header + bytes(512))
    assert acl.mdl.load_from_file(str(real)) == (0, C.ACL_ERROR_GE_PARAM_INVALID)
    message = acl.get_recent_err_msg()
    assert "npurt atc" in message and "--framework=5" in message


def test_a_model_for_another_soc_is_refused(dev, mlp_onnx, tmp_path):
    path = M.atc(mlp_onnx, tmp_path / "p3", soc="Ascend310P3", input_shape="x:2,16")
    assert acl.mdl.load_from_file(path) == (0, C.ACL_ERROR_GE_LOAD_MODEL)
    message = acl.get_recent_err_msg()
    assert "Ascend310P3" in message and "NPURT_SOC" in message


def test_loading_needs_a_current_context(fresh_runtime, mlp_onnx, tmp_path):
    path = M.atc(mlp_onnx, tmp_path / "net", input_shape="x:2,16")
    assert acl.init() == OK
    assert acl.mdl.load_from_file(path) == (0, C.ACL_ERROR_RT_CONTEXT_NULL)


def test_unknown_model_id_is_model_id_invalid(dev):
    assert acl.mdl.unload(12345) == C.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, 12345) == C.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
    assert acl.mdl.execute(12345, acl.mdl.create_dataset(), acl.mdl.create_dataset()) == \
        C.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID


def test_load_from_mem_with_size_zero_is_invalid_param(dev):
    data = b"IMOD"
    assert acl.mdl.load_from_mem(acl.util.bytes_to_ptr(data), 0) == (0, C.ACL_ERROR_INVALID_PARAM)


def test_without_the_models_extra_loading_names_what_to_install(dev, mlp_onnx, tmp_path, monkeypatch):
    path = M.atc(mlp_onnx, tmp_path / "net", input_shape="x:2,16")
    import builtins
    real_import = builtins.__import__

    def no_onnx(name, *args, **kwargs):
        if name.split(".")[0] in ("onnx", "onnxruntime"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnx)
    assert acl.mdl.load_from_file(path) == (0, C.ACL_ERROR_GE_LOAD_MODEL)
    assert "pip install 'npurt[models]'" in acl.get_recent_err_msg()


def test_the_graph_engine_front_ends_import_neither_onnx_nor_onnxruntime():
    code = ("import sys, npurt, npurt.acl as acl, npurt.ge, npurt.ge.api, npurt.ge.ops.execute\n"
            "assert callable(acl.mdl.load_from_file) and callable(acl.op.execute_v2) and npurt.Model\n"
            "heavy = [m for m in ('onnx', 'onnxruntime') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
