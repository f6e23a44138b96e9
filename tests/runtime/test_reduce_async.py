"""reduce_async: dst op= src, element-wise, as a stream task."""
from __future__ import annotations

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.errors import FeatureNotSupportedError, InvalidValueError
from npurt.runtime.reduce import reduce_async

ml_dtypes = pytest.importorskip("ml_dtypes")
H2D, D2H = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST
TYPES = {C.ACL_FLOAT: np.float32, C.ACL_FLOAT16: np.float16, C.ACL_BF16: ml_dtypes.bfloat16,
         C.ACL_INT8: np.int8, C.ACL_INT16: np.int16, C.ACL_INT32: np.int32}
KINDS = {C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM: np.add, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX: np.maximum,
         C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN: np.minimum}


def put(rt, arr):
    ptr = rt.malloc(arr.nbytes)
    rt.memcpy(ptr, arr.nbytes, arr.ctypes.data, arr.nbytes, H2D)
    return ptr


def get(rt, ptr, n, dtype):
    out = np.empty(n, dtype)
    rt.memcpy(out.ctypes.data, out.nbytes, ptr, out.nbytes, D2H)
    return out


def random(rng, n, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "i":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    return rng.standard_normal(n).astype(dt)


@pytest.mark.parametrize("kind", list(KINDS), ids=["sum", "max", "min"])
@pytest.mark.parametrize("acl_type", list(TYPES), ids=[np.dtype(t).name for t in TYPES.values()])
def test_reduce_async_matches_numpy(rt, kind, acl_type):
    rng = np.random.default_rng()
    dtype = TYPES[acl_type]
    n = int(rng.integers(100, 3000))
    d, s = random(rng, n, dtype), random(rng, n, dtype)
    pd, ps = put(rt, d), put(rt, s)
    reduce_async(pd, ps, d.nbytes, kind, acl_type, None, 0)
    rt.synchronize_stream(None)
    if np.dtype(dtype).itemsize == 2 and np.dtype(dtype).kind != "i":
        ref = KINDS[kind](d.astype(np.float32), s.astype(np.float32)).astype(dtype)
    else:
        ref = KINDS[kind](d, s)  # integer sums wrap, as the hardware's do
    assert np.array_equal(get(rt, pd, n, dtype), ref)
    assert np.array_equal(get(rt, ps, n, dtype), s)  # the source is untouched


def test_large_reduce_split_over_cores_matches_numpy(rt):
    rng = np.random.default_rng()
    n = (1 << 21) + 37  # above the split threshold, not a multiple of the core count
    d, s = random(rng, n, np.float32), random(rng, n, np.float32)
    pd, ps = put(rt, d), put(rt, s)
    reduce_async(pd, ps, d.nbytes, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, C.ACL_FLOAT, None)
    rt.synchronize_stream(None)
    assert np.array_equal(get(rt, pd, n, np.float32), d + s)


def test_count_is_in_bytes(rt):
    d, s = np.ones(8, np.int32), np.full(8, 5, np.int32)
    pd, ps = put(rt, d), put(rt, s)
    reduce_async(pd, ps, 16, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, C.ACL_INT32, None)  # 4 elements
    rt.synchronize_stream(None)
    assert list(get(rt, pd, 8, np.int32)) == [6, 6, 6, 6, 1, 1, 1, 1]


def test_reduce_runs_in_stream_order(rt):
    s = rt.create_stream()
    d = put(rt, np.zeros(64, np.float32))
    one = put(rt, np.ones(64, np.float32))
    for _ in range(5):
        reduce_async(d, one, 256, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, C.ACL_FLOAT, s)
    rt.synchronize_stream(s)
    assert (get(rt, d, 64, np.float32) == 5).all()
    rt.destroy_stream(s)


def test_equal_kind_is_not_supported(rt):
    p = put(rt, np.zeros(4, np.float32))
    with pytest.raises(FeatureNotSupportedError):
        reduce_async(p, p, 16, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL, C.ACL_FLOAT, None)


def test_unknown_kind_is_invalid(rt):
    p = put(rt, np.zeros(4, np.float32))
    with pytest.raises(InvalidValueError):
        reduce_async(p, p, 16, 3, C.ACL_FLOAT, None)


def test_type_outside_the_a2_set_is_not_supported(rt):
    p = put(rt, np.zeros(4, np.float64))
    with pytest.raises(FeatureNotSupportedError, match="ACL_BF16"):
        reduce_async(p, p, 32, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, C.ACL_DOUBLE, None)


def test_unknown_type_number_is_invalid(rt):
    p = put(rt, np.zeros(4, np.float32))
    with pytest.raises(InvalidValueError):
        reduce_async(p, p, 16, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, 555, None)


def test_count_not_a_whole_number_of_elements_is_invalid(rt):
    p = put(rt, np.zeros(4, np.float32))
    with pytest.raises(InvalidValueError, match="in bytes"):
        reduce_async(p, p, 6, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, C.ACL_FLOAT, None)


def test_count_past_the_allocation_is_invalid(rt):
    a, b = put(rt, np.zeros(4, np.float32)), put(rt, np.zeros(8, np.float32))
    with pytest.raises(InvalidValueError, match="past the end"):
        reduce_async(a, b, 80, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, C.ACL_FLOAT, None)


def test_host_buffer_is_invalid(rt):
    host = np.zeros(4, np.float32)
    p = put(rt, host)
    with pytest.raises(InvalidValueError, match="host memory"):
        reduce_async(p, host.ctypes.data, 16, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, C.ACL_FLOAT, None)


def test_buffer_of_another_device_is_invalid(rt):
    p = put(rt, np.zeros(4, np.float32))
    rt.set_device(1)
    other = rt.malloc(16)
    rt.set_device(0)
    with pytest.raises(InvalidValueError, match="device 1"):
        reduce_async(p, other, 16, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, C.ACL_FLOAT, None)


def test_nonzero_reserve_is_invalid(rt):
    p = put(rt, np.zeros(4, np.float32))
    with pytest.raises(InvalidValueError, match="reserve"):
        reduce_async(p, p, 16, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, C.ACL_FLOAT, None, 1)
