"""Events: the capture model, status enums, waits (also across devices and on events never
recorded), synchronize with timeout, timing, reset and destroy (issue 3, scope 3). How the
runtime treats each kind of event call by call (event.cc) is in test_conformance_events.py."""
from __future__ import annotations

import threading
import time

import pytest

from npurt.runtime import constants as C
from npurt.runtime import event as event_module
from npurt.runtime.errors import (EventError, FeatureNotSupportedError, InvalidHandleError,
                                  InvalidValueError, NpuError, SyncTimeoutError)

COMPLETE, NOT_READY = C.ACL_EVENT_RECORDED_STATUS_COMPLETE, C.ACL_EVENT_RECORDED_STATUS_NOT_READY


class Gates:
    """Host-side gates for blocking host functions; all opened at teardown."""

    def __init__(self):
        self.all = []

    def hold(self, rt, stream) -> threading.Event:
        """Queue a task on `stream` that waits for the returned gate."""
        gate = threading.Event()
        self.all.append(gate)
        rt.launch_host_func(stream, gate.wait, 30)
        return gate

    def open_all(self):
        for g in self.all:
            g.set()


@pytest.fixture
def gates():
    g = Gates()
    yield g
    g.open_all()


def test_event_flag_values():
    assert (C.ACL_EVENT_SYNC, C.ACL_EVENT_CAPTURE_STREAM_PROGRESS, C.ACL_EVENT_TIME_LINE) == (0x1, 0x2, 0x8)


def test_status_enum_directions():
    assert (C.ACL_EVENT_RECORDED_STATUS_NOT_READY, C.ACL_EVENT_RECORDED_STATUS_COMPLETE) == (0, 1)
    assert (C.ACL_EVENT_WAIT_STATUS_COMPLETE, C.ACL_EVENT_WAIT_STATUS_NOT_READY) == (0, 1)
    assert (C.ACL_STREAM_STATUS_COMPLETE, C.ACL_STREAM_STATUS_NOT_READY) == (0, 1)


# ---------------------------------------------------------------- status and capture
def test_a_never_recorded_event_is_not_ready(rt):
    assert rt.query_event_status(rt.create_event()) == NOT_READY


def test_query_event_status_is_0_while_pending_and_1_when_complete(rt, gates):
    s = rt.create_stream()
    e = rt.create_event()
    gate = gates.hold(rt, s)
    rt.record_event(e, s)
    assert rt.query_event_status(e) == NOT_READY == 0
    gate.set()
    rt.synchronize_stream(s)
    assert rt.query_event_status(e) == COMPLETE == 1


def test_deprecated_query_event_uses_0_for_complete(rt, gates):
    s = rt.create_stream()
    e = rt.create_event()
    gate = gates.hold(rt, s)
    rt.record_event(e, s)
    assert rt.query_event(e) == C.ACL_EVENT_STATUS_NOT_READY == 1
    gate.set()
    rt.synchronize_event(e)
    assert rt.query_event(e) == C.ACL_EVENT_STATUS_COMPLETE == 0


def test_record_covers_only_work_already_queued(rt, gates):
    s = rt.create_stream()
    e = rt.create_event()
    first = gates.hold(rt, s)
    rt.record_event(e, s)
    later = gates.hold(rt, s)  # enqueued after the record: not part of its capture
    first.set()
    rt.synchronize_event(e)  # returns although the stream is still blocked by `later`
    assert rt.query_event_status(e) == COMPLETE
    assert rt.stream_query(s) == C.ACL_STREAM_STATUS_NOT_READY
    later.set()


def test_record_waits_for_all_work_queued_before_it(rt, gates):
    s = rt.create_stream()
    e = rt.create_event()
    out = []
    gate = gates.hold(rt, s)
    rt.launch_host_func(s, out.append, "before")
    rt.record_event(e, s)
    assert rt.query_event_status(e) == NOT_READY
    gate.set()
    rt.synchronize_event(e)
    assert out == ["before"]


def test_re_recording_captures_the_new_point(rt, gates):
    s = rt.create_stream()
    e = rt.create_event()
    rt.record_event(e, s)
    rt.synchronize_stream(s)
    gate = gates.hold(rt, s)
    rt.record_event(e, s)
    assert rt.query_event_status(e) == NOT_READY  # the latest capture is what counts
    gate.set()
    rt.synchronize_event(e)
    assert rt.query_event_status(e) == COMPLETE


# ---------------------------------------------------------------- waits
def test_stream_wait_event_holds_the_waiting_stream(rt, gates):
    a, b = rt.create_stream(), rt.create_stream()
    e = rt.create_event()
    out = []
    gate = gates.hold(rt, a)
    rt.record_event(e, a)
    rt.stream_wait_event(b, e)
    rt.launch_host_func(b, out.append, "b")
    time.sleep(0.05)
    assert out == [] and rt.stream_query(b) == C.ACL_STREAM_STATUS_NOT_READY
    gate.set()
    rt.synchronize_stream(b)
    assert out == ["b"]


def test_a_wait_uses_the_capture_current_when_it_was_enqueued(rt, gates):
    a, b = rt.create_stream(), rt.create_stream()
    e = rt.create_event()
    first = gates.hold(rt, a)
    rt.record_event(e, a)
    rt.stream_wait_event(b, e)  # waits for the first record only
    second = gates.hold(rt, a)
    rt.record_event(e, a)  # a newer capture, still blocked
    first.set()
    rt.synchronize_stream(b, 10_000)
    assert rt.query_event_status(e) == NOT_READY
    second.set()


def test_query_event_wait_status_is_1_while_the_wait_is_pending_and_0_after(rt, gates):
    a, b = rt.create_stream(), rt.create_stream()
    e = rt.create_event(C.ACL_EVENT_SYNC)  # create_event_with_flag(ACL_EVENT_SYNC)
    gate = gates.hold(rt, a)
    rt.record_event(e, a)
    rt.stream_wait_event(b, e)
    assert rt.query_event_wait_status(e) == C.ACL_EVENT_WAIT_STATUS_NOT_READY == 1
    gate.set()
    rt.synchronize_stream(b)
    assert rt.query_event_wait_status(e) == C.ACL_EVENT_WAIT_STATUS_COMPLETE == 0


def test_query_event_wait_status_is_not_for_ex_events(rt):
    with pytest.raises(FeatureNotSupportedError):
        rt.query_event_wait_status(rt.create_event(C.ACL_EVENT_SYNC, ex=True))


def test_an_event_without_a_wait_flag_cannot_be_waited_on(rt):
    e = rt.create_event(C.ACL_EVENT_TIME_LINE)
    with pytest.raises(FeatureNotSupportedError, match="ACL_EVENT_SYNC") as info:
        rt.stream_wait_event(rt.create_stream(), e)
    assert info.value.code == 207000


def test_waiting_on_a_never_recorded_sync_event_blocks_until_a_record_completes(rt, gates):
    a, b = rt.create_stream(), rt.create_stream()
    e = rt.create_event(C.ACL_EVENT_SYNC)
    out = []
    rt.stream_wait_event(b, e)
    rt.launch_host_func(b, out.append, "b")
    time.sleep(0.05)
    assert out == []  # a hardware semaphore: nothing lets b through yet
    gate = gates.hold(rt, a)
    rt.record_event(e, a)
    time.sleep(0.05)
    assert out == []  # recorded, but the record has not completed
    gate.set()
    rt.synchronize_stream(b, 10_000)
    assert out == ["b"]


def test_sync_timeout_on_a_never_recorded_wait_names_the_event(rt):
    b = rt.create_stream()
    e = rt.create_event(C.ACL_EVENT_SYNC)
    rt.stream_wait_event(b, e)
    with pytest.raises(SyncTimeoutError) as info:
        rt.synchronize_stream(b, 100)
    assert info.value.code == 507046
    msg = str(info.value)
    assert f"event {e.event_id}" in msg and "never been recorded" in msg
    assert "stream_wait_event" in msg and "parked" in msg
    rt.record_event(e, rt.create_stream())  # release b for teardown
    rt.synchronize_stream(b, 10_000)


def test_a_record_enqueued_while_the_wait_registers_is_still_waited_for(rt, gates, monkeypatch):
    a, b = rt.create_stream(), rt.create_stream()
    e = rt.create_event(C.ACL_EVENT_SYNC)
    gate = gates.hold(rt, a)
    original = event_module.EventNextRecord.register

    def register_after_a_record(self):
        monkeypatch.setattr(event_module.EventNextRecord, "register", original)
        rt.record_event(e, a)  # lands in the window between the check and the registration
        return original(self)

    monkeypatch.setattr(event_module.EventNextRecord, "register", register_after_a_record)
    seen = []
    rt.stream_wait_event(b, e)
    rt.launch_host_func(b, lambda: seen.append(rt.query_event_status(e)))
    time.sleep(0.1)
    gate.set()
    rt.synchronize_stream(b, 10_000)
    assert seen == [COMPLETE]  # b ran only after the record completed


@pytest.mark.skipif(event_module.enqueue_task is None, reason="the C enqueue path needs the accelerator")
def test_a_wait_registered_after_the_record_ran_but_before_it_was_published_is_released(rt, monkeypatch):
    """The C enqueue path publishes a record after its task is queued, and a tiny record on an
    idle stream has run by then: a wait that registered in between (it saw no record) is
    fired by the publication, not left parked."""
    a, b = rt.create_stream(), rt.create_stream()
    e = rt.create_event(C.ACL_EVENT_SYNC)
    real = event_module.enqueue_task
    ran_first = []

    def enqueue_then_another_thread_waits(stream, task, *holders):
        seq = real(stream, task, *holders)
        ran_first.append(task.rec.ran)
        rt.stream_wait_event(b, e)  # the event has no published record yet: b parks on the next one
        return seq

    monkeypatch.setattr(event_module, "enqueue_task", enqueue_then_another_thread_waits)
    rt.record_event(e, a)
    assert ran_first == [True]  # (the window this test is about)
    rt.synchronize_stream(b, 10_000)  # SyncTimeoutError (507046) if the wait was never released
    assert e.record.stream is a and e.record.ran


def test_of_two_records_on_one_stream_published_out_of_order_the_later_stays(rt):
    s = rt.create_stream()
    e = rt.create_event()
    first, second = event_module.Record(s), event_module.Record(s)
    e._published(second, 2)
    e._published(first, 1)  # a host thread that enqueued first and published last
    assert e.record is second and e.record.seq == 2


def test_a_timeout_after_the_record_was_enqueued_names_the_recording_stream(rt, gates):
    a, b = rt.create_stream(), rt.create_stream()
    e = rt.create_event(C.ACL_EVENT_SYNC)
    rt.stream_wait_event(b, e)
    rt.launch_host_func(b, lambda: None)
    gates.hold(rt, a)
    rt.record_event(e, a)
    with pytest.raises(SyncTimeoutError) as info:
        rt.synchronize_stream(b, 100)
    msg = str(info.value)
    assert "never been recorded" not in msg
    assert f"stream {a.stream_id}" in msg


def test_several_streams_may_wait_on_one_event(rt, gates):
    a = rt.create_stream()
    waiters = [rt.create_stream() for _ in range(5)]
    e = rt.create_event()
    out = []
    gate = gates.hold(rt, a)
    rt.record_event(e, a)
    for i, w in enumerate(waiters):
        rt.stream_wait_event(w, e)
        rt.launch_host_func(w, out.append, i)
    time.sleep(0.05)
    assert out == []
    gate.set()
    for w in waiters:
        rt.synchronize_stream(w, 10_000)
    assert sorted(out) == list(range(5))


def test_stream_wait_event_across_devices(rt, gates):
    a = rt.create_stream()
    e = rt.create_event()
    rt.set_device(1)
    b = rt.create_stream()
    out = []
    gate = gates.hold(rt, a)
    rt.launch_host_func(a, out.append, "device 0")
    rt.record_event(e, a)
    rt.stream_wait_event(b, e)
    rt.launch_host_func(b, out.append, "device 1")
    time.sleep(0.05)
    assert out == []
    gate.set()
    rt.synchronize_stream(b, 10_000)
    assert out == ["device 0", "device 1"]


def test_after_reset_event_the_last_record_still_counts(rt):
    s = rt.create_stream()
    e = rt.create_event(C.ACL_EVENT_SYNC)
    rt.record_event(e, s)
    rt.stream_wait_event(s, e)
    rt.reset_event(e, s)
    rt.synchronize_stream(s)
    assert rt.query_event_status(e) == COMPLETE
    rt.synchronize_event(e, 100)


def test_reset_event_needs_an_event_with_a_wait_flag(rt):
    with pytest.raises(FeatureNotSupportedError, match="reset") as info:
        rt.reset_event(rt.create_event(C.ACL_EVENT_TIME_LINE), rt.create_stream())
    assert info.value.code == 207000


# ---------------------------------------------------------------- host synchronization
def test_synchronize_event_waits_for_the_capture(rt, gates):
    s = rt.create_stream()
    e = rt.create_event()
    gate = gates.hold(rt, s)
    rt.record_event(e, s)
    threading.Timer(0.05, gate.set).start()
    rt.synchronize_event(e)
    assert rt.query_event_status(e) == COMPLETE


def test_synchronize_event_with_timeout_expires_with_the_event_timeout_code(rt, gates):
    s = rt.create_stream()
    e = rt.create_event()
    gates.hold(rt, s)
    rt.record_event(e, s)
    with pytest.raises(SyncTimeoutError) as info:
        rt.synchronize_event(e, 100)
    assert info.value.code == C.ACL_ERROR_RT_EVENT_SYNC_TIMEOUT == 507047
    assert f"event {e.event_id}" in str(info.value)


def test_an_ex_event_never_recorded_counts_as_complete(rt):
    e = rt.create_event(C.ACL_EVENT_SYNC, ex=True)
    assert rt.query_event_status(e) == COMPLETE
    rt.synchronize_event(e, 10)


def test_an_event_whose_record_was_dropped_reports_it(rt, gates):
    s = rt.create_stream()
    e = rt.create_event()
    gate = gates.hold(rt, s)
    rt.record_event(e, s)
    rt.stream_abort(s)
    gate.set()
    with pytest.raises(EventError) as info:
        rt.synchronize_event(e, 10_000)
    assert info.value.code == C.ACL_ERROR_RT_EVENT_NOT_COMPLETE
    assert "dropped" in str(info.value)


# ---------------------------------------------------------------- timing
def test_elapsed_time_is_a_float_in_milliseconds(rt):
    s = rt.create_stream()
    start, end = rt.create_event(), rt.create_event()
    rt.record_event(start, s)
    rt.launch_host_func(s, time.sleep, 0.02)
    rt.record_event(end, s)
    rt.synchronize_stream(s)
    ms = rt.event_elapsed_time(start, end)
    assert isinstance(ms, float)
    assert ms >= 19.0  # the 20 ms sleep lies between the two records: milliseconds, not seconds


def test_event_timestamps_are_microseconds_since_device_start(rt):
    s = rt.create_stream()
    a, b = rt.create_event(), rt.create_event()
    rt.record_event(a, s)
    rt.launch_host_func(s, time.sleep, 0.02)
    rt.record_event(b, s)
    rt.synchronize_stream(s)
    ta, tb = rt.event_get_timestamp(a), rt.event_get_timestamp(b)
    assert isinstance(ta, int) and 0 <= ta
    assert tb - ta >= 19_000


def test_elapsed_time_of_an_event_without_time_line_is_an_error(rt):
    s = rt.create_stream()
    start, end = rt.create_event(), rt.create_event(C.ACL_EVENT_SYNC)
    rt.record_event(start, s)
    rt.record_event(end, s)
    rt.synchronize_stream(s)
    with pytest.raises(EventError, match="without ACL_EVENT_TIME_LINE") as info:
        rt.event_elapsed_time(start, end)
    assert info.value.code == C.ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID == 107006


def test_elapsed_time_of_a_never_recorded_event_is_an_error(rt):
    with pytest.raises(EventError, match="not been recorded") as info:
        rt.event_elapsed_time(rt.create_event(), rt.create_event())
    assert info.value.code == C.ACL_ERROR_RT_INTERNAL_ERROR  # RT_ERROR_EVENT_RECORDER_NULL


def test_elapsed_time_of_an_incomplete_event_has_no_timestamp_yet(rt, gates):
    s = rt.create_stream()
    start, end = rt.create_event(), rt.create_event()
    rt.record_event(start, s)
    gates.hold(rt, s)
    rt.record_event(end, s)
    rt.synchronize_event(start)
    with pytest.raises(EventError, match="not completed") as info:
        rt.event_elapsed_time(start, end)
    assert info.value.code == C.ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID == 107006


def test_elapsed_time_with_end_before_start_is_negative(rt):
    s = rt.create_stream()
    first, second = rt.create_event(), rt.create_event()
    rt.record_event(first, s)
    rt.launch_host_func(s, time.sleep, 0.001)
    rt.record_event(second, s)
    rt.synchronize_stream(s)
    assert rt.event_elapsed_time(second, first) == -rt.event_elapsed_time(first, second) < 0


def test_time_line_events_time_but_do_not_take_event_slots(rt):
    before = rt.get_event_avail_num()
    e = rt.create_event(C.ACL_EVENT_TIME_LINE)
    assert rt.get_event_avail_num() == before
    rt.create_event(C.ACL_EVENT_SYNC)
    assert rt.get_event_avail_num() == before - 1
    rt.record_event(e, None)
    rt.synchronize_event(e)
    assert rt.event_get_timestamp(e) >= 0


def test_running_out_of_event_slots_is_no_event_resource(rt):
    device = rt.current_device()
    assert device.max_events == 65536  # the A2 figure
    device.max_events = device.event_count + 2  # shrink it for the test
    rt.create_event()
    rt.create_event()
    with pytest.raises(NpuError) as info:
        rt.create_event()
    assert info.value.code == C.ACL_ERROR_RT_NO_EVENT_RESOURCE == 207007
    rt.create_event(C.ACL_EVENT_TIME_LINE)  # timing-only events take no slot


@pytest.mark.parametrize("flags", [0, 0x100, -1, "1"])
def test_bad_event_flags_are_invalid(rt, flags):
    with pytest.raises(InvalidValueError):
        rt.create_event(flags)


# ---------------------------------------------------------------- destroy
@pytest.mark.parametrize("call", [
    lambda rt, e: rt.record_event(e, None),
    lambda rt, e: rt.stream_wait_event(None, e),
    lambda rt, e: rt.query_event_status(e),
    lambda rt, e: rt.synchronize_event(e),
    lambda rt, e: rt.event_elapsed_time(e, e),
    lambda rt, e: rt.destroy_event(e),
])
def test_a_destroyed_event_is_an_invalid_handle(rt, call):
    e = rt.create_event()
    rt.destroy_event(e)
    with pytest.raises(InvalidHandleError) as info:
        call(rt, e)
    assert info.value.code == 107017


def test_destroy_event_with_a_pending_record_does_not_block_and_the_wait_still_completes(rt, gates):
    a, b = rt.create_stream(), rt.create_stream()
    e = rt.create_event()
    out = []
    gate = gates.hold(rt, a)
    rt.record_event(e, a)
    rt.stream_wait_event(b, e)
    rt.launch_host_func(b, out.append, 1)
    rt.destroy_event(e)  # returns at once
    assert out == []
    gate.set()
    rt.synchronize_stream(b, 10_000)
    assert out == [1]


def test_destroying_an_event_gives_its_slot_back(rt):
    before = rt.get_event_avail_num()
    e = rt.create_event()
    assert rt.get_event_avail_num() == before - 1
    rt.destroy_event(e)
    assert rt.get_event_avail_num() == before
