"""Array operations (operators and npurt.ops.*) on DeviceArrays, checked against numpy, and
stream-ordered freeing around kernels (issue 6, scope 4).

Kernel accuracy itself is tested with the kernels (tests of npurt.ops.launch); here the
point is the array layer: shapes, broadcasting, views, dtypes, streams, errors.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

import npurt
from gates import Gate
from npurt.array.core import as_dtype

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(autouse=True)
def _fresh(fresh_runtime):
    yield


@pytest.fixture
def rng():
    seed = np.random.SeedSequence().entropy
    print(f"seed={seed}")
    return np.random.default_rng(seed)


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _close(dev, ref, rtol=RTOL, atol=ATOL):
    got = dev.to_host()
    assert got.shape == np.shape(ref)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


# ---------------------------------------------------------------- operators
@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_binary_operators_between_arrays_match_numpy(op, rng):
    a, b = _f32(rng, 33, 17), _f32(rng, 33, 17) + 3.0
    da, db = npurt.to_device(a), npurt.to_device(b)
    _close(eval(f"da {op} db"), eval(f"a {op} b"))


@pytest.mark.parametrize("expr", ["x + 2", "2 + x", "x - 1.5", "1.5 - x", "x * 3", "3 * x", "x / 4", "4 / x", "-x"])
def test_operators_with_scalars_match_numpy(expr, rng):
    host = _f32(rng, 10, 6) + 5.0
    x = npurt.to_device(host)
    got = eval(expr, {"x": x})
    _close(got, eval(expr, {"x": host}))
    assert got.dtype == np.float32


def test_operators_broadcast_like_numpy(rng):
    a, row, col = _f32(rng, 5, 7), _f32(rng, 7), _f32(rng, 5, 1)
    da = npurt.to_device(a)
    _close(da + npurt.to_device(row), a + row)
    _close(da * npurt.to_device(col), a * col)


def test_in_place_operators_write_into_the_array(rng):
    a, b = _f32(rng, 64), _f32(rng, 64)
    x = npurt.to_device(a)
    ptr = x.ptr
    x += npurt.to_device(b)
    x *= 2
    assert x.ptr == ptr
    _close(x, (a + b) * 2)


def test_operators_on_strided_views_copy_them_first(rng):
    a = _f32(rng, 8, 10)
    x = npurt.to_device(a)
    _close(x[::2, 1::3] + 1, a[::2, 1::3] + 1)
    _close(x.T * 2, a.T * 2)


def test_matmul_operator_2d(rng):
    a, b = _f32(rng, 20, 30), _f32(rng, 30, 12)
    _close(npurt.to_device(a) @ npurt.to_device(b), a @ b, atol=1e-4)


def test_matmul_batched_and_broadcast(rng):
    a, b, w = _f32(rng, 3, 8, 5), _f32(rng, 3, 5, 4), _f32(rng, 5, 6)
    da = npurt.to_device(a)
    _close(da @ npurt.to_device(b), a @ b, atol=1e-4)
    _close(da @ npurt.to_device(w), a @ w, atol=1e-4)              # (b, m, k) @ (k, n)
    _close(npurt.to_device(a[0]) @ npurt.to_device(b), a[0] @ b, atol=1e-4)      # (m, k) @ (b, k, n)


def test_matmul_with_vectors(rng):
    m, v = _f32(rng, 6, 4), _f32(rng, 4)
    _close(npurt.to_device(m) @ npurt.to_device(v), m @ v, atol=1e-4)
    _close(npurt.to_device(m.T[0]) @ npurt.to_device(m), m.T[0] @ m, atol=1e-4)


def test_matmul_of_a_transposed_view(rng):
    a = _f32(rng, 9, 7)
    x = npurt.to_device(a)
    _close(x.T @ x, a.T @ a, atol=1e-4)


def test_matmul_shape_mismatch_is_invalid_value():
    with pytest.raises(npurt.InvalidValueError, match="align"):
        npurt.zeros((3, 4)) @ npurt.zeros((5, 2))


def test_mixed_dtypes_are_refused_with_a_hint():
    with pytest.raises(npurt.InvalidValueError, match="astype"):
        npurt.zeros(4) + npurt.zeros(4, dtype="int32")


def test_operands_on_different_devices_are_refused():
    with pytest.raises(npurt.InvalidValueError, match="device"):
        npurt.zeros(4) + npurt.zeros(4, device=1)


def test_incompatible_shapes_are_refused():
    with pytest.raises(npurt.InvalidValueError, match="broadcast"):
        npurt.zeros((3, 4)) + npurt.zeros((3, 5))


# ---------------------------------------------------------------- npurt.ops
def test_relu_gelu_maximum(rng):
    a, b = _f32(rng, 40, 3), _f32(rng, 40, 3)
    x = npurt.to_device(a)
    _close(npurt.ops.relu(x), np.maximum(a, 0))
    _close(npurt.ops.gelu(x), _gelu(a.astype(np.float64)))
    _close(npurt.ops.maximum(x, npurt.to_device(b)), np.maximum(a, b))
    _close(npurt.ops.maximum(x, 0.25), np.maximum(a, np.float32(0.25)))


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("name", ["sum", "max", "mean"])
def test_reductions_over_axes_match_numpy(name, axis, rng):
    a = _f32(rng, 4, 6, 5)
    got = getattr(npurt.to_device(a), name)(axis=axis)
    _close(got, getattr(a, name)(axis=axis), atol=1e-4)


def test_reduction_keepdims(rng):
    a = _f32(rng, 3, 4)
    _close(npurt.ops.sum(npurt.to_device(a), axis=1, keepdims=True), a.sum(axis=1, keepdims=True), atol=1e-4)
    _close(npurt.ops.max(npurt.to_device(a), keepdims=True), a.max(keepdims=True))


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_along_an_axis(axis, rng):
    a = _f32(rng, 6, 9) * 3
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    _close(npurt.ops.softmax(npurt.to_device(a), axis=axis), e / e.sum(axis=axis, keepdims=True), atol=1e-6)


def test_layer_norm_with_and_without_affine(rng):
    a, g, b = _f32(rng, 7, 16), _f32(rng, 16), _f32(rng, 16)
    norm = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
    x = npurt.to_device(a)
    _close(npurt.ops.layer_norm(x), norm, atol=1e-4)
    _close(npurt.ops.layer_norm(x, npurt.to_device(g), npurt.to_device(b)), norm * g + b, atol=1e-4)
    with pytest.raises(npurt.InvalidValueError, match="gamma"):
        npurt.ops.layer_norm(x, npurt.zeros(3))


def test_transpose_op_moves_data_contiguously(rng):
    a = _f32(rng, 2, 3, 4)
    t = npurt.ops.transpose(npurt.to_device(a), (2, 0, 1))
    assert t.is_contiguous()
    _close(t, a.transpose(2, 0, 1))


def test_contiguous_of_a_permuted_view_uses_the_transpose_kernel(rng):
    a = _f32(rng, 5, 6)
    c = npurt.to_device(a).T.contiguous()
    assert c.is_contiguous()
    _close(c, a.T)


@pytest.mark.parametrize("dst", ["float16", "bfloat16", "int32", "int8"])
def test_astype_matches_numpy(dst, rng):
    a = (_f32(rng, 50) * 20).astype(np.float32)
    got = npurt.to_device(a).astype(dst)
    want = a.astype(as_dtype(dst))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.to_host(), want)


def test_astype_same_dtype_copy_flag():
    x = npurt.zeros(4)
    assert x.astype("float32", copy=False) is x
    assert x.astype("float32").ptr != x.ptr


def test_fill_full_ones_and_fill_of_a_view():
    x = npurt.zeros((4, 6), dtype="int32")
    x[:, ::2].fill(7)
    want = np.zeros((4, 6), np.int32)
    want[:, ::2] = 7
    np.testing.assert_array_equal(x.to_host(), want)
    np.testing.assert_array_equal(npurt.ones((2, 2)).to_host(), np.ones((2, 2), np.float32))
    f = npurt.full(3, 2.5)
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f.to_host(), [2.5, 2.5, 2.5])
    assert npurt.full(3, 4).dtype == np.int32


def test_arange_matches_numpy():
    np.testing.assert_array_equal(npurt.arange(7).to_host(), np.arange(7, dtype=np.int32))
    np.testing.assert_allclose(npurt.arange(1.0, 2.0, 0.25).to_host(), np.arange(1.0, 2.0, 0.25))
    np.testing.assert_array_equal(npurt.arange(10, 0, -3).to_host(), np.arange(10, 0, -3))
    assert npurt.arange(5, 5).size == 0
    with pytest.raises(npurt.InvalidValueError):
        npurt.arange(0, 4, 0)


def test_ops_run_on_the_current_stream():
    x = npurt.zeros(1000)
    npurt.synchronize()
    s = npurt.Stream()
    gate = Gate(s)
    with npurt.stream(s):
        y = npurt.ops.relu(x + 1)
    assert not s.query()
    gate.record()
    np.testing.assert_array_equal(y.to_host(stream=s), np.ones(1000, np.float32))


def test_ops_take_an_explicit_stream_of_the_arrays_device():
    s = npurt.Stream()
    x = npurt.zeros(8)
    npurt.synchronize()
    y = npurt.ops.add(x, 1, stream=s)
    np.testing.assert_array_equal(y.to_host(stream=s), np.ones(8, np.float32))
    with pytest.raises(npurt.InvalidValueError, match="device"):
        npurt.ops.add(x, 1, stream=npurt.Stream(device=1))


def test_ops_on_device_1_arrays_run_on_device_1(rng):
    a = _f32(rng, 16, 16)
    x = npurt.to_device(a, device=1)
    y = npurt.ops.gelu(x @ x)
    assert y.device == 1 and npurt.current_device() == 0
    _close(y, _gelu((a.astype(np.float64) @ a)), atol=1e-4)


def test_ops_reject_host_arrays_with_host_conversion_error():
    with pytest.raises(npurt.HostConversionError):
        npurt.zeros(3) + np.ones(3, np.float32)
    with pytest.raises(npurt.InvalidValueError):
        npurt.ops.relu(np.ones(3))


def test_a_dtype_the_kernel_does_not_support_is_refused_at_the_call():
    x = npurt.zeros(4, dtype="int32")
    with pytest.raises(npurt.InvalidValueError, match="int32"):
        x / x               # the div kernel takes float types only


# ---------------------------------------------------------------- stream-ordered free
def test_array_dropped_while_a_kernel_reads_it_is_not_reused_before_the_kernel_ran(rng):
    """Hold a stream behind a gate, queue an op that reads A, drop A, allocate and fill an
    array of the same size, then open the gate: the op must have read A's old data."""
    old = _f32(rng, 64, 64)
    a = npurt.to_device(old)
    npurt.default_stream().synchronize()
    s = npurt.Stream()
    gate = Gate(s)
    with npurt.stream(s):
        result = a * 2.0                    # kernel reading A, queued behind the gate
    a_ptr = a.ptr
    del a
    gc.collect()
    assert npurt.memory_stats()["pending_free_blocks"] >= 1
    others = [npurt.full((64, 64), -1.0) for _ in range(3)]   # same size, filled now
    npurt.default_stream().synchronize()
    assert all(o.ptr != a_ptr for o in others)
    gate.record()
    np.testing.assert_array_equal(result.to_host(stream=s), old * 2)
    del others


def test_temporaries_of_an_expression_are_freed_after_their_kernels():
    x = npurt.zeros(4096)
    npurt.synchronize()
    before = npurt.memory_stats()["active_blocks"]
    y = ((x + 1) * 3 - 2) / 2                       # three temporaries, freed stream-ordered
    np.testing.assert_array_equal(y.to_host(), np.full(4096, 0.5, np.float32))
    npurt.synchronize()
    gc.collect()
    assert npurt.memory_stats()["active_blocks"] == before + 1


# ---- what CuPy porters try first: comparisons, **, abs, exp/log/sqrt, where, concatenate/stack,
# from_dlpack (issue 30, scope 10)

def test_comparisons_give_bool_arrays_as_numpy(rng):
    a, b = rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    x, y = npurt.to_device(a), npurt.to_device(b)
    for got, want in [(x < y, a < b), (x <= y, a <= b), (x > y, a > b), (x >= y, a >= b), (x == x, a == a),
                      (x != y, a != b), (x > 0, a > 0), (0 < x, 0 < a), (x[:, :1] < y, a[:, :1] < b)]:
        assert got.dtype == np.bool_ and got.shape == want.shape
        np.testing.assert_array_equal(got.to_host(), want)


def test_ints_compare_exactly():
    a = np.array([-3, 0, 7, 2**40], np.int64)
    x = npurt.to_device(a)
    np.testing.assert_array_equal((x == 2**40).to_host(), a == 2**40)
    np.testing.assert_array_equal((x >= 0).to_host(), a >= 0)


def test_power_abs_exp_log_sqrt_match_numpy(rng):
    a = rng.uniform(0.1, 3, (4, 6)).astype(np.float32)
    s = rng.standard_normal((4, 6)).astype(np.float32)
    x, y = npurt.to_device(a), npurt.to_device(s)
    np.testing.assert_allclose((x ** 2).to_host(), a ** 2, rtol=RTOL)
    np.testing.assert_allclose((2 ** y).to_host(), 2 ** s, rtol=RTOL)
    np.testing.assert_allclose((x ** x).to_host(), a ** a, rtol=RTOL)
    np.testing.assert_allclose(abs(y).to_host(), np.abs(s))
    np.testing.assert_allclose(npurt.exp(y).to_host(), np.exp(s), rtol=RTOL)
    np.testing.assert_allclose(npurt.log(x).to_host(), np.log(a), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(npurt.sqrt(x).to_host(), np.sqrt(a), rtol=RTOL)
    np.testing.assert_array_equal(abs(npurt.to_device(np.array([-2, 3], np.int32))).to_host(), [2, 3])


def test_log_and_sqrt_of_negatives_are_nan_as_numpy():
    x = npurt.to_device(np.array([-1.0, 0.0], np.float32))
    assert np.isnan(npurt.sqrt(x).to_host()[0]) and npurt.log(x).to_host()[1] == -np.inf


def test_exp_of_an_int_array_is_refused_with_the_types_it_takes():
    with pytest.raises(npurt.InvalidValueError, match="does not support int32"):
        npurt.exp(npurt.to_device(np.arange(3, dtype=np.int32)))


def test_where_selects_with_broadcasting_and_scalars(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32)
    x, y = npurt.to_device(a), npurt.to_device(b)
    np.testing.assert_array_equal(npurt.where(x > 0, x, y).to_host(), np.where(a > 0, a, b))
    np.testing.assert_array_equal(npurt.where(x > 0, x, 0).to_host(), np.where(a > 0, a, np.float32(0)))
    with pytest.raises(npurt.InvalidValueError, match="cond must be a bool DeviceArray"):
        npurt.where(x, x, y)


def test_concatenate_and_stack_match_numpy(rng):
    parts = [rng.standard_normal((2, k, 3)).astype(np.float32) for k in (1, 4, 2)]
    xs = [npurt.to_device(p) for p in parts]
    np.testing.assert_array_equal(npurt.concatenate(xs, axis=1).to_host(), np.concatenate(parts, axis=1))
    np.testing.assert_array_equal(npurt.concatenate([x[:, :1] for x in xs], axis=-1).to_host(),
                                  np.concatenate([p[:, :1] for p in parts], axis=-1))
    same = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    for axis in (0, 1, 2, -1):
        np.testing.assert_array_equal(npurt.stack([npurt.to_device(s) for s in same], axis=axis).to_host(),
                                      np.stack(same, axis=axis))
    with pytest.raises(npurt.InvalidValueError, match="differ off axis 1"):
        npurt.concatenate([xs[0], npurt.zeros((3, 1, 3))], axis=1)


def test_from_dlpack_copies_host_producers_and_keeps_device_arrays():
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = npurt.from_dlpack(host)
    assert isinstance(x, npurt.DeviceArray) and x.shape == (2, 3)
    np.testing.assert_array_equal(x.to_host(), host)
    assert npurt.from_dlpack(x) is x
    with pytest.raises(npurt.InvalidValueError, match="needs a DLPack producer"):
        npurt.from_dlpack([1, 2, 3])


def test_device_arrays_stay_usable_as_dict_keys():
    x = npurt.zeros(2)
    assert {x: 1}[x] == 1
