"""Notifies and value waits (issue 25 item 5): a record releases one wait and the wait resets
the notify; a wait queued first waits for the record; a timed wait fails its task with
ACL_ERROR_RT_WAIT_TIMEOUT; value waits park until the device word meets the condition."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.errors import InvalidHandleError, NpuError, ParamInvalidError


def _word(rt, addr):
    out = np.zeros(1, np.uint64)
    rt.memcpy(out.ctypes.data, 8, addr, 8, C.ACL_MEMCPY_DEVICE_TO_HOST)
    return int(out[0])


def _put(rt, addr, value):
    src = np.array([value], np.uint64)
    rt.memcpy(addr, 8, src.ctypes.data, 8, C.ACL_MEMCPY_HOST_TO_DEVICE)


def test_a_wait_queued_before_the_record_waits_for_it(rt):
    a, b = rt.create_stream(), rt.create_stream()
    n = rt.create_notify()
    gate = threading.Event()
    order = []
    rt.wait_and_reset_notify(n, b, 0)
    rt.launch_host_func(b, lambda: order.append("after wait"))
    rt.launch_host_func(a, gate.wait, 30)
    rt.launch_host_func(a, lambda: order.append("before record"))
    rt.record_notify(n, a)
    assert rt.stream_query(b) == C.ACL_STREAM_STATUS_NOT_READY
    gate.set()
    rt.synchronize_stream(b)
    assert order == ["before record", "after wait"]
    assert not n.set  # the wait reset it


def test_one_record_releases_one_wait(rt):
    a, b = rt.create_stream(), rt.create_stream()
    n = rt.create_notify()
    rt.record_notify(n, a)
    rt.synchronize_stream(a)
    rt.wait_and_reset_notify(n, b, 0)
    rt.synchronize_stream(b)
    rt.wait_and_reset_notify(n, b, 50)  # nothing records it again
    with pytest.raises(NpuError) as err:
        rt.synchronize_stream(b)
    assert err.value.code == C.ACL_ERROR_RT_WAIT_TIMEOUT
    assert "timed out after 50 ms" in err.value.message


def test_notify_ids_are_distinct_and_handles_die_with_destroy(rt):
    n1, n2 = rt.create_notify(), rt.create_notify()
    assert n1.notify_id != n2.notify_id
    rt.destroy_notify(n1)
    with pytest.raises(InvalidHandleError):
        rt.notify_of(n1.handle)
    assert rt.notify_of(n2.handle) is n2


def test_bad_notify_arguments_are_refused(rt):
    with pytest.raises(ParamInvalidError):
        rt.create_notify(7)
    n = rt.create_notify()
    with pytest.raises(ParamInvalidError):
        rt.wait_and_reset_notify(n, None, -1)


@pytest.mark.parametrize("flag, start, value, passes", [
    (C.ACL_STREAM_WAIT_VALUE_GEQ, 5, 5, True), (C.ACL_STREAM_WAIT_VALUE_GEQ, 4, 5, False),
    (C.ACL_STREAM_WAIT_VALUE_EQ, 5, 5, True), (C.ACL_STREAM_WAIT_VALUE_EQ, 6, 5, False),
    (C.ACL_STREAM_WAIT_VALUE_AND, 0b100, 0b110, True), (C.ACL_STREAM_WAIT_VALUE_AND, 0b001, 0b110, False),
    (C.ACL_STREAM_WAIT_VALUE_NOR, 0, 0, True), (C.ACL_STREAM_WAIT_VALUE_NOR, 2**64 - 1, 0, False),
])
def test_value_wait_conditions(rt, flag, start, value, passes):
    word = rt.malloc(8)
    _put(rt, word, start)
    s = rt.create_stream()
    rt.value_wait(word, value, flag, s)
    done = threading.Event()
    rt.launch_host_func(s, done.set)
    if passes:
        rt.synchronize_stream(s)
        assert done.is_set()
    else:
        assert rt.stream_query(s) == C.ACL_STREAM_STATUS_NOT_READY
        rt.stream_abort(s)


def test_a_value_write_on_another_stream_releases_the_wait(rt):
    word = rt.malloc(8)
    _put(rt, word, 0)
    a, b = rt.create_stream(), rt.create_stream()
    rt.value_wait(word, 9, C.ACL_STREAM_WAIT_VALUE_EQ, b)
    rt.memset_async(word, 8, 0, 8, b)  # runs only after the wait passed
    rt.value_write(word, 9, 0, a)
    rt.synchronize_stream(b)
    assert _word(rt, word) == 0


def test_a_word_written_by_a_copy_releases_the_wait(rt):
    word = rt.malloc(8)
    _put(rt, word, 1)
    s = rt.create_stream()
    rt.value_wait(word, 3, C.ACL_STREAM_WAIT_VALUE_GEQ, s)
    _put(rt, word, 3)  # a synchronous copy, not a value write: the wait polls
    rt.synchronize_stream(s)


def test_value_operations_take_device_memory_and_valid_flags(rt):
    word = rt.malloc(8)
    host = np.zeros(1, np.uint64)
    with pytest.raises(ParamInvalidError):
        rt.value_write(word, 1, 1)
    with pytest.raises(ParamInvalidError):
        rt.value_wait(word, 1, 4)
    with pytest.raises(ParamInvalidError):
        rt.value_write(host.ctypes.data, 1, 0)
    with pytest.raises(ParamInvalidError):
        rt.value_write(word, -1, 0)
    rt.value_write(word, 2**64 - 1, 0)
    rt.synchronize_stream(None)
    assert _word(rt, word) == 2**64 - 1
