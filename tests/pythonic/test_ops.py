"""The built-in op library against numpy references, on fresh random inputs every run.

Each op is also run with several block counts: the results must be the same bits.
Tolerances are the ones documented in npurt.ops.launch.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.errors import InvalidValueError, TaskError
from npurt.ops import kernels as K
from npurt.ops import launch as L
from npurt.runtime.kernel import launch

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F16, F64 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64)
FLOATS = [F32, F16, BF16]
TOL = {F32: 1e-5, F16: 1e-3, BF16: 1e-2, F64: 1e-12}
BLOCKS = (1, 2, 5)


@pytest.fixture
def rng():
    seed = np.random.SeedSequence().entropy
    print(f"random seed {seed}")  # shown when a test fails
    return np.random.default_rng(seed)


@pytest.fixture
def dev(rt):
    """Upload/download helpers bound to the runtime."""
    class Dev:
        def put(self, arr):
            arr = np.ascontiguousarray(arr)
            ptr = rt.malloc(max(arr.nbytes, 1))
            if arr.nbytes:
                rt.memcpy(ptr, arr.nbytes, arr.ctypes.data, arr.nbytes, C.ACL_MEMCPY_HOST_TO_DEVICE)
            return ptr

        def empty(self, shape, dtype):
            return rt.malloc(max(int(math.prod(np.atleast_1d(shape))) * np.dtype(dtype).itemsize, 1))

        def free(self, ptr):
            rt.free(ptr)

        def get(self, ptr, shape, dtype):
            rt.synchronize_stream(None)
            out = np.empty(shape, dtype)
            if out.nbytes:
                rt.memcpy(out.ctypes.data, out.nbytes, ptr, out.nbytes, C.ACL_MEMCPY_DEVICE_TO_HOST)
            return out

    return Dev()


def normal(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def across_blocks(dev, launch, out_ptr, shape, dtype):
    """Run `launch(num_blocks)` for each block count; assert identical bits; the result."""
    results = []
    for nb in BLOCKS:
        launch(nb)
        results.append(dev.get(out_ptr, shape, dtype))
    for r in results[1:]:
        assert r.tobytes() == results[0].tobytes(), "a multi-block launch changed the result"
    return results[0]


def in_f32(fn, *arrays, dtype):
    """numpy reference of float16/bfloat16 ops: compute in float32, round once."""
    return fn(*(a.astype(np.float32) for a in arrays)).astype(dtype)


# ---------------------------------------------------------------- elementwise
BINARY_CASES = [(op, dt) for op in ("add", "sub", "mul", "div", "maximum")
                for dt in FLOATS + [F64, np.dtype(np.int32), np.dtype(np.int8)]
                if not (op == "div" and dt.kind == "i")]  # div of ints: test_div_of_ints_is_invalid


@pytest.mark.parametrize("op,dtype", BINARY_CASES, ids=str)
def test_binary_elementwise_matches_numpy(dev, rng, op, dtype):
    n = int(rng.integers(3000, 9000))
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    else:
        a, b = normal(rng, n, dtype), normal(rng, n, dtype)
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum}[op]
    pa, pb, po = dev.put(a), dev.put(b), dev.empty(n, dtype)
    got = across_blocks(dev, lambda nb: L.elementwise(op, po, pa, pb, n, dtype, num_blocks=nb), po, n, dtype)
    ref = in_f32(fn, a, b, dtype=dtype) if dtype in (F16, BF16) else fn(a, b)
    assert np.array_equal(got, ref)


@pytest.mark.parametrize("dtype", FLOATS + [F64], ids=str)
def test_binary_elementwise_gives_ieee_results_without_warnings(dev, dtype):
    # as the vector unit: x / 0 is +-inf, 0 / 0 nan, an overflow of the dtype inf; no
    # exception (a numpy warning in the kernel, an error here, would fail the task: 507015)
    n = 6000
    a = np.tile(np.array([1, -1, 0, 60000], np.float32), n // 4).astype(dtype)
    z = np.zeros(n, dtype)
    pa, pz, po = dev.put(a), dev.put(z), dev.empty(n, dtype)
    with np.errstate(all="ignore"):
        ref = in_f32(np.divide, a, z, dtype=dtype) if dtype in (F16, BF16) else np.divide(a, z)
        big = in_f32(np.multiply, a, a, dtype=dtype) if dtype in (F16, BF16) else np.multiply(a, a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        L.elementwise("div", po, pa, pz, n, dtype)
        assert np.array_equal(dev.get(po, n, dtype), ref, equal_nan=True)
        L.elementwise("mul", po, pa, pa, n, dtype)
        got = dev.get(po, n, dtype)
    assert np.array_equal(got, big) and (dtype != F16 or np.isinf(got[3]))
    for p in (pa, pz, po):
        dev.free(p)


def test_div_of_ints_is_invalid(dev):
    p = dev.empty(4, np.int32)
    with pytest.raises(InvalidValueError, match="div does not support int32"):
        L.elementwise("div", p, p, p, 4, np.int32)


@pytest.mark.parametrize("dtype", FLOATS + [np.dtype(np.int32)], ids=str)
def test_relu_matches_numpy(dev, rng, dtype):
    n = 7001
    x = normal(rng, n, np.float32) * 50
    x = x.astype(dtype)
    px, po = dev.put(x), dev.empty(n, dtype)
    got = across_blocks(dev, lambda nb: L.elementwise("relu", po, px, None, n, dtype, num_blocks=nb), po, n, dtype)
    assert np.array_equal(got, np.maximum(x, dtype.type(0)))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_gelu_matches_the_tanh_approximation(dev, rng, dtype):
    n = 9000
    x = (normal(rng, n, np.float32) * 3).astype(dtype)
    px, po = dev.put(x), dev.empty(n, dtype)
    got = across_blocks(dev, lambda nb: L.elementwise("gelu", po, px, None, n, dtype, num_blocks=nb), po, n, dtype)
    v = x.astype(np.float64)
    ref = 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=TOL[dtype], atol=1e-5 if dtype != F32 else 1e-6)


def plain_gelu(x: np.ndarray) -> np.ndarray:
    """The numpy formula the bench's gelu_ratio compares against, in float32."""
    v = x.astype(np.float32)
    with np.errstate(over="ignore"):  # exp overflows to inf for very negative x: gelu is 0 there
        return v / (1 + np.exp(np.float32(-2 * math.sqrt(2 / math.pi)) * (v + np.float32(0.044715) * v * v * v)))


@pytest.mark.parametrize("dtype", [F32, F16], ids=str)
def test_gelu_equals_the_plain_numpy_formula_across_chunks(dev, rng, dtype):
    n = 2 * K.CHUNK + 777  # three chunks, the last one partial
    x = (normal(rng, n, np.float32) * 4).astype(dtype)
    px, po = dev.put(x), dev.empty(n, dtype)
    L.elementwise("gelu", po, px, None, n, dtype, num_blocks=1)
    got = dev.get(po, n, dtype)
    np.testing.assert_allclose(got.astype(np.float32), plain_gelu(x).astype(dtype).astype(np.float32),
                               rtol=TOL[dtype], atol=1e-6 if dtype == F32 else 1e-4)


def test_float32_gelu_gives_the_bits_of_the_bench_plain_formula(dev, rng):
    """gelu_ratio compares the same arithmetic: the kernel's result is bit-equal to the
    bench's plain numpy formula (issue 28), across chunk boundaries."""
    from npurt.apps.bench.overlap import plain_gelu as bench_gelu
    n = 2 * K.CHUNK + 777
    x = normal(rng, n, np.float32) * 4
    px, po = dev.put(x), dev.empty(n, F32)
    L.elementwise("gelu", po, px, None, n, F32, num_blocks=1)
    want = np.empty_like(x)
    with np.errstate(over="ignore"):
        bench_gelu(x, want, np.empty(K.CHUNK, np.float32))
    assert np.array_equal(dev.get(po, n, F32).view(np.int32), want.view(np.int32))


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("offset", [0, 16, 2048, 4092])
def test_a_kernel_scratch_chunk_lies_half_a_page_from_its_operand(dtype, offset):
    """The scratch chunk is placed against 4K aliasing (kernels._chunk_buffer): its start
    differs from the operand's by half a page modulo the page, wherever the operand lies."""
    raw = np.empty(K.CHUNK + 4096, dtype)
    start = (-raw.ctypes.data % 4096 + offset) % 4096 // dtype.itemsize
    x = raw[start:start + 100]
    buf = K._chunk_buffer(dtype, 0, x)
    assert len(buf) == K.CHUNK and buf.dtype == dtype
    assert (buf.ctypes.data - x.ctypes.data) % 4096 == 2048
    assert K._chunk_buffer(dtype, 0, x).ctypes.data == buf.ctypes.data  # kept between calls


def test_a_placed_scratch_chunk_is_kept_for_each_page_offset_of_its_operand():
    """Operands at two offsets in their pages get two placements of the one slot-0 buffer,
    each kept (made once: a kernel after a big one runs with cold caches)."""
    raw = np.empty(K.CHUNK + 8192, F32)
    start = -raw.ctypes.data % 4096 // 4
    x, y = raw[start:start + 100], raw[start + 4:start + 104]  # 16 bytes apart
    bx, by = K._chunk_buffer(F32, 0, x), K._chunk_buffer(F32, 0, y)
    assert (bx.ctypes.data - x.ctypes.data) % 4096 == 2048
    assert (by.ctypes.data - y.ctypes.data) % 4096 == 2048
    assert K._chunk_buffer(F32, 0, x) is bx and K._chunk_buffer(F32, 0, y) is by
    assert np.may_share_memory(bx, by)


@pytest.mark.parametrize("way", ["context variable", "np.errstate"])
def test_gelu_ignores_overflow_and_leaves_the_error_state_it_found(way, monkeypatch):
    """exp overflows for very negative x (the right 0 follows): no warning, whatever the state
    in force, which holds again afterwards with its other settings (numpy 2's context variable,
    or np.errstate where numpy has none)."""
    if way == "np.errstate":
        monkeypatch.setattr(K, "_ERRSTATE", None)
    elif K._ERRSTATE is None:
        pytest.skip("numpy < 2 keeps no error-state context variable: the np.errstate case covers it")
    x = np.array([-100, -1, 0, 2], F32)
    y = np.empty_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow warning would raise here
        for state in ({"all": "warn"}, {"divide": "raise", "over": "raise", "under": "warn", "invalid": "warn"}):
            with np.errstate(**state):
                before = np.geterr()
                K.gelu_into(y, x)
                K.gelu_into(y, x)  # (entered from the same state again)
                assert np.geterr() == before
                if before["divide"] == "raise":
                    with pytest.raises(FloatingPointError):
                        np.float32(1) / np.float32(0)
    assert y[0] == 0 and y[2] == 0 and abs(y[3] - 1.9545977) < 1e-6


def test_each_thread_has_its_own_scratch_chunks():
    import threading
    mine = K._chunk_buffer(F32, 0)
    theirs = []
    th = threading.Thread(target=lambda: theirs.append(K._chunk_buffer(F32, 0)))
    th.start()
    th.join()
    assert not np.may_share_memory(mine, theirs[0])
    assert not np.may_share_memory(K._chunk_buffer(F32, 0), K._chunk_buffer(F32, 1))


@pytest.mark.parametrize("dtype", [F32, F16], ids=str)
def test_gelu_in_place_gives_the_same_bits_as_into_another_buffer(dev, rng, dtype):
    n = K.CHUNK + 4096
    x = (normal(rng, n, np.float32) * 4).astype(dtype)
    px, po = dev.put(x), dev.empty(n, dtype)
    L.elementwise("gelu", po, px, None, n, dtype, num_blocks=1)
    L.elementwise("gelu", px, px, None, n, dtype, num_blocks=1)  # out is the input
    assert np.array_equal(dev.get(px, n, dtype), dev.get(po, n, dtype))


# ---------------------------------------------------------------- cast
CAST_TYPES = [F32, F16, BF16, np.dtype(np.int32), np.dtype(np.int8)]


@pytest.mark.parametrize("src", CAST_TYPES, ids=str)
@pytest.mark.parametrize("dst", CAST_TYPES, ids=str)
def test_cast_matches_astype(dev, rng, src, dst):
    n = 5003
    x = (rng.uniform(-100, 100, n)).astype(src)  # in range of every type: astype is defined
    px, po = dev.put(x), dev.empty(n, dst)
    got = across_blocks(dev, lambda nb: L.cast(po, px, n, src, dst, num_blocks=nb), po, n, dst)
    assert np.array_equal(got, x.astype(dst))


# ---------------------------------------------------------------- matmul
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("batch", [1, 3])
def test_matmul_matches_numpy(dev, rng, dtype, batch):
    m, k, n = (int(v) for v in rng.integers(20, 90, 3))
    a, b = normal(rng, (batch, m, k), dtype), normal(rng, (batch, k, n), dtype)
    pa, pb, pc = dev.put(a), dev.put(b), dev.empty((batch, m, n), dtype)
    got = across_blocks(dev, lambda nb: L.matmul(pc, pa, pb, m, k, n, dtype, batch=batch, num_blocks=nb),
                        pc, (batch, m, n), dtype)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    r = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=r, atol=r * math.sqrt(k))
    if dtype == F32:
        assert np.array_equal(got, np.matmul(a, b))


def test_float16_matmul_accumulates_in_float32(dev):
    k = 4096  # 2048 + 1 + 1 + ... : float16 accumulation would stall at 2048
    a, b = np.ones((1, k), np.float16), np.ones((k, 1), np.float16)
    pa, pb, pc = dev.put(a), dev.put(b), dev.empty(1, np.float16)
    L.matmul(pc, pa, pb, 1, k, 1, np.float16)
    assert dev.get(pc, 1, np.float16)[0] == 4096


# ---------------------------------------------------------------- reductions
@pytest.mark.parametrize("dtype", FLOATS + [np.dtype(np.int32)], ids=str)
@pytest.mark.parametrize("op", ["sum", "max", "mean"])
@pytest.mark.parametrize("shape", [(7, 33, 1), (1, 50, 24), (3, 20, 11)])
def test_reduce_matches_numpy(dev, rng, op, dtype, shape):
    outer, length, inner = shape
    if dtype.kind == "i":
        x = rng.integers(-1000, 1000, shape, dtype=dtype)
    else:
        x = normal(rng, shape, dtype)
    px, po = dev.put(x), dev.empty((outer, inner), dtype)
    got = across_blocks(dev, lambda nb: L.reduce(op, po, px, outer, length, inner, dtype, num_blocks=nb),
                        po, (outer, inner), dtype)
    if op == "max":
        assert np.array_equal(got, x.max(axis=1))
        return
    acc = np.int64 if dtype.kind == "i" else np.float64
    ref = x.astype(acc).sum(axis=1)
    if op == "mean":
        ref = ref / length
    if dtype.kind == "i":
        assert np.array_equal(got, ref.astype(dtype))
    else:
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=TOL[dtype], atol=TOL[dtype] * math.sqrt(length))


def test_float32_sum_is_numpys_sum(dev, rng):
    x = normal(rng, (4, 1000, 1), np.float32)
    px, po = dev.put(x), dev.empty(4, np.float32)
    L.reduce("sum", po, px, 4, 1000, 1, np.float32)
    assert np.array_equal(dev.get(po, (4, 1), np.float32), x.sum(axis=1))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax_matches_numpy(dev, rng, dtype):
    rows, cols = 37, 129
    x = (normal(rng, (rows, cols), np.float32) * 4).astype(dtype)
    px, po = dev.put(x), dev.empty((rows, cols), dtype)
    got = across_blocks(dev, lambda nb: L.softmax(po, px, rows, cols, dtype, num_blocks=nb), po, (rows, cols), dtype)
    v = x.astype(np.float64)
    e = np.exp(v - v.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=TOL[dtype], atol=TOL[dtype] / 10)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_numpy(dev, rng, dtype, affine):
    rows, cols, eps = 29, 200, 1e-5
    x = (normal(rng, (rows, cols), np.float32) * 2 + 1).astype(dtype)
    g, b = normal(rng, cols, dtype), normal(rng, cols, dtype)
    px, po = dev.put(x), dev.empty((rows, cols), dtype)
    pg, pb = (dev.put(g), dev.put(b)) if affine else (0, 0)
    got = across_blocks(dev, lambda nb: L.layer_norm(po, px, pg, pb, rows, cols, eps, dtype, num_blocks=nb),
                        po, (rows, cols), dtype)
    v = x.astype(np.float64)
    ref = (v - v.mean(axis=1, keepdims=True)) / np.sqrt(v.var(axis=1, keepdims=True) + eps)
    if affine:
        ref = ref * g.astype(np.float64) + b.astype(np.float64)
    r = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=r, atol=r * (10 if affine else 3))


# ---------------------------------------------------------------- data movement
@pytest.mark.parametrize("shape,axes", [
    ((5, 7), (1, 0)),
    ((2, 3, 4, 5), (3, 1, 0, 2)),
    ((4, 1, 6, 3), (2, 0, 3, 1)),
    ((3, 4, 5), (1, 2, 0)),
    ((2, 3, 2, 3, 2, 3, 2, 3, 2), (7, 8, 6, 5, 4, 3, 2, 1, 0)),  # 9 axes, 2 merge: 8
    ((6,), (0,)),
])
@pytest.mark.parametrize("dtype", [F32, BF16, np.dtype(np.int8)], ids=str)
def test_transpose_matches_numpy(dev, rng, shape, axes, dtype):
    x = (normal(rng, shape, np.float32) * 20).astype(dtype)
    px, po = dev.put(x), dev.empty(shape, dtype)
    ref = x.transpose(axes)
    got = across_blocks(dev, lambda nb: L.transpose(po, px, shape, axes, dtype, num_blocks=nb), po, ref.shape, dtype)
    assert np.array_equal(got, ref)


def test_transpose_of_more_than_8_unmergeable_axes_is_invalid(dev):
    p = dev.empty(2 ** 9, np.float32)
    with pytest.raises(InvalidValueError, match="up to 8 dimensions"):
        L.transpose(p, p, (2,) * 9, tuple(range(8, -1, -1)), np.float32)


def test_transpose_with_bad_axes_is_invalid(dev):
    p = dev.empty(12, np.float32)
    with pytest.raises(InvalidValueError, match="permutation"):
        L.transpose(p, p, (3, 4), (0, 0), np.float32)


@pytest.mark.parametrize("dtype", [F32, F16, BF16, np.dtype(np.int32), np.dtype(np.int8)], ids=str)
def test_fill_matches_numpy(dev, rng, dtype):
    n = int(rng.integers(1000, 5000))
    value = float(rng.integers(-100, 100)) + (0.5 if dtype.kind == "f" or dtype == BF16 else 0)
    po = dev.empty(n, dtype)
    got = across_blocks(dev, lambda nb: L.fill(po, n, value, dtype, num_blocks=nb), po, n, dtype)
    assert np.array_equal(got, np.full(n, value, dtype))


@pytest.mark.parametrize("dtype", [F32, F64, BF16, np.dtype(np.int32), np.dtype(np.int64)], ids=str)
def test_arange_matches_numpy(dev, rng, dtype):
    n = int(rng.integers(1000, 5000))
    if dtype.kind == "i":
        start, step = int(rng.integers(-50, 50)), int(rng.integers(1, 7))
        ref = (start + step * np.arange(n, dtype=np.int64)).astype(dtype)
    else:
        start, step = float(rng.uniform(-5, 5)), float(rng.uniform(0.01, 1))
        ref = (start + step * np.arange(n, dtype=np.float64)).astype(dtype)
    po = dev.empty(n, dtype)
    got = across_blocks(dev, lambda nb: L.arange(po, n, start, step, dtype, num_blocks=nb), po, n, dtype)
    assert np.array_equal(got, ref)


# ---------------------------------------------------------------- bad input
def test_unknown_elementwise_op_is_invalid(dev):
    p = dev.empty(4, np.float32)
    with pytest.raises(InvalidValueError, match="unknown elementwise op"):
        L.elementwise("hypot", p, p, p, 4, np.float32)


def test_unsupported_dtype_is_invalid(dev):
    p = dev.empty(4, np.float32)
    with pytest.raises(InvalidValueError, match="not supported"):
        L.fill(p, 4, 1, np.complex64)


def test_buffer_too_small_for_the_op_is_invalid_at_the_call(dev):
    a, small = dev.empty(100, np.float32), dev.empty(10, np.float32)
    with pytest.raises(InvalidValueError, match="run past the end"):
        L.elementwise("add", small, a, a, 100, np.float32)


def test_null_pointer_is_invalid_at_the_call(dev):
    a = dev.empty(4, np.float32)
    with pytest.raises(InvalidValueError, match="null"):
        L.elementwise("add", a, 0, a, 4, np.float32)


def test_ops_run_in_stream_order_on_the_given_stream(rt, dev, rng):
    s = rt.create_stream()
    n = 4096
    x = normal(rng, n, np.float32)
    px, py = dev.put(x), dev.empty(n, np.float32)
    L.fill(py, n, 2.0, np.float32, stream=s)
    L.elementwise("mul", py, py, px, n, np.float32, stream=s)
    seq = L.elementwise("relu", py, py, None, n, np.float32, stream=s)
    assert seq == 3
    rt.synchronize_stream(s)
    assert np.array_equal(dev.get(py, n, np.float32), np.maximum(x * np.float32(2.0), 0))
    rt.destroy_stream(s)


def test_interior_pointer_range_past_the_allocation_is_invalid_at_the_call(dev):
    a = dev.empty(1000, np.float32)
    with pytest.raises(InvalidValueError, match="run past the end"):
        L.fill(a + 3996, 10, 1.0, np.float32)


def test_builtin_kernel_launched_without_size_checks_fails_on_the_device(rt, dev):
    a = dev.empty(1000, np.float32)
    launch(K.fill, 1, (a, 2000, 1.0, 1, 0))  # no extents: the kernel's ctx.gm catches it
    with pytest.raises(TaskError) as info:
        rt.synchronize_stream(None)
    assert info.value.code == C.ACL_ERROR_RT_AICORE_EXCEPTION
