"""The built-in kernels, written with the same model users write theirs in.

Each kernel reaches memory only through `ctx.gm` views (declared "r" for inputs, "w" for
outputs: every element of an output is written by some block) and splits its work by
`ctx.block_idx` / `ctx.block_num` so that the blocks of a launch share the host cores. The
split never changes what one output element is computed from, or in which order, so a
multi-block launch gives the same bits as a one-block launch.

Data types travel as an int32 code (`DTYPES` index), operations as an int32 code: kernel
parameters are device addresses and numpy scalars only. float16 and bfloat16 arithmetic is
done in float32 and rounded once at the end (matmul and sums accumulate in float32).
"""
from __future__ import annotations

import math
import threading

import numpy as np

from ..runtime import GM, address, resolve_dtype
from ..runtime import kernel_function as kernel

# dtype codes (kernel argument `dt`)
DTYPES = ("float32", "float16", "bfloat16", "int32", "int8", "float64", "int16", "int64", "uint8", "bool")
_resolved: list = [None] * len(DTYPES)

BINARY_OPS = ("add", "sub", "mul", "div", "maximum", "pow", "minimum")
UNARY_OPS = ("relu", "gelu", "abs", "exp", "log", "sqrt")
COMPARE_OPS = ("lt", "le", "gt", "ge", "eq", "ne")
_BINARY_UFUNCS = (np.add, np.subtract, np.multiply, np.divide, np.maximum, np.power, np.minimum)
_UNARY_UFUNCS = (None, None, np.abs, np.exp, np.log, np.sqrt)
_COMPARE_UFUNCS = (np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal)
REDUCE_OPS = ("sum", "max", "mean")

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
CHUNK = 1 << 16          # elements per step of multi-pass formulas: keeps temporaries in cache
_GELU_C = 2.0 * math.sqrt(2.0 / math.pi)


def dtype_of(code: int) -> np.dtype:
    dt = _resolved[code]
    if dt is None:
        dt = _resolved[code] = resolve_dtype(DTYPES[code])
    return dt


def code_of(dtype) -> int:
    """The dtype code of anything np.dtype() accepts, or "bfloat16"."""
    dt = resolve_dtype(dtype)
    name = "bfloat16" if dt.name == "bfloat16" else dt.name
    try:
        return DTYPES.index(name)
    except ValueError:
        raise ValueError(f"dtype {dt} is not supported by the built-in ops ({', '.join(DTYPES)})") from None


def compute_dtype(dt: np.dtype) -> np.dtype:
    """What arithmetic on `dt` runs in: float64 for float64, float32 for other floats."""
    if dt == F64:
        return F64
    return F32 if dt.kind == "f" or dt.name == "bfloat16" else dt


def _wide(dt: np.dtype) -> bool:
    """True for the types whose arithmetic runs in float32 (float16, bfloat16)."""
    return dt.itemsize < 4 and (dt.kind == "f" or dt.name == "bfloat16")


# ---------------------------------------------------------------- elementwise
@kernel
def binary(ctx, out: GM, a: GM, b: GM, n: np.int64, op: np.int32, dt: np.int32):
    """out = a op b over n elements (op: BINARY_OPS index)."""
    d = dtype_of(dt)
    lo, hi = ctx.block_range(n, 1024)
    if lo >= hi:
        return
    x, y, o = ctx.gm(a, d, n, "r")[lo:hi], ctx.gm(b, d, n, "r")[lo:hi], ctx.gm(out, d, n, "w")[lo:hi]
    ufunc = _BINARY_UFUNCS[op]
    # IEEE results, as the vector unit gives them (x / 0 is inf, 0 / 0 nan, float16 overflow
    # inf): numpy's floating-point warnings would be raised in the kernel, an AI core
    # exception under `-W error`
    with np.errstate(all="ignore"):
        if _wide(d):
            # two float32 scratch chunks reused for the whole range: no allocation per chunk
            xa, ya = _scratch(hi - lo), _scratch(hi - lo)
            for s in range(0, hi - lo, CHUNK):
                e = min(s + CHUNK, hi - lo)
                xs, ys = xa[:e - s], ya[:e - s]
                np.copyto(xs, x[s:e])
                np.copyto(ys, y[s:e])
                ufunc(xs, ys, out=xs)
                np.copyto(o[s:e], xs, casting="unsafe")
        else:
            ufunc(x, y, out=o)


@kernel
def unary(ctx, out: GM, x: GM, n: np.int64, op: np.int32, dt: np.int32):
    """out = f(x) over n elements (op: UNARY_OPS index). gelu is the tanh approximation,
    evaluated as x * sigmoid(2 * sqrt(2/pi) * (x + 0.044715 x^3)), which is the same
    function without the cancellation of 1 + tanh for negative x."""
    d = dtype_of(dt)
    lo, hi = ctx.block_range(n, 1024)
    if lo >= hi:
        return
    src, dst = ctx.gm(x, d, n, "r")[lo:hi], ctx.gm(out, d, n, "w")[lo:hi]
    if op == 0:
        np.maximum(src, d.type(0), out=dst)
        return
    if op >= 2:     # abs, exp, log, sqrt: numpy's, in the compute dtype (log/sqrt of < 0 give nan)
        ufunc = _UNARY_UFUNCS[op]
        with np.errstate(all="ignore"):
            if _wide(d):
                buf = _scratch(hi - lo)
                for s in range(0, hi - lo, CHUNK):
                    e = min(s + CHUNK, hi - lo)
                    v = buf[:e - s]
                    np.copyto(v, src[s:e])
                    ufunc(v, out=v)
                    np.copyto(dst[s:e], v, casting="unsafe")
            else:
                ufunc(src, out=dst)
        return
    gelu_into(dst, src)


def _scratch(n: int) -> np.ndarray:
    """A float32 work buffer for one chunk of an n-element range."""
    return np.empty(min(n, CHUNK), F32)


_BUFFERS = threading.local()
PAGE = 4096


def _chunk_buffer(dtype: np.dtype, slot: int = 0, across: np.ndarray | None = None) -> np.ndarray:
    """This thread's CHUNK-element work buffer number `slot` of `dtype`, kept between calls:
    a kernel's temporaries stay in the cache from one call to the next and cost no allocation
    (as the plain numpy formula's one scratch chunk). One per thread, so blocks running at
    once never share one.

    `across`: an operand the buffer is read and written alongside, element for element. The
    buffer then starts half a page away from it (modulo the page): a store to the buffer and
    a load of the operand whose addresses agree in their low 12 bits stall each other (4K
    aliasing), and a fresh numpy allocation of this size sits 16 bytes past a page start, as
    the device's buffers do at a page start: the plain formula with such a scratch chunk was
    11 % slower (measured on these VMs, session 9). The placed view is kept too, per the
    operand's place in its page: a kernel right after a big one runs with cold caches, where
    every object made costs microseconds (session 12)."""
    try:
        bufs = _BUFFERS.bufs
    except AttributeError:
        bufs = _BUFFERS.bufs = {}
    key = (dtype, slot, None if across is None else address.host_address(across) % PAGE)
    chunk = bufs.get(key)
    if chunk is None:
        buf = bufs.get((dtype, slot))
        if buf is None:
            buf = bufs[(dtype, slot)] = np.empty(CHUNK + PAGE // dtype.itemsize, dtype)
        chunk = bufs[key] = buf[:CHUNK] if across is None else half_a_page_from(across, buf, CHUNK)
    return chunk


def half_a_page_from(across: np.ndarray, buf: np.ndarray, n: int) -> np.ndarray:
    """The n elements of `buf` (at least n + PAGE bytes) that start half a page from `across`'s
    start, modulo the page (see _chunk_buffer)."""
    skew = (address.host_address(across) + PAGE // 2 - address.host_address(buf)) % PAGE // buf.itemsize
    return buf[skew:skew + n]


# np.errstate(over="ignore") without its Python frames (numpy 2 keeps the error state in a
# context variable; the object that ignores overflow is made once per state it is entered
# from): about 4 µs instead of 9 right after a big kernel. numpy 1.x: np.errstate.
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _ERRSTATE, _make_extobj
except ImportError:  # numpy < 2
    _ERRSTATE = None
_OVERFLOW_IGNORED: dict = {}  # the error state in force -> the same with over="ignore"


def _ignore_overflow():
    """Enter np.errstate(over="ignore"); returns what _restore_errors takes."""
    if _ERRSTATE is None:
        state = np.errstate(over="ignore")
        state.__enter__()
        return state
    current = _ERRSTATE.get()
    ignored = _OVERFLOW_IGNORED.get(current)
    if ignored is None:
        if len(_OVERFLOW_IGNORED) >= 16:  # states a program enters are few; never grow without bound
            _OVERFLOW_IGNORED.clear()
        ignored = _OVERFLOW_IGNORED[current] = _make_extobj(over="ignore")  # (reads the state in force)
    return _ERRSTATE.set(ignored)


def _restore_errors(token) -> None:
    if _ERRSTATE is None:
        token.__exit__(None, None, None)
    else:
        _ERRSTATE.reset(token)


_GELU_CONSTANTS: dict = {}  # compute dtype -> (0.044715, -2 sqrt(2/pi), 1) as its scalars


def gelu_into(dst: np.ndarray, src: np.ndarray) -> None:
    """dst = gelu(src), elementwise over two 1-D arrays of one float dtype, CHUNK elements
    at a time, as x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3))).

    As anyone writes it in numpy: the denominator is built in one scratch chunk that stays in
    the cache (this thread's, kept between calls), and the final division writes dst, once;
    the input is read where it lies. float16 and bfloat16 are first widened into a second
    float32 scratch chunk, and the result is rounded once into dst; a dst that overlaps src
    (an in-place gelu) gets the division's result through the scratch chunk. The operations
    and their order are the same on every path, so every path gives the same bits. The
    bench's plain-threads reference runs this same body. (Session 9: building the
    denominator in dst itself, as before, was 0-9 % slower than the plain formula, with where
    dst's pages fall in the cache against src's.)"""
    n = len(src)
    cd = compute_dtype(src.dtype)
    wide = cd != src.dtype
    direct = not wide and dst.dtype == cd and not np.may_share_memory(dst, src)
    xw = _chunk_buffer(cd, 1, src) if wide else None     # x widened to float32
    tw = _chunk_buffer(cd, 0, src if xw is None else xw)  # the denominator (not direct: then the result)
    # the constants as scalars of the compute dtype and the ufuncs called positionally: the
    # same values numpy makes of the Python floats (NEP 50), so the same bits, with 1.5 µs
    # less Python per chunk (issue 28: a launch is compared with the plain formula)
    constants = _GELU_CONSTANTS.get(cd)
    if constants is None:
        constants = _GELU_CONSTANTS[cd] = (cd.type(0.044715), cd.type(-_GELU_C), cd.type(1.0))
    cubic, scale, one = constants
    mul, add, div, exp = np.multiply, np.add, np.divide, np.exp
    errors = _ignore_overflow()  # exp overflow for very negative x gives the right 0
    try:
        for s in range(0, n, CHUNK):
            e = min(s + CHUNK, n)
            if wide:
                v = xw[:e - s]
                np.copyto(v, src[s:e])
            else:
                v = src[s:e]
            t = tw[:e - s]
            mul(v, v, t)
            mul(t, cubic, t)
            add(t, one, t)
            mul(t, v, t)
            mul(t, scale, t)
            exp(t, t)
            add(t, one, t)
            if direct:
                div(v, t, dst[s:e])
            else:
                div(v, t, t)
                np.copyto(dst[s:e], t, casting="unsafe")
    finally:
        _restore_errors(errors)


@kernel
def compare(ctx, out: GM, a: GM, b: GM, n: np.int64, op: np.int32, dt: np.int32):
    """out (bool) = a op b over n elements (op: COMPARE_OPS index)."""
    d = dtype_of(dt)
    lo, hi = ctx.block_range(n, 1024)
    if lo >= hi:
        return
    x, y = ctx.gm(a, d, n, "r")[lo:hi], ctx.gm(b, d, n, "r")[lo:hi]
    o = ctx.gm(out, np.bool_, n, "w")[lo:hi]
    if _wide(d):
        x, y = x.astype(F32), y.astype(F32)
    _COMPARE_UFUNCS[op](x, y, out=o)


@kernel
def select(ctx, out: GM, cond: GM, a: GM, b: GM, n: np.int64, dt: np.int32):
    """out = cond ? a : b over n elements (cond bool, a, b and out of dtype dt)."""
    d = dtype_of(dt)
    lo, hi = ctx.block_range(n, 1024)
    if lo >= hi:
        return
    c = ctx.gm(cond, np.bool_, n, "r")[lo:hi]
    x, y, o = ctx.gm(a, d, n, "r")[lo:hi], ctx.gm(b, d, n, "r")[lo:hi], ctx.gm(out, d, n, "w")[lo:hi]
    np.copyto(o, y)
    np.copyto(o, x, where=c)


@kernel
def cast(ctx, out: GM, x: GM, n: np.int64, src_dt: np.int32, dst_dt: np.int32):
    """out = x converted to another dtype, as numpy's astype (float to int truncates)."""
    sd, dd = dtype_of(src_dt), dtype_of(dst_dt)
    lo, hi = ctx.block_range(n, 1024)
    if lo >= hi:
        return
    with np.errstate(invalid="ignore", over="ignore"):
        np.copyto(ctx.gm(out, dd, n, "w")[lo:hi], ctx.gm(x, sd, n, "r")[lo:hi], casting="unsafe")


@kernel
def fill(ctx, out: GM, n: np.int64, fvalue: np.float64, ivalue: np.int64, dt: np.int32):
    """out[:] = value (ivalue for integer types, fvalue for floats)."""
    d = dtype_of(dt)
    lo, hi = ctx.block_range(n, 1024)
    if lo >= hi:
        return
    ctx.gm(out, d, n, "w")[lo:hi] = ivalue if d.kind in "iu" else fvalue


@kernel
def arange(ctx, out: GM, n: np.int64, fstart: np.float64, fstep: np.float64,
           istart: np.int64, istep: np.int64, dt: np.int32):
    """out[i] = start + i * step, computed in int64 (integer types) or float64, then cast."""
    d = dtype_of(dt)
    lo, hi = ctx.block_range(n, 1024)
    if lo >= hi:
        return
    o = ctx.gm(out, d, n, "w")[lo:hi]
    if d.kind in "iu":
        o[:] = istart + istep * np.arange(lo, hi, dtype=np.int64)
    else:
        o[:] = fstart + fstep * np.arange(lo, hi, dtype=np.float64)


# ---------------------------------------------------------------- matmul
@kernel
def matmul(ctx, c: GM, a: GM, b: GM, batch: np.int64, m: np.int64, k: np.int64, n: np.int64, dt: np.int32):
    """C[batch, m, n] = A[batch, m, k] @ B[batch, k, n]. Blocks split the batch; each product
    is one numpy matmul (BLAS, itself multithreaded). Products are never split by rows: BLAS
    picks different kernels for different row counts, so a row split would change the bits."""
    d = dtype_of(dt)
    b0, b1 = ctx.block_range(batch)
    if b0 >= b1:
        return
    A = ctx.gm(a, d, (batch, m, k), "r")[b0:b1]
    B = ctx.gm(b, d, (batch, k, n), "r")[b0:b1]
    Cm = ctx.gm(c, d, (batch, m, n), "w")[b0:b1]
    _mm(A, B, Cm, _wide(d))


def _mm(A, B, out, wide: bool) -> None:
    if wide:
        out[...] = np.matmul(A.astype(F32), B.astype(F32))
    else:
        np.matmul(A, B, out=out)


# ---------------------------------------------------------------- reductions
@kernel
def reduce(ctx, out: GM, x: GM, outer: np.int64, length: np.int64, inner: np.int64, op: np.int32, dt: np.int32):
    """out[o, i] = op over l of x[o, l, i] (op: REDUCE_OPS index). Blocks split `outer`, or
    `inner` when there are fewer outer rows than blocks; each output is reduced by one block
    in numpy's order (see _inner_range), so the split does not change results."""
    d = dtype_of(dt)
    X = ctx.gm(x, d, (outer, length, inner), "r")
    O = ctx.gm(out, d, (outer, inner), "w")
    if outer >= ctx.block_num or inner < 2 * ctx.block_num:
        lo, hi = ctx.block_range(outer)
        xs, os_ = X[lo:hi], O[lo:hi]
    else:
        lo, hi = _inner_range(ctx, inner)
        xs, os_ = X[:, :, lo:hi], O[:, lo:hi]
    if lo >= hi:
        return
    if op == 1:
        np.max(xs, axis=1, out=os_)
        return
    acc = F32 if _wide(d) else (np.int64 if d.kind in "iu" else d)
    if op == 0 and acc == d:
        np.sum(xs, axis=1, out=os_)
        return
    s = np.sum(xs, axis=1, dtype=acc)
    if op == 2:
        s = s / length if d.kind in "iu" else np.divide(s, s.dtype.type(length), out=s)
    with np.errstate(invalid="ignore", over="ignore"):
        np.copyto(os_, s, casting="unsafe")


def _inner_range(ctx, inner: int) -> tuple[int, int]:
    """This block's columns of the inner axis, never exactly one wide: numpy reduces a
    one-column slice in a different (pairwise) order than a wider one, and the split must
    not change results."""
    chunk = max(2, -(-inner // ctx.block_num))
    lo = min(inner, ctx.block_idx * chunk)
    hi = min(inner, lo + chunk)
    if inner - hi == 1:
        hi = inner  # take the last column rather than leave it alone to the next block
    elif hi - lo == 1:
        return lo, lo  # the previous block took it
    return lo, hi


def _row_chunks(ctx, out: int, x: int, rows: int, cols: int, d: np.dtype):
    """This block's rows of a [rows, cols] array, a cache-sized chunk at a time: yields
    (chunk in the compute dtype, the output rows to write it to)."""
    lo, hi = ctx.block_range(rows)
    if lo >= hi:
        return
    X, O = ctx.gm(x, d, (rows, cols), "r")[lo:hi], ctx.gm(out, d, (rows, cols), "w")[lo:hi]
    cd = compute_dtype(d)
    step = max(1, CHUNK // max(cols, 1))
    for r in range(0, hi - lo, step):
        yield X[r:r + step].astype(cd), O[r:r + step]


@kernel
def softmax(ctx, out: GM, x: GM, rows: np.int64, cols: np.int64, dt: np.int32):
    """Softmax over the last axis of a [rows, cols] array (max-subtracted)."""
    for v, o in _row_chunks(ctx, out, x, rows, cols, dtype_of(dt)):
        v -= v.max(axis=1, keepdims=True)
        np.exp(v, out=v)
        v /= v.sum(axis=1, keepdims=True)
        o[...] = v


@kernel
def layer_norm(ctx, out: GM, x: GM, gamma: GM, beta: GM, rows: np.int64, cols: np.int64,
               eps: np.float64, dt: np.int32):
    """Normalise each row of [rows, cols] to zero mean and unit (population) variance, then
    scale by gamma and shift by beta (each of length cols; 0 for none)."""
    d = dtype_of(dt)
    cd = compute_dtype(d)
    g = ctx.gm(gamma, d, cols, "r").astype(cd) if gamma else None
    b = ctx.gm(beta, d, cols, "r").astype(cd) if beta else None
    for v, o in _row_chunks(ctx, out, x, rows, cols, d):
        v -= v.mean(axis=1, keepdims=True)
        var = np.mean(v * v, axis=1, keepdims=True)
        var += cd.type(eps)
        np.sqrt(var, out=var)
        v /= var
        if g is not None:
            v *= g
        if b is not None:
            v += b
        o[...] = v


# ---------------------------------------------------------------- transpose
MAX_DIMS = 8


@kernel
def transpose(ctx, out: GM, x: GM, dt: np.int32, ndim: np.int32,
              s0: np.int64, s1: np.int64, s2: np.int64, s3: np.int64,
              s4: np.int64, s5: np.int64, s6: np.int64, s7: np.int64, axes: np.int64):
    """out = x.reshape(shape).transpose(axes), shape = s0..s{ndim-1}; axes packed 4 bits
    per output axis (axis i in bits 4i..4i+3). Blocks split the first output axis."""
    d = dtype_of(dt)
    shape = (s0, s1, s2, s3, s4, s5, s6, s7)[:ndim]
    perm = tuple((axes >> (4 * i)) & 0xF for i in range(ndim))
    total = 1
    for s in shape:
        total *= s
    X = ctx.gm(x, d, total, "r").reshape(shape).transpose(perm)
    O = ctx.gm(out, d, total, "w").reshape(X.shape)
    if ndim == 0:
        O[...] = X
        return
    lo, hi = ctx.block_range(X.shape[0])
    if lo < hi:
        np.copyto(O[lo:hi], X[lo:hi])


# what one launch computes, for the profiler's timelines ("relu", not "unary")
binary.label = lambda v: BINARY_OPS[v[4]]
unary.label = lambda v: UNARY_OPS[v[3]]
compare.label = lambda v: COMPARE_OPS[v[4]]
reduce.label = lambda v: f"reduce_{REDUCE_OPS[v[5]]}"


# Kernels whose time is linear in the bytes their launch declares (extents) and that never
# wait for the host: a small launch of one block may run in the enqueuing thread when its
# stream is idle (runtime/inline.py). matmul is not among them (its work grows faster).
for _k in (binary, unary, compare, select, cast, fill, arange, reduce, softmax, layer_norm, transpose):
    _k.inline_ok = True
del _k
