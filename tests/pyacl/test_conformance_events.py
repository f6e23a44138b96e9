"""Conformance, issue 10 item 1: events behave as the CANN runtime treats them, call by call.
Sources (hicann/runtime): src/runtime/core/src/event/event.cc (Event::WaitSendCheck, Wait,
Reset, Synchronize, Query, QueryEventStatus, QueryEventWaitStatus, ElapsedTime),
src/runtime/api/impl/api_error.cc (the ApiErrorDecorator checks), api_impl.cc (EventReset),
src/acl/aclrt_impl/aclrt_event.cpp (the ACL layer), and torch_npu's NPUEvent for npurt.Event.
"""
from __future__ import annotations

import threading
import time

import pytest

import npurt
import npurt.acl as acl
from npurt import runtime
from npurt.acl import constants as C
from npurt.acl._wrap import stream_of

COMPLETE, NOT_READY = C.ACL_EVENT_RECORDED_STATUS_COMPLETE, C.ACL_EVENT_RECORDED_STATUS_NOT_READY


@pytest.fixture
def ready(fresh_runtime):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    gates = []
    yield gates
    for g in gates:
        g.set()


def _stream():
    s, ret = acl.rt.create_stream()
    assert ret == 0
    return s


def _event(flag=None, ex=False):
    if flag is None:
        ev, ret = acl.rt.create_event()
    elif ex:
        ev, ret = acl.rt.create_event_ex_with_flag(flag)
    else:
        ev, ret = acl.rt.create_event_with_flag(flag)
    assert ret == 0
    return ev


def _hold(gates, stream) -> threading.Event:
    """A host function on `stream` that waits for the returned gate (opened at teardown)."""
    gate = threading.Event()
    gates.append(gate)
    runtime.launch_host_func(stream_of(stream), gate.wait, 30)
    return gate


# ---------------------------------------------------------------- waits
def test_a_wait_on_a_never_recorded_regular_event_is_refused_with_param_invalid(ready):
    # event.cc:719-728 (Event::Wait): no DDSYNC_NS/EXTERNAL flag and no record -> RT_ERROR_INVALID_VALUE
    s, ev = _stream(), _event()
    assert acl.rt.stream_wait_event(s, ev) == C.ACL_ERROR_RT_PARAM_INVALID == 107000
    assert "record it first" in acl.get_recent_err_msg()
    assert acl.rt.record_event(ev, s) == 0  # the runtime stays usable: record, then the wait works
    assert acl.rt.stream_wait_event(s, ev) == 0
    assert acl.rt.synchronize_stream(s) == 0


def test_a_wait_on_a_never_recorded_ex_event_returns_0_and_adds_no_wait(ready):
    # event.cc:597-599 (WaitSendCheck, new mode): "wait first, return suc"
    s, ev = _stream(), _event(C.ACL_EVENT_SYNC, ex=True)
    assert acl.rt.stream_wait_event(s, ev) == 0
    assert acl.rt.synchronize_stream_with_timeout(s, 5000) == 0  # nothing holds the stream
    later = _stream()
    assert acl.rt.record_event(ev, later) == 0  # a record after the wait does not matter to it


def test_a_wait_on_a_never_recorded_sync_event_blocks_until_a_record_completes(ready):
    # event.cc:625-626 and 719-721: ACL_EVENT_SYNC (RT_EVENT_DDSYNC_NS) events send the wait
    # even before a record: one hardware event id for life, a semaphore
    a, b, ev = _stream(), _stream(), _event(C.ACL_EVENT_SYNC)
    assert acl.rt.stream_wait_event(b, ev) == 0
    assert acl.rt.synchronize_stream_with_timeout(b, 100) == C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT == 507046
    assert acl.rt.record_event(ev, a) == 0
    assert acl.rt.synchronize_stream_with_timeout(b, 10_000) == 0


def test_a_wait_on_an_event_without_a_wait_flag_is_not_supported(ready):
    # api_error.cc:1414-1416 (StreamWaitEvent): IsEventWithoutWaitTask -> RT_ERROR_FEATURE_NOT_SUPPORT
    s, ev = _stream(), _event(C.ACL_EVENT_TIME_LINE)
    assert acl.rt.record_event(ev, s) == 0
    assert acl.rt.stream_wait_event(s, ev) == C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT == 207000


def test_a_wait_whose_record_has_not_run_still_blocks_and_timeouts_keep_their_codes(ready):
    # event.cc:625 (record not complete -> the wait is sent); api_error.cc:1443 / aclrt_event.cpp:193
    a, b, ev = _stream(), _stream(), _event()
    gate = _hold(ready, a)
    assert acl.rt.record_event(ev, a) == 0
    assert acl.rt.stream_wait_event(b, ev) == 0
    assert acl.rt.synchronize_stream_with_timeout(b, 100) == 507046
    assert acl.rt.synchronize_event_with_timeout(ev, 100) == C.ACL_ERROR_RT_EVENT_SYNC_TIMEOUT == 507047
    gate.set()
    assert acl.rt.synchronize_stream_with_timeout(b, 10_000) == 0


def test_a_wait_after_reset_of_a_record_that_ran_waits_for_the_next_record(ready):
    # event.cc:625 ("record complete, and reset" sends the wait) and 786 (Reset sets hasReset_);
    # event.cc:354 (the next record clears it)
    a, b, ev = _stream(), _stream(), _event(C.ACL_EVENT_SYNC)
    assert acl.rt.record_event(ev, a) == 0
    assert acl.rt.synchronize_event(ev) == 0
    assert acl.rt.reset_event(ev, b) == 0
    assert acl.rt.stream_wait_event(b, ev) == 0
    assert acl.rt.synchronize_stream_with_timeout(b, 100) == 507046  # the old record no longer counts
    assert acl.rt.record_event(ev, a) == 0
    assert acl.rt.synchronize_stream_with_timeout(b, 10_000) == 0


def test_a_wait_on_a_record_that_ran_without_reset_passes(ready):
    # event.cc:625-631: recorded and not reset -> no wait is needed
    a, b, ev = _stream(), _stream(), _event()
    assert acl.rt.record_event(ev, a) == 0
    assert acl.rt.synchronize_event(ev) == 0
    assert acl.rt.stream_wait_event(b, ev) == 0
    assert acl.rt.synchronize_stream_with_timeout(b, 5000) == 0


# ---------------------------------------------------------------- host synchronize and query
@pytest.mark.parametrize("flag", [None, C.ACL_EVENT_SYNC, C.ACL_EVENT_TIME_LINE])
def test_synchronize_of_a_never_recorded_event_returns_0_at_once(ready, flag):
    # event.cc:1084-1087 (Event::Synchronize): "No record to be synchronize, return suc"
    ev = _event(flag)
    assert acl.rt.synchronize_event(ev) == 0
    assert acl.rt.synchronize_event_with_timeout(ev, 1) == 0


def test_after_reset_event_the_last_record_still_counts(ready):
    # event.cc:764-799: Reset sets hasReset_ only; latestRecord_ stays (cleared only on abort)
    a, b, ev = _stream(), _stream(), _event(C.ACL_EVENT_SYNC)
    gate = _hold(ready, a)
    assert acl.rt.record_event(ev, a) == 0
    assert acl.rt.reset_event(ev, b) == 0
    assert acl.rt.synchronize_stream(b) == 0
    assert acl.rt.synchronize_event_with_timeout(ev, 100) == 507047  # still the pending record
    assert acl.rt.query_event_status(ev) == (NOT_READY, 0)
    gate.set()
    assert acl.rt.synchronize_event(ev) == 0
    assert acl.rt.query_event_status(ev) == (COMPLETE, 0)


def test_deprecated_query_event_of_a_never_recorded_event_reports_complete(ready):
    # event.cc:1181-1182 (Event::Query): only a RECORDING record is "not complete"
    assert acl.rt.query_event(_event()) == (C.ACL_EVENT_STATUS_COMPLETE, 0)


def test_deprecated_query_event_of_a_pending_record_reports_not_ready(ready):
    s, ev = _stream(), _event()
    gate = _hold(ready, s)
    assert acl.rt.record_event(ev, s) == 0
    assert acl.rt.query_event(ev) == (C.ACL_EVENT_STATUS_NOT_READY, 0)
    gate.set()
    assert acl.rt.synchronize_event(ev) == 0
    assert acl.rt.query_event(ev) == (C.ACL_EVENT_STATUS_COMPLETE, 0)


def test_query_event_status_of_a_never_recorded_event_depends_on_the_mode(ready):
    # event.cc:1193-1198: no record -> new mode (ex) RECORDED, old mode INIT
    assert acl.rt.query_event_status(_event()) == (NOT_READY, 0)
    assert acl.rt.query_event_status(_event(C.ACL_EVENT_SYNC, ex=True)) == (COMPLETE, 0)


def test_query_event_wait_status_of_an_event_without_a_wait_flag_is_complete(ready):
    # event.cc:1220 (QueryEventWaitStatus): IsEventWithoutWaitTask -> done
    status = acl.rt.query_event_wait_status(_event(C.ACL_EVENT_TIME_LINE))
    assert status == (C.ACL_EVENT_WAIT_STATUS_COMPLETE, 0)


@pytest.mark.parametrize("call", ["query_event", "query_event_wait_status", "reset_event"])
def test_ex_events_refuse_the_old_mode_calls_with_feature_not_supported(ready, call):
    # api_error.cc:1792 (EventQuery), 1824 (EventQueryWaitStatus); api_impl.cc:2210 (EventReset)
    ev = _event(C.ACL_EVENT_SYNC, ex=True)
    fn = getattr(acl.rt, call)
    out = fn(ev, _stream()) if call == "reset_event" else fn(ev)
    assert (out if call == "reset_event" else out[1]) == 207000


def test_reset_of_a_create_event_event_is_allowed(ready):
    # api_impl.cc:2210: only new-mode events and RT_EVENT_DEFAULT events on model streams refuse
    s, ev = _stream(), _event()
    assert acl.rt.record_event(ev, s) == 0
    assert acl.rt.reset_event(ev, s) == 0
    assert acl.rt.synchronize_stream(s) == 0


@pytest.mark.parametrize("timeout", [0, -2])
def test_synchronize_event_with_timeout_0_or_below_minus_1_is_param_invalid(ready, timeout):
    # aclrt_event.cpp:188-189 (timeout >= -1, ACL_ERROR_RT_PARAM_INVALID); api_error.cc:1773 (== 0)
    assert acl.rt.synchronize_event_with_timeout(_event(), timeout) == 107000


# ---------------------------------------------------------------- creation flags
@pytest.mark.parametrize("flag", [0, 0x40, 0x80, 0x11, 0x21])
def test_create_event_with_flag_refuses_bad_flags_with_param_invalid(ready, flag):
    # api_error.cc:1633-1645 (EventCreate): flag & RT_EVENT_FLAG_MAX == 0, flag > max, MC2/EXTERNAL combined
    ev, ret = acl.rt.create_event_with_flag(flag)
    assert ret == 107000


@pytest.mark.parametrize("flag", [0, 0x10, 0x20, 0x41])
def test_create_event_ex_with_flag_refuses_bad_flags_with_param_invalid(ready, flag):
    # api_error.cc:1657-1675 (EventCreateEx): IPC alone is allowed, MC2 and EXTERNAL are not
    ev, ret = acl.rt.create_event_ex_with_flag(flag)
    assert ret == 107000


def test_create_event_ex_with_flag_accepts_ipc_alone(ready):
    assert acl.rt.create_event_ex_with_flag(C.ACL_EVENT_IPC)[1] == 0


def test_a_device_only_event_cannot_be_recorded_from_the_host(ready):
    # api_error.cc:1704-1711 (EventRecord): RT_EVENT_MC2 -> RT_ERROR_INVALID_VALUE
    ev = _event(C.ACL_EVENT_DEVICE_USE_ONLY)
    assert acl.rt.record_event(ev, _stream()) == 107000


# ---------------------------------------------------------------- timing
def test_elapsed_time_of_a_never_recorded_event_is_an_internal_error(ready):
    # event.cc:1249-1250 RT_ERROR_EVENT_RECORDER_NULL -> errcode_manage.cc:197 ACL_ERROR_RT_INTERNAL_ERROR
    ms, ret = acl.rt.event_elapsed_time(_event(), _event())
    assert ret == C.ACL_ERROR_RT_INTERNAL_ERROR == 507000
    assert acl.rt.event_get_timestamp(_event())[1] == 507000


def test_elapsed_time_with_the_end_first_is_negative(ready):
    # event.cc:1276: (cur - base) / freq, no reversal check
    s, first, second = _stream(), _event(), _event()
    assert acl.rt.record_event(first, s) == 0
    runtime.launch_host_func(stream_of(s), time.sleep, 0.002)
    assert acl.rt.record_event(second, s) == 0
    assert acl.rt.synchronize_stream(s) == 0
    forward, ret = acl.rt.event_elapsed_time(first, second)
    backward, ret2 = acl.rt.event_elapsed_time(second, first)
    assert ret == ret2 == 0 and forward > 0 and backward == -forward


def test_elapsed_time_of_a_pending_record_has_an_invalid_timestamp(ready):
    # event.cc:1264-1269: the timestamp is UINT64_MAX until the record ran -> 107006
    s, start, end = _stream(), _event(), _event()
    assert acl.rt.record_event(start, s) == 0
    gate = _hold(ready, s)
    assert acl.rt.record_event(end, s) == 0
    assert acl.rt.synchronize_event(start) == 0
    assert acl.rt.event_elapsed_time(start, end)[1] == C.ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID == 107006
    gate.set()


# ---------------------------------------------------------------- the Pythonic Event (torch_npu)
def test_pythonic_event_before_its_first_record_is_done_and_waits_add_nothing(fresh_runtime):
    # torch_npu NPUEvent: query() is true, block()/synchronize() return, until the event exists
    ev = npurt.Event()
    s = npurt.Stream()
    assert ev.query() is True
    ev.synchronize()
    ev.wait(s)
    s.synchronize()
    assert s.query() is True


def test_pythonic_event_re_recording_captures_the_new_point(fresh_runtime):
    s, other = npurt.Stream(), npurt.Stream()
    ev = npurt.Event()
    gate = threading.Event()
    ev.record(s)
    s.synchronize()
    runtime.launch_host_func(s.runtime_stream, gate.wait, 30)
    ev.record(s)
    assert ev.query() is False
    ev.wait(other)
    gate.set()
    other.synchronize()
    assert ev.query() is True
