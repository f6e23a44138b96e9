"""acl.util: pointers to and from Python objects, refusing what would crash, helper threads."""
from __future__ import annotations

import ctypes
import errno
import gc
import threading

import numpy as np
import pytest

import npurt.acl as acl
from npurt.acl import constants as C


@pytest.fixture
def ready(fresh_runtime):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0


# ---------------------------------------------------------------- reading host memory
def test_ptr_to_numpy_is_a_view_of_the_memory(ready):
    host, _ = acl.rt.malloc_host(64)
    a = acl.util.ptr_to_numpy(host, (16,), 11)
    a[:] = np.arange(16)
    assert acl.util.ptr_to_bytes(host, 8) == np.arange(2, dtype=np.float32).tobytes()


@pytest.mark.parametrize("type_number,dtype", [(0, np.bool_), (1, np.int8), (2, np.uint8), (3, np.int16),
                                               (4, np.uint16), (5, np.int32), (6, np.uint32), (7, np.int64),
                                               (8, np.uint64), (11, np.float32), (12, np.float64),
                                               (23, np.float16)])
def test_ptr_to_numpy_takes_numpy_type_numbers(ready, type_number, dtype):
    host, _ = acl.rt.malloc_host(64)
    assert acl.util.ptr_to_numpy(host, (2, 2), type_number).dtype == np.dtype(dtype)


def test_ptr_to_numpy_of_pinned_memory_outlives_free_host(ready):
    host, _ = acl.rt.malloc_host(4096)
    a = acl.util.ptr_to_numpy(host, (1024,), 11)
    a[:] = 3.0
    assert acl.rt.free_host(host) == 0
    assert float(a.sum()) == 3.0 * 1024  # the view holds the mapping: no crash


def test_ptr_to_bytes_copies(ready):
    buf = np.frombuffer(bytearray(b"abcdef"), np.uint8)
    copy = acl.util.ptr_to_bytes(buf.ctypes.data, 6)
    buf[0] = ord("z")
    assert copy == b"abcdef"


@pytest.mark.parametrize("reader", [lambda p: acl.util.ptr_to_bytes(p, 16),
                                    lambda p: acl.util.ptr_to_numpy(p, (4,), 11)], ids=["ptr_to_bytes", "ptr_to_numpy"])
def test_reading_a_device_address_returns_none_and_says_to_memcpy_first(ready, reader):
    dev, _ = acl.rt.malloc(64, 0)
    with pytest.warns(RuntimeWarning, match="ACL_MEMCPY_DEVICE_TO_HOST"):
        assert reader(dev) is None
    assert acl.rt.get_last_error(0) == C.ACL_ERROR_INVALID_PARAM
    message = acl.get_recent_err_msg()
    assert "device address" in message and "acl.rt.memcpy" in message


@pytest.mark.parametrize("reader", [lambda p: acl.util.ptr_to_bytes(p, 16),
                                    lambda p: acl.util.ptr_to_numpy(p, (4,), 11)], ids=["ptr_to_bytes", "ptr_to_numpy"])
def test_reading_an_unmapped_host_address_returns_none_instead_of_crashing(ready, reader):
    with pytest.warns(RuntimeWarning, match="not mapped"):
        assert reader(0x1000) is None  # the first page is never mapped
    assert acl.rt.get_last_error(0) == C.ACL_ERROR_INVALID_PARAM


def test_reading_freed_pinned_memory_is_refused(ready):
    host, _ = acl.rt.malloc_host(1 << 20)
    acl.rt.free_host(host)
    gc.collect()
    with pytest.warns(RuntimeWarning, match="not mapped"):
        assert acl.util.ptr_to_bytes(host, 16) is None


def test_reading_past_the_end_of_pinned_memory_is_refused(ready):
    host, _ = acl.rt.malloc_host(64)
    with pytest.warns(RuntimeWarning):
        assert acl.util.ptr_to_bytes(host, 1 << 20) is None
    assert "run past the end" in acl.get_recent_err_msg()


def test_ptr_to_numpy_with_an_unknown_type_number_is_refused(ready):
    host, _ = acl.rt.malloc_host(64)
    with pytest.warns(RuntimeWarning, match="type number"):
        assert acl.util.ptr_to_numpy(host, (4,), 99) is None


# ---------------------------------------------------------------- making pointers
def test_numpy_to_ptr_is_the_arrays_data_address():
    a = np.arange(8, dtype=np.int64)
    assert acl.util.numpy_to_ptr(a) == a.ctypes.data


def test_numpy_to_ptr_of_a_non_contiguous_array_warns():
    a = np.zeros((4, 4))[:, 0]
    with pytest.warns(Warning, match="The input ndarray is discontiguous"):  # numpy_convert.cpp
        assert acl.util.numpy_to_ptr(a) == a.ctypes.data


def test_numpy_contiguous_to_ptr_returns_a_contiguous_copy_when_needed():
    a = np.arange(16.0).reshape(4, 4)[:, 1]
    ptr, out = acl.util.numpy_contiguous_to_ptr(a)
    assert out.flags.c_contiguous and np.array_equal(out, a) and ptr == out.ctypes.data
    b = np.arange(4.0)
    assert acl.util.numpy_contiguous_to_ptr(b)[1] is b


def test_bytes_to_ptr_points_at_the_bytes_own_buffer():
    obj = b"\x01\x02\x03\x04"
    ptr = acl.util.bytes_to_ptr(obj)
    assert ctypes.string_at(ptr, 4) == b"\x01\x02\x03\x04"
    assert ptr == ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value  # no copy


@pytest.mark.parametrize("obj", [bytearray(b"abcd"), memoryview(b"abcd"), np.zeros(4, np.uint8), 1234],
                         ids=["bytearray", "memoryview", "ndarray", "int"])
def test_bytes_to_ptr_of_anything_but_bytes_raises_value_error(obj):
    # bytes_convert.cpp: PyBytes_Check, else ValueError "needs an byte as argument"
    acl.rt.get_last_error(0)
    with pytest.raises(ValueError, match="needs an byte as argument"):
        acl.util.bytes_to_ptr(obj)
    assert acl.rt.get_last_error(0) == 0


def test_bytes_round_trip_through_device_memory(ready):
    data = np.random.default_rng().bytes(4096)
    dev, _ = acl.rt.malloc(len(data), 0)
    assert acl.rt.memcpy(dev, len(data), acl.util.bytes_to_ptr(data), len(data), 1) == 0
    host, _ = acl.rt.malloc_host(len(data))
    assert acl.rt.memcpy(host, len(data), dev, len(data), 2) == 0
    assert acl.util.ptr_to_bytes(host, len(data)) == data


# ---------------------------------------------------------------- threads
def test_start_thread_runs_fn_with_the_args_list_and_returns_its_ident():
    seen = []
    done = threading.Event()

    def body(args):
        seen.append((threading.get_ident(), args))
        done.set()

    tid, ret = acl.util.start_thread(body, [1, "two"])
    assert ret == 0
    assert done.wait(5)
    assert acl.util.stop_thread(tid) == 0
    assert seen == [(tid, [1, "two"])]


def test_stop_thread_waits_for_the_thread():
    release = threading.Event()
    finished = []
    tid, _ = acl.util.start_thread(lambda args: (release.wait(5), finished.append(True)), [])
    release.set()
    assert acl.util.stop_thread(tid) == 0
    assert finished == [True]


def test_stop_thread_twice_returns_pthread_joins_esrch():
    tid, _ = acl.util.start_thread(lambda args: None, [])
    assert acl.util.stop_thread(tid) == 0
    assert acl.util.stop_thread(tid) == errno.ESRCH  # thread.cpp returns pthread_join's result


def test_a_started_thread_has_no_context(ready):
    out = []
    tid, _ = acl.util.start_thread(lambda args: out.append(acl.rt.get_context()), [])
    acl.util.stop_thread(tid)
    assert out == [(0, C.ACL_ERROR_RT_CONTEXT_NULL)]
