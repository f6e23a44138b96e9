"""acl.rt event management (aclrtCreateEvent, aclrtRecordEvent, aclrtStreamWaitEvent, ...).

Status values follow the C enums function by function: query_event_status answers
ACL_EVENT_RECORDED_STATUS_COMPLETE (1) when done, query_event and query_event_wait_status
answer ACL_EVENT_STATUS_COMPLETE / ACL_EVENT_WAIT_STATUS_COMPLETE (0) when done.
"""
from __future__ import annotations

from ..runtime import api
from ..runtime import constants as C
from ._wrap import Group, event_of, fail, stream_of
from ._wrap import event_lookup as _event_lookup
from ._wrap import stream_lookup as _stream_lookup

rt = Group("acl.rt")
_streams = api.rt.streams
_events = api.rt.events
_record_event = api.record_event
_synchronize_event = api.synchronize_event
_stream_wait_event = api.stream_wait_event


@rt.one(0)
def create_event():
    """An event usable for timing and stream waits (not for reset_event)."""
    return api.create_event().handle


@rt.one(0)
def create_event_with_flag(flag):
    """flag: ACL_EVENT_SYNC (waits, reset), ACL_EVENT_TIME_LINE (timing), bits OR-ed."""
    return api.create_event(flag).handle


@rt.one(0)
def create_event_ex_with_flag(flag):
    return api.create_event(flag, ex=True).handle


@rt.ret
def destroy_event(event):
    api.destroy_event(event_of(event))


def record_event(event, stream):
    """Capture the work queued on `stream` so far; the event completes when it has run."""
    try:
        _record_event(_event_lookup(event) or _events.get(event),
                      (_stream_lookup(stream) or _streams.get(stream)) if stream else None)
        return 0
    except Exception as exc:
        return fail(exc, "acl.rt.record_event")


def synchronize_event(event):
    """Block until the event's captured work has run."""
    try:
        _synchronize_event(_event_lookup(event) or _events.get(event))
        return 0
    except Exception as exc:
        return fail(exc, "acl.rt.synchronize_event")


def stream_wait_event(stream, event):
    """Later tasks of `stream` wait for the event's captured work."""
    try:
        _stream_wait_event((_stream_lookup(stream) or _streams.get(stream)) if stream else None,
                           _event_lookup(event) or _events.get(event))
        return 0
    except Exception as exc:
        return fail(exc, "acl.rt.stream_wait_event")


@rt.ret
def reset_event(event, stream):
    api.reset_event(event_of(event), stream_of(stream))


@rt.one(C.ACL_EVENT_STATUS_RESERVED)
def query_event(event):
    """Deprecated: ACL_EVENT_STATUS_COMPLETE (0) or ACL_EVENT_STATUS_NOT_READY (1)."""
    return api.query_event(event_of(event))


@rt.one(C.ACL_EVENT_RECORDED_STATUS_NOT_READY)
def query_event_status(event):
    """ACL_EVENT_RECORDED_STATUS_COMPLETE (1) or ACL_EVENT_RECORDED_STATUS_NOT_READY (0)."""
    return api.query_event_status(event_of(event))


@rt.one(C.ACL_EVENT_WAIT_STATUS_RESERVED)
def query_event_wait_status(event):
    """ACL_EVENT_WAIT_STATUS_COMPLETE (0) or ACL_EVENT_WAIT_STATUS_NOT_READY (1)."""
    return api.query_event_wait_status(event_of(event))


@rt.ret
def synchronize_event_with_timeout(event, timeout):
    """Milliseconds; -1 waits forever. Timeout: ACL_ERROR_RT_EVENT_SYNC_TIMEOUT (507047)."""
    api.synchronize_event(event_of(event), timeout)


@rt.one(0.0)
def event_elapsed_time(start, end):
    """Milliseconds (float) between two completed events."""
    return api.event_elapsed_time(event_of(start), event_of(end))


@rt.ret
def set_op_wait_timeout(timeout):
    """Seconds a stream_wait_event issued from now on may wait (0: forever)."""
    api.set_op_wait_timeout(timeout)


@rt.one(0)
def event_get_timestamp(event):
    """Completion time of the event in microseconds since the device started."""
    return api.event_get_timestamp(event_of(event))


@rt.one(0)
def get_event_id(event):
    return event_of(event).event_id


@rt.one(0)
def get_event_avail_num():
    return api.get_event_avail_num()


__all__ = [*rt.names, "record_event", "synchronize_event", "stream_wait_event"]
