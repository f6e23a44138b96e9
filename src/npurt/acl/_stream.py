"""acl.rt stream management (aclrtCreateStream, aclrtSynchronizeStream, ...).

Stream handle 0 means the current context's default stream everywhere.
"""
from __future__ import annotations

from ..runtime import api
from ..runtime import constants as C
from ._wrap import Group, fail, stream_of
from ._wrap import stream_lookup as _stream_lookup

rt = Group("acl.rt")
_streams = api.rt.streams
_synchronize_stream = api.synchronize_stream


def resolved(handle):
    """The Stream object for a handle, with 0 resolved to the default stream."""
    return api.stream_of(stream_of(handle))


@rt.one(0)
def create_stream():
    return api.create_stream().handle


@rt.one(0)
def create_stream_with_config(priority, flag):
    """priority 0 (highest) .. 7, clamped; flag: ACL_STREAM_* bits."""
    return api.create_stream(priority, flag).handle


@rt.ret
def destroy_stream(stream):
    """Waits for the stream's queued work, then destroys it (current context only)."""
    api.destroy_stream(resolved(stream))


@rt.ret
def destroy_stream_force(stream):
    """Destroys the stream at once; its queued work is dropped."""
    api.destroy_stream(resolved(stream), force=True)


def synchronize_stream(stream):
    """Block until every task queued on `stream` has run; returns its first failure."""
    try:
        _synchronize_stream((_stream_lookup(stream) or _streams.get(stream)) if stream else None)
        return 0
    except Exception as exc:
        return fail(exc, "acl.rt.synchronize_stream")


@rt.ret
def synchronize_stream_with_timeout(stream, timeout):
    """Milliseconds; -1 waits forever. Timeout: ACL_ERROR_RT_STREAM_SYNC_TIMEOUT (507046)."""
    api.synchronize_stream(stream_of(stream), timeout)


@rt.one(C.ACL_STREAM_STATUS_RESERVED)
def stream_query(stream):
    """ACL_STREAM_STATUS_COMPLETE (0) or ACL_STREAM_STATUS_NOT_READY (1)."""
    return api.stream_query(stream_of(stream))


@rt.ret
def set_stream_failure_mode(stream, mode):
    api.set_stream_failure_mode(stream_of(stream), mode)


@rt.ret
def stream_abort(stream):
    api.stream_abort(stream_of(stream))


@rt.one(0)
def stream_get_id(stream):
    return resolved(stream).stream_id


@rt.one(0)
def get_stream_available_num():
    return api.get_stream_available_num()


@rt.ret
def set_stream_attribute(stream, stm_attr_type, value):
    api.set_stream_attribute(stream_of(stream), stm_attr_type, value)


@rt.one(None)
def get_stream_attribute(stream, stm_attr_type):
    return api.get_stream_attribute(stream_of(stream), stm_attr_type)


@rt.ret
def set_stream_overflow_switch(stream, flag):
    api.set_stream_attribute(stream_of(stream), C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK, {"overflowSwitch": flag})


@rt.one(0)
def get_stream_overflow_switch(stream):
    return api.get_stream_attribute(stream_of(stream), C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK)["overflowSwitch"]


__all__ = [*rt.names, "synchronize_stream"]
