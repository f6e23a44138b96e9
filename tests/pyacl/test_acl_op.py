"""acl.op on the simulated NPU: operator models compiled by `npurt atc --singleop`, registered,
matched and executed through pyACL, every operator type checked against numpy."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import npurt.acl as acl
from npurt.acl import constants as C
from npurt.ge import atc
from npurt.ge import constants as G
from npurt.ge.ops import registry

OK = 0
RNG = np.random.default_rng(7)
TYPES = {np.dtype(np.float32): "float", np.dtype(np.float16): "float16", np.dtype(np.int32): "int32",
         np.dtype(np.int64): "int64", np.dtype(np.bool_): "bool", np.dtype(np.uint8): "uint8"}
ACL_TYPES = {np.dtype(np.float32): C.ACL_FLOAT, np.dtype(np.float16): C.ACL_FLOAT16, np.dtype(np.int32): C.ACL_INT32,
             np.dtype(np.int64): C.ACL_INT64, np.dtype(np.bool_): C.ACL_BOOL, np.dtype(np.uint8): C.ACL_UINT8}


def f32(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


# ---------------------------------------------------------------- numpy references (written out)
def conv2d_ref(x, w, b, stride, pad, dil, groups):
    """NCHW x, OIHW w; pad (top, bottom, left, right): loops over the output."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[1]), (pad[2], pad[3])))
    oh = (h + pad[0] + pad[1] - (kh - 1) * dil[0] - 1) // stride[0] + 1
    ow = (wd + pad[2] + pad[3] - (kw - 1) * dil[1] - 1) // stride[1] + 1
    y = np.zeros((n, o, oh, ow))
    per = o // groups
    for oc in range(o):
        g = oc // per
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg, i * stride[0]:i * stride[0] + (kh - 1) * dil[0] + 1:dil[0],
                           j * stride[1]:j * stride[1] + (kw - 1) * dil[1] + 1:dil[1]]
                y[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def pool_ref(x, k, s, padding, kind):
    """NCHW pooling with TF's SAME / VALID (SAME averages over valid elements only)."""
    n, c, h, w = x.shape
    if padding == "VALID":
        oh, ow, pt, pl = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1, 0, 0
    else:
        oh, ow = -(-h // s[0]), -(-w // s[1])
        pt = max((oh - 1) * s[0] + k[0] - h, 0) // 2
        pl = max((ow - 1) * s[1] + k[1] - w, 0) // 2
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s[0] - pt, j * s[1] - pl
            win = x[:, :, max(r0, 0):min(r0 + k[0], h), max(c0, 0):min(c0 + k[1], w)].astype(np.float64)
            y[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
    return y


def gelu_ref(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm_ref(x, g, b, axis, eps):
    x64 = x.astype(np.float64)
    axes = tuple(range(axis, x.ndim))
    mean = x64.mean(axis=axes, keepdims=True)
    var = x64.var(axis=axes, keepdims=True)
    return [(x64 - mean) / np.sqrt(var + eps) * g + b, mean, var]


# ---------------------------------------------------------------- the cases
def case(op, inputs, expected, attrs=(), consts=(), fmt="ND", in_formats=None, out_dtypes=None, name=None):
    """One op model and call: inputs (arrays), expected (arrays), attrs [(name, type, value)],
    consts (indices of inputs given as const values in the model and the call)."""
    expected = [np.asarray(e) for e in (expected if isinstance(expected, list) else [expected])]
    first = inputs[0].dtype
    out_dtypes = out_dtypes or [(first if first.kind == "f" else np.float32) if e.dtype == np.float64 else e.dtype
                                for e in expected]
    return {"id": name or op, "op": op, "inputs": inputs, "expected": [np.ascontiguousarray(e.astype(t)) for e, t in
                                                                       zip(expected, out_dtypes)],
            "attrs": list(attrs), "consts": set(consts), "fmt": fmt, "in_formats": in_formats}


a, b = f32(3, 4), f32(3, 4)
bpos = f32(3, 4, low=0.5, high=2.0)
h1, h2 = f32(2, 3).astype(np.float16), f32(2, 3).astype(np.float16)
i1, i2 = RNG.integers(-9, 9, (2, 5), dtype=np.int32), RNG.integers(1, 9, (2, 5), dtype=np.int32)
m1, m2, m3 = f32(4, 3), f32(5, 3), f32(5)
bm1, bm2 = f32(2, 3, 4), f32(2, 3, 5)
img = f32(1, 3, 6, 6)
wts = f32(4, 3, 3, 3)
cb = f32(4)
x3 = f32(2, 3, 4)
gam, bet = f32(3, 4), f32(3, 4)
CASES = [
    case("Add", [a, b], a + b),
    case("Add", [h1, h2], (h1.astype(np.float32) + h2.astype(np.float32)), name="Add-fp16",
         out_dtypes=[np.float16]),
    case("Sub", [i1, i2], i1 - i2, name="Sub-int32"),
    case("Mul", [a, f32(1, 4)], None or a * 0, name="Mul-broadcast"),  # replaced below
    case("RealDiv", [a, bpos], a / bpos),
    case("Div", [i1 * 7, i2], (i1 * 7) // i2, name="Div-int32"),
    case("Maximum", [a, b], np.maximum(a, b)),
    case("Minimum", [a, b], np.minimum(a, b)),
    case("Pow", [bpos, b], bpos.astype(np.float64) ** b),
    case("Equal", [i1, i1 * (i1 > 0)], i1 == i1 * (i1 > 0)),
    case("Greater", [a, b], a > b),
    case("Less", [a, b], a < b),
    case("Relu", [a], np.maximum(a, 0)),
    case("LeakyRelu", [a], np.where(a >= 0, a, a * np.float32(0.1)), [("negative_slope", "float", 0.1)]),
    case("Gelu", [a], gelu_ref(a)),
    case("Sigmoid", [a], 1 / (1 + np.exp(-a.astype(np.float64)))),
    case("Tanh", [a], np.tanh(a.astype(np.float64))),
    case("Exp", [a], np.exp(a.astype(np.float64))),
    case("Exp", [a], 2.0 ** (0.5 * a.astype(np.float64) + 1), [("base", "float", 2.0), ("scale", "float", 0.5),
                                                               ("shift", "float", 1.0)], name="Exp-base2"),
    case("Log", [bpos], np.log(bpos.astype(np.float64))),
    case("Log", [bpos], np.log10(bpos.astype(np.float64)), [("base", "float", 10.0)], name="Log-base10"),
    case("Sqrt", [bpos], np.sqrt(bpos.astype(np.float64))),
    case("Rsqrt", [bpos], 1 / np.sqrt(bpos.astype(np.float64))),
    case("Abs", [a], np.abs(a)),
    case("Neg", [a], -a),
    case("Square", [a], a.astype(np.float64) ** 2),
    case("Reciprocal", [bpos], 1 / bpos.astype(np.float64)),
    case("Cast", [a * 3], np.trunc(a * 3).astype(np.int32), [("dst_type", "int", C.ACL_INT32)]),
    case("Cast", [a], a.astype(np.float16), [("dst_type", "int", C.ACL_FLOAT16)], name="Cast-fp16"),
    case("ZerosLike", [a], np.zeros_like(a)),
    case("OnesLike", [i1], np.ones_like(i1)),
    case("MatMul", [m1, m2], m1.astype(np.float64) @ m2.T, [("transpose_x1", "bool", False),
                                                              ("transpose_x2", "bool", True)]),
    case("MatMulV2", [m1, m2, m3], m1.astype(np.float64) @ m2.T + m3, [("transpose_x2", "bool", True)]),
    case("BatchMatMul", [bm1, bm2], np.swapaxes(bm1, 1, 2).astype(np.float64) @ bm2, [("adj_x1", "bool", True)]),
    case("BatchMatMulV2", [bm1, np.swapaxes(bm2, 1, 2).copy()], np.swapaxes(bm1, 1, 2).astype(np.float64) @ bm2,
         [("adj_x1", "bool", True), ("adj_x2", "bool", True)]),
    case("SoftmaxV2", [x3], np.exp(x3) / np.exp(x3.astype(np.float64)).sum(axis=1, keepdims=True),
         [("axes", "list_int", [1])]),
    case("LayerNorm", [x3, gam, bet], layer_norm_ref(x3, gam, bet, 1, 1e-5),
         [("begin_norm_axis", "int", 1), ("begin_params_axis", "int", 1), ("epsilon", "float", 1e-5)]),
    case("Transpose", [x3, np.array([2, 0, 1], np.int32)], x3.transpose(2, 0, 1), consts=[1]),
    case("TransposeD", [x3], x3.transpose(1, 2, 0), [("perm", "list_int", [1, 2, 0])]),
    case("Reshape", [x3, np.array([4, -1], np.int64)], x3.reshape(4, 6), consts=[1]),
    case("ConcatD", [a, b], np.concatenate([a, b], axis=1), [("concat_dim", "int", 1), ("N", "int", 2)]),
    case("ConcatV2D", [a, b, a], np.concatenate([a, b, a], axis=0), [("concat_dim", "int", 0), ("N", "int", 3)]),
    case("SplitD", [x3], np.split(x3, 2, axis=2), [("split_dim", "int", 2), ("num_split", "int", 2)]),
    case("SplitVD", [x3], np.split(x3, [1], axis=1), [("size_splits", "list_int", [1, 2]), ("split_dim", "int", 1),
                                                     ("num_split", "int", 2)]),
    case("Fill", [np.array([2, 3], np.int32), np.array([1.5], np.float32)], np.full((2, 3), 1.5, np.float32),
         consts=[0]),
    case("FillD", [np.array([7], np.int32)], np.full((3, 2), 7, np.int32), [("dims", "list_int", [3, 2])]),
    case("ReduceSum", [x3, np.array([1], np.int64)], x3.astype(np.float64).sum(axis=1), consts=[1]),
    case("ReduceSumD", [x3], x3.astype(np.float64).sum(axis=(0, 2), keepdims=True),
         [("axes", "list_int", [0, 2]), ("keep_dims", "bool", True)]),
    case("ReduceMean", [x3, np.array([-1], np.int64)], x3.astype(np.float64).mean(axis=-1), consts=[1]),
    case("ReduceMeanD", [x3], x3.astype(np.float64).mean(axis=0), [("axes", "list_int", [0])]),
    case("ReduceMax", [x3, np.array([2], np.int32)], x3.max(axis=2), consts=[1]),
    case("ReduceMaxD", [x3], x3.max(axis=1, keepdims=True), [("axes", "list_int", [1]), ("keep_dims", "bool", True)]),
    case("Conv2D", [img, wts, cb], conv2d_ref(img, wts, cb, (2, 1), (1, 1, 0, 2), (1, 1), 1),
         [("strides", "list_int", [1, 1, 2, 1]), ("pads", "list_int", [1, 1, 0, 2]),
          ("data_format", "string", "NCHW")], in_formats=["NCHW", "NCHW", "ND"]),
    case("Conv2D", [img.transpose(0, 2, 3, 1).copy(), wts.transpose(2, 3, 1, 0).copy()],
         conv2d_ref(img, wts, None, (1, 1), (2, 2, 2, 2), (2, 2), 1).transpose(0, 2, 3, 1),
         [("strides", "list_int", [1, 1, 1, 1]), ("pads", "list_int", [2, 2, 2, 2]),
          ("dilations", "list_int", [1, 2, 2, 1])], in_formats=["NHWC", "HWCN"], name="Conv2D-NHWC-dilated"),
    case("Conv2D", [f32(1, 4, 5, 5), f32(6, 2, 3, 3)], None, name="Conv2D-groups"),  # filled below
    case("MaxPool", [img.transpose(0, 2, 3, 1).copy()],
         pool_ref(img, (3, 3), (2, 2), "SAME", "max").transpose(0, 2, 3, 1),
         [("ksize", "list_int", [1, 3, 3, 1]), ("strides", "list_int", [1, 2, 2, 1]), ("padding", "string", "SAME")],
         in_formats=["NHWC"]),
    case("AvgPool", [img], pool_ref(img, (2, 3), (2, 2), "VALID", "avg"),
         [("ksize", "list_int", [1, 1, 2, 3]), ("strides", "list_int", [1, 1, 2, 2]), ("padding", "string", "VALID"),
          ("data_format", "string", "NCHW")], in_formats=["NCHW"]),
    case("AvgPool", [img], pool_ref(img, (3, 3), (2, 2), "SAME", "avg"),
         [("ksize", "list_int", [1, 1, 3, 3]), ("strides", "list_int", [1, 1, 2, 2]), ("padding", "string", "SAME"),
          ("data_format", "string", "NCHW")], in_formats=["NCHW"], name="AvgPool-SAME"),
    case("BiasAdd", [img, f32(3)], None, [("data_format", "string", "NCHW")], in_formats=["NCHW", "ND"]),
    case("ArgMaxV2", [x3, np.array([1], np.int32)], x3.argmax(axis=1).astype(np.int32), consts=[1]),
    case("ArgMaxD", [x3], x3.argmax(axis=2).astype(np.int64), [("dimension", "int", -1), ("dtype", "data_type", C.ACL_INT64)]),
    case("Slice", [x3, np.array([1, 0, 1], np.int32), np.array([1, -1, 2], np.int32)], x3[1:2, :, 1:3],
         consts=[1, 2]),
    case("SliceD", [x3], x3[:, 1:3, :2], [("offsets", "list_int", [0, 1, 0]), ("size", "list_int", [2, 2, 2])]),
]
# cases whose reference needs the inputs drawn above
for c in CASES:
    if c["id"] == "Mul-broadcast":
        c["expected"] = [c["inputs"][0] * c["inputs"][1]]
    elif c["id"] == "Conv2D-groups":
        x, w = c["inputs"]
        c["expected"] = [conv2d_ref(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 2).astype(np.float32)]
        c["attrs"] = [("strides", "list_int", [1, 1, 1, 1]), ("pads", "list_int", [1, 1, 1, 1]),
                      ("groups", "int", 2), ("data_format", "string", "NCHW")]
        c["in_formats"] = ["NCHW", "NCHW"]
    elif c["id"] == "BiasAdd":
        x, bias = c["inputs"]
        c["expected"] = [(x + bias.reshape(1, 3, 1, 1)).astype(np.float32)]
IDS = [c["id"] for c in CASES]


def _desc_json(arr, fmt, const=False):
    d = {"format": fmt, "shape": list(arr.shape), "type": TYPES[arr.dtype]}
    if const:
        d.update(is_const=True, const_value=arr.ravel().tolist())
    return d


def _formats(c):
    return c["in_formats"] or [c["fmt"]] * len(c["inputs"])


def singleop_json(cases) -> list:
    out = []
    for c in cases:
        fmts = _formats(c)
        out.append({"op": c["op"], "name": c["id"],
                    "input_desc": [_desc_json(x, f, i in c["consts"]) for i, (x, f) in enumerate(zip(c["inputs"], fmts))],
                    "output_desc": [_desc_json(e, fmts[0] if e.ndim == 4 else "ND") for e in c["expected"]],
                    "attr": [{"name": n, "type": t, "value": v} for n, t, v in c["attrs"]]})
    return out


@pytest.fixture(scope="module")
def op_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("ops")
    (d / "ops.json").write_text(json.dumps(singleop_json(CASES)))
    assert atc.main([f"--singleop={d / 'ops.json'}", f"--output={d / 'models'}", "--soc_version=Ascend910B3"]) == 0
    return d / "models"


@pytest.fixture
def fresh_registry(monkeypatch):
    """Op models are process-wide (set_model_dir works once per process): each test starts empty."""
    monkeypatch.setattr(registry, "_models", [])
    monkeypatch.setattr(registry, "_cache", registry.OrderedDict())
    monkeypatch.setattr(registry, "_dir_set", False)
    monkeypatch.setattr(registry, "cast_has_truncate", False)
    from npurt.ge.ops import kernels
    for name in ("_selectors", "_kernels", "_chosen"):
        monkeypatch.setattr(kernels, name, {})


@pytest.fixture
def dev(fresh_runtime, fresh_registry):
    assert acl.init() == OK
    assert acl.rt.set_device(0) == OK
    stream, _ = acl.rt.create_stream()
    yield stream


def device_buffer(arr) -> tuple[int, int]:
    ptr, ret = acl.rt.malloc(max(arr.nbytes, 1), 0)
    assert ret == OK
    if arr.nbytes:
        data = np.ascontiguousarray(arr)
        acl.rt.memcpy(ptr, arr.nbytes, data.ctypes.data, arr.nbytes, 1)
    return acl.create_data_buffer(ptr, arr.nbytes), ptr


def tensor_desc(arr, fmt, const=False) -> int:
    fmt_code = {"ND": G.ACL_FORMAT_ND, "NCHW": G.ACL_FORMAT_NCHW, "NHWC": G.ACL_FORMAT_NHWC,
                "HWCN": G.ACL_FORMAT_HWCN}[fmt]
    d = acl.create_tensor_desc(ACL_TYPES[arr.dtype], list(arr.shape), fmt_code)
    if const:
        data = np.ascontiguousarray(arr)
        assert acl.set_tensor_const(d, data.ctypes.data, data.nbytes) == OK
    return d


def make_attr(attrs) -> int:
    attr = acl.op.create_attr()
    setters = {"bool": acl.op.set_attr_bool, "int": acl.op.set_attr_int, "float": acl.op.set_attr_float,
               "string": acl.op.set_attr_string, "list_int": acl.op.set_attr_list_int,
               "data_type": lambda a, n, v: acl.op.set_attr_data_type(a, n, v)[1]}  # returns (attr, ret)
    for name, kind, value in attrs:
        assert setters[kind](attr, name, value) == OK
    return attr


def run_case(c, stream):
    fmts = _formats(c)
    in_descs = [tensor_desc(x, f, i in c["consts"]) for i, (x, f) in enumerate(zip(c["inputs"], fmts))]
    in_bufs = [device_buffer(x)[0] for x in c["inputs"]]
    out_descs = [tensor_desc(e, fmts[0] if e.ndim == 4 else "ND") for e in c["expected"]]
    outs = [device_buffer(np.zeros_like(e)) for e in c["expected"]]
    ret = acl.op.execute_v2(c["op"], in_descs, in_bufs, out_descs, [b for b, _ in outs], make_attr(c["attrs"]),
                            stream)
    assert ret == OK, acl.get_recent_err_msg()
    assert acl.rt.synchronize_stream(stream) == OK, acl.get_recent_err_msg()
    results = []
    for (_, ptr), e in zip(outs, c["expected"]):
        y = np.zeros_like(e)
        if y.nbytes:
            acl.rt.memcpy(y.ctypes.data, y.nbytes, ptr, y.nbytes, 2)
        results.append(y)
    return results


def test_library_has_at_least_thirty_operator_types_and_every_one_is_tested():
    from npurt.ge.ops.library import OPS
    assert len(OPS) >= 30
    assert {c["op"] for c in CASES} == set(OPS)


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_operator_matches_numpy(dev, op_dir, c):
    path = op_dir / f"{c['id']}.om"
    data = path.read_bytes()
    assert acl.op.load(acl.util.bytes_to_ptr(data), len(data)) == OK
    for y, e in zip(run_case(c, dev), c["expected"]):
        assert y.dtype == e.dtype and y.shape == e.shape
        if e.dtype.kind == "f":
            tol = 2e-3 if e.dtype == np.float16 else 2e-5
            np.testing.assert_allclose(y, e, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(y, e)


# ---------------------------------------------------------------- registration
def _compile(tmp_path, ops, name="models") -> str:
    (tmp_path / f"{name}.json").write_text(json.dumps(ops))
    assert atc.main([f"--singleop={tmp_path / f'{name}.json'}", f"--output={tmp_path / name}",
                     "--soc_version=Ascend910B3"]) == 0
    return str(tmp_path / name)


ADD = {"op": "Add", "input_desc": [{"format": "ND", "shape": [4], "type": "float"}] * 2,
       "output_desc": [{"format": "ND", "shape": [4], "type": "float"}]}


def test_atc_names_op_models_as_atc_does(tmp_path):
    d = _compile(tmp_path, [ADD, dict(ADD, name="my_add")])
    import os
    assert sorted(os.listdir(d)) == ["0_Add_0_2_4_0_2_4_0_2_4.om", "my_add.om"]


def test_set_model_dir_registers_once_per_process(dev, tmp_path):
    d = _compile(tmp_path, [ADD])
    assert acl.op.set_model_dir(d) == OK
    assert acl.op.set_model_dir(d) == C.ACL_ERROR_REPEAT_INITIALIZE


def test_set_model_dir_errors(dev, tmp_path):
    assert acl.op.set_model_dir(str(tmp_path / "missing")) == C.ACL_ERROR_READ_MODEL_FAILURE
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "bad.om").write_bytes(b"not a model" * 40)
    assert acl.op.set_model_dir(str(tmp_path / "junk")) == C.ACL_ERROR_DESERIALIZE_MODEL
    import onnx_models as M
    (tmp_path / "net").mkdir()
    M.atc(M.save(M.mlp(), tmp_path / "mlp.onnx"), tmp_path / "net" / "mlp", input_shape="x:1,16")
    assert acl.op.set_model_dir(str(tmp_path / "net")) == C.ACL_ERROR_PARSE_MODEL


def test_load_with_size_zero_is_invalid(dev):
    assert acl.op.load(acl.util.bytes_to_ptr(b"x"), 0) == C.ACL_ERROR_INVALID_PARAM


# ---------------------------------------------------------------- matching
def _vec(values, dtype=np.float32):
    arr = np.asarray(values, dtype)
    return tensor_desc(arr, "ND"), device_buffer(arr)


def test_a_call_no_model_matches_is_op_not_found(dev, tmp_path):
    acl.op.set_model_dir(_compile(tmp_path, [ADD]))
    (d, (buf, _)) = _vec([1, 2, 3, 4])
    assert acl.op.execute_v2("Sub", [d, d], [buf, buf], [d], [buf], 0, dev) == C.ACL_ERROR_OP_NOT_FOUND
    assert "no single-op model of type 'Sub'" in acl.get_recent_err_msg()
    (d5, (b5, _)) = _vec([1, 2, 3, 4, 5])
    assert acl.op.execute_v2("Add", [d5, d5], [b5, b5], [d5], [b5], 0, dev) == C.ACL_ERROR_OP_NOT_FOUND
    attr = acl.op.create_attr()
    acl.op.set_attr_int(attr, "alpha", 2)
    assert acl.op.execute_v2("Add", [d, d], [buf, buf], [d], [buf], attr, dev) == C.ACL_ERROR_OP_NOT_FOUND
    assert acl.op.create_handle("Add", [d5, d5], [d5], 0) == (0, C.ACL_ERROR_OP_NOT_FOUND)


def test_handles_run_the_matched_model_and_check_buffer_counts(dev, tmp_path):
    acl.op.set_model_dir(_compile(tmp_path, [ADD]))
    (d, (x, _)) = _vec([1, 2, 3, 4])
    (_, (y, y_ptr)) = _vec([0, 0, 0, 0])
    handle, ret = acl.op.create_handle("Add", [d, d], [d], 0)
    assert ret == OK and handle
    assert acl.op.execute_with_handle(handle, [x, x], [y], dev) == OK
    assert acl.rt.synchronize_stream(dev) == OK
    out = np.zeros(4, np.float32)
    acl.rt.memcpy(out.ctypes.data, 16, y_ptr, 16, 2)
    np.testing.assert_array_equal(out, [2, 4, 6, 8])
    assert acl.op.execute_with_handle(handle, [x], [y], dev) == C.ACL_ERROR_OP_INPUT_NOT_MATCH
    assert acl.op.execute_with_handle(handle, [x, x], [], dev) == C.ACL_ERROR_OP_OUTPUT_NOT_MATCH
    assert acl.op.destroy_handle(handle) is None


def test_cast_and_a_handle_for_cast(dev, tmp_path):
    acl.op.set_model_dir(_compile(tmp_path, [{
        "op": "Cast", "input_desc": [{"format": "ND", "shape": [3], "type": "float"}],
        "output_desc": [{"format": "ND", "shape": [3], "type": "float16"}],
        "attr": [{"name": "dst_type", "type": "int", "value": 1}]}]))
    (src, (x, _)) = _vec([1.0, 2.5, -3.25])
    dst = acl.create_tensor_desc(C.ACL_FLOAT16, [3], G.ACL_FORMAT_ND)
    y, y_ptr = device_buffer(np.zeros(3, np.float16))
    assert acl.op.cast(src, x, dst, y, 0, dev) == OK
    assert acl.rt.synchronize_stream(dev) == OK
    out = np.zeros(3, np.float16)
    acl.rt.memcpy(out.ctypes.data, 6, y_ptr, 6, 2)
    np.testing.assert_array_equal(out, [1.0, 2.5, -3.25])
    handle, ret = acl.op.create_handle_for_cast(src, dst, 0)
    assert ret == OK and acl.op.execute_with_handle(handle, [x], [y], dev) == OK
    wrong = acl.create_tensor_desc(C.ACL_INT32, [3], G.ACL_FORMAT_ND)
    assert acl.op.cast(src, x, wrong, y, 0, dev) == C.ACL_ERROR_OP_NOT_FOUND


def test_cast_finds_a_model_compiled_with_truncate_once_one_is_registered(dev, tmp_path):
    # acl_op_resource_manager.cpp: a registered Cast with "truncate" makes aclopCast add it
    acl.op.set_model_dir(_compile(tmp_path, [{
        "op": "Cast", "input_desc": [{"format": "ND", "shape": [3], "type": "float"}],
        "output_desc": [{"format": "ND", "shape": [3], "type": "int32"}],
        "attr": [{"name": "dst_type", "type": "int", "value": 3}, {"name": "truncate", "type": "bool",
                                                                   "value": False}]}]))
    (src, (x, _)) = _vec([1.75, 2.5, -3.25])
    dst = acl.create_tensor_desc(C.ACL_INT32, [3], G.ACL_FORMAT_ND)
    y, y_ptr = device_buffer(np.zeros(3, np.int32))
    assert acl.op.cast(src, x, dst, y, 0, dev) == OK, acl.get_recent_err_msg()
    assert acl.rt.synchronize_stream(dev) == OK
    out = np.zeros(3, np.int32)
    acl.rt.memcpy(out.ctypes.data, 12, y_ptr, 12, 2)
    np.testing.assert_array_equal(out, [1, 2, -3])
    handle, ret = acl.op.create_handle_for_cast(src, dst, 0)
    assert ret == OK and acl.op.execute_with_handle(handle, [x], [y], dev) == OK
    assert acl.op.cast(src, x, dst, y, 1, dev) == C.ACL_ERROR_OP_NOT_FOUND  # truncate=True: not compiled


def test_an_input_in_host_memory_is_invalid_and_the_stream_stays_usable(dev, tmp_path):
    acl.op.set_model_dir(_compile(tmp_path, [ADD]))
    (d, (x, _)) = _vec([1, 2, 3, 4])
    (_, (y, y_ptr)) = _vec([0, 0, 0, 0])
    host = np.array([10, 20, 30, 40], np.float32).tobytes()
    hbuf = acl.create_data_buffer(acl.util.bytes_to_ptr(host), len(host))
    assert acl.op.execute_v2("Add", [d, d], [x, hbuf], [d], [y], 0, dev) == C.ACL_ERROR_INVALID_PARAM
    assert "host memory" in acl.get_recent_err_msg()
    assert acl.op.execute_v2("Add", [d, d], [x, x], [d], [y], 0, dev) == OK
    assert acl.rt.synchronize_stream(dev) == OK
    out = np.zeros(4, np.float32)
    acl.rt.memcpy(out.ctypes.data, 16, y_ptr, 16, 2)
    np.testing.assert_array_equal(out, [2, 4, 6, 8])


def test_a_handle_for_a_desc_placed_in_host_memory_is_not_supported(dev, tmp_path):
    acl.op.set_model_dir(_compile(tmp_path, [ADD]))
    d = acl.create_tensor_desc(C.ACL_FLOAT, [4], G.ACL_FORMAT_ND)
    host = acl.create_tensor_desc(C.ACL_FLOAT, [4], G.ACL_FORMAT_ND)
    assert acl.set_tensor_place_ment(host, G.ACL_MEMTYPE_HOST) == OK
    assert acl.op.create_handle("Add", [d, host], [d], 0) == (0, C.ACL_ERROR_API_NOT_SUPPORT)
    assert acl.op.create_handle("Add", [d, d], [host], 0) == (0, C.ACL_ERROR_API_NOT_SUPPORT)
    handle, ret = acl.op.create_handle("Add", [d, d], [d], 0)
    assert ret == OK and handle


def test_optional_input_left_out_with_an_undefined_desc_and_an_empty_buffer(dev, tmp_path):
    acl.op.set_model_dir(_compile(tmp_path, [{
        "op": "MatMulV2", "input_desc": [{"format": "ND", "shape": [2, 3], "type": "float"},
                                        {"format": "ND", "shape": [3, 2], "type": "float"},
                                        {"format": "RESERVED", "shape": [], "type": "UNDEFINED"}],
        "output_desc": [{"format": "ND", "shape": [2, 2], "type": "float"}]}]))
    x1, x2 = f32(2, 3), f32(3, 2)
    none = acl.create_tensor_desc(C.ACL_DT_UNDEFINED, [], G.ACL_FORMAT_UNDEFINED)
    out, out_ptr = device_buffer(np.zeros((2, 2), np.float32))
    ret = acl.op.execute_v2("MatMulV2", [tensor_desc(x1, "ND"), tensor_desc(x2, "ND"), none],
                            [device_buffer(x1)[0], device_buffer(x2)[0], acl.create_data_buffer(0, 0)],
                            [tensor_desc(np.zeros((2, 2), np.float32), "ND")], [out], 0, dev)
    assert ret == OK and acl.rt.synchronize_stream(dev) == OK
    y = np.zeros((2, 2), np.float32)
    acl.rt.memcpy(y.ctypes.data, 16, out_ptr, 16, 2)
    np.testing.assert_allclose(y, x1 @ x2, rtol=1e-6)


def test_dynamic_shape_operator_matches_through_ranges_and_updates_output_descs(dev, tmp_path):
    acl.op.set_model_dir(_compile(tmp_path, [{
        "op": "Relu", "input_desc": [{"format": "ND", "shape": [-1], "shape_range": [[1, 8]], "type": "float"}],
        "output_desc": [{"format": "ND", "shape": [-1], "shape_range": [[1, 8]], "type": "float"}]}]))
    x = np.array([-1, 2, -3, 4, 5], np.float32)
    in_desc = tensor_desc(x, "ND")
    out_desc = acl.create_tensor_desc(C.ACL_FLOAT, [-1], G.ACL_FORMAT_ND)
    acl.set_tensor_shape_range(out_desc, [[1, 8]])
    acl.set_tensor_shape_range(in_desc, [[1, 8]])
    y, y_ptr = device_buffer(np.zeros(8, np.float32))
    assert acl.op.execute_v2("Relu", [in_desc], [device_buffer(x)[0]], [out_desc], [y], 0, dev) == OK
    assert acl.rt.synchronize_stream(dev) == OK
    assert acl.get_tensor_desc_dim(out_desc, 0) == 5  # the real output shape
    out = np.zeros(5, np.float32)
    acl.rt.memcpy(out.ctypes.data, 20, y_ptr, 20, 2)
    np.testing.assert_array_equal(out, np.maximum(x, 0))
    big = tensor_desc(np.zeros(9, np.float32), "ND")
    acl.set_tensor_shape_range(big, [[1, 8]])
    assert acl.op.execute_v2("Relu", [big], [device_buffer(np.zeros(9, np.float32))[0]], [out_desc], [y], 0,
                             dev) == C.ACL_ERROR_OP_NOT_FOUND


def test_an_operator_failing_on_the_device_is_reported_at_synchronize(dev, tmp_path):
    acl.op.set_model_dir(_compile(tmp_path, [{
        "op": "Reshape", "input_desc": [{"format": "ND", "shape": [6], "type": "float"},
                                       {"format": "ND", "shape": [2], "type": "int64"}],
        "output_desc": [{"format": "ND", "shape": [2, 3], "type": "float"}]}]))
    x = f32(6)
    shape = np.array([4, 4], np.int64)  # read from device memory when the task runs: 16 != 6
    y, _ = device_buffer(np.zeros((2, 3), np.float32))
    ret = acl.op.execute_v2("Reshape", [tensor_desc(x, "ND"), tensor_desc(shape, "ND")],
                            [device_buffer(x)[0], device_buffer(shape)[0]],
                            [tensor_desc(np.zeros((2, 3), np.float32), "ND")], [y], 0, dev)
    assert ret == OK
    assert acl.rt.synchronize_stream(dev) == C.ACL_ERROR_RT_AICORE_EXCEPTION
    assert "Reshape" in acl.get_recent_err_msg()


def test_outputs_of_zero_elements_run_nothing(dev, tmp_path):
    empty = {"format": "ND", "shape": [0], "type": "float"}
    acl.op.set_model_dir(_compile(tmp_path, [{"op": "Relu", "input_desc": [empty], "output_desc": [empty]}]))
    d = acl.create_tensor_desc(C.ACL_FLOAT, [0], G.ACL_FORMAT_ND)
    assert acl.op.execute_v2("Relu", [d], [acl.create_data_buffer(0, 0)], [d], [acl.create_data_buffer(0, 0)], 0,
                             dev) == OK
    status, ret = acl.rt.stream_query(dev)
    assert ret == OK and status == C.ACL_STREAM_STATUS_COMPLETE


def test_infer_shape_and_update_params(dev, tmp_path):
    acl.op.set_model_dir(_compile(tmp_path, [ADD]))
    x = tensor_desc(f32(3, 1), "ND")
    y = tensor_desc(f32(1, 5), "ND")
    out = acl.create_tensor_desc(C.ACL_FLOAT, [], G.ACL_FORMAT_ND)
    assert acl.op.infer_shape("Add", [x, y], [0, 0], 1, [out], 0) == OK
    assert [acl.get_tensor_desc_dim(out, i) for i in range(acl.get_tensor_desc_num_dims(out))] == [3, 5]
    (d, _) = _vec([1, 2, 3, 4])
    assert acl.op.update_params("Add", [d, d], [d], 0) == OK
    assert acl.op.update_params("Add", [x, y], [out], 0) == C.ACL_ERROR_OP_NOT_FOUND


# ---------------------------------------------------------------- attributes and argument parsing
def test_attribute_setters_and_their_argument_checks(dev):
    attr = acl.op.create_attr()
    assert acl.op.set_attr_list_float(attr, "scales", [1.0, 2]) == OK
    assert acl.op.set_attr_list_string(attr, "names", ["a", "b"]) == OK
    assert acl.op.set_attr_list_list_int(attr, "groups", [[1, 2], [3]]) == OK
    assert acl.op.set_attr_list_bool(attr, "flags", [1, 0]) == OK
    assert acl.op.set_attr_data_type(attr, "dst", C.ACL_FLOAT16) == (attr, OK)
    assert acl.op.set_attr_list_data_type(attr, "dsts", [C.ACL_FLOAT, C.ACL_DT_UNDEFINED]) == (attr, OK)
    assert acl.op.set_attr_int(0, "x", 1) == C.ACL_ERROR_INVALID_PARAM
    with pytest.raises(TypeError, match="acl.op.set_attr_int args parse failed"):
        acl.op.set_attr_int(attr, "x", "1")
    with pytest.raises(TypeError, match="argument 3 is not list"):
        acl.op.set_attr_list_string(attr, "x", ("a",))
    with pytest.raises(ValueError, match="between 0 and 255"):
        acl.op.set_attr_list_bool(attr, "x", [300])
    with pytest.warns(Warning, match="only support the format of list"):
        assert acl.op.set_attr_list_int(attr, "ks", np.array([1, 2], np.int64)) == OK
    with pytest.raises(TypeError, match="argument 2, 3, 4, or 5 is not list"):
        acl.op.execute_v2("Add", (), [], [], [], 0, 0)
    with pytest.raises(TypeError, match="the list argument is not list of int"):
        acl.op.execute_v2("Add", ["d"], [], [], [], 0, 0)
    assert acl.op.destroy_attr(attr) is None


def test_max_op_queue_num_of_zero_is_invalid(dev):
    assert acl.op.set_max_op_queue_num(0) == C.ACL_ERROR_INVALID_PARAM
    assert acl.op.set_max_op_queue_num(64) == OK


@pytest.mark.parametrize("op,words", [
    ({"op": "NoSuchOp", "input_desc": [], "output_desc": [{"format": "ND", "shape": [1], "type": "float"}]},
     "not in npurt's operator library"),
    ({"op": "Cast", "input_desc": [{"format": "ND", "shape": [2], "type": "float"}],
      "output_desc": [{"format": "ND", "shape": [2], "type": "int32"}]}, "needs the attribute(s) dst_type"),
    ({"op": "Add", "input_desc": [{"format": "ND", "shape": [2], "type": "float"}] * 2,
      "output_desc": [{"format": "ND", "shape": [3], "type": "float"}]}, "declared [3]"),
    ({"op": "Add", "input_desc": [{"format": "ND", "shape": [2], "type": "float"}] * 2,
      "output_desc": [{"format": "ND", "shape": [2], "type": "float"}],
      "attr": [{"name": "alpha", "type": "int", "value": 1}]}, "has no attribute 'alpha'"),
    ({"op": "Add", "input_desc": [{"format": "ND", "shape": [2], "type": "float128"}] * 2,
      "output_desc": [{"format": "ND", "shape": [2], "type": "float"}]}, "is not a data type"),
])
def test_atc_refuses_op_descriptions_the_operator_cannot_take(tmp_path, capsys, op, words):
    (tmp_path / "ops.json").write_text(json.dumps([op]))
    assert atc.main([f"--singleop={tmp_path / 'ops.json'}", f"--output={tmp_path / 'o'}",
                     "--soc_version=Ascend910B3"]) == 1
    assert words in capsys.readouterr().err


# ---------------------------------------------------------------- kernels of the application
SCALE_KERNEL = b"""
import numpy as np
from npurt import GM, kernel

@kernel
def scale(ctx, x: GM, y: GM, ws: GM, n: np.int64, alpha: np.float32):
    lo, hi = ctx.block_range(n)
    tmp = ctx.gm(ws, np.float32, n)[lo:hi]
    np.multiply(ctx.gm(x, np.float32, n)[lo:hi], alpha, out=tmp)
    ctx.gm(y, np.float32, n)[lo:hi] = tmp
"""


def test_a_kernel_the_compile_function_picks_runs_with_its_tiling(dev):
    import struct
    keep = []

    def compile_func(num_inputs, input_desc, num_outputs, output_desc, attr, kernel_desc):
        n = acl.get_tensor_desc_element_count(input_desc[0])
        tiling = struct.pack("<qf4x", n, 2.5)
        sizes = np.array([n * 4], np.uint64)
        keep.extend([tiling, sizes])
        assert acl.op.set_kernel_args(kernel_desc, "scale_f32", 2, acl.util.bytes_to_ptr(tiling), len(tiling)) == OK
        assert acl.op.set_kernel_workspace_sizes(kernel_desc, 1, sizes.ctypes.data) == OK

    assert acl.op.register_compile_func("MyScale", compile_func) == OK
    assert acl.op.register_compile_func("MyScale", compile_func) == C.ACL_ERROR_BIN_SELECTOR_ALREADY_REGISTERED
    assert acl.op.create_kernel("MyScale", "scale_f32", "scale", acl.util.bytes_to_ptr(SCALE_KERNEL),
                                len(SCALE_KERNEL), G.ACL_ENGINE_AICORE, 0) == OK
    assert acl.op.create_kernel("MyScale", "scale_f32", "scale", acl.util.bytes_to_ptr(SCALE_KERNEL),
                                len(SCALE_KERNEL), G.ACL_ENGINE_AICORE, 0) == C.ACL_ERROR_KERNEL_ALREADY_REGISTERED
    x = f32(10)
    d = tensor_desc(x, "ND")
    xb, _ = device_buffer(x)
    yb, y_ptr = device_buffer(np.zeros(10, np.float32))
    assert acl.op.execute_v2("MyScale", [d], [xb], [d], [yb], 0, dev) == C.ACL_ERROR_OP_NOT_FOUND  # not compiled
    assert acl.op.update_params("MyScale", [d], [d], 0) == OK
    assert acl.op.execute_v2("MyScale", [d], [xb], [d], [yb], 0, dev) == OK
    assert acl.rt.synchronize_stream(dev) == OK
    y = np.zeros(10, np.float32)
    acl.rt.memcpy(y.ctypes.data, 40, y_ptr, 40, 2)
    np.testing.assert_array_equal(y, x * np.float32(2.5))
    assert acl.op.unregister_compile_func("MyScale") == OK
    assert acl.op.update_params("MyScale", [d], [d], 0) == C.ACL_ERROR_OP_NOT_FOUND


def test_a_compile_function_picking_an_unregistered_kernel_is_kernel_not_found(dev):
    import struct
    tiling = struct.pack("<q", 1)

    def compile_func(*args):
        acl.op.set_kernel_args(args[-1], "missing", 1, acl.util.bytes_to_ptr(tiling), len(tiling))

    assert acl.op.register_compile_func("MyOther", compile_func) == OK
    d = tensor_desc(f32(2), "ND")
    assert acl.op.update_params("MyOther", [d], [d], 0) == C.ACL_ERROR_KERNEL_NOT_FOUND
    assert acl.op.create_kernel("MyOther", "k", "scale", acl.util.bytes_to_ptr(SCALE_KERNEL), len(SCALE_KERNEL),
                                G.ACL_ENGINE_SYS, 0) == C.ACL_ERROR_INVALID_PARAM
    with pytest.raises(TypeError, match="argument 2 must be a callback function"):
        acl.op.register_compile_func("MyOther", 5)
    acl.op.unregister_compile_func("MyOther")


# ---------------------------------------------------------------- compile-time checks stay small (issue 29)
def test_atc_singleop_does_not_allocate_the_declared_shapes_to_check_an_op(tmp_path):
    # a 300-byte JSON declaring big tensors made the check allocate 1.7 GiB
    import tracemalloc
    big = {"format": "ND", "shape": [8192, 8192], "type": "float"}  # 256 MiB each
    ops = [{"op": "Add", "input_desc": [big, big], "output_desc": [big]}]
    tracemalloc.start()
    try:
        _compile(tmp_path, ops, "big")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"compiling one op description allocated {peak} bytes"


def test_atc_singleop_still_checks_small_ops_by_running_them(tmp_path, capsys):
    bad = dict(ADD, output_desc=[{"format": "ND", "shape": [5], "type": "float"}])
    (tmp_path / "bad.json").write_text(json.dumps([bad]))
    assert atc.main([f"--singleop={tmp_path / 'bad.json'}", f"--output={tmp_path / 'o'}",
                     "--soc_version=Ascend910B3"]) != 0
    assert "declared [5] but the operator produces [4]" in capsys.readouterr().err
