"""The operator library: Ascend IR operator types with their Ascend attribute names, in numpy.

An `Op` is (inputs, outputs, attribute defaults, compute). `compute(xs, attrs)` gets the
input arrays (None for an absent optional input; a dynamic input, such as ConcatD's x, is
the list of arrays) and returns the output arrays; `attrs` also holds "_formats", the
input descs' formats. float16 / bfloat16 arithmetic runs in
float32 and is rounded once to the output type, as npurt.ops does; integer arithmetic
stays in its type. Formulas follow the Ascend IR definitions:

* Exp / Log: y = base^(scale*x + shift), y = log_base(scale*x + shift) (base -1: e).
* Gelu: the tanh approximation x / (1 + exp(-sqrt(8/pi) (x + 0.044715 x^3))).
* LayerNorm: normalises over the dims from begin_norm_axis; returns y, mean, variance
  (population variance, dims kept).
* Conv2D / MaxPool / AvgPool: data_format "NHWC" (the default) or "NCHW"; Conv2D's pads are
  [top, bottom, left, right], its filter in the desc's format (NCHW: [out, in/groups, kh,
  kw]; HWCN: [kh, kw, in/groups, out]); pooling padding "SAME" or "VALID" (SAME averages
  over the valid elements only).
* MatMul / MatMulV2: transpose_x1, transpose_x2; BatchMatMul / V2: adj_x1, adj_x2; an
  optional bias is added.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .. import constants as G
from ..dtypes import to_numpy
from .attrs import ge_to_acl_type

HALF = ("float16", "bfloat16")
_GELU = math.sqrt(8.0 / math.pi)


@dataclass
class Op:
    inputs: tuple          # input names; "name?" optional, "name*" dynamic (a list of tensors)
    outputs: tuple         # output names; "name*" dynamic (as many as the model declares)
    attrs: dict = field(default_factory=dict)   # name -> (type, default); default None = required
    compute: Callable = None
    shape_inputs: tuple = ()  # inputs whose values decide output shapes (read on the host)


def _calc(x: np.ndarray) -> np.ndarray:
    """Arrays of half types computed in float32."""
    return x.astype(np.float32) if x.dtype.name in HALF else x


def _like(y, dtype) -> np.ndarray:
    return np.asarray(y).astype(dtype, copy=False)


def _binary(fn):
    def compute(xs, attrs):
        a, b = xs
        return [_like(fn(_calc(a), _calc(b)), a.dtype)]
    return compute


def _unary(fn):
    def compute(xs, attrs):
        (x,) = xs
        return [_like(fn(_calc(x), attrs), x.dtype)]
    return compute


def _compare(fn):
    def compute(xs, attrs):
        a, b = xs
        return [fn(_calc(a), _calc(b))]
    return compute


def _axis(a: int, rank: int) -> int:
    if not -rank <= a < max(rank, 1):
        raise ValueError(f"axis {a} is out of range for rank {rank}")
    return a % rank if rank else 0


def _axes(values, rank) -> tuple:
    return tuple(sorted({_axis(int(a), rank) for a in np.ravel(values)}))


def _div(a, b):
    if a.dtype.kind in "iu":
        return np.floor_divide(a, b) if np.all(b != 0) else _raise("RealDiv: integer division by zero")
    return np.divide(a, b)


def _raise(message):
    raise ValueError(message)


# ---------------------------------------------------------------- math
def _exp(x, at):
    base, scale, shift = at["base"], at["scale"], at["shift"]
    z = scale * x + shift
    return np.exp(z) if base == -1.0 else np.power(np.float32(base) if x.dtype != np.float64 else base, z)


def _log(x, at):
    base, scale, shift = at["base"], at["scale"], at["shift"]
    z = scale * x + shift
    y = np.log(z)
    return y if base == -1.0 else y / np.log(np.asarray(base, x.dtype if x.dtype.kind == "f" else np.float32))


def _gelu(x, at):
    x64 = x.astype(np.float64)
    return x64 / (1.0 + np.exp(-_GELU * (x64 + 0.044715 * x64 ** 3)))


def _sigmoid(x, at):
    return 1.0 / (1.0 + np.exp(-x))


# ---------------------------------------------------------------- matrices
def _matmul(ta: str, tb: str):
    def compute(xs, attrs):
        a, b = xs[0], xs[1]
        bias = xs[2] if len(xs) > 2 else None
        out_dtype = a.dtype
        a, b = _calc(a), _calc(b)
        if attrs[ta]:
            a = np.swapaxes(a, -1, -2)
        if attrs[tb]:
            b = np.swapaxes(b, -1, -2)
        y = np.matmul(a, b)
        if bias is not None:
            y = y + _calc(bias)
        return [_like(y, out_dtype)]
    return compute


# ---------------------------------------------------------------- shapes
def _transpose(xs, attrs):
    x, perm = xs[0], (xs[1] if len(xs) > 1 and xs[1] is not None else attrs["perm"])
    return [np.ascontiguousarray(np.transpose(x, [int(p) for p in np.ravel(perm)]))]


def _reshape(xs, attrs):
    x, shape = xs
    dims = [int(d) for d in np.ravel(shape)]
    return [x.reshape(dims).copy()]


def _concat(xs, attrs):
    arrays = xs[0] if isinstance(xs[0], list) else xs
    n = attrs.get("N")
    if n is not None and n != len(arrays):
        raise ValueError(f"ConcatD: attribute N is {n} but {len(arrays)} inputs are given")
    return [np.concatenate(arrays, axis=_axis(attrs["concat_dim"], arrays[0].ndim))]


def _split(xs, attrs):
    (x,) = xs
    dim, num = _axis(attrs["split_dim"], x.ndim), attrs["num_split"]
    if num <= 0 or x.shape[dim] % num:
        raise ValueError(f"SplitD: dim {dim} of size {x.shape[dim]} cannot be split into {num} equal parts")
    return [np.ascontiguousarray(p) for p in np.split(x, num, axis=dim)]


def _split_v(xs, attrs):
    (x,) = xs
    dim = _axis(attrs["split_dim"], x.ndim)
    sizes = list(attrs["size_splits"])
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[dim] - (sum(sizes) + 1)
    if sum(sizes) != x.shape[dim] or len(sizes) != attrs["num_split"]:
        raise ValueError(f"SplitVD: size_splits {attrs['size_splits']} do not split dim {dim} of size {x.shape[dim]}")
    return [np.ascontiguousarray(p) for p in np.split(x, np.cumsum(sizes)[:-1], axis=dim)]


def _fill(xs, attrs):
    dims, value = (xs[0], xs[1]) if len(xs) == 2 else (attrs["dims"], xs[0])
    return [np.full([int(d) for d in np.ravel(dims)], np.ravel(value)[0], dtype=value.dtype)]


def _fill_d(xs, attrs):
    (value,) = xs
    return [np.full([int(d) for d in attrs["dims"]], np.ravel(value)[0], dtype=value.dtype)]


# ---------------------------------------------------------------- reductions
def _reduce(fn, attr_axes: bool):
    def compute(xs, attrs):
        x = xs[0]
        axes = attrs["axes"] if attr_axes else xs[1]
        ax = _axes(axes, x.ndim) if np.size(axes) else tuple(range(x.ndim))
        y = fn(_calc(x), axis=ax, keepdims=attrs["keep_dims"])
        return [_like(y, x.dtype)]
    return compute


def _mean(x, axis, keepdims):
    return np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float32 if x.dtype.kind != "f" else None)


def _softmax(xs, attrs):
    (x,) = xs
    ax = _axes(attrs["axes"], x.ndim)
    z = _calc(x)
    z = np.exp(z - z.max(axis=ax, keepdims=True))
    return [_like(z / z.sum(axis=ax, keepdims=True), x.dtype)]


def _layer_norm(xs, attrs):
    x, gamma, beta = xs
    axis = _axis(attrs["begin_norm_axis"], x.ndim)
    axes = tuple(range(axis, x.ndim))
    z = _calc(x)
    mean = z.mean(axis=axes, keepdims=True)
    var = ((z - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (z - mean) / np.sqrt(var + np.float32(attrs["epsilon"]))
    p_axis = _axis(attrs["begin_params_axis"], x.ndim)
    shape = (1,) * p_axis + gamma.shape
    y = y * _calc(gamma).reshape(shape) + _calc(beta).reshape(shape)
    return [_like(y, x.dtype), _like(mean, x.dtype), _like(var, x.dtype)]


# ---------------------------------------------------------------- images
def _nchw(x, fmt: str):
    if fmt not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format must be NHWC or NCHW, got {fmt!r}")
    return x if fmt == "NCHW" else x.transpose(0, 3, 1, 2)


def _back(y, fmt: str):
    return np.ascontiguousarray(y if fmt == "NCHW" else y.transpose(0, 2, 3, 1))


def _hw(values, fmt: str, what: str) -> tuple[int, int]:
    v = list(values)
    if len(v) == 2:
        return v[0], v[1]
    if len(v) != 4:
        raise ValueError(f"{what} must have 4 values (N, C, H, W order of data_format), got {v}")
    return (v[2], v[3]) if fmt == "NCHW" else (v[1], v[2])


def _conv2d(xs, attrs):
    x, w = xs[0], xs[1]
    filter_format = attrs["_formats"][1]
    bias = xs[2] if len(xs) > 2 else None
    fmt = attrs["data_format"]
    out_dtype = x.dtype
    xn = _calc(_nchw(x, fmt))
    wf = _calc(w)
    if filter_format == G.ACL_FORMAT_HWCN:
        wf = wf.transpose(3, 2, 0, 1)
    elif filter_format == G.ACL_FORMAT_NHWC:
        wf = wf.transpose(0, 3, 1, 2)
    sh, sw = _hw(attrs["strides"], fmt, "strides")
    dh, dw = _hw(attrs["dilations"], fmt, "dilations")
    top, bottom, left, right = attrs["pads"]
    groups = attrs["groups"]
    n, c, _, _ = xn.shape
    o, cg, kh, kw = wf.shape
    if c != cg * groups or o % groups:
        raise ValueError(f"Conv2D: {c} input channels do not match the filter ({cg} x {groups} groups)")
    xp = np.pad(xn, ((0, 0), (0, 0), (top, bottom), (left, right)))
    ekh, ekw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    win = np.lib.stride_tricks.sliding_window_view(xp, (ekh, ekw), axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
    og = o // groups
    outs = []
    for g in range(groups):
        part = win[:, g * cg:(g + 1) * cg]
        outs.append(np.einsum("nchwij,ocij->nohw", part, wf[g * og:(g + 1) * og], optimize=True))
    y = np.concatenate(outs, axis=1) if groups > 1 else outs[0]
    if bias is not None:
        y = y + _calc(bias).reshape(1, -1, 1, 1)
    return [_like(_back(y, fmt), out_dtype)]


def _pool_pads(size, k, s, padding):
    if padding == "VALID":
        return (size - k) // s + 1, 0, 0
    if padding != "SAME":
        raise ValueError(f"padding must be SAME or VALID, got {padding!r}")
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2, total - total // 2


def _pool(kind: str):
    def compute(xs, attrs):
        (x,) = xs
        fmt = attrs["data_format"]
        xn = _calc(_nchw(x, fmt))
        kh, kw = _hw(attrs["ksize"], fmt, "ksize")
        sh, sw = _hw(attrs["strides"], fmt, "strides")
        _, _, h, w = xn.shape
        oh, pt, pb = _pool_pads(h, kh, sh, attrs["padding"])
        ow, pl, pr = _pool_pads(w, kw, sw, attrs["padding"])
        fill = -np.inf if kind == "max" else 0.0
        xp = np.pad(xn, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
        win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw][:, :, :oh, :ow]
        if kind == "max":
            y = win.max(axis=(4, 5))
        else:
            ones = np.pad(np.ones((h, w), np.float32), ((pt, pb), (pl, pr)))
            count = np.lib.stride_tricks.sliding_window_view(ones, (kh, kw))[::sh, ::sw][:oh, :ow].sum(axis=(2, 3))
            y = win.sum(axis=(4, 5)) / count
        return [_like(_back(y, fmt), x.dtype)]
    return compute


def _bias_add(xs, attrs):
    x, b = xs
    fmt = attrs["data_format"]
    shape = [1] * x.ndim
    axis = 1 if fmt == "NCHW" and x.ndim >= 2 else x.ndim - 1
    shape[axis] = -1
    return [_like(_calc(x) + _calc(b).reshape(shape), x.dtype)]


def _cast(xs, attrs):
    (x,) = xs
    return [x.astype(to_numpy(ge_to_acl_type(attrs["dst_type"])))]


def _arg_max(dimension_attr: bool):
    """ArgMaxV2 (the axis is input `dimension`) / ArgMaxD (attribute `dimension`): index of
    the first maximum along the axis, in the `dtype` attribute's type (int32 by default)."""
    def compute(xs, attrs):
        x = xs[0]
        axis = attrs["dimension"] if dimension_attr else np.ravel(xs[1])
        if not dimension_attr and axis.size != 1:
            raise ValueError(f"ArgMaxV2: dimension must hold one axis, got {axis.tolist()}")
        y = np.argmax(_calc(x), axis=_axis(int(np.ravel(axis)[0]), x.ndim))
        return [np.asarray(y).astype(to_numpy(ge_to_acl_type(attrs["dtype"])))]
    return compute


def _slice_bounds(x, offsets, size) -> tuple:
    offsets, size = [int(v) for v in np.ravel(offsets)], [int(v) for v in np.ravel(size)]
    if len(offsets) != x.ndim or len(size) != x.ndim:
        raise ValueError(f"Slice: offsets {offsets} and size {size} need one value per dim of {list(x.shape)}")
    out = []
    for d, (o, n) in enumerate(zip(offsets, size)):
        n = x.shape[d] - o if n == -1 else n  # -1: to the end of the dim
        if o < 0 or n < 0 or o + n > x.shape[d]:
            raise ValueError(f"Slice: offset {o} and size {n} run outside dim {d} ({x.shape[d]})")
        out.append(slice(o, o + n))
    return tuple(out)


def _slice(xs, attrs):
    x, offsets, size = xs
    return [np.ascontiguousarray(x[_slice_bounds(x, offsets, size)])]


def _slice_d(xs, attrs):
    (x,) = xs
    return [np.ascontiguousarray(x[_slice_bounds(x, attrs["offsets"], attrs["size"])])]


F, I, B, S, LI, LF = "float", "int", "bool", "string", "list_int", "list_float"
DT = "data_type"

OPS: dict[str, Op] = {
    # element-wise, two inputs (broadcasting)
    "Add": Op(("x1", "x2"), ("y",), compute=_binary(np.add)),
    "Sub": Op(("x1", "x2"), ("y",), compute=_binary(np.subtract)),
    "Mul": Op(("x1", "x2"), ("y",), compute=_binary(np.multiply)),
    "RealDiv": Op(("x1", "x2"), ("y",), compute=_binary(_div)),
    "Div": Op(("x1", "x2"), ("y",), compute=_binary(_div)),
    "Maximum": Op(("x1", "x2"), ("y",), compute=_binary(np.maximum)),
    "Minimum": Op(("x1", "x2"), ("y",), compute=_binary(np.minimum)),
    "Pow": Op(("x1", "x2"), ("y",), compute=_binary(np.power)),
    "Equal": Op(("x1", "x2"), ("y",), compute=_compare(np.equal)),
    "Greater": Op(("x1", "x2"), ("y",), compute=_compare(np.greater)),
    "Less": Op(("x1", "x2"), ("y",), compute=_compare(np.less)),
    # element-wise, one input
    "Relu": Op(("x",), ("y",), compute=_unary(lambda x, at: np.maximum(x, 0))),
    "LeakyRelu": Op(("x",), ("y",), {"negative_slope": (F, 0.0)},
                    compute=_unary(lambda x, at: np.where(x >= 0, x, x * np.float32(at["negative_slope"])))),
    "Gelu": Op(("x",), ("y",), compute=_unary(_gelu)),
    "Sigmoid": Op(("x",), ("y",), compute=_unary(_sigmoid)),
    "Tanh": Op(("x",), ("y",), compute=_unary(lambda x, at: np.tanh(x))),
    "Exp": Op(("x",), ("y",), {"base": (F, -1.0), "scale": (F, 1.0), "shift": (F, 0.0)}, compute=_unary(_exp)),
    "Log": Op(("x",), ("y",), {"base": (F, -1.0), "scale": (F, 1.0), "shift": (F, 0.0)}, compute=_unary(_log)),
    "Sqrt": Op(("x",), ("y",), compute=_unary(lambda x, at: np.sqrt(x))),
    "Rsqrt": Op(("x",), ("y",), compute=_unary(lambda x, at: 1.0 / np.sqrt(x))),
    "Abs": Op(("x",), ("y",), compute=_unary(lambda x, at: np.abs(x))),
    "Neg": Op(("x",), ("y",), compute=_unary(lambda x, at: np.negative(x))),
    "Square": Op(("x",), ("y",), compute=_unary(lambda x, at: x * x)),
    "Reciprocal": Op(("x",), ("y",), compute=_unary(lambda x, at: 1.0 / x)),
    "Cast": Op(("x",), ("y",), {"dst_type": (I, None), "truncate": (B, False)}, compute=_cast),
    "ZerosLike": Op(("x",), ("y",), compute=lambda xs, at: [np.zeros_like(xs[0])]),
    "OnesLike": Op(("x",), ("y",), compute=lambda xs, at: [np.ones_like(xs[0])]),
    # matrices
    "MatMul": Op(("x1", "x2", "bias?"), ("y",), {"transpose_x1": (B, False), "transpose_x2": (B, False)},
                 compute=_matmul("transpose_x1", "transpose_x2")),
    "MatMulV2": Op(("x1", "x2", "bias?", "offset_w?"), ("y",), {"transpose_x1": (B, False), "transpose_x2": (B, False),
                                                               "offset_x": (I, 0)},
                   compute=_matmul("transpose_x1", "transpose_x2")),
    "BatchMatMul": Op(("x1", "x2", "bias?"), ("y",), {"adj_x1": (B, False), "adj_x2": (B, False)},
                      compute=_matmul("adj_x1", "adj_x2")),
    "BatchMatMulV2": Op(("x1", "x2", "bias?", "offset_w?"), ("y",), {"adj_x1": (B, False), "adj_x2": (B, False),
                                                                    "offset_x": (I, 0)},
                        compute=_matmul("adj_x1", "adj_x2")),
    # normalisation
    "SoftmaxV2": Op(("x",), ("y",), {"axes": (LI, [-1]), "half_to_float": (B, False)}, compute=_softmax),
    "LayerNorm": Op(("x", "gamma", "beta"), ("y", "mean", "variance"),
                    {"begin_norm_axis": (I, 0), "begin_params_axis": (I, 0), "epsilon": (F, 1e-7)},
                    compute=_layer_norm),
    # shapes
    "Transpose": Op(("x", "perm"), ("y",), compute=_transpose, shape_inputs=(1,)),
    "TransposeD": Op(("x",), ("y",), {"perm": (LI, None)}, compute=_transpose),
    "Reshape": Op(("x", "shape"), ("y",), {"axis": (I, 0), "num_axes": (I, -1)}, compute=_reshape,
                  shape_inputs=(1,)),
    "ConcatD": Op(("x*",), ("y",), {"concat_dim": (I, None), "N": (I, None)}, compute=_concat),
    "ConcatV2D": Op(("x*",), ("y",), {"concat_dim": (I, None), "N": (I, None)}, compute=_concat),
    "SplitD": Op(("x",), ("y*",), {"split_dim": (I, None), "num_split": (I, None)}, compute=_split),
    "SplitVD": Op(("x",), ("y*",), {"size_splits": (LI, None), "split_dim": (I, None), "num_split": (I, None)},
                  compute=_split_v),
    "Fill": Op(("dims", "value"), ("y",), compute=_fill, shape_inputs=(0,)),
    "FillD": Op(("value",), ("y",), {"dims": (LI, None)}, compute=_fill_d),
    "Slice": Op(("x", "offsets", "size"), ("y",), compute=_slice, shape_inputs=(1, 2)),
    "SliceD": Op(("x",), ("y",), {"offsets": (LI, None), "size": (LI, None)}, compute=_slice_d),
    # reductions
    "ArgMaxV2": Op(("x", "dimension"), ("y",), {"dtype": (DT, 3)}, compute=_arg_max(False), shape_inputs=(1,)),
    "ArgMaxD": Op(("x",), ("indice",), {"dimension": (I, None), "dtype": (DT, 3)}, compute=_arg_max(True)),
    "ReduceSum": Op(("x", "axes"), ("y",), {"keep_dims": (B, False)}, compute=_reduce(np.sum, False),
                    shape_inputs=(1,)),
    "ReduceSumD": Op(("x",), ("y",), {"axes": (LI, None), "keep_dims": (B, False)}, compute=_reduce(np.sum, True)),
    "ReduceMean": Op(("x", "axes"), ("y",), {"keep_dims": (B, False)}, compute=_reduce(_mean, False),
                     shape_inputs=(1,)),
    "ReduceMeanD": Op(("x",), ("y",), {"axes": (LI, None), "keep_dims": (B, False)}, compute=_reduce(_mean, True)),
    "ReduceMax": Op(("x", "axes"), ("y",), {"keep_dims": (B, False)}, compute=_reduce(np.max, False),
                    shape_inputs=(1,)),
    "ReduceMaxD": Op(("x",), ("y",), {"axes": (LI, None), "keep_dims": (B, False)}, compute=_reduce(np.max, True)),
    # images
    "Conv2D": Op(("x", "filter", "bias?", "offset_w?"), ("y",),
                 {"strides": (LI, None), "pads": (LI, None), "dilations": (LI, [1, 1, 1, 1]), "groups": (I, 1),
                  "data_format": (S, "NHWC"), "offset_x": (I, 0)}, compute=_conv2d),
    "MaxPool": Op(("x",), ("y",), {"ksize": (LI, None), "strides": (LI, None), "padding": (S, None),
                                   "data_format": (S, "NHWC")}, compute=_pool("max")),
    "AvgPool": Op(("x",), ("y",), {"ksize": (LI, None), "strides": (LI, None), "padding": (S, None),
                                   "data_format": (S, "NHWC")}, compute=_pool("avg")),
    "BiasAdd": Op(("x", "bias"), ("y",), {"data_format": (S, "NHWC")}, compute=_bias_add),
}
