"""Small ONNX models built with onnx.helper (no downloads) for the graph-engine tests, and a
helper that converts them with `npurt atc` (in process)."""
from __future__ import annotations

import os

import numpy as np

onnx = __import__("pytest").importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

OPSET = 17


def _init(rng, name, shape, scale=0.2):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def cnn(n="N", h=16, w=16, classes=10, seed=0):
    """Conv-Relu-MaxPool-Conv-Relu-GAP-Gemm-Softmax: x [n, 3, h, w] -> prob [n, classes]."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
             helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["logits"], transB=1, name="fc"),
             helper.make_node("Softmax", ["logits"], ["prob"], axis=1, name="softmax")]
    inits = [_init(rng, "w1", (8, 3, 3, 3)), _init(rng, "b1", (8,)), _init(rng, "w2", (16, 8, 3, 3)),
             _init(rng, "b2", (16,)), _init(rng, "w3", (classes, 16)), _init(rng, "b3", (classes,))]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, 3, h, w])],
                  [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [n, classes])], inits)


def conv_features(seed=1):
    """x [N, 3, H, W] -> feat [N, 4, H, W] (a conv: the output grows with the image) and
    pooled [N, 4]."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["feat"], pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["feat"], ["g"]),
             helper.make_node("Flatten", ["g"], ["pooled"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                  [helper.make_tensor_value_info("feat", TensorProto.FLOAT, ["N", 4, "H", "W"]),
                   helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["N", 4])],
                  [_init(rng, "w", (4, 3, 3, 3)), _init(rng, "b", (4,))])


def mlp(n="N", features=16, hidden=32, classes=4, seed=2):
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Tanh", ["h"], ["t"]),
             helper.make_node("Gemm", ["t", "w2", "b2"], ["z"], transB=1),
             helper.make_node("Sigmoid", ["z"], ["y"])]
    inits = [_init(rng, "w1", (hidden, features)), _init(rng, "b1", (hidden,)), _init(rng, "w2", (classes, hidden)),
             _init(rng, "b2", (classes,))]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, features])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, classes])], inits)


def multi_io():
    """a, b float [2, 3] and k int32 [4] -> sum float [2, 3], prod float [2, 3], k2 int32 [4]."""
    nodes = [helper.make_node("Add", ["a", "b"], ["sum"]), helper.make_node("Mul", ["a", "b"], ["prod"]),
             helper.make_node("Add", ["k", "k"], ["k2"])]
    return _model(nodes, [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
                          helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3]),
                          helper.make_tensor_value_info("k", TensorProto.INT32, [4])],
                  [helper.make_tensor_value_info("sum", TensorProto.FLOAT, [2, 3]),
                   helper.make_tensor_value_info("prod", TensorProto.FLOAT, [2, 3]),
                   helper.make_tensor_value_info("k2", TensorProto.INT32, [4])])


def identity_image(h, w, c=3):
    """x [1, c, h, w] -> y = x * 1 (what AIPP fed the model comes out unchanged)."""
    one = numpy_helper.from_array(np.ones((1,), np.float32), "one")
    return _model([helper.make_node("Mul", ["x", "one"], ["y"])],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, h, w])], [one])


def gather_model():
    """x [4] float, idx [2] int64 -> Gather(x, idx): an out-of-range index fails at run time."""
    return _model([helper.make_node("Gather", ["x", "idx"], ["y"], axis=0)],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                   helper.make_tensor_value_info("idx", TensorProto.INT64, [2])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])


def nonzero_model():
    """x [-1] float -> indices of the non-zeros: the output's length depends on the data."""
    return _model([helper.make_node("NonZero", ["x"], ["nz"])],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["L"])],
                  [helper.make_tensor_value_info("nz", TensorProto.INT64, [1, "K"])])


def endless_model(n: int = 4):
    """y = x + (number of iterations) of a Loop whose condition never turns false: a model
    that never finishes by itself (issue 29: timeouts, Ctrl-C, exit while it runs)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["v_in", "one"], ["v_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [n])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [n])],
        [numpy_helper.from_array(np.ones(n, np.float32), "one")])
    return _model([helper.make_node("Loop", ["", "cond", "x"], ["y"], body=body)],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])],
                  [numpy_helper.from_array(np.array(True), "cond")])


def save(model, path) -> str:
    onnx.save(model, path)
    return str(path)


def atc(onnx_path, out, soc="Ascend910B3", **flags) -> str:
    """Convert with `npurt atc` in process; returns the .om path (raises on failure)."""
    from npurt.ge import atc as atc_cli
    argv = [f"--model={onnx_path}", "--framework=5", f"--output={out}", f"--soc_version={soc}"]
    argv += [f"--{k}={v}" for k, v in flags.items()]
    code = atc_cli.main(argv)
    assert code == 0, f"npurt atc {' '.join(argv)} failed"
    return str(out) + ("" if str(out).endswith(".om") else ".om")


def reference(model_path, feeds: dict) -> list[np.ndarray]:
    """ONNX Runtime run directly on the model (what the npurt results must equal)."""
    import onnxruntime as ort
    return ort.InferenceSession(os.fspath(model_path), providers=["CPUExecutionProvider"]).run(None, feeds)
