"""npurt.DeviceArray: memory, copies, views, conversions, freeing (issue 6, scopes 4-5).

Operations that launch kernels are in test_array_ops.py; everything here uses copies and
memsets only.
"""
from __future__ import annotations

import gc
import math

import numpy as np
import pytest

import npurt
from gates import Gate
from npurt.array.core import as_dtype
from npurt.runtime import constants as C


@pytest.fixture(autouse=True)
def _fresh(fresh_runtime):
    yield


@pytest.fixture
def rng():
    seed = np.random.SeedSequence().entropy
    print(f"seed={seed}")
    return np.random.default_rng(seed)


def _held(stream):
    return Gate(stream)


# ---------------------------------------------------------------- facts
def test_array_facts_match_numpy(rng):
    host = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x = npurt.to_device(host)
    assert (x.shape, x.dtype, x.strides) == (host.shape, host.dtype, host.strides)
    assert (x.size, x.ndim, x.nbytes, x.itemsize) == (60, 3, 240, 4)
    assert x.device == 0
    assert x.is_contiguous()
    assert "shape=(3, 4, 5)" in repr(x)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int8", "float64", "uint8", "bfloat16"])
def test_to_device_and_back_round_trips(dtype, rng):
    dt = as_dtype(dtype)
    host = (rng.standard_normal((17, 33)) * 50).astype(dt)
    back = npurt.to_device(host).to_host()
    assert back.dtype == dt
    np.testing.assert_array_equal(back, host)


def test_to_device_of_a_list_defaults_to_float32():
    x = npurt.to_device([[1.5, 2.0], [3.0, 4.0]])
    assert x.dtype == np.float32
    np.testing.assert_array_equal(x.get(), [[1.5, 2.0], [3.0, 4.0]])


def test_to_device_on_a_given_device(rng):
    host = rng.standard_normal(100).astype(np.float32)
    x = npurt.to_device(host, device=1)
    assert x.device == 1
    np.testing.assert_array_equal(x.to_host(), host)
    assert npurt.current_device() == 0


def test_to_device_from_a_non_contiguous_numpy_array(rng):
    host = rng.standard_normal((8, 6)).astype(np.float32)[:, ::2]
    np.testing.assert_array_equal(npurt.to_device(host).to_host(), host)


def test_to_device_is_ordered_on_the_given_stream(rng):
    s = npurt.Stream()
    gate = _held(s)
    host = rng.standard_normal(4096).astype(np.float32)
    x = npurt.to_device(host, stream=s)
    assert not s.query()            # the copy waits behind the gate, asynchronously
    del host                        # the queued copy keeps the pageable source alive
    gc.collect()
    gate.record()
    back = x.to_host(stream=s)
    assert back.shape == (4096,) and np.isfinite(back).all()


def test_pageable_source_is_read_when_the_copy_runs():
    """Documented behaviour: the copy is asynchronous, so writes to the source before the
    stream reaches the copy are seen by it."""
    s = npurt.Stream()
    gate = _held(s)
    host = np.zeros(64, np.int32)
    x = npurt.to_device(host, stream=s)
    host[:] = 5
    gate.record()
    assert (x.to_host(stream=s) == 5).all()


def test_zeros_and_empty_like(rng):
    z = npurt.zeros((5, 7), dtype="int32")
    assert (z.to_host() == 0).all() and z.dtype == np.int32
    e = npurt.empty_like(z)
    assert (e.shape, e.dtype, e.device) == ((5, 7), np.dtype(np.int32), 0)
    assert npurt.zeros_like(npurt.to_device(rng.standard_normal(3))).to_host().tolist() == [0, 0, 0]


def test_zero_size_arrays_work():
    x = npurt.to_device(np.zeros((0, 3), np.float32))
    assert x.size == 0 and x.to_host().shape == (0, 3)
    assert x.copy().shape == (0, 3)


def test_arrays_with_a_trailing_zero_dimension_work():
    x = npurt.to_device(np.zeros((3, 0), np.float32))
    assert x.is_contiguous() and x.to_host().shape == (3, 0)
    assert (x + x).shape == (3, 0)


def test_big_endian_host_data_keeps_its_values_on_the_device():
    host = np.arange(6, dtype=">f4").reshape(2, 3)
    x = npurt.to_device(host)
    assert x.dtype == np.float32
    assert ((x + 1).to_host() == host.astype(np.float32) + 1).all()
    assert npurt.DeviceArray((2,), ">i4").dtype == np.int32


def test_bad_shape_and_dtype_are_invalid_value():
    with pytest.raises(npurt.InvalidValueError):
        npurt.empty((2, -1))
    with pytest.raises(npurt.InvalidValueError):
        npurt.empty(3, dtype="U10")
    with pytest.raises(npurt.InvalidValueError):
        npurt.empty(3, dtype="no such dtype")


@pytest.mark.parametrize("call", [lambda x: x.reshape("a"), lambda x: x.reshape(None), lambda x: x.transpose("a", 1),
                                  lambda x: x.reshape(4, -1, -1), lambda x: x.transpose(0, 0)])
def test_bad_reshape_and_transpose_arguments_are_invalid_value(call):
    with pytest.raises(npurt.InvalidValueError):
        call(npurt.zeros((2, 3)))


# ---------------------------------------------------------------- host copies
def test_copy_from_host_and_copy_to_host_into_out(rng):
    host = rng.standard_normal((4, 4)).astype(np.float32)
    x = npurt.empty((4, 4))
    assert x.copy_from_host(host) is x
    out = np.empty((4, 4), np.float32)
    assert x.copy_to_host(out=out) is out
    np.testing.assert_array_equal(out, host)


def test_copy_to_host_checks_out():
    x = npurt.zeros((4, 4))
    with pytest.raises(npurt.InvalidValueError, match="shape"):
        x.copy_to_host(out=np.empty((4, 5), np.float32))
    with pytest.raises(npurt.InvalidValueError, match="dtype"):
        x.copy_to_host(out=np.empty((4, 4), np.float64))
    with pytest.raises(npurt.InvalidValueError, match="contiguous"):
        x.copy_to_host(out=np.empty((4, 8), np.float32)[:, ::2])


def test_copy_from_host_checks_the_shape():
    with pytest.raises(npurt.InvalidValueError, match="shape"):
        npurt.zeros((4, 4)).copy_from_host(np.ones((3, 3), np.float32))


def test_non_blocking_copy_to_pinned_memory_lands_after_synchronize(rng):
    host = rng.standard_normal(1000).astype(np.float32)
    s = npurt.Stream()
    x = npurt.to_device(host, stream=s)
    out = npurt.empty_pinned(1000, np.float32)
    gate = _held(s)
    x.copy_to_host(out=out, stream=s, blocking=False)
    assert not s.query()
    gate.record()
    s.synchronize()
    np.testing.assert_array_equal(out, host)


def test_a_copy_from_a_pinned_array_holds_its_pinned_range_until_the_copy_ran():
    from npurt.runtime.memory import uses_pending
    from npurt.runtime.runtime import RUNTIME
    s = npurt.Stream()
    x = npurt.empty(1000, np.float32)
    src = npurt.empty_pinned(1000, np.float32)
    rng = RUNTIME.host.containing(src.ctypes.data)
    gate = _held(s)
    x.copy_from_host(src, stream=s)
    assert uses_pending(rng.uses)   # freeing the range now would wait for the copy
    gate.record()
    s.synchronize()
    assert not uses_pending(rng.uses)


def test_empty_pinned_is_page_locked_and_freed_when_collected():
    from npurt.runtime.runtime import RUNTIME
    p = npurt.empty_pinned((256, 4), np.float32)
    assert p.shape == (256, 4) and p.dtype == np.float32
    assert npurt.is_pinned(p)
    assert not npurt.is_pinned(np.empty(10))
    p[:] = 3.0
    view = p[10:20]
    ptr = p.ctypes.data
    del p
    gc.collect()
    assert RUNTIME.host.find(ptr) is not None   # a view still holds it
    assert (view == 3.0).all()
    del view
    gc.collect()
    assert RUNTIME.host.find(ptr) is None


# ---------------------------------------------------------------- no implicit conversion
def test_np_asarray_of_a_device_array_raises_host_conversion_error():
    x = npurt.zeros(3)
    with pytest.raises(npurt.HostConversionError) as info:
        np.asarray(x)
    assert info.value.code == C.ACL_ERROR_INVALID_PARAM
    assert ".to_host()" in str(info.value)
    assert isinstance(info.value, npurt.InvalidValueError)


@pytest.mark.parametrize("convert", [float, int, bool, list, complex, lambda x: [1, 2][x],
                                     lambda x: np.ones(3) + x, lambda x: x * np.ones(3)])
def test_implicit_host_conversions_raise(convert):
    x = npurt.zeros(3) if convert not in (float, int, complex, bool) else npurt.zeros(())
    with pytest.raises(npurt.HostConversionError):
        convert(x)


def test_copy_module_copies_device_memory_and_pickle_is_refused(rng):
    import copy
    import pickle
    host = rng.standard_normal(8).astype(np.float32)
    x = npurt.to_device(host)
    for dup in (copy.copy(x), copy.deepcopy(x)):
        assert dup.ptr != x.ptr
        np.testing.assert_array_equal(dup.to_host(), host)
    with pytest.raises(npurt.HostConversionError):
        pickle.dumps(x)


def test_item_copies_a_single_element_explicitly():
    x = npurt.to_device(np.array([[2.5]], np.float32))
    assert x.item() == 2.5
    with pytest.raises(npurt.InvalidValueError):
        npurt.zeros(3).item()


# ---------------------------------------------------------------- views
def test_basic_slicing_is_a_view_sharing_memory(rng):
    host = rng.standard_normal((6, 8)).astype(np.float32)
    x = npurt.to_device(host)
    v = x[1:5, 2:6]
    assert v.shape == (4, 4) and v.strides == (32, 4)
    assert v.ptr == x.ptr + 1 * 32 + 2 * 4
    np.testing.assert_array_equal(v.to_host(), host[1:5, 2:6])
    v[...] = npurt.zeros((4, 4))           # writing through the view changes x
    host[1:5, 2:6] = 0
    np.testing.assert_array_equal(x.to_host(), host)


@pytest.mark.parametrize("key", [(slice(None, None, -1),), (Ellipsis, 2), (1, None, slice(1, None, 3)),
                                 (slice(-3, None), slice(None, None, 2)), (-1,), (slice(5, 2),)])
def test_indexing_matches_numpy(key, rng):
    host = rng.standard_normal((6, 7)).astype(np.float32)
    x = npurt.to_device(host)
    np.testing.assert_array_equal(x[key].to_host(), host[key])


def test_a_view_keeps_its_base_memory_alive():
    x = npurt.to_device(np.arange(100, dtype=np.int32))
    before = npurt.memory_allocated()
    v = x[50:]
    del x
    gc.collect()
    assert npurt.memory_allocated() == before
    np.testing.assert_array_equal(v.to_host(), np.arange(50, 100))
    del v
    gc.collect()
    assert npurt.memory_allocated() < before


def test_out_of_range_and_advanced_indexing_raise_array_index_error():
    x = npurt.zeros((3, 3))
    with pytest.raises(npurt.ArrayIndexError):
        x[3]
    with pytest.raises(npurt.ArrayIndexError):
        x[0, 0, 0]
    with pytest.raises(npurt.ArrayIndexError):
        x[np.array([0, 1])]
    with pytest.raises(IndexError):  # also a Python IndexError
        x[-4]


def test_setitem_from_host_data_and_from_a_broadcast_array(rng):
    host = np.zeros((4, 5), np.float32)
    x = npurt.to_device(host)
    row = rng.standard_normal(5).astype(np.float32)
    x[1] = row
    x[2:4] = npurt.to_device(row)           # broadcast over two rows
    host[1] = row
    host[2:4] = row
    np.testing.assert_array_equal(x.to_host(), host)


def test_transpose_is_a_strided_view(rng):
    host = rng.standard_normal((3, 5)).astype(np.float32)
    x = npurt.to_device(host)
    t = x.T
    assert t.shape == (5, 3) and not t.is_contiguous() and t.ptr == x.ptr
    np.testing.assert_array_equal(t.copy().to_host(), host.T)


def test_copy_of_a_strided_view_is_contiguous(rng):
    host = rng.standard_normal((6, 9)).astype(np.float32)
    v = npurt.to_device(host)[::-2, 1::3]
    c = v.copy()
    assert c.is_contiguous() and c.ptr != v.ptr
    np.testing.assert_array_equal(c.to_host(), host[::-2, 1::3])


def test_reshape_of_a_contiguous_array_is_a_view(rng):
    host = rng.standard_normal((4, 6)).astype(np.float32)
    x = npurt.to_device(host)
    r = x.reshape(3, -1)
    assert r.shape == (3, 8) and r.ptr == x.ptr
    np.testing.assert_array_equal(r.to_host(), host.reshape(3, 8))
    with pytest.raises(npurt.InvalidValueError):
        x.reshape(5, 5)


def test_reshape_of_a_strided_view_copies(rng):
    host = rng.standard_normal((4, 6)).astype(np.float32)
    v = npurt.to_device(host)[:, ::2]
    r = v.reshape(-1)
    assert r.is_contiguous()
    np.testing.assert_array_equal(r.to_host(), host[:, ::2].reshape(-1))


# ---------------------------------------------------------------- device copies
def test_copy_is_independent_of_the_original(rng):
    host = rng.standard_normal(50).astype(np.float32)
    x = npurt.to_device(host)
    y = x.copy()
    x[...] = npurt.zeros(50)
    np.testing.assert_array_equal(y.to_host(), host)


def test_to_another_device_copies_and_orders_the_target_stream(rng):
    host = rng.standard_normal((64, 64)).astype(np.float32)
    src_stream = npurt.Stream()
    gate = _held(src_stream)
    with npurt.stream(src_stream):
        x = npurt.to_device(host)
        y = x.to(1)
    assert y.device == 1 and x.device == 0
    tgt = npurt.current_stream(1)
    marker = npurt.Event()
    marker.record(tgt)
    assert not marker.query()   # the target device's stream waits for the copy
    gate.record()
    np.testing.assert_array_equal(y.to_host(), host)
    assert x.to(0) is x


def test_to_another_device_enables_peer_access():
    from npurt.runtime import api as rt
    x = npurt.zeros(4)
    x.to(1)
    assert rt.device_peer_access_status(0, 1) or rt.device_peer_access_status(1, 0)


# ---------------------------------------------------------------- freeing
def test_memory_is_freed_when_the_array_is_collected():
    before = npurt.memory_stats()["active_blocks"]
    x = npurt.zeros((1000,))
    assert npurt.memory_stats()["active_blocks"] == before + 1
    del x
    gc.collect()
    assert npurt.memory_stats()["active_blocks"] == before


@pytest.mark.parametrize("args, kwargs, shape, dtype", [
    ((1024,), {}, (1024,), np.float32), ((1024, np.float32), {}, (1024,), np.float32),
    (((2, 3),), {"dtype": "int8"}, (2, 3), np.int8), ((7, "float16"), {}, (7,), np.float16),
    (((4, 5), np.dtype("int32")), {}, (4, 5), np.int32), ((16,), {"dtype": None, "device": None}, (16,), np.float32),
    ((0,), {}, (0,), np.float32), ((2, 3), {}, (2, 3), np.float32)])
def test_empty_made_again_has_numpys_layout_and_its_own_memory(args, kwargs, shape, dtype):
    """The second call of a spelling finds its layout cached (the C accelerator's fast
    path, where it runs): the same shape, dtype and C-contiguous strides, fresh memory."""
    itemsize = np.dtype(dtype).itemsize
    strides = tuple(itemsize * math.prod(max(n, 1) for n in shape[i + 1:]) for i in range(len(shape)))
    made = [npurt.empty(*args, **kwargs) for _ in range(4)]
    for x in made:
        assert (x.shape, x.dtype, x.strides, x.device) == (shape, np.dtype(dtype), strides, 0)
        assert type(x) is npurt.DeviceArray and x.ptr == x._mem.ptr
    assert len({x.ptr for x in made}) == 4


def test_empty_alternating_between_spellings_gives_each_its_own_layout():
    spellings = [((8,), np.float32, (4,)), ((8, np.float16), np.float16, (2,)), (((2, 4),), np.float32, (16, 4)),
                 (((2, 4), "int8"), np.int8, (4, 1)), ((8,), np.float32, (4,))]
    for _ in range(3):
        for args, dtype, strides in spellings:
            x = npurt.empty(*args)
            assert (x.dtype, x.strides, x.nbytes) == (np.dtype(dtype), strides, 8 * np.dtype(dtype).itemsize)


def test_an_array_dropped_while_an_exception_propagates_is_freed_and_the_exception_kept():
    before = npurt.memory_stats()["active_blocks"]
    npurt.empty(1024)  # the layout and a block cached

    def fails():
        x = npurt.empty(1024)  # noqa: F841 - freed when the frame goes
        raise KeyError("kept")

    for _ in range(3):
        with pytest.raises(KeyError, match="kept"):
            fails()
    gc.collect()
    assert npurt.memory_stats()["active_blocks"] == before


def test_a_listening_tool_sees_the_allocation_and_free_of_every_array():
    from npurt.runtime import HOOKS
    for _ in range(2):
        npurt.empty(1024)  # the layout and a block cached: the fast path would serve them
    seen = []

    def observer(name, **fields):
        if name in ("mem_alloc", "mem_free"):
            seen.append((name, fields["addr"], fields["managed"]))

    HOOKS.add(observer)
    try:
        x = npurt.empty(1024)
        y = npurt.zeros(1024)
        ptrs = (x.ptr, y.ptr)
        del x, y
    finally:
        HOOKS.remove(observer)
    assert seen == [("mem_alloc", ptrs[0], True), ("mem_alloc", ptrs[1], True),
                    ("mem_free", ptrs[0], True), ("mem_free", ptrs[1], True)]


def test_freeing_is_stream_ordered_for_a_pending_copy(rng):
    """An array dropped while a queued copy reads it is not reused until the copy ran."""
    s = npurt.Stream()
    gate = _held(s)
    old = rng.integers(1, 100, 4096).astype(np.int32)
    a = npurt.to_device(old)
    npurt.default_stream().synchronize()
    b = npurt.empty_like(a)
    with npurt.stream(s):
        b[...] = a               # D2D copy of a, queued behind the gate
    a_ptr = a.ptr
    del a
    gc.collect()
    assert npurt.memory_stats()["pending_free_blocks"] >= 1
    fresh = [npurt.to_device(np.full(4096, -1, np.int32)) for _ in range(4)]
    npurt.default_stream().synchronize()
    assert all(f.ptr != a_ptr for f in fresh)
    gate.record()
    np.testing.assert_array_equal(b.to_host(stream=s), old)
    del fresh


def test_an_array_from_a_finalized_runtime_does_not_free_new_memory(fresh_runtime):
    x = npurt.zeros(100)
    with pytest.warns(ResourceWarning):
        fresh_runtime.finalize()      # x is still alive: the runtime says so
    y = npurt.zeros(100)       # a new runtime; the same address may be handed out again
    del x
    gc.collect()
    np.testing.assert_array_equal(y.to_host(), np.zeros(100))
    assert npurt.memory_stats()["active_blocks"] == 1
