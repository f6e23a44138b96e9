"""The aclnn operators npurt implements: their C signatures and how each is planned.

Signatures are facts of CANN's op-API headers (`aclnnop/aclnn_<op>.h`, two-phase form:
`aclnn<Op>GetWorkspaceSize(<params>, uint64_t *workspaceSize, aclOpExecutor **executor)`
and `aclnn<Op>(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
aclrtStream stream)`); `spec.py` generates the headers and the C interface's shims from
this table. Each planner takes the op's parameters (tensors, scalars and arrays already
looked up) and returns a `Plan`.

Semantics (as torch's, which CANN's operators follow) and where npurt differs:

| op | computes | notes |
| --- | --- | --- |
| Add, Sub (+ Adds, Subs, Inplace*) | self +/- alpha * other | broadcasting; dtype promotion as torch (float beats int, wider beats narrower, float16 with bfloat16 gives float32) |
| Mul, Div, Maximum (+ Muls, Divs, Inplace*) | self * other, self / other, max | Div of integers is true division in float32 |
| Relu, Gelu (+ InplaceRelu) | max(x, 0); the tanh approximation of GELU | |
| Cast | self as dtype | float to int truncates, as astype |
| Matmul, Mm, BatchMatMul | self @ mat2 | 1-D operands and broadcast batch dims as torch.matmul; cubeMathType 0..3 accepted, the product is computed in the operands' dtype (float16 accumulates in float32) |
| Softmax | softmax over dim | float types |
| ReduceSum, Mean | sum / mean over dim (all dims when dim is empty), keepDim, in dtype | |
| Amax | max over dim | |
| LayerNorm | (x - mean) / sqrt(var + eps) * weight + bias over the trailing normalizedShape | population variance; meanOut / rstdOut optional |
| Permute | self transposed by dims | |
| InplaceFillScalar, InplaceZero | selfRef = value / 0 | |
| Arange | start, start + step, ... below end | out must be 1-D with that many elements |
| InplaceCopy | selfRef = src, broadcast and cast | strided selfRef and src |
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...ops import kernels as K
from ...ops import launch as L
from ...runtime import constants as C
from . import objects as O
from .plans import Plan, Temp, launch_axpby, launch_row_stats, launch_strided_copy, new_executor

T_IN = "const aclTensor *"
T_OUT = "aclTensor *"
S_IN = "const aclScalar *"
A_INT = "const aclIntArray *"


@dataclass(frozen=True)
class Op:
    name: str                 # aclnn<name>GetWorkspaceSize / aclnn<name>
    header: str               # aclnnop/<header>
    params: tuple             # ((C type, C name), ...) before workspaceSize, executor
    planner: Callable


# ---------------------------------------------------------------- dtypes and shapes
_SUPPORTED = set(K.DTYPES)


def _name(dt: np.dtype) -> str:
    return "bfloat16" if dt.name == "bfloat16" else dt.name


def _is_float(dt: np.dtype) -> bool:
    return dt.kind == "f" or dt.name == "bfloat16"


def promote(a: np.dtype, b: np.dtype) -> np.dtype:
    if a == b:
        return a
    fa, fb = _is_float(a), _is_float(b)
    if fa != fb:
        return a if fa else b
    if fa:
        if {_name(a), _name(b)} == {"float16", "bfloat16"}:
            return np.dtype(np.float32)
        return a if a.itemsize >= b.itemsize else b
    return np.promote_types(a, b)


def _scalar_dtype(t: np.dtype, s: np.dtype) -> np.dtype:
    """A scalar operand keeps the tensor's dtype unless it is of a higher category."""
    if _is_float(s) and not _is_float(t):
        return np.dtype(np.float32)
    return t


def _check_dtype(op: str, dt: np.dtype, allowed=None) -> None:
    name = _name(dt)
    allowed = _SUPPORTED if allowed is None else allowed
    if name not in allowed:
        raise O.invalid(f"dtype {name} is not supported (supported: {', '.join(sorted(allowed))})")


_FLOATS = {"float32", "float16", "bfloat16", "float64"}


def broadcast(op: str, *shapes) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise O.invalid(f"shapes {', '.join(str(list(s)) for s in shapes)} do not broadcast") from None


def _check_out(op: str, out: O.Tensor, shape: tuple, what: str = "out") -> None:
    if tuple(out.shape) != tuple(shape):
        raise O.invalid(f"{what} has shape {list(out.shape)}, the result has shape {list(shape)}")


def _bstrides(t: O.Tensor, shape: tuple) -> tuple:
    """t's strides for a broadcast to `shape` (stride 0 along broadcast dims)."""
    lead = len(shape) - len(t.shape)
    out = []
    for i, d in enumerate(shape):
        j = i - lead
        if j < 0 or t.shape[j] == 1 and d != 1:
            out.append(0)
        else:
            out.append(t.strides[j])
    return tuple(out)


def _input(plan: Plan, t: O.Tensor, shape: tuple, dtype: np.dtype):
    """t as a contiguous `shape` array of `dtype`: its own memory, or a workspace copy."""
    if tuple(t.shape) == tuple(shape) and t.is_contiguous() and t.dtype == dtype:
        return t.address
    tmp = plan.temp(math.prod(shape) * dtype.itemsize)
    if len(shape) > 8:
        raise O.invalid("more than 8 dimensions")
    plan.step(launch_strided_copy, tmp, t.address, shape, O.contiguous_strides(shape), _bstrides(t, shape),
              dtype, t.dtype)
    return tmp


def _output(plan: Plan, out: O.Tensor, dtype: np.dtype):
    """Where to compute `out` (of `dtype`, contiguous) and the step that finishes it."""
    if out.is_contiguous() and out.dtype == dtype:
        return out.address, lambda: None
    shape = tuple(out.shape)
    tmp = plan.temp(math.prod(shape) * dtype.itemsize)

    def finish():
        plan.step(launch_strided_copy, out.address, tmp, shape, out.strides, O.contiguous_strides(shape),
                  out.dtype, dtype)
    return tmp, finish


def _scalar_value(s: O.Scalar):
    return s.value.item() if hasattr(s.value, "item") else s.value


def _fill(plan: Plan, value, n: int, dtype: np.dtype) -> Temp:
    tmp = plan.temp(n * dtype.itemsize)
    plan.step(L.fill, tmp, n, value, dtype)
    return tmp


# ---------------------------------------------------------------- planners
def _binary_plan(op: str, kernel_op: str, self_t, other, out, alpha=None, div=False) -> Plan:
    plan = Plan(op)
    if isinstance(other, O.Scalar):
        cd = _scalar_dtype(self_t.dtype, other.dtype)
        shape = tuple(self_t.shape)
    else:
        cd = promote(self_t.dtype, other.dtype)
        shape = broadcast(op, self_t.shape, other.shape)
    if div and not _is_float(cd):
        cd = np.dtype(np.float32)
    _check_dtype(op, cd, _FLOATS if div else None)
    _check_out(op, out, shape)
    _check_dtype(op, out.dtype)
    n = math.prod(shape)
    if n == 0:
        return plan
    a = _input(plan, self_t, shape, cd)
    b = _fill(plan, _scalar_value(other), n, cd) if isinstance(other, O.Scalar) else _input(plan, other, shape, cd)
    dst, finish = _output(plan, out, cd)
    alpha_value = 1 if alpha is None else _scalar_value(alpha)
    if alpha_value == 1:
        plan.step(L.elementwise, kernel_op, dst, a, b, n, cd)
    else:
        if not _is_float(cd) and float(alpha_value) != int(alpha_value):
            raise O.invalid(f"alpha {alpha_value} is not an integer, but the op computes in {_name(cd)}")
        plan.step(launch_axpby, dst, a, b, n, alpha_value, kernel_op == "sub", cd)
    finish()
    return plan


def _add(kernel_op, div=False):
    def plan(op, self, other, alpha, out):
        return _binary_plan(op, kernel_op, self, other, out, alpha, div)
    return plan


def _plain(kernel_op, div=False):
    def plan(op, self, other, out):
        return _binary_plan(op, kernel_op, self, other, out, None, div)
    return plan


def _inplace_add(kernel_op):
    def plan(op, selfRef, other, alpha):
        return _binary_plan(op, kernel_op, selfRef, other, selfRef, alpha)
    return plan


def _inplace_plain(kernel_op, div=False):
    def plan(op, selfRef, other):
        return _binary_plan(op, kernel_op, selfRef, other, selfRef, None, div)
    return plan


def _unary(kernel_op, allowed):
    def plan(op, self, out):
        p = Plan(op)
        _check_out(op, out, tuple(self.shape))
        cd = self.dtype
        _check_dtype(op, cd, allowed)
        n = self.numel
        if n:
            x = _input(p, self, tuple(self.shape), cd)
            dst, finish = _output(p, out, cd)
            p.step(L.elementwise, kernel_op, dst, x, None, n, cd)
            finish()
        return p
    return plan


def _inplace_unary(kernel_op, allowed):
    unary = _unary(kernel_op, allowed)

    def plan(op, selfRef):
        return unary(op, selfRef, selfRef)
    return plan


_RELU = _FLOATS | {"int8", "int16", "int32", "int64"}


def plan_cast(op, self, dtype, out):
    p = Plan(op)
    target = O.numpy_dtype(dtype, "dtype")
    if out.dtype != target:
        raise O.invalid(f"out is {_name(out.dtype)}, but dtype asks for {_name(target)}")
    _check_out(op, out, tuple(self.shape))
    _check_dtype(op, self.dtype)
    _check_dtype(op, target)
    n = self.numel
    if n:
        if self.is_contiguous() and out.is_contiguous():
            p.step(L.cast, out.address, self.address, n, self.dtype, target)
        else:
            p.step(launch_strided_copy, out.address, self.address, tuple(self.shape), out.strides, self.strides,
                   target, self.dtype)
    return p


_MM = _FLOATS | {"int32"}


def _matmul_plan(op, self, mat2, out, cubeMathType, ranks=None) -> Plan:
    p = Plan(op)
    if cubeMathType not in (0, 1, 2, 3):
        raise O.invalid(f"cubeMathType {cubeMathType} is not KEEP_DTYPE (0), "
                        "ALLOW_FP32_DOWN_PRECISION (1), USE_FP16 (2) or USE_HF32 (3)")
    if ranks is not None and (len(self.shape) != ranks or len(mat2.shape) != ranks):
        raise O.invalid(f"self and mat2 must be {ranks}-D, got {list(self.shape)} and {list(mat2.shape)}")
    a_shape, b_shape = list(self.shape), list(mat2.shape)
    if not a_shape or not b_shape:
        raise O.invalid(f"operands must have at least one dimension")
    a_vec, b_vec = len(a_shape) == 1, len(b_shape) == 1
    if a_vec:
        a_shape = [1] + a_shape
    if b_vec:
        b_shape = b_shape + [1]
    m, k = a_shape[-2:]
    k2, n = b_shape[-2:]
    if k != k2:
        raise O.invalid(f"self {list(self.shape)} and mat2 {list(mat2.shape)} do not multiply "
                        f"({k} != {k2})")
    batch = broadcast(op, tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    result = list(batch) + ([] if a_vec else [m]) + ([] if b_vec else [n])
    _check_out(op, out, tuple(result))
    cd = promote(self.dtype, mat2.dtype)
    _check_dtype(op, cd, _MM)
    B = math.prod(batch)
    if B * m * n == 0:
        return p
    if k == 0:
        dst, finish = _output(p, out, cd)
        p.step(L.fill, dst, B * m * n, 0, cd)
        finish()
        return p
    a = _input(p, _view(self, tuple(a_shape)), tuple(batch) + (m, k), cd)
    b = _input(p, _view(mat2, tuple(b_shape)), tuple(batch) + (k, n), cd)
    dst, finish = _output(p, out, cd)
    p.step(L.matmul, dst, a, b, m, k, n, cd, batch=B)
    finish()
    return p


def _view(t: O.Tensor, shape: tuple) -> O.Tensor:
    """t with a 1-D operand lifted to 2-D (a unit dim of stride 0 needs no data)."""
    if tuple(t.shape) == shape:
        return t
    strides = (0,) + t.strides if len(shape) == len(t.shape) + 1 and shape[0] == 1 and shape[1:] == t.shape \
        else t.strides + (0,)
    return O.Tensor(shape, strides, t.offset, t.dtype, t.data_type, t.format, t.storage, t.data)


def plan_matmul(op, self, mat2, out, cubeMathType):
    return _matmul_plan(op, self, mat2, out, cubeMathType)


def plan_mm(op, self, mat2, out, cubeMathType):
    return _matmul_plan(op, self, mat2, out, cubeMathType, ranks=2)


def plan_bmm(op, self, mat2, out, cubeMathType):
    return _matmul_plan(op, self, mat2, out, cubeMathType, ranks=3)


def _axis(op: str, dim: int, ndim: int) -> int:
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise O.invalid(f"dim {dim} is out of range for a {ndim}-D tensor")
    return dim % max(ndim, 1)


def _permutation_plan(p: Plan, src, shape: tuple, axes: tuple, dtype):
    """A workspace copy of contiguous `src` (shape) transposed by `axes`."""
    tmp = p.temp(math.prod(shape) * dtype.itemsize)
    p.step(L.transpose, tmp, src, shape, axes, dtype)
    return tmp


def plan_softmax(op, self, dim, out):
    p = Plan(op)
    _check_out(op, out, tuple(self.shape))
    cd = self.dtype
    _check_dtype(op, cd, _FLOATS)
    shape = tuple(self.shape)
    if self.numel == 0:
        return p
    nd = len(shape)
    ax = _axis(op, dim, nd)
    x = _input(p, self, shape, cd)
    if nd == 0 or ax == nd - 1:
        rows, cols = (math.prod(shape[:-1]), shape[-1]) if nd else (1, 1)
        dst, finish = _output(p, out, cd)
        p.step(L.softmax, dst, x, rows, cols, cd)
        finish()
        return p
    axes = tuple(i for i in range(nd) if i != ax) + (ax,)
    moved = tuple(shape[i] for i in axes)
    xt = _permutation_plan(p, x, shape, axes, cd)
    yt = p.temp(math.prod(shape) * cd.itemsize)
    p.step(L.softmax, yt, xt, math.prod(moved[:-1]), moved[-1], cd)
    back = tuple(int(np.argsort(axes)[i]) for i in range(nd))
    dst, finish = _output(p, out, cd)
    p.step(L.transpose, dst, yt, moved, back, cd)
    finish()
    return p


def _reduce_plan(op, kernel_op, self, dims, keep, out, dtype) -> Plan:
    p = Plan(op)
    shape = tuple(self.shape)
    nd = len(shape)
    axes = sorted({_axis(op, d, nd) for d in dims.values}) if dims.values else list(range(nd))
    if len(axes) != len(dims.values) and dims.values:
        raise O.invalid(f"dim {list(dims.values)} names an axis twice")
    result = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    _check_out(op, out, result)
    cd = self.dtype if dtype in (None, C.ACL_DT_UNDEFINED) else O.numpy_dtype(dtype, "dtype")
    _check_dtype(op, cd)
    _check_dtype(op, out.dtype)
    if kernel_op != "sum" and any(shape[a] == 0 for a in axes):
        raise O.invalid(f"reducing an empty axis has no {kernel_op}")
    n_out = math.prod(result)
    if n_out == 0:
        return p
    cur = _input(p, self, shape, cd)
    cur_shape = list(shape)
    runs: list[list[int]] = []
    for a in axes:
        if runs and runs[-1][-1] == a - 1:
            runs[-1].append(a)
        else:
            runs.append([a])
    final = None
    for i, run in enumerate(reversed(runs)):  # last axes first: earlier axis numbers stay valid
        outer = math.prod(cur_shape[:run[0]])
        length = math.prod(cur_shape[run[0]:run[-1] + 1])
        inner = math.prod(cur_shape[run[-1] + 1:])
        last = i == len(runs) - 1
        if last:
            final, finish = _output(p, out, cd)
            dst = final
        else:
            dst = p.temp(outer * inner * cd.itemsize)
        p.step(L.reduce, kernel_op, dst, cur, outer, length, inner, cd)
        cur = dst
        cur_shape = cur_shape[:run[0]] + [1] + cur_shape[run[-1] + 1:]
    if not runs:  # nothing to reduce (a 0-D tensor): a copy
        final, finish = _output(p, out, cd)
        p.step(L.cast, final, cur, n_out, cd, cd)
    finish()
    return p


def plan_reduce_sum(op, self, dim, keepDim, dtype, out):
    return _reduce_plan(op, "sum", self, dim, keepDim, out, dtype)


def plan_mean(op, self, dim, keepDim, dtype, out):
    return _reduce_plan(op, "mean", self, dim, keepDim, out, dtype)


def plan_amax(op, self, dim, keepDim, out):
    return _reduce_plan(op, "max", self, dim, keepDim, out, None)


def plan_layer_norm(op, input, normalizedShape, weightOptional, biasOptional, eps, out, meanOutOptional,
                    rstdOutOptional):
    p = Plan(op)
    shape = tuple(input.shape)
    norm = tuple(int(v) for v in normalizedShape.values)
    if not norm or len(norm) > len(shape) or shape[len(shape) - len(norm):] != norm:
        raise O.invalid(f"normalizedShape {list(norm)} is not the trailing dims of input {list(shape)}")
    _check_out(op, out, shape)
    cd = input.dtype
    _check_dtype(op, cd, _FLOATS)
    begin = len(shape) - len(norm)
    stats_shape = shape[:begin] + (1,) * len(norm)
    for t, what in ((meanOutOptional, "meanOut"), (rstdOutOptional, "rstdOut")):
        if t is not None:
            _check_out(op, t, stats_shape, what)
    for t, what in ((weightOptional, "weight"), (biasOptional, "bias")):
        if t is not None:
            _check_out(op, t, norm, what)
    if eps < 0:
        raise O.invalid(f"eps {eps} is negative")
    cols = math.prod(norm)
    rows = math.prod(shape[:begin])
    if rows * cols == 0:
        return p
    x = _input(p, input, shape, cd)
    g = _input(p, weightOptional, norm, cd) if weightOptional is not None else 0
    b = _input(p, biasOptional, norm, cd) if biasOptional is not None else 0
    dst, finish = _output(p, out, cd)
    p.step(L.layer_norm, dst, x, g, b, rows, cols, float(eps), cd)
    finish()
    if meanOutOptional is not None or rstdOutOptional is not None:
        mean = _output(p, meanOutOptional, cd) if meanOutOptional is not None else (p.temp(rows * cd.itemsize), None)
        rstd = _output(p, rstdOutOptional, cd) if rstdOutOptional is not None else (p.temp(rows * cd.itemsize), None)
        p.step(launch_row_stats, mean[0], rstd[0], x, rows, cols, float(eps), cd)
        for _, fin in (mean, rstd):
            if fin is not None:
                fin()
    return p


def plan_permute(op, self, dims, out):
    p = Plan(op)
    shape = tuple(self.shape)
    axes = tuple(_axis(op, int(d), len(shape)) for d in dims.values)
    if sorted(axes) != list(range(len(shape))):
        raise O.invalid(f"dims {list(dims.values)} is not a permutation of {len(shape)} dims")
    _check_out(op, out, tuple(shape[a] for a in axes))
    cd = self.dtype
    _check_dtype(op, cd)
    if self.numel:
        x = _input(p, self, shape, cd)
        dst, finish = _output(p, out, cd)
        p.step(L.transpose, dst, x, shape, axes, cd)
        finish()
    return p


def plan_fill(op, selfRef, value):
    p = Plan(op)
    _check_dtype(op, selfRef.dtype)
    n = selfRef.numel
    if n:
        dst, finish = _output(p, selfRef, selfRef.dtype)
        p.step(L.fill, dst, n, _scalar_value(value), selfRef.dtype)
        finish()
    return p


def plan_zero(op, selfRef):
    p = Plan(op)
    _check_dtype(op, selfRef.dtype)
    n = selfRef.numel
    if n:
        dst, finish = _output(p, selfRef, selfRef.dtype)
        p.step(L.fill, dst, n, 0, selfRef.dtype)
        finish()
    return p


def plan_arange(op, start, end, step, out):
    p = Plan(op)
    a, b, d = (_scalar_value(s) for s in (start, end, step))
    if d == 0:
        raise O.invalid("step must not be 0")
    if (b - a) * d < 0:
        raise O.invalid(f"start {a}, end {b} and step {d} have inconsistent signs")
    n = max(0, math.ceil((b - a) / d))
    if out.numel != n or len(out.shape) != 1:
        raise O.invalid(f"out has shape {list(out.shape)}, arange({a}, {b}, {d}) has {n} elements: shape [{n}]")
    _check_dtype(op, out.dtype)
    if n:
        dst, finish = _output(p, out, out.dtype)
        p.step(L.arange, dst, n, a, d, out.dtype)
        finish()
    return p


def plan_copy(op, selfRef, src):
    p = Plan(op)
    shape = tuple(selfRef.shape)
    if broadcast(op, shape, src.shape) != shape:
        raise O.invalid(f"src of shape {list(src.shape)} does not broadcast to selfRef's shape {list(shape)}")
    _check_dtype(op, selfRef.dtype)
    _check_dtype(op, src.dtype)
    if selfRef.numel:
        p.step(launch_strided_copy, selfRef.address, src.address, shape, selfRef.strides, _bstrides(src, shape),
               selfRef.dtype, src.dtype)
    return p


# ---------------------------------------------------------------- the table
def _sig(*params):
    return tuple(params)


OPS: tuple[Op, ...] = (
    Op("Add", "aclnn_add.h", _sig((T_IN, "self"), (T_IN, "other"), (S_IN, "alpha"), (T_OUT, "out")), _add("add")),
    Op("Adds", "aclnn_add.h", _sig((T_IN, "self"), (S_IN, "other"), (S_IN, "alpha"), (T_OUT, "out")), _add("add")),
    Op("InplaceAdd", "aclnn_add.h", _sig((T_IN, "selfRef"), (T_IN, "other"), (S_IN, "alpha")), _inplace_add("add")),
    Op("InplaceAdds", "aclnn_add.h", _sig((T_IN, "selfRef"), (S_IN, "other"), (S_IN, "alpha")),
       _inplace_add("add")),
    Op("Sub", "aclnn_sub.h", _sig((T_IN, "self"), (T_IN, "other"), (S_IN, "alpha"), (T_OUT, "out")), _add("sub")),
    Op("Subs", "aclnn_sub.h", _sig((T_IN, "self"), (S_IN, "other"), (S_IN, "alpha"), (T_OUT, "out")), _add("sub")),
    Op("InplaceSub", "aclnn_sub.h", _sig((T_IN, "selfRef"), (T_IN, "other"), (S_IN, "alpha")), _inplace_add("sub")),
    Op("Mul", "aclnn_mul.h", _sig((T_IN, "self"), (T_IN, "other"), (T_OUT, "out")), _plain("mul")),
    Op("Muls", "aclnn_mul.h", _sig((T_IN, "self"), (S_IN, "other"), (T_OUT, "out")), _plain("mul")),
    Op("InplaceMul", "aclnn_mul.h", _sig((T_OUT, "selfRef"), (T_IN, "other")), _inplace_plain("mul")),
    Op("InplaceMuls", "aclnn_mul.h", _sig((T_OUT, "selfRef"), (S_IN, "other")), _inplace_plain("mul")),
    Op("Div", "aclnn_div.h", _sig((T_IN, "self"), (T_IN, "other"), (T_OUT, "out")), _plain("div", div=True)),
    Op("Divs", "aclnn_div.h", _sig((T_IN, "self"), (S_IN, "other"), (T_OUT, "out")), _plain("div", div=True)),
    Op("InplaceDiv", "aclnn_div.h", _sig((T_IN, "selfRef"), (T_IN, "other")), _inplace_plain("div", div=True)),
    Op("Maximum", "aclnn_maximum.h", _sig((T_IN, "self"), (T_IN, "other"), (T_OUT, "out")), _plain("maximum")),
    Op("Relu", "aclnn_relu.h", _sig((T_IN, "self"), (T_OUT, "out")), _unary("relu", _RELU)),
    Op("InplaceRelu", "aclnn_relu.h", _sig((T_OUT, "selfRef"),), _inplace_unary("relu", _RELU)),
    Op("Gelu", "aclnn_gelu.h", _sig((T_IN, "self"), (T_OUT, "out")), _unary("gelu", _FLOATS)),
    Op("Cast", "aclnn_cast.h", _sig((T_IN, "self"), ("const aclDataType", "dtype"), (T_OUT, "out")), plan_cast),
    Op("Matmul", "aclnn_matmul.h", _sig((T_IN, "self"), (T_IN, "mat2"), (T_OUT, "out"), ("int8_t", "cubeMathType")),
       plan_matmul),
    Op("Mm", "aclnn_mm.h", _sig((T_IN, "self"), (T_IN, "mat2"), (T_OUT, "out"), ("int8_t", "cubeMathType")),
       plan_mm),
    Op("BatchMatMul", "aclnn_batch_matmul.h",
       _sig((T_IN, "self"), (T_IN, "mat2"), (T_OUT, "out"), ("int8_t", "cubeMathType")), plan_bmm),
    Op("Softmax", "aclnn_softmax.h", _sig((T_IN, "self"), ("int64_t", "dim"), (T_OUT, "out")), plan_softmax),
    Op("ReduceSum", "aclnn_reduce_sum.h",
       _sig((T_IN, "self"), (A_INT, "dim"), ("bool", "keepDim"), ("aclDataType", "dtype"), (T_OUT, "out")),
       plan_reduce_sum),
    Op("Mean", "aclnn_mean.h",
       _sig((T_IN, "self"), (A_INT, "dim"), ("bool", "keepDim"), ("aclDataType", "dtype"), (T_OUT, "out")),
       plan_mean),
    Op("Amax", "aclnn_amax.h", _sig((T_IN, "self"), (A_INT, "dim"), ("bool", "keepDim"), (T_OUT, "out")),
       plan_amax),
    Op("LayerNorm", "aclnn_layer_norm.h",
       _sig((T_IN, "input"), (A_INT, "normalizedShape"), (T_IN, "weightOptional"), (T_IN, "biasOptional"),
            ("double", "eps"), (T_OUT, "out"), (T_OUT, "meanOutOptional"), (T_OUT, "rstdOutOptional")),
       plan_layer_norm),
    Op("Permute", "aclnn_permute.h", _sig((T_IN, "self"), (A_INT, "dims"), (T_OUT, "out")), plan_permute),
    Op("InplaceFillScalar", "aclnn_fill_scalar.h", _sig((T_OUT, "selfRef"), (S_IN, "value")), plan_fill),
    Op("InplaceZero", "aclnn_zero.h", _sig((T_OUT, "selfRef"),), plan_zero),
    Op("Arange", "aclnn_arange.h", _sig((S_IN, "start"), (S_IN, "end"), (S_IN, "step"), (T_OUT, "out")),
       plan_arange),
    Op("InplaceCopy", "aclnn_copy.h", _sig((T_OUT, "selfRef"), (T_IN, "src")), plan_copy),
)
BY_NAME = {op.name: op for op in OPS}


def resolve_args(op: Op, values: dict) -> dict:
    """The planner's arguments from the C arguments (handles looked up, NULLs refused
    except for *Optional parameters)."""
    out = {}
    for ctype, name in op.params:
        v = values[name]
        optional = name.endswith("Optional")
        if ctype in (T_IN, T_OUT):
            t = out[name] = O.optional_tensor(v, name) if optional else O.tensor(v, name)
            if t is not None and t.numel and not t.data:
                raise O.null(f"the device address of {name} (aclCreateTensor's tensorData)")
        elif ctype == S_IN:
            out[name] = O.scalar(v, name)
        elif ctype == A_INT:
            out[name] = O.array(v, "int array", name)
        else:
            out[name] = v
    return out


def get_workspace_size(name: str, values: dict) -> tuple[int, int]:
    """Phase one of aclnn<name>: (workspace bytes, executor handle)."""
    op = BY_NAME[name]
    args = resolve_args(op, values)
    plan = op.planner(name, **args)
    counts = {"input": 0, "output": 0}
    for ctype, param in op.params:  # the op's tensors in signature order, for a data dump
        t = args.get(param) if ctype in (T_IN, T_OUT) else None
        if t is not None:
            role = "input" if ctype == T_IN else "output"
            plan.tensors.append((role, counts[role], t))
            counts[role] += 1
    return plan.size, new_executor(plan)
