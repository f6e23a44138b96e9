"""Pointer-level launchers of the built-in kernels (what the Pythonic API's operations call).

Every pointer is a device address (int); `dtype` is anything np.dtype() accepts or
"bfloat16" (needs ml_dtypes); `stream` is a runtime Stream or None (the current context's
default stream); `num_blocks=None` picks a default (below). Each launcher checks its
arguments at the call (pointers live and large enough, shapes, dtypes) and returns the
sequence number of the kernel task it enqueued; results are there once the stream got there.

Supported dtypes and accuracy against numpy references (what tests/pythonic/test_ops.py checks;
r = 1e-5 for float32, 1e-3 for float16, 1e-2 for bfloat16):

| op | dtypes | matches numpy |
| --- | --- | --- |
| elementwise add/sub/mul/maximum | float32, float16, bfloat16, float64, int8/16/32/64, uint8 | exactly (float16/bfloat16 computed in float32, rounded once) |
| elementwise div | float types | exactly |
| relu | float and signed int types | exactly |
| gelu: the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) | float types | vs that formula in float64: rtol r, atol 1e-6 (float32) / 1e-5 |
| cast | any pair of float32, float16, bfloat16, int32, int8 (and the other table types) | exactly as astype (float to int truncates; out-of-range values are undefined) |
| matmul (2-D, batched) | float32, float16, bfloat16, float64, int32 | float32: the same bits as numpy's matmul; vs the float64 product rtol r, atol r * sqrt(k); float16/bfloat16 accumulate in float32 |
| reduce sum/mean | all | vs float64: rtol r, atol r * sqrt(length); float32 sums are numpy's own; float16/bfloat16 accumulate in float32; ints in int64, then wrap |
| reduce max | all | exactly |
| softmax | float types | vs float64: rtol r, atol r / 10 |
| layer_norm (population variance) | float types | vs float64: rtol r, atol 10 r |
| transpose, fill, arange | all | exactly (arange: start + i * step in float64 or int64, then cast) |

Default block counts: elementwise-like ops use one block per 256 Ki elements up to the host
core count (small ops stay one block: no thread hand-off); matmul uses one block (numpy's
BLAS is already multithreaded) unless it is a batch of small products. Blocks of matmul
split the batch only (a row split would change BLAS's results); every op gives the same
bits whatever the block count.
"""
from __future__ import annotations

import math

import numpy as np

from ..runtime import RUNTIME, InvalidValueError
from ..runtime import launch_function as _launch
from . import kernels as K

PER_BLOCK = 1 << 18      # elements per block for default block counts
_codes: dict = {}
_FLOAT = {"float32", "float16", "bfloat16", "float64"}
_SIGNED = {"int8", "int16", "int32", "int64"}


def _code(dtype, allowed=None, what="this op", op="") -> int:
    try:
        code = _codes[dtype]
    except (KeyError, TypeError):
        try:
            code = K.code_of(dtype)
        except ValueError as exc:
            raise InvalidValueError(str(exc)) from None
        try:
            _codes[dtype] = code
        except TypeError:
            pass
    if allowed is not None and K.DTYPES[code] not in allowed:
        what = f"{what} {op}" if op else what  # formatted only for the message
        raise InvalidValueError(f"{what} does not support {K.DTYPES[code]}; supported: {', '.join(sorted(allowed))}")
    return code


def _count(value, name: str) -> int:
    if type(value) is int and value >= 0:
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 0:
        return int(value)
    raise InvalidValueError(f"{name} must be a non-negative int, got {value!r}")


def _need(**ptrs) -> None:
    """Required buffers must not be null (the launch checks they are live and large enough)."""
    for role, ptr in ptrs.items():
        if not ptr or isinstance(ptr, bool):
            raise InvalidValueError(f"the {role} pointer is {'null' if ptr in (0, None) else repr(ptr)}; "
                                    "pass a device address")


def _blocks(num_blocks, work: int) -> int:
    if num_blocks is not None:
        return num_blocks
    cores = RUNTIME.driver.cores.threads if RUNTIME.driver is not None else 1
    return max(1, min(cores, work // PER_BLOCK))


_BINARY = {op: i for i, op in enumerate(K.BINARY_OPS)}


def elementwise(op, out, a, b, n, dtype, stream=None, num_blocks=None) -> int:
    """out = a op b (op in add, sub, mul, div, maximum) or out = op(a) (relu, gelu; b=None)."""
    n = _count(n, "n")
    index = _BINARY.get(op) if type(op) is str else None
    if index is not None:
        code = _code(dtype, _FLOAT if index == 3 else None, "elementwise", op)
        size = n * K.dtype_of(code).itemsize
        args = (out, a, b, n, index, code)
        # exact positive ints are canonical (the kernel's GM and int64 slots hold them as they
        # are): no packing round trip to check them
        canonical = type(out) is int and type(a) is int and type(b) is int and out > 0 and a > 0 and b > 0 \
            and n < 1 << 63
        if not canonical:
            _need(out=out, a=a, b=b)
        if num_blocks is None and n < PER_BLOCK * 2:
            num_blocks = 1
        return _launch(K.binary, _blocks(num_blocks, n), args, stream, extents=(size, size, size),
                       canonical=canonical)
    if op in K.UNARY_OPS:
        if b not in (None, 0):
            raise InvalidValueError(f"elementwise {op} is unary: pass b=None")
        code = _code(dtype, _FLOAT | (_SIGNED if op in ("relu", "abs") else set()), "elementwise", op)
        size = n * K.dtype_of(code).itemsize
        canonical = type(out) is int and type(a) is int and out > 0 and a > 0 and n < 1 << 63  # as binary's
        if not canonical:
            _need(out=out, a=a)
        return _launch(K.unary, _blocks(num_blocks, n), (out, a, n, K.UNARY_OPS.index(op), code), stream,
                       extents=(size, size), canonical=canonical)
    raise InvalidValueError(f"unknown elementwise op {op!r}; binary: {', '.join(K.BINARY_OPS)}; "
                            f"unary: {', '.join(K.UNARY_OPS)}")


def compare(op, out, a, b, n, dtype, stream=None, num_blocks=None) -> int:
    """out (bool) = a op b, op in lt, le, gt, ge, eq, ne; a and b of `dtype`."""
    n = _count(n, "n")
    if op not in K.COMPARE_OPS:
        raise InvalidValueError(f"unknown comparison {op!r}; one of {', '.join(K.COMPARE_OPS)}")
    code = _code(dtype, None, "compare", op)
    _need(out=out, a=a, b=b)
    size = n * K.dtype_of(code).itemsize
    return _launch(K.compare, _blocks(num_blocks, n), (out, a, b, n, K.COMPARE_OPS.index(op), code), stream,
                   extents=(n, size, size))


def select(out, cond, a, b, n, dtype, stream=None, num_blocks=None) -> int:
    """out = cond ? a : b elementwise (cond bool; a, b, out of `dtype`)."""
    n = _count(n, "n")
    code = _code(dtype)
    _need(out=out, cond=cond, a=a, b=b)
    size = n * K.dtype_of(code).itemsize
    return _launch(K.select, _blocks(num_blocks, n), (out, cond, a, b, n, code), stream,
                   extents=(size, n, size, size))


def cast(out, x, n, src_dtype, dst_dtype, stream=None, num_blocks=None) -> int:
    """out = x.astype(dst_dtype)."""
    n = _count(n, "n")
    sc, dc = _code(src_dtype), _code(dst_dtype)
    _need(out=out, x=x)
    return _launch(K.cast, _blocks(num_blocks, n), (out, x, n, sc, dc), stream,
                   extents=(n * K.dtype_of(dc).itemsize, n * K.dtype_of(sc).itemsize))


def matmul(c, a, b, m, k, n, dtype, batch=1, stream=None, num_blocks=None) -> int:
    """C[batch, m, n] = A[batch, m, k] @ B[batch, k, n], row-major contiguous."""
    m, k, n, batch = (_count(v, name) for v, name in ((m, "m"), (k, "k"), (n, "n"), (batch, "batch")))
    code = _code(dtype, _FLOAT | {"int32"}, "matmul")
    item = K.dtype_of(code).itemsize
    _need(c=c, a=a, b=b)
    if num_blocks is None:  # BLAS threads big products itself; split batches of small ones
        cores = RUNTIME.driver.cores.threads if RUNTIME.driver is not None else 1
        num_blocks = min(cores, batch) if batch > 1 and m * k * n < (1 << 18) else 1
    return _launch(K.matmul, num_blocks, (c, a, b, batch, m, k, n, code), stream,
                   extents=(batch * m * n * item, batch * m * k * item, batch * k * n * item))


def reduce(op, out, x, outer, length, inner, dtype, stream=None, num_blocks=None) -> int:
    """out[outer, inner] = op over the middle axis of contiguous x[outer, length, inner]."""
    if op not in K.REDUCE_OPS:
        raise InvalidValueError(f"unknown reduce op {op!r}; use one of {', '.join(K.REDUCE_OPS)}")
    outer, length, inner = _count(outer, "outer"), _count(length, "length"), _count(inner, "inner")
    if length == 0 and op != "sum":
        raise InvalidValueError(f"reduce {op} over an empty axis (length 0) has no value")
    code = _code(dtype)
    item = K.dtype_of(code).itemsize
    _need(out=out, x=x)
    return _launch(K.reduce, _blocks(num_blocks, outer * length * inner),
                   (out, x, outer, length, inner, K.REDUCE_OPS.index(op), code), stream,
                   extents=(outer * inner * item, outer * length * inner * item))


def softmax(out, x, rows, cols, dtype, stream=None, num_blocks=None) -> int:
    """Softmax over the last axis of x[rows, cols]."""
    rows, cols = _count(rows, "rows"), _count(cols, "cols")
    code = _code(dtype, _FLOAT, "softmax")
    size = rows * cols * K.dtype_of(code).itemsize
    _need(out=out, x=x)
    return _launch(K.softmax, _blocks(num_blocks, rows * cols), (out, x, rows, cols, code), stream,
                   extents=(size, size))


def layer_norm(out, x, gamma, beta, rows, cols, eps, dtype, stream=None, num_blocks=None) -> int:
    """Normalise each row of x[rows, cols]; gamma/beta: device pointers of length cols, or 0."""
    rows, cols = _count(rows, "rows"), _count(cols, "cols")
    code = _code(dtype, _FLOAT, "layer_norm")
    item = K.dtype_of(code).itemsize
    _need(out=out, x=x)
    if not isinstance(eps, (int, float, np.floating, np.integer)) or not eps >= 0:
        raise InvalidValueError(f"eps must be a non-negative number, got {eps!r}")
    size = rows * cols * item
    return _launch(K.layer_norm, _blocks(num_blocks, rows * cols),
                   (out, x, gamma or 0, beta or 0, rows, cols, float(eps), code), stream,
                   extents=(size, size, cols * item, cols * item))


def transpose(out, x, shape, axes, dtype, stream=None, num_blocks=None) -> int:
    """out = x.reshape(shape).transpose(axes) (any permutation), both contiguous."""
    try:
        shape = tuple(_count(s, "shape entries") for s in shape)
        axes = tuple(int(a) for a in axes)
    except TypeError:
        raise InvalidValueError(f"shape and axes must be sequences of ints, got {shape!r}, {axes!r}") from None
    if sorted(axes) != list(range(len(shape))):
        raise InvalidValueError(f"axes {axes} is not a permutation of the {len(shape)} axes of shape {shape}")
    code = _code(dtype)
    size = math.prod(shape) * K.dtype_of(code).itemsize
    _need(out=out, x=x)
    shape, axes = simplify_permutation(shape, axes)
    if len(shape) > K.MAX_DIMS:
        raise InvalidValueError(f"transpose supports up to {K.MAX_DIMS} dimensions after merging adjacent "
                                f"axes; this one has {len(shape)}")
    dims = list(shape) + [0] * (K.MAX_DIMS - len(shape))
    packed = sum(a << (4 * i) for i, a in enumerate(axes))
    first = shape[axes[0]] if shape else 1
    nb = num_blocks if num_blocks is not None else (_blocks(None, math.prod(shape)) if first > 1 else 1)
    return _launch(K.transpose, nb, (out, x, code, len(shape), *dims, packed), stream, extents=(size, size))


def simplify_permutation(shape: tuple, axes: tuple) -> tuple[tuple, tuple]:
    """The same data movement with size-1 axes dropped and axes that stay adjacent merged."""
    keep = [i for i in range(len(shape)) if shape[i] != 1]
    if math.prod(shape) == 0:
        return (0,), (0,)
    renum = {old: new for new, old in enumerate(keep)}
    shape = [shape[i] for i in keep]
    axes = [renum[a] for a in axes if a in renum]
    groups: list[list[int]] = []  # runs of input axes, in output order
    for a in axes:
        if groups and groups[-1][-1] + 1 == a:
            groups[-1].append(a)
        else:
            groups.append([a])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])  # groups in input order
    new_shape = tuple(math.prod(shape[a] for a in groups[g]) for g in order)
    position = {g: i for i, g in enumerate(order)}
    return new_shape, tuple(position[g] for g in range(len(groups)))


def fill(out, n, value, dtype, stream=None, num_blocks=None) -> int:
    """out[:n] = value."""
    n = _count(n, "n")
    code = _code(dtype)
    _need(out=out)
    fvalue, ivalue = _float_int(value, "value", K.DTYPES[code])
    return _launch(K.fill, _blocks(num_blocks, n), (out, n, fvalue, ivalue, code), stream,
                   extents=(n * K.dtype_of(code).itemsize,))


def arange(out, n, start, step, dtype, stream=None, num_blocks=None) -> int:
    """out[i] = start + i * step for i < n (integer dtypes: start and step truncated to ints)."""
    n = _count(n, "n")
    code = _code(dtype)
    _need(out=out)
    fstart, istart = _float_int(start, "start", K.DTYPES[code])
    fstep, istep = _float_int(step, "step", K.DTYPES[code])
    return _launch(K.arange, _blocks(num_blocks, n), (out, n, fstart, fstep, istart, istep, code), stream,
                   extents=(n * K.dtype_of(code).itemsize,))


def _float_int(value, name: str, dtype: str) -> tuple[float, int]:
    if not isinstance(value, (int, float, np.integer, np.floating, bool, np.bool_)):
        raise InvalidValueError(f"{name} must be a number, got {value!r}")
    try:
        f = float(value)
    except OverflowError:
        raise InvalidValueError(f"{name} {value!r} is too large") from None
    if dtype in _FLOAT:
        return f, 0
    if not math.isfinite(f):
        raise InvalidValueError(f"{name} {value!r} cannot be stored in {dtype}")
    i = int(value)
    if not -(1 << 63) <= i < (1 << 63):
        raise InvalidValueError(f"{name} {value!r} does not fit an int64")
    return f, i
