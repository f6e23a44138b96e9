"""acl.rt stream management (aclrtCreateStream, aclrtSynchronizeStream, ...); argument
formats from python/pyACL/rt/rt_stream.cpp and rt_synchronize.cpp.

Stream handle 0 means the current context's default stream everywhere.
"""
from __future__ import annotations

from .. import runtime as api  # the runtime's operations: its published surface
from ..runtime import constants as C
from ._wrap import Group, Raise, computed, field, stream_of

rt = Group("acl.rt")


def resolved(handle):
    """The Stream object for a handle, with 0 resolved to the default stream."""
    return api.stream_of(stream_of(handle))


@rt.one(0, args=None)
def create_stream():
    return api.create_stream().handle


@rt.one(0, args="ii")
def create_stream_with_config(priority, flag):
    """priority 0 (highest) .. 7, clamped; flag: ACL_STREAM_* bits."""
    return api.create_stream(priority, flag).handle


@rt.ret(args="k")
def destroy_stream(stream):
    """Waits for the stream's queued work, then destroys it (current context only)."""
    api.destroy_stream(resolved(stream))


@rt.ret(args="k")
def destroy_stream_force(stream):
    """Destroys the stream at once; its queued work is dropped."""
    api.destroy_stream(resolved(stream), force=True)


# the hot path: the runtime operation itself, the handle looked up by the wrapper
synchronize_stream = rt.ret(args="S", hot=True)(api.synchronize_stream)


@rt.ret(args="ki")
def synchronize_stream_with_timeout(stream, timeout):
    """Milliseconds; -1 waits forever. Timeout: ACL_ERROR_RT_STREAM_SYNC_TIMEOUT (507046)."""
    api.synchronize_stream(stream_of(stream), timeout)


@rt.one(C.ACL_STREAM_STATUS_RESERVED, args="k", message="acl.rt.stream_query args parse failed!")
def stream_query(stream):
    """ACL_STREAM_STATUS_COMPLETE (0) or ACL_STREAM_STATUS_NOT_READY (1)."""
    return api.stream_query(stream_of(stream))


@rt.ret(args="kI", message="acl.rt.set_stream_failure_mode args parse failed!")
def set_stream_failure_mode(stream, mode):
    api.set_stream_failure_mode(stream_of(stream, same_context=True), mode)


@rt.ret(args="k")
def stream_abort(stream):
    api.stream_abort(stream_of(stream, same_context=True))


@rt.one(0, args="k")
def stream_get_id(stream):
    return resolved(stream).stream_id


@rt.one(0, args=None)
def get_stream_available_num():
    return api.get_stream_available_num()


# aclrtStreamAttrValue is a union; the real wrapper reads and writes it under the key of
# the member the attribute uses, any other attribute (priority, cache-op info) as
# "reserved", its four 32-bit words
_MEMBERS = {C.ACL_STREAM_ATTR_FAILURE_MODE: ("failureMode", "u64"),
            C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK: ("overflowSwitch", "uint32"),
            C.ACL_STREAM_ATTR_USER_CUSTOM_TAG: ("userCustomTag", "uint32")}
_RUNTIME_KEYS = {C.ACL_STREAM_ATTR_PRIORITY: "streamPriority", C.ACL_STREAM_ATTR_CACHE_OP_INFO: "cacheOpInfoSwitch"}


def _union_value(attr: int, value) -> int:
    if value is not None and not isinstance(value, dict):
        raise Raise(TypeError("the aclrtStreamAttrValue argument is not dict"))
    value = value or {}
    if attr in _MEMBERS:
        return field(value, *_MEMBERS[attr])
    words = value.get("reserved")
    if not isinstance(words, list):
        return 0
    if len(words) > 4:
        raise Raise(ValueError("The length of reserved should be no greater than 4"))
    first = words[0] if words else 0
    return field({"w": first}, "w", "uint32")


def _union_dict(attr: int, number: int) -> dict:
    if attr in _MEMBERS:
        return {_MEMBERS[attr][0]: number}
    return {"reserved": [number, 0, 0, 0]}


@rt.ret(args="kiO", message="acl.rt.set_stream_attribute args parse failed!")
def set_stream_attribute(stream, stm_attr_type, value):
    number = _union_value(stm_attr_type, value)
    key = _MEMBERS[stm_attr_type][0] if stm_attr_type in _MEMBERS else _RUNTIME_KEYS.get(stm_attr_type, "reserved")
    api.set_stream_attribute(stream_of(stream), stm_attr_type, {key: number})


@rt.one(computed(lambda stream, stm_attr_type: _union_dict(stm_attr_type, 0)), args="ki",
        message="acl.rt.get_stream_attribute args parse failed!")
def get_stream_attribute(stream, stm_attr_type):
    """The attribute in the real wrapper's shape: {"failureMode"}, {"overflowSwitch"},
    {"userCustomTag"}, or {"reserved": [4 words]} (priority, cache-op info)."""
    got = api.get_stream_attribute(stream_of(stream), stm_attr_type)
    return _union_dict(stm_attr_type, next(iter(got.values())))


@rt.ret(args="kI")
def set_stream_overflow_switch(stream, flag):
    api.set_stream_attribute(stream_of(stream), C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK, {"overflowSwitch": flag})


@rt.one(0, args="k")
def get_stream_overflow_switch(stream):
    return api.get_stream_attribute(stream_of(stream), C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK)["overflowSwitch"]


__all__ = [*rt.names, "synchronize_stream"]
