"""Array-level operations: DeviceArrays in, DeviceArrays out, built-in kernels underneath.

These are `npurt.ops.*` (that package publishes them) and what DeviceArray's operators and
kernel-backed methods forward to (`core.use_operations`, called by `npurt.ops` on import); the
pointer-level launchers they queue are `npurt.ops.launchers`.

Each function checks shapes and dtypes on the host, allocates its result on the operands'
device and queues the kernel on a stream: `stream=` if given, else the calling thread's
current stream of that device. Nothing waits; read results with `.to_host()`.

Rules (documented for users):
* Operands are DeviceArrays on one device, or Python scalars. Array operands must share a
  dtype (no implicit promotion: use `.astype()`); a scalar takes the array's dtype.
* Shapes broadcast as in numpy (in one task where fused.py can: else materialized first).
* Kernels need C-contiguous inputs: a non-contiguous view is copied to a contiguous array
  on the same stream first (`DeviceArray.contiguous()`); results are always contiguous.
* Supported dtypes are the kernels': float32, float16, bfloat16 (ml_dtypes), int32, int8
  for elementwise ops and casts; matmul, reductions, softmax and layer norm are for floats.
* Floating-point results are IEEE 754's (inf, nan), as on the device: the one-task ops of
  float32, float64 and the integer types raise no numpy warning; float16 and bfloat16 go
  through the kernels, whose numpy loops may warn.
"""
from __future__ import annotations

import builtins
import math
import numbers

import numpy as np

from .. import devices as _devices
from ..exceptions import InvalidValueError
from ..ops import launchers as launch
from ..runtime import fast_entry, peek_context
from ..streams import Stream
from .core import DeviceArray, _copy_into, _rt_stream, broadcast_to
from .creation import _default_dtype, full
from .fused import fused_binary, fused_same
from .layout import LAYOUTS, as_dtype, ints

__all__ = ["add", "sub", "mul", "div", "maximum", "minimum", "power", "relu", "gelu", "abs", "exp", "log", "sqrt",
           "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "where", "concatenate", "stack",
           "cast", "astype", "matmul", "sum", "max", "mean", "softmax", "layer_norm", "transpose", "fill", "arange",
           "arange_into", "contiguous"]

# ---------------------------------------------------------------- helpers
def _kdt(dtype: np.dtype):
    """dtype as the launchers take it."""
    return "bfloat16" if dtype.kind == "V" and dtype.name == "bfloat16" else dtype


def _arrays(fn: str, *xs) -> list[DeviceArray]:
    arrays = [x for x in xs if isinstance(x, DeviceArray)]
    if not arrays:
        raise InvalidValueError(f"npurt.ops.{fn} needs at least one DeviceArray operand")
    for x in xs:
        if not isinstance(x, DeviceArray) and x is not None and not (
                isinstance(x, numbers.Number) and not isinstance(x, bool)):
            raise InvalidValueError(f"npurt.ops.{fn}: operands must be DeviceArrays or numbers, got "
                                    f"{type(x).__name__} (copy host data with npurt.to_device first)")
    dev = arrays[0].device
    for x in arrays[1:]:
        if x.device != dev:
            raise InvalidValueError(f"npurt.ops.{fn}: operands are on devices {dev} and {x.device}; move one "
                                    "with .to(device) first")
    return arrays


def _same_dtype(fn: str, arrays) -> np.dtype:
    dt = arrays[0].dtype
    for x in arrays[1:]:
        if x.dtype != dt:
            raise InvalidValueError(f"npurt.ops.{fn}: dtypes {dt} and {x.dtype} differ; npurt does not promote "
                                    "implicitly, convert one with .astype()")
    return dt


def _stream(stream, device: int):
    s = _rt_stream(stream, device)
    if s.device.id != device:
        raise InvalidValueError(f"the stream is on device {s.device.id} but the arrays are on device {device}")
    return s


def _out(fn: str, out, shape, dtype, device) -> DeviceArray:
    if out is None:
        return DeviceArray(shape, dtype, device)
    if not isinstance(out, DeviceArray):
        raise InvalidValueError(f"npurt.ops.{fn}: out must be a DeviceArray, got {type(out).__name__}")
    if out.shape != tuple(shape) or out.dtype != dtype or out.device != device:
        raise InvalidValueError(f"npurt.ops.{fn}: out has shape {out.shape}, dtype {out.dtype}, device "
                                f"{out.device}; the result has shape {tuple(shape)}, dtype {dtype}, device {device}")
    if not out.is_contiguous():
        raise InvalidValueError(f"npurt.ops.{fn}: out must be C-contiguous")
    return out


def _as_array(x, shape, dtype, device, stream) -> DeviceArray:
    """x (array or scalar) as a contiguous array of `shape` on the stream."""
    if isinstance(x, DeviceArray):
        if x.shape != tuple(shape):
            x = broadcast_to(x, shape)
        return x.contiguous(stream)
    return full(shape, x, dtype, device, stream)


def _launch(device: int, fn, *args, **kw):
    # launchers may need the device's context current (argument staging allocates)
    ctx = peek_context()
    if ctx is not None and ctx.device.id == device:  # already current: no context switch
        return fn(*args, **kw)
    with _devices.on_device(device):
        return fn(*args, **kw)


def contiguous(x: DeviceArray, stream=None) -> DeviceArray:
    """x itself if C-contiguous, else a contiguous copy."""
    return x.contiguous(stream)


# ---------------------------------------------------------------- elementwise
def _binary(op: str, a, b, out, stream) -> DeviceArray:
    if type(a) is DeviceArray and type(b) is DeviceArray and out is None:
        shape, dtype = a.shape, a.dtype
        device = a._mem.device
        if b.shape == shape and b.dtype == dtype and b._mem.device is device and a.is_contiguous() \
                and b.is_contiguous():  # the common case: the checks below all pass
            s = _stream(stream, device.id)
            result = fused_same(op, a, b, s)  # one task, when it gives the kernel's bits (fused.py)
            n = math.prod(shape)
            if result is None:  # the kernel route (float16, bfloat16)
                result = DeviceArray._new(shape, dtype, device)
                if n:
                    _launch(device.id, launch.elementwise, op, result._ptr, a._ptr, b._ptr, n, _kdt(dtype), stream=s)
            return result
    arrays = _arrays(op, a, b)
    dtype = _same_dtype(op, arrays)
    dev = arrays[0].device
    try:
        shape = np.broadcast_shapes(*(x.shape for x in arrays))
    except ValueError:
        raise InvalidValueError(f"npurt.ops.{op}: shapes {a.shape} and {b.shape} do not broadcast") from None
    s = _stream(stream, dev)
    if (out is None or isinstance(out, DeviceArray)) and (fused := fused_binary(op, a, b, s, out)) is not None:
        return fused  # scalars and broadcasting in the one task (fused.py)
    stream = _wrap(s)
    result = _out(op, out, shape, dtype, dev)
    n = math.prod(shape)
    if n:
        x = _as_array(a, shape, dtype, dev, stream)
        y = _as_array(b, shape, dtype, dev, stream)
        _launch(dev, launch.elementwise, op, result.ptr, x.ptr, y.ptr, n, _kdt(dtype), stream=s)
    return result


def _binary_same(op: str, a: DeviceArray, b: DeviceArray) -> DeviceArray:
    """`a op b` of two DeviceArrays (their operators); with the accelerator fused_same's case is C."""
    return _binary(op, a, b, None, None)


binary_same = fast_entry("binary", _binary_same, (DeviceArray, LAYOUTS))
_wrap = Stream._wrap


def add(a, b, out=None, stream=None) -> DeviceArray:
    """a + b (elementwise, numpy broadcasting)."""
    return _binary("add", a, b, out, stream)


def sub(a, b, out=None, stream=None) -> DeviceArray:
    """a - b."""
    return _binary("sub", a, b, out, stream)


def mul(a, b, out=None, stream=None) -> DeviceArray:
    """a * b."""
    return _binary("mul", a, b, out, stream)


def div(a, b, out=None, stream=None) -> DeviceArray:
    """a / b (for ints: as the kernel defines it)."""
    return _binary("div", a, b, out, stream)


def maximum(a, b, out=None, stream=None) -> DeviceArray:
    """Elementwise maximum of a and b."""
    return _binary("maximum", a, b, out, stream)


def minimum(a, b, out=None, stream=None) -> DeviceArray:
    """Elementwise minimum of a and b."""
    return _binary("minimum", a, b, out, stream)


def power(a, b, out=None, stream=None) -> DeviceArray:
    """a ** b (elementwise; for ints a negative exponent is an error in numpy, so avoid it)."""
    return _binary("pow", a, b, out, stream)


def _compare(op: str, a, b, out, stream) -> DeviceArray:
    """a op b as a bool array (numpy broadcasting; a number compares in the array's dtype)."""
    arrays = _arrays(op, a, b)
    dtype = _same_dtype(op, arrays)
    dev = arrays[0].device
    try:
        shape = np.broadcast_shapes(*(x.shape for x in arrays))
    except ValueError:
        raise InvalidValueError(f"npurt.ops.{op}: shapes {getattr(a, 'shape', ())} and "
                                f"{getattr(b, 'shape', ())} do not broadcast") from None
    s = _stream(stream, dev)
    result = _out(op, out, shape, np.dtype(np.bool_), dev)
    n = math.prod(shape)
    if n:
        x = _as_array(a, shape, dtype, dev, _wrap(s))
        y = _as_array(b, shape, dtype, dev, _wrap(s))
        _launch(dev, launch.compare, op, result.ptr, x.ptr, y.ptr, n, _kdt(dtype), stream=s)
    return result


def less(a, b, out=None, stream=None) -> DeviceArray:
    """a < b (a bool array)."""
    return _compare("lt", a, b, out, stream)


def less_equal(a, b, out=None, stream=None) -> DeviceArray:
    """a <= b."""
    return _compare("le", a, b, out, stream)


def greater(a, b, out=None, stream=None) -> DeviceArray:
    """a > b."""
    return _compare("gt", a, b, out, stream)


def greater_equal(a, b, out=None, stream=None) -> DeviceArray:
    """a >= b."""
    return _compare("ge", a, b, out, stream)


def equal(a, b, out=None, stream=None) -> DeviceArray:
    """a == b."""
    return _compare("eq", a, b, out, stream)


def not_equal(a, b, out=None, stream=None) -> DeviceArray:
    """a != b."""
    return _compare("ne", a, b, out, stream)


def where(cond, x, y, stream=None) -> DeviceArray:
    """x where cond is true, else y (numpy broadcasting over the three; x and y of one dtype,
    or numbers in the other's dtype). cond is a bool DeviceArray."""
    if not isinstance(cond, DeviceArray) or cond.dtype != np.bool_:
        raise InvalidValueError("npurt.ops.where: cond must be a bool DeviceArray (e.g. x > 0)")
    values = _arrays("where", x, y)
    dtype = _same_dtype("where", values)
    dev = cond.device
    _arrays("where", cond, *values)     # one device
    try:
        shape = np.broadcast_shapes(cond.shape, *(v.shape for v in values))
    except ValueError:
        raise InvalidValueError(f"npurt.ops.where: shapes {cond.shape}, {getattr(x, 'shape', ())} and "
                                f"{getattr(y, 'shape', ())} do not broadcast") from None
    s = _stream(stream, dev)
    result = DeviceArray(shape, dtype, dev)
    n = math.prod(shape)
    if n:
        c = _as_array(cond, shape, np.dtype(np.bool_), dev, _wrap(s))
        a = _as_array(x, shape, dtype, dev, _wrap(s))
        b = _as_array(y, shape, dtype, dev, _wrap(s))
        _launch(dev, launch.select, result.ptr, c.ptr, a.ptr, b.ptr, n, _kdt(dtype), stream=s)
    return result


def concatenate(arrays, axis: int = 0, stream=None) -> DeviceArray:
    """The arrays joined along an existing `axis` (same dtype, same shape elsewhere), as
    numpy.concatenate: one device-to-device copy per array, queued on the stream."""
    arrays = list(arrays)
    if not arrays:
        raise InvalidValueError("npurt.ops.concatenate needs at least one array")
    _arrays("concatenate", *arrays)
    if not all(isinstance(a, DeviceArray) for a in arrays):
        raise InvalidValueError("npurt.ops.concatenate: every operand must be a DeviceArray")
    dtype = _same_dtype("concatenate", arrays)
    first = arrays[0]
    if first.ndim == 0:
        raise InvalidValueError("npurt.ops.concatenate: zero-dimensional arrays cannot be concatenated")
    ax = _axis(axis, first.ndim, "concatenate")
    for a in arrays[1:]:
        if a.ndim != first.ndim or any(a.shape[i] != first.shape[i] for i in range(first.ndim) if i != ax):
            raise InvalidValueError(f"npurt.ops.concatenate: shapes {first.shape} and {a.shape} differ off axis {ax}")
    shape = list(first.shape)
    shape[ax] = builtins.sum(a.shape[ax] for a in arrays)
    s = _stream(stream, first.device)
    result = DeviceArray(tuple(shape), dtype, first.device)
    start = 0
    for a in arrays:
        index = [slice(None)] * first.ndim
        index[ax] = slice(start, start + a.shape[ax])
        if a.size:
            _copy_into(result[tuple(index)], a, _wrap(s))
        start += a.shape[ax]
    return result


def stack(arrays, axis: int = 0, stream=None) -> DeviceArray:
    """The arrays (same shape and dtype) joined along a new `axis`, as numpy.stack."""
    arrays = list(arrays)
    if not arrays or not all(isinstance(a, DeviceArray) for a in arrays):
        raise InvalidValueError("npurt.ops.stack needs one or more DeviceArrays")
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays[1:]):
        raise InvalidValueError(f"npurt.ops.stack: every array must have shape {shape}")
    ax = _axis(axis, len(shape) + 1, "stack")
    new = shape[:ax] + (1,) + shape[ax:]
    return concatenate([a.reshape(new) for a in arrays], axis=ax, stream=stream)


def _unary(op: str, x, out, stream) -> DeviceArray:
    (x,) = _arrays(op, x)
    s = _stream(stream, x.device)
    result = _out(op, out, x.shape, x.dtype, x.device)
    if x.size:
        src = x.contiguous(_wrap(s))
        _launch(x.device, launch.elementwise, op, result.ptr, src.ptr, None, x.size, _kdt(x.dtype), stream=s)
    return result


def abs(x: DeviceArray, out=None, stream=None) -> DeviceArray:  # noqa: A001
    """|x| elementwise (floats and signed ints)."""
    return _unary("abs", x, out, stream)


def exp(x: DeviceArray, out=None, stream=None) -> DeviceArray:
    """e ** x (floats)."""
    return _unary("exp", x, out, stream)


def log(x: DeviceArray, out=None, stream=None) -> DeviceArray:
    """Natural logarithm (floats; nan below 0, -inf at 0, as numpy)."""
    return _unary("log", x, out, stream)


def sqrt(x: DeviceArray, out=None, stream=None) -> DeviceArray:
    """Square root (floats; nan below 0)."""
    return _unary("sqrt", x, out, stream)


def relu(x: DeviceArray, out=None, stream=None) -> DeviceArray:
    """max(x, 0)."""
    return _unary("relu", x, out, stream)


def gelu(x: DeviceArray, out=None, stream=None) -> DeviceArray:
    """GELU (as the kernel defines it; see npurt.ops.kernels)."""
    return _unary("gelu", x, out, stream)


def cast(x: DeviceArray, dtype, stream=None) -> DeviceArray:
    """x converted to `dtype` (a new array)."""
    (x,) = _arrays("cast", x)
    dtype = as_dtype(dtype)
    s = _stream(stream, x.device)
    result = DeviceArray(x.shape, dtype, x.device)
    if x.size:
        src = x.contiguous(_wrap(s))
        _launch(x.device, launch.cast, result.ptr, src.ptr, x.size, _kdt(x.dtype), _kdt(dtype), stream=s)
    return result


astype = cast


def fill(x: DeviceArray, value, stream=None) -> DeviceArray:
    """Set every element of x to `value` (in place); returns x."""
    (x,) = _arrays("fill", x)
    if not isinstance(value, numbers.Number) or isinstance(value, bool):
        raise InvalidValueError(f"fill value must be a number, got {type(value).__name__}")
    s = _stream(stream, x.device)
    if not x.size:
        return x
    if x.is_contiguous():
        _launch(x.device, launch.fill, x.ptr, x.size, value, _kdt(x.dtype), stream=s)
    else:  # a strided view: fill a contiguous buffer, then scatter it
        tmp = full(x.shape, value, x.dtype, x.device, _wrap(s))
        _copy_into(x, tmp, _wrap(s))
    return x


def arange_into(out: DeviceArray, start, step, stream=None) -> DeviceArray:
    """out[i] = start + i * step for a contiguous 1-D out."""
    if out.ndim != 1 or not out.is_contiguous():
        raise InvalidValueError("arange_into needs a contiguous 1-D array")
    s = _stream(stream, out.device)
    if out.size:
        _launch(out.device, launch.arange, out.ptr, out.size, start, step, _kdt(out.dtype), stream=s)
    return out


def arange(start, stop=None, step=1, dtype=None, device: int | None = None, stream=None) -> DeviceArray:
    """npurt.arange: evenly spaced values in [start, stop) (the arange kernel); numpy's rules for the
    arguments. dtype defaults to int32 when all arguments are ints, else float32."""
    if stop is None:
        start, stop = 0, start
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(v, numbers.Real) or isinstance(v, bool):
            raise InvalidValueError(f"arange: {name} must be a real number, got {v!r}")
    if step == 0:
        raise InvalidValueError("arange: step must not be zero")
    dt = _default_dtype(start, stop, step) if dtype is None else as_dtype(dtype)
    n = builtins.max(0, math.ceil((stop - start) / step))  # (this module defines max and sum)
    out = DeviceArray((n,), dt, device)
    if n:
        arange_into(out, start, step, stream=stream)
    return out


# ---------------------------------------------------------------- matmul
def matmul(a: DeviceArray, b: DeviceArray, out=None, stream=None) -> DeviceArray:
    """Matrix product with numpy's matmul rules: 2-D @ 2-D, batched (..., m, k) @ (..., k, n)
    with broadcast batch dimensions, and 1-D operands promoted and squeezed."""
    if not isinstance(a, DeviceArray) or not isinstance(b, DeviceArray):
        raise InvalidValueError("npurt.ops.matmul needs two DeviceArrays (scalars: use mul)")
    _arrays("matmul", a, b)
    dtype = _same_dtype("matmul", [a, b])
    if a.ndim == 0 or b.ndim == 0:
        raise InvalidValueError("npurt.ops.matmul: 0-d operands are not matrices (use mul)")
    dev = a.device
    s = _stream(stream, dev)
    ws = _wrap(s)
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    if squeeze_a:
        a = a.reshape(1, a.shape[0])
    if squeeze_b:
        b = b.reshape(b.shape[0], 1)
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k != k2:
        raise InvalidValueError(f"npurt.ops.matmul: shapes {a.shape} and {b.shape} do not align "
                                f"({k} != {k2})")
    try:
        batch_shape = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:
        raise InvalidValueError(f"npurt.ops.matmul: batch dimensions of {a.shape} and {b.shape} do not "
                                "broadcast") from None
    full_shape = batch_shape + (m, n)
    result_shape = full_shape
    if squeeze_a:
        result_shape = result_shape[:-2] + (n,)
    if squeeze_b:
        result_shape = result_shape[:-1]
    result = _out("matmul", out, result_shape, dtype, dev)
    if not math.prod(full_shape):
        return result
    if k == 0:
        return fill(result, 0, stream=ws)
    batch = math.prod(batch_shape)
    if b.ndim == 2 and a.shape[:-2] == batch_shape:
        # (..., m, k) @ (k, n): one 2-D product over the stacked rows
        x, y = a.contiguous(ws), b.contiguous(ws)
        _launch(dev, launch.matmul, result.ptr, x.ptr, y.ptr, batch * m, k, n, _kdt(dtype), batch=1, stream=s)
        return result
    x = _as_array(a, batch_shape + (m, k), dtype, dev, ws)
    y = _as_array(b, batch_shape + (k, n), dtype, dev, ws)
    _launch(dev, launch.matmul, result.ptr, x.ptr, y.ptr, m, k, n, _kdt(dtype), batch=batch, stream=s)
    return result


# ---------------------------------------------------------------- reductions
def _reduce(op: str, x: DeviceArray, axis, keepdims: bool, stream) -> DeviceArray:
    (x,) = _arrays(op, x)
    s = _stream(stream, x.device)
    ws = _wrap(s)
    if axis is None:
        axes = list(range(x.ndim))
    elif isinstance(axis, (tuple, list)):
        axes = sorted({_axis(a, x.ndim, op) for a in axis})
    else:
        axes = [_axis(axis, x.ndim, op)]
    if axis is None or len(axes) == x.ndim:
        # everything at once: one reduction over the flattened array
        if x.size == 0:
            return _empty_reduction(op, x, axes, keepdims, ws)
        flat = x.contiguous(ws)
        out = DeviceArray((1,) * x.ndim if keepdims else (), x.dtype, x.device)
        _launch(x.device, launch.reduce, op, out.ptr, flat.ptr, 1, x.size, 1, _kdt(x.dtype), stream=s)
        return out
    result = x
    for ax in reversed(axes):  # highest axis first keeps the lower axis numbers valid
        result = _reduce_axis(op, result, ax, s, ws)
    if not keepdims:
        result = result.reshape(tuple(n for i, n in enumerate(result.shape) if i not in axes))
    return result


def _reduce_axis(op, x, ax, s, ws) -> DeviceArray:
    """Reduce one axis, keeping it as size 1."""
    shape = x.shape
    if shape[ax] == 0:
        return _empty_reduction(op, x, [ax], True, ws)
    src = x.contiguous(ws)
    out_shape = shape[:ax] + (1,) + shape[ax + 1:]
    out = DeviceArray(out_shape, x.dtype, x.device)
    outer, inner = math.prod(shape[:ax]), math.prod(shape[ax + 1:])
    if out.size:
        _launch(x.device, launch.reduce, op, out.ptr, src.ptr, outer, shape[ax], inner, _kdt(x.dtype), stream=s)
    return out


def _empty_reduction(op, x, axes, keepdims, ws) -> DeviceArray:
    if op == "max":
        raise InvalidValueError("npurt.ops.max: zero-size reduction has no identity (empty axis)")
    shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape)) if keepdims else \
        tuple(n for i, n in enumerate(x.shape) if i not in axes)
    return full(shape, 0 if op == "sum" else float("nan"), x.dtype, x.device, ws)


def _axis(axis, ndim: int, fn: str) -> int:
    if not isinstance(axis, numbers.Integral) or isinstance(axis, bool):
        raise InvalidValueError(f"npurt.ops.{fn}: axis must be an int, a tuple of ints or None, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise InvalidValueError(f"npurt.ops.{fn}: axis {axis} is out of range for a {ndim}-d array")
    return int(axis) % ndim


def sum(x: DeviceArray, axis=None, keepdims: bool = False, stream=None) -> DeviceArray:  # noqa: A001
    """Sum over `axis` (an int, a tuple, or None for all)."""
    return _reduce("sum", x, axis, keepdims, stream)


def max(x: DeviceArray, axis=None, keepdims: bool = False, stream=None) -> DeviceArray:  # noqa: A001
    """Maximum over `axis` (an int, a tuple, or None for all)."""
    return _reduce("max", x, axis, keepdims, stream)


def mean(x: DeviceArray, axis=None, keepdims: bool = False, stream=None) -> DeviceArray:
    """Mean over `axis` (an int, a tuple, or None for all)."""
    return _reduce("mean", x, axis, keepdims, stream)


# ---------------------------------------------------------------- rows
def _last_axis_op(fn: str, x: DeviceArray, axis: int, ws, body) -> DeviceArray:
    """Run `body(contiguous x with `axis` last)` and put the axis back."""
    ax = _axis(axis, x.ndim, fn)
    if ax == x.ndim - 1:
        return body(x.contiguous(ws))
    perm = [i for i in range(x.ndim) if i != ax] + [ax]
    moved = body(transpose(x, perm, stream=ws))
    inverse = [perm.index(i) for i in range(x.ndim)]
    return transpose(moved, inverse, stream=ws)


def softmax(x: DeviceArray, axis: int = -1, stream=None) -> DeviceArray:
    """exp(x) / sum(exp(x)) along `axis` (numerically stable, as the kernel computes it)."""
    (x,) = _arrays("softmax", x)
    if x.ndim == 0:
        raise InvalidValueError("npurt.ops.softmax needs at least one dimension")
    s = _stream(stream, x.device)
    ws = _wrap(s)

    def body(src: DeviceArray) -> DeviceArray:
        out = DeviceArray(src.shape, src.dtype, src.device)
        cols = src.shape[-1]
        if src.size:
            _launch(src.device, launch.softmax, out.ptr, src.ptr, src.size // cols, cols, _kdt(src.dtype), stream=s)
        return out

    return _last_axis_op("softmax", x, axis, ws, body)


def layer_norm(x: DeviceArray, gamma: DeviceArray | None = None, beta: DeviceArray | None = None,
               eps: float = 1e-5, stream=None) -> DeviceArray:
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last axis; gamma and beta have
    the last axis's length (or are None)."""
    arrays = _arrays("layer_norm", x, gamma, beta)
    if not isinstance(x, DeviceArray) or x.ndim == 0:
        raise InvalidValueError("npurt.ops.layer_norm needs a DeviceArray with at least one dimension")
    _same_dtype("layer_norm", arrays)
    cols = x.shape[-1]
    for name, p in (("gamma", gamma), ("beta", beta)):
        if p is not None and (not isinstance(p, DeviceArray) or p.shape != (cols,)):
            raise InvalidValueError(f"npurt.ops.layer_norm: {name} must be a DeviceArray of shape ({cols},)")
    s = _stream(stream, x.device)
    ws = _wrap(s)
    src = x.contiguous(ws)
    g = gamma.contiguous(ws) if gamma is not None else None
    b = beta.contiguous(ws) if beta is not None else None
    out = DeviceArray(x.shape, x.dtype, x.device)
    if x.size:
        _launch(x.device, launch.layer_norm, out.ptr, src.ptr, g.ptr if g is not None else 0,
                b.ptr if b is not None else 0, x.size // cols, cols, float(eps), _kdt(x.dtype), stream=s)
    return out


def transpose(x: DeviceArray, axes=None, stream=None) -> DeviceArray:
    """A contiguous array with x's axes permuted (reversed by default): the transpose kernel.
    (`x.T` / `x.transpose()` are views; this one moves the data.)"""
    (x,) = _arrays("transpose", x)
    axes = list(range(x.ndim))[::-1] if axes is None else [a % x.ndim if x.ndim else a for a in ints(axes, "axes")]
    if sorted(axes) != list(range(x.ndim)):
        raise InvalidValueError(f"npurt.ops.transpose: axes {tuple(axes)} are not a permutation of {x.ndim} axes")
    s = _stream(stream, x.device)
    out_shape = tuple(x.shape[a] for a in axes)
    out = DeviceArray(out_shape, x.dtype, x.device)
    if x.size:
        src = x.contiguous(_wrap(s))
        _launch(x.device, launch.transpose, out.ptr, src.ptr, tuple(src.shape), tuple(axes), _kdt(x.dtype), stream=s)
    return out
