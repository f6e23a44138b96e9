"""acl.rt event management (aclrtCreateEvent, aclrtRecordEvent, aclrtStreamWaitEvent, ...);
argument formats from python/pyACL/rt/rt_synchronize.cpp.

Status values follow the C enums function by function: query_event_status answers
ACL_EVENT_RECORDED_STATUS_COMPLETE (1) when done, query_event and query_event_wait_status
answer ACL_EVENT_STATUS_COMPLETE / ACL_EVENT_WAIT_STATUS_COMPLETE (0) when done. On failure
the status is what the real wrapper initialised it to.
"""
from __future__ import annotations

import struct

from .. import runtime as api  # the runtime's operations: its published surface
from ..runtime import constants as C
from ._wrap import CPYTHON_MESSAGE, Group, event_of, stream_of

rt = Group("acl.rt")


@rt.one(0, args=None)
def create_event():
    """An event usable for timing and stream waits (not for reset_event)."""
    return api.create_event().handle


@rt.one(0, args="I")
def create_event_with_flag(flag):
    """flag: ACL_EVENT_SYNC (waits, reset), ACL_EVENT_TIME_LINE (timing), bits OR-ed."""
    return api.create_event(flag).handle


@rt.one(0, args="I")
def create_event_ex_with_flag(flag):
    return api.create_event(flag, ex=True).handle


@rt.ret(args="k")
def destroy_event(event):
    api.destroy_event(event_of(event))


# the hot paths: the runtime operations themselves, handles looked up by the wrapper
record_event = rt.ret(args="ET", hot=True)(api.record_event)
synchronize_event = rt.ret(args="E", hot=True)(api.synchronize_event)
stream_wait_event = rt.ret(args="TE", hot=True)(api.stream_wait_event)


@rt.ret(args="kk")
def reset_event(event, stream):
    api.reset_event(event_of(event), stream_of(stream, same_context=True))


@rt.one(C.ACL_EVENT_STATUS_COMPLETE, args="k")
def query_event(event):
    """Deprecated: ACL_EVENT_STATUS_COMPLETE (0) or ACL_EVENT_STATUS_NOT_READY (1)."""
    return api.query_event(event_of(event))


@rt.one(C.ACL_EVENT_RECORDED_STATUS_NOT_READY, args="k")
def query_event_status(event):
    """ACL_EVENT_RECORDED_STATUS_COMPLETE (1) or ACL_EVENT_RECORDED_STATUS_NOT_READY (0)."""
    return api.query_event_status(event_of(event))


@rt.one(C.ACL_EVENT_WAIT_STATUS_COMPLETE, args="k")
def query_event_wait_status(event):
    """ACL_EVENT_WAIT_STATUS_COMPLETE (0) or ACL_EVENT_WAIT_STATUS_NOT_READY (1)."""
    return api.query_event_wait_status(event_of(event))


@rt.ret(args="ki", message="acl.rt.synchronize_event_with_timeout args parse failed!")
def synchronize_event_with_timeout(event, timeout):
    """Milliseconds; -1 waits forever. Timeout: ACL_ERROR_RT_EVENT_SYNC_TIMEOUT (507047)."""
    api.synchronize_event(event_of(event), timeout)


@rt.one(0.0, args="kk")
def event_elapsed_time(start, end):
    """Milliseconds between two completed events, as a C float (float32 precision)."""
    ms = api.event_elapsed_time(event_of(start), event_of(end))
    return struct.unpack("f", struct.pack("f", ms))[0]


@rt.ret(args="I", message="acl.rt.set_op_wait_timeout args parse failed!")
def set_op_wait_timeout(timeout):
    """Seconds a stream_wait_event issued from now on may wait (0: forever)."""
    api.set_op_wait_timeout(timeout)


@rt.one(0, args="k")
def event_get_timestamp(event):
    """Completion time of the event in microseconds since the device started."""
    return api.event_get_timestamp(event_of(event))


# the real wrapper passes its message to PyArg_ParseTuple by mistake, so CPython's own
# TypeError text is what a caller sees
@rt.one(0, args="k", message=CPYTHON_MESSAGE)
def get_event_id(event):
    return event_of(event).event_id


@rt.one(0, args=None)
def get_event_avail_num():
    return api.get_event_avail_num()


__all__ = [*rt.names]
