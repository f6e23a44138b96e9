"""Streams: creation and limits, the default stream, synchronize / query / timeouts,
attributes, destroyed and foreign handles (issue 3, scope 1 and 4)."""
from __future__ import annotations

import threading

import pytest

from npurt.runtime import constants as C
from npurt.runtime.errors import (ContextError, FeatureNotSupportedError, InvalidHandleError, InvalidValueError,
                                  ResourceExhaustedError, SyncTimeoutError)
from npurt.runtime.runtime import RUNTIME


@pytest.fixture
def gate():
    """A host-side gate that blocking host functions wait on; always opened at teardown."""
    g = threading.Event()
    yield g
    g.set()


def _block(rt, stream, gate):
    """Queue a task on `stream` that holds it until `gate` opens; returns once it runs."""
    started = threading.Event()

    def hold():
        started.set()
        gate.wait(30)

    rt.launch_host_func(stream, hold)
    assert started.wait(10), "the blocking task never started"


# ---------------------------------------------------------------- creation and ids
def test_create_stream_gives_distinct_streams_with_distinct_ids(rt):
    streams = [rt.create_stream() for _ in range(10)]
    assert len({s.stream_id for s in streams}) == 10
    assert len({s.handle for s in streams}) == 10
    assert all(s.handle != 0 for s in streams)


def test_the_default_stream_has_id_0(rt):
    assert rt.get_context().default_stream.stream_id == 0


def test_none_means_the_current_contexts_default_stream(rt):
    out = []
    rt.launch_host_func(None, out.append, 1)
    rt.synchronize_stream(None)
    assert out == [1]
    assert rt.get_context().default_stream.enqueued_seq == 1


def test_each_context_routes_none_to_its_own_default_stream(rt):
    first = rt.get_context()
    ctx = rt.create_context(0)
    rt.launch_host_func(None, lambda: None)
    rt.synchronize_stream(None)
    assert ctx.default_stream.enqueued_seq == 1
    assert first.default_stream.enqueued_seq == 0
    rt.destroy_context(ctx)


@pytest.mark.parametrize("priority, expected", [(0, 0), (3, 3), (7, 7), (100, 7), (-5, 0)])
def test_stream_priority_is_clamped_to_0_through_7(rt, priority, expected):
    s = rt.create_stream(priority=priority)
    assert rt.get_stream_attribute(s, C.ACL_STREAM_ATTR_PRIORITY) == {"streamPriority": expected}


def test_create_stream_with_flags_keeps_them(rt):
    s = rt.create_stream(priority=2, flags=C.ACL_STREAM_FAST_LAUNCH | C.ACL_STREAM_FAST_SYNC)
    assert s.flags == 3
    rt.launch_host_func(s, lambda: None)
    rt.synchronize_stream(s)


@pytest.mark.parametrize("priority, flags", [("1", 0), (0, -1), (0, 1.5)])
def test_create_stream_with_bad_config_is_invalid(rt, priority, flags):
    with pytest.raises(InvalidValueError):
        rt.create_stream(priority=priority, flags=flags)


# ---------------------------------------------------------------- limits
def test_default_stream_limit_is_1984_and_the_next_create_fails(rt):
    device = rt.current_device()
    assert device.max_streams == 1984
    assert rt.get_stream_available_num() == 1983  # the default stream counts
    streams = [rt.create_stream() for _ in range(1983)]
    assert rt.get_stream_available_num() == 0
    with pytest.raises(ResourceExhaustedError) as info:
        rt.create_stream()
    assert info.value.code == C.ACL_ERROR_RT_NO_STREAM_RESOURCE == 207008
    assert "NPURT_MAX_STREAMS" in str(info.value)
    rt.destroy_stream(streams.pop())  # destroying one frees a slot
    assert rt.create_stream() is not None


def test_the_stream_limit_is_per_device(rt):
    for _ in range(1983):
        rt.create_stream()
    rt.set_device(1)
    assert rt.create_stream() is not None


def test_the_310p_limit_is_1024(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "Ascend310P3")
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    assert fresh_runtime.get_stream_available_num() == 1023


def test_npurt_max_streams_sets_the_limit(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_MAX_STREAMS", "5")
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    for _ in range(4):
        fresh_runtime.create_stream()
    with pytest.raises(ResourceExhaustedError):
        fresh_runtime.create_stream()


def test_explicit_contexts_default_streams_count_against_the_limit(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_MAX_STREAMS", "3")
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    fresh_runtime.create_context(0)
    assert fresh_runtime.get_stream_available_num() == 1


# ---------------------------------------------------------------- synchronize and query
def test_synchronize_waits_for_everything_enqueued(rt):
    s = rt.create_stream()
    out = []
    for i in range(200):
        rt.launch_host_func(s, out.append, i)
    rt.synchronize_stream(s)
    assert len(out) == 200


def test_stream_query_is_1_while_work_is_pending_and_0_when_done(rt, gate):
    s = rt.create_stream()
    _block(rt, s, gate)
    assert rt.stream_query(s) == C.ACL_STREAM_STATUS_NOT_READY == 1
    gate.set()
    rt.synchronize_stream(s)
    assert rt.stream_query(s) == C.ACL_STREAM_STATUS_COMPLETE == 0


def test_an_empty_stream_is_complete(rt):
    assert rt.stream_query(rt.create_stream()) == C.ACL_STREAM_STATUS_COMPLETE


def test_synchronize_with_timeout_expires_with_the_stream_timeout_code(rt, gate):
    s = rt.create_stream()
    _block(rt, s, gate)
    rt.launch_host_func(s, lambda: None)
    with pytest.raises(SyncTimeoutError) as info:
        rt.synchronize_stream(s, 100)
    assert info.value.code == C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT == 507046
    msg = str(info.value)
    assert f"stream {s.stream_id}" in msg
    assert "task #1" in msg and "hold" in msg and "running" in msg
    gate.set()
    rt.synchronize_stream(s)  # nothing broke


@pytest.mark.parametrize("timeout", [0, -2])
def test_synchronize_with_a_timeout_of_0_or_below_minus_1_is_param_invalid(rt, timeout):
    # api_error.cc:1443 (StreamSynchronize refuses 0), aclrt_stream.cpp:141 (< -1)
    s = rt.create_stream()
    with pytest.raises(InvalidValueError) as info:
        rt.synchronize_stream(s, timeout)
    assert info.value.code == C.ACL_ERROR_RT_PARAM_INVALID == 107000


def test_synchronize_with_timeout_succeeds_when_work_finishes_in_time(rt):
    s = rt.create_stream()
    ran = []
    rt.launch_host_func(s, ran.append, 1)
    rt.synchronize_stream(s, 10_000)
    assert ran == [1]


@pytest.mark.parametrize("timeout", [-2, 1.5, "100"])
def test_bad_timeouts_are_invalid(rt, timeout):
    with pytest.raises(InvalidValueError):
        rt.synchronize_stream(rt.create_stream(), timeout)


def test_synchronize_device_waits_for_every_stream(rt):
    out = []
    streams = [rt.create_stream() for _ in range(5)]
    for i, s in enumerate(streams):
        for j in range(20):
            rt.launch_host_func(s, out.append, (i, j))
    rt.launch_host_func(None, out.append, "default")
    rt.synchronize_device()
    assert len(out) == 101
    assert all(rt.stream_query(s) == 0 for s in streams)


def test_synchronize_device_with_timeout_expires(rt, gate):
    s = rt.create_stream()
    _block(rt, s, gate)
    with pytest.raises(SyncTimeoutError) as info:
        rt.synchronize_device(100)
    assert info.value.code == 507046
    assert "synchronize_device" in str(info.value)


def test_synchronize_device_covers_only_the_current_device(rt, gate):
    rt.set_device(1)
    other = rt.create_stream()
    _block(rt, other, gate)
    rt.set_device(0)
    rt.launch_host_func(rt.create_stream(), lambda: None)
    rt.synchronize_device(5_000)  # device 1's blocked stream does not hold it up
    assert rt.stream_query(other) == C.ACL_STREAM_STATUS_NOT_READY


# ---------------------------------------------------------------- attributes
def test_overflow_switch_and_custom_tag_attributes(rt):
    s = rt.create_stream()
    rt.set_stream_attribute(s, C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK, {"overflowSwitch": 1})
    rt.set_stream_attribute(s, C.ACL_STREAM_ATTR_USER_CUSTOM_TAG, {"userCustomTag": 42})
    assert rt.get_stream_attribute(s, C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK) == {"overflowSwitch": 1}
    assert rt.get_stream_attribute(s, C.ACL_STREAM_ATTR_USER_CUSTOM_TAG) == {"userCustomTag": 42}


def test_failure_mode_attribute(rt):
    s = rt.create_stream()
    assert rt.get_stream_attribute(s, C.ACL_STREAM_ATTR_FAILURE_MODE) == {"failureMode": 0}
    rt.set_stream_attribute(s, C.ACL_STREAM_ATTR_FAILURE_MODE, {"failureMode": C.ACL_STOP_ON_FAILURE})
    assert rt.get_stream_attribute(s, C.ACL_STREAM_ATTR_FAILURE_MODE) == {"failureMode": 1}


def test_failure_mode_attribute_of_a_default_stream_cannot_be_set(rt):
    with pytest.raises(InvalidValueError, match="default stream"):
        rt.set_stream_attribute(None, C.ACL_STREAM_ATTR_FAILURE_MODE, {"failureMode": 1})


def test_failure_mode_goes_from_continue_to_stop_but_not_back(rt):
    # api_impl.cc ApiImpl::StreamSetMode: the same mode again is a no-op, stop -> continue 207000
    s = rt.create_stream()
    rt.set_stream_failure_mode(s, C.ACL_CONTINUE_ON_FAILURE)
    rt.set_stream_failure_mode(s, C.ACL_STOP_ON_FAILURE)
    rt.set_stream_failure_mode(s, C.ACL_STOP_ON_FAILURE)
    with pytest.raises(FeatureNotSupportedError, match="back to continue") as info:
        rt.set_stream_failure_mode(s, C.ACL_CONTINUE_ON_FAILURE)
    assert info.value.code == 207000


def test_only_bit_0_of_the_failure_mode_counts(rt):
    s = rt.create_stream()
    rt.set_stream_failure_mode(s, 2)  # stmMode & 0x1: continue
    assert s.failure_mode == C.ACL_CONTINUE_ON_FAILURE
    rt.set_stream_failure_mode(s, 3)
    assert s.failure_mode == C.ACL_STOP_ON_FAILURE


@pytest.mark.parametrize("mode", [-1, "1"])
def test_a_failure_mode_that_is_no_uint64_is_invalid(rt, mode):
    with pytest.raises(InvalidValueError):
        rt.set_stream_failure_mode(rt.create_stream(), mode)


def test_unknown_stream_attribute_is_invalid(rt):
    s = rt.create_stream()
    with pytest.raises(InvalidValueError):
        rt.get_stream_attribute(s, 99)
    with pytest.raises(InvalidValueError):
        rt.set_stream_attribute(s, 99, {})
    with pytest.raises(InvalidValueError):
        rt.set_stream_attribute(s, C.ACL_STREAM_ATTR_USER_CUSTOM_TAG, {"userCustomTag": "x"})


# ---------------------------------------------------------------- destroyed and foreign
@pytest.mark.parametrize("call", [
    lambda rt, s: rt.synchronize_stream(s),
    lambda rt, s: rt.stream_query(s),
    lambda rt, s: rt.launch_host_func(s, print),
    lambda rt, s: rt.memset_async(rt.malloc(64), 64, 0, 64, s),
    lambda rt, s: rt.record_event(rt.create_event(), s),
    lambda rt, s: rt.destroy_stream(s),
])
def test_a_destroyed_stream_is_an_invalid_handle(rt, call):
    s = rt.create_stream()
    rt.destroy_stream(s)
    with pytest.raises(InvalidHandleError) as info:
        call(rt, s)
    assert info.value.code == C.ACL_ERROR_RT_INVALID_HANDLE == 107017


def test_a_default_stream_cannot_be_destroyed(rt):
    with pytest.raises(InvalidValueError, match="default stream"):
        rt.destroy_stream(rt.get_context().default_stream)


def test_destroying_a_stream_of_another_context_is_a_stream_context_error(rt):
    mine = rt.get_context()
    other = rt.create_context(1)
    foreign = rt.create_stream()
    rt.set_context(mine)
    with pytest.raises(ContextError) as info:
        rt.destroy_stream(foreign)
    assert info.value.code == C.ACL_ERROR_RT_STREAM_CONTEXT == 107003
    rt.set_context(other)
    rt.destroy_stream(foreign)
    rt.destroy_context(other)


def test_a_stale_stream_handle_is_recognised(rt):
    s = rt.create_stream()
    handle = s.handle
    assert RUNTIME.streams.get(handle) is s
    rt.destroy_stream(s)
    with pytest.raises(InvalidHandleError, match="stale"):
        RUNTIME.streams.get(handle)


def test_an_event_handle_passed_as_a_stream_handle_is_recognised(rt):
    e = rt.create_event()
    with pytest.raises(InvalidHandleError, match="event handle, not a stream handle"):
        RUNTIME.streams.get(e.handle)


@pytest.mark.parametrize("handle", [0, 12345, "stream", None])
def test_garbage_stream_handles_are_invalid(rt, handle):
    with pytest.raises(InvalidHandleError):
        RUNTIME.streams.get(handle)


def test_a_stream_keeps_working_after_a_timeout(rt, gate):
    s = rt.create_stream()
    _block(rt, s, gate)
    with pytest.raises(SyncTimeoutError):
        rt.synchronize_stream(s, 50)
    gate.set()
    out = []
    rt.launch_host_func(s, out.append, 1)
    rt.synchronize_stream(s)
    assert out == [1]


_FOREIGN_REASON = ("BUG api.py: the runtime operations do not check that a stream argument is a "
                   "Stream and an event argument an Event (stream_of / _live only look at "
                   ".destroyed), so a foreign object hangs, times out as an event, or raises "
                   "AttributeError instead of InvalidHandleError")


@pytest.mark.parametrize("call", [
    pytest.param(lambda rt, s, e: rt.synchronize_stream(e, 100), id="synchronize_stream(event)"),
    pytest.param(lambda rt, s, e: rt.stream_query(e), id="stream_query(event)"),
    pytest.param(lambda rt, s, e: rt.launch_host_func(e, print), id="launch_host_func(event)"),
    pytest.param(lambda rt, s, e: rt.record_event(s, s), id="record_event(stream, stream)"),
    pytest.param(lambda rt, s, e: rt.stream_wait_event(s, s), id="stream_wait_event(stream, stream)"),
    pytest.param(lambda rt, s, e: rt.synchronize_stream(s.handle), id="synchronize_stream(int)"),
])
def test_a_foreign_object_passed_as_a_stream_or_event_is_an_invalid_handle(rt, call):
    s, e = rt.create_stream(), rt.create_event()
    with pytest.raises(InvalidHandleError):
        call(rt, s, e)


def test_destroy_event_of_a_stream_is_refused_and_leaves_the_stream_usable(rt):
    s = rt.create_stream()
    with pytest.raises(InvalidHandleError):
        rt.destroy_event(s)
    out = []
    rt.launch_host_func(s, out.append, 1)
    rt.synchronize_stream(s)
    assert out == [1]
