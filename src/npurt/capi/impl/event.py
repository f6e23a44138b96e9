"""Events (acl_rt.h: aclrtCreateEvent ... aclrtEventGetTimestamp): all flags, waits,
status queries, timestamps and elapsed time, over the runtime's event operations."""
from __future__ import annotations

from ... import runtime as rt
from .. import cdata
from ..registry import c_function
from ._common import event_of, note_task, null, stream_of

_events = rt.RUNTIME.events.lookup
V = cdata.enum_values()
_record_event, _stream_wait_event, _synchronize_event = rt.record_event, rt.stream_wait_event, rt.synchronize_event


def _new(event, made):
    if not event:
        raise null("event")
    event[0] = made.handle
    return 0


@c_function("aclrtCreateEvent")
def aclrtCreateEvent(event):
    return _new(event, rt.create_event())


@c_function("aclrtCreateEventWithFlag")
def aclrtCreateEventWithFlag(event, flag):
    return _new(event, rt.create_event(flag))


@c_function("aclrtCreateEventExWithFlag")
def aclrtCreateEventExWithFlag(event, flag):
    return _new(event, rt.create_event(flag, ex=True))


@c_function("aclrtDestroyEvent")
def aclrtDestroyEvent(event):
    rt.destroy_event(event_of(event))
    return 0


@c_function("aclrtRecordEvent")
def aclrtRecordEvent(event, stream):
    note_task(_record_event(_events(event) or event_of(event), stream_of(stream)))
    return 0


@c_function("aclrtStreamWaitEvent")
def aclrtStreamWaitEvent(stream, event):
    note_task(_stream_wait_event(stream_of(stream), _events(event) or event_of(event)))
    return 0


@c_function("aclrtSynchronizeEvent")
def aclrtSynchronizeEvent(event):
    _synchronize_event(_events(event) or event_of(event))
    return 0


@c_function("aclrtSynchronizeEventWithTimeout")
def aclrtSynchronizeEventWithTimeout(event, timeout):
    rt.synchronize_event(event_of(event), timeout)
    return 0


@c_function("aclrtResetEvent")
def aclrtResetEvent(event, stream):
    rt.reset_event(event_of(event), stream_of(stream))
    return 0


@c_function("aclrtQueryEvent")
def aclrtQueryEvent(event, status):
    if not status:
        raise null("status")
    status[0] = rt.query_event(event_of(event))
    return 0


@c_function("aclrtQueryEventStatus")
def aclrtQueryEventStatus(event, status):
    if not status:
        raise null("status")
    status[0] = rt.query_event_status(event_of(event))
    return 0


@c_function("aclrtQueryEventWaitStatus")
def aclrtQueryEventWaitStatus(event, status):
    if not status:
        raise null("status")
    status[0] = rt.query_event_wait_status(event_of(event))
    return 0


@c_function("aclrtEventElapsedTime")
def aclrtEventElapsedTime(ms, startEvent, endEvent):
    if not ms:
        raise null("ms")
    ms[0] = rt.event_elapsed_time(event_of(startEvent), event_of(endEvent))
    return 0


@c_function("aclrtEventGetTimestamp")
def aclrtEventGetTimestamp(event, timestamp):
    if not timestamp:
        raise null("timestamp")
    timestamp[0] = rt.event_get_timestamp(event_of(event))
    return 0


@c_function("aclrtGetEventId")
def aclrtGetEventId(event, eventId):
    if not eventId:
        raise null("eventId")
    eventId[0] = event_of(event).event_id
    return 0


@c_function("aclrtGetEventAvailNum")
def aclrtGetEventAvailNum(eventCount):
    if not eventCount:
        raise null("eventCount")
    eventCount[0] = rt.get_event_avail_num()
    return 0


@c_function("aclrtSetOpWaitTimeout")
def aclrtSetOpWaitTimeout(timeout):
    rt.set_op_wait_timeout(timeout)
    return 0


@c_function("aclrtRecordEventWithFlag")
def aclrtRecordEventWithFlag(event, stream, flag):
    """ACL_EVENT_RECORD_DEFAULT records as aclrtRecordEvent; ACL_EVENT_RECORD_EXTERNAL on a
    capturing stream makes each replay of the graph record the event for real (streams and
    graphs outside it can wait for it); outside a capture it records as the default."""
    if flag not in (V["ACL_EVENT_RECORD_DEFAULT"], V["ACL_EVENT_RECORD_EXTERNAL"]):
        raise rt.ParamInvalidError(f"aclrtRecordEventWithFlag: flag {flag} is neither ACL_EVENT_RECORD_DEFAULT "
                                   "(0) nor ACL_EVENT_RECORD_EXTERNAL (1)")
    ev, s = _events(event) or event_of(event), stream_of(stream)
    if flag == V["ACL_EVENT_RECORD_EXTERNAL"] and s is not None and type(s.capture) is rt.graph.Capture:
        note_task(s.capture.record_external(s, ev))
        return 0
    note_task(_record_event(ev, s))
    return 0


@c_function("aclrtStreamWaitEventWithFlag")
def aclrtStreamWaitEventWithFlag(stream, event, timeout, flag):
    """ACL_EVENT_WAIT_DEFAULT waits as aclrtStreamWaitEvent; ACL_EVENT_WAIT_EXTERNAL on a
    capturing stream makes each replay wait for the event's record as it stands then (a record
    outside the graph or another graph's). `timeout` is reserved."""
    if flag not in (V["ACL_EVENT_WAIT_DEFAULT"], V["ACL_EVENT_WAIT_EXTERNAL"]):
        raise rt.ParamInvalidError(f"aclrtStreamWaitEventWithFlag: flag {flag} is neither ACL_EVENT_WAIT_DEFAULT "
                                   "(0) nor ACL_EVENT_WAIT_EXTERNAL (1)")
    ev, s = _events(event) or event_of(event), stream_of(stream)
    if flag == V["ACL_EVENT_WAIT_EXTERNAL"] and s is not None and type(s.capture) is rt.graph.Capture:
        note_task(s.capture.wait_external(s, ev))
        return 0
    note_task(_stream_wait_event(s, ev))
    return 0
