"""Streams (acl_rt.h: aclrtCreateStream ... aclrtStreamAbort), stream attributes and the
stream-config API, over the runtime's stream operations."""
from __future__ import annotations

from ... import runtime as rt
from ...runtime import InvalidValueError, constants as C
from .. import cdata
from ..registry import c_function
from ._common import null, stream_of

_synchronize_stream = rt.synchronize_stream


_state_callbacks: dict[str, tuple] = {}   # regName -> (C function, args)
CREATE_POST, DESTROY_PRE = 1, 2               # aclrtStreamState


def _tell(handle: int, state: int) -> None:
    for fn, args in list(_state_callbacks.values()):
        fn(cdata.ffi.cast("aclrtStream", handle), state, cdata.ffi.cast("void *", args))


def _new(stream, made):
    if not stream:
        raise null("stream")
    stream[0] = made.handle
    if _state_callbacks:
        _tell(made.handle, CREATE_POST)
    return 0


def _destroy(stream, force: bool):
    s = rt.stream_of(stream_of(stream))
    if _state_callbacks:
        _tell(s.handle, DESTROY_PRE)
    rt.destroy_stream(s, force=force)
    return 0


@c_function("aclrtRegStreamStateCallback")
def aclrtRegStreamStateCallback(regName, callback, args):
    """Streams created and destroyed through the C interface report to the callback
    (ACL_RT_STREAM_STATE_CREATE_POST after creation, ACL_RT_STREAM_STATE_DESTROY_PRE before
    destruction); a NULL callback removes the registration of that name."""
    name = cdata.string(regName)
    if not name:
        raise null("regName")
    if not callback:
        _state_callbacks.pop(name, None)
        return 0
    _state_callbacks[name] = (cdata.ffi.cast("aclrtStreamStateCallback", callback), args)
    return 0


@c_function("aclrtCreateStream")
def aclrtCreateStream(stream):
    return _new(stream, rt.create_stream())


@c_function("aclrtCreateStreamWithConfig")
def aclrtCreateStreamWithConfig(stream, priority, flag):
    return _new(stream, rt.create_stream(priority, flag))


@c_function("aclrtDestroyStream")
def aclrtDestroyStream(stream):
    return _destroy(stream, False)


@c_function("aclrtDestroyStreamForce")
def aclrtDestroyStreamForce(stream):
    return _destroy(stream, True)


@c_function("aclrtSynchronizeStream")
def aclrtSynchronizeStream(stream):
    _synchronize_stream(stream_of(stream) if stream else None)
    return 0


@c_function("aclrtSynchronizeStreamWithTimeout")
def aclrtSynchronizeStreamWithTimeout(stream, timeout):
    rt.synchronize_stream(stream_of(stream), timeout)
    return 0


@c_function("aclrtStreamQuery")
def aclrtStreamQuery(stream, status):
    if not status:
        raise null("status")
    status[0] = rt.stream_query(stream_of(stream))
    return 0


@c_function("aclrtSetStreamFailureMode")
def aclrtSetStreamFailureMode(stream, mode):
    rt.set_stream_failure_mode(stream_of(stream), mode)
    return 0


@c_function("aclrtStreamAbort")
def aclrtStreamAbort(stream):
    rt.stream_abort(stream_of(stream))
    return 0


@c_function("aclrtStreamGetId")
def aclrtStreamGetId(stream, streamId):
    if not streamId:
        raise null("streamId")
    streamId[0] = rt.stream_of(stream_of(stream)).stream_id
    return 0


@c_function("aclrtStreamGetPriority")
def aclrtStreamGetPriority(stream, priority):
    if not priority:
        raise null("priority")
    priority[0] = rt.stream_of(stream_of(stream)).priority
    return 0


@c_function("aclrtStreamGetFlags")
def aclrtStreamGetFlags(stream, flags):
    if not flags:
        raise null("flags")
    flags[0] = rt.stream_of(stream_of(stream)).flags
    return 0


@c_function("aclrtGetStreamAvailableNum")
def aclrtGetStreamAvailableNum(streamCount):
    if not streamCount:
        raise null("streamCount")
    streamCount[0] = rt.get_stream_available_num()
    return 0


# aclrtStreamAttr -> the member of aclrtStreamAttrValue it uses
_ATTR_MEMBER = {C.ACL_STREAM_ATTR_FAILURE_MODE: "failureMode",
                C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK: "overflowSwitch",
                C.ACL_STREAM_ATTR_USER_CUSTOM_TAG: "userCustomTag",
                C.ACL_STREAM_ATTR_PRIORITY: "streamPriority"}


@c_function("aclrtSetStreamAttribute")
def aclrtSetStreamAttribute(stream, stmAttrType, value):
    if not value:
        raise null("value")
    member = _ATTR_MEMBER.get(stmAttrType)
    if member is None:
        raise InvalidValueError(f"stmAttrType {stmAttrType} is not a stream attribute that can be set")
    v = getattr(cdata.struct("aclrtStreamAttrValue *", value), member)
    rt.set_stream_attribute(stream_of(stream), stmAttrType, {member: int(v)})
    return 0


@c_function("aclrtGetStreamAttribute")
def aclrtGetStreamAttribute(stream, stmAttrType, value):
    if not value:
        raise null("value")
    got = rt.get_stream_attribute(stream_of(stream), stmAttrType)
    out = cdata.struct("aclrtStreamAttrValue *", value)
    for member, v in got.items():
        setattr(out, member, v)
    return 0


@c_function("aclrtSetStreamOverflowSwitch")
def aclrtSetStreamOverflowSwitch(stream, flag):
    rt.set_stream_attribute(stream_of(stream), C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK, {"overflowSwitch": flag})
    return 0


@c_function("aclrtGetStreamOverflowSwitch")
def aclrtGetStreamOverflowSwitch(stream, flag):
    if not flag:
        raise null("flag")
    flag[0] = rt.get_stream_attribute(stream_of(stream), C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK)["overflowSwitch"]
    return 0


@c_function("aclrtStreamStop")
def aclrtStreamStop(stream):
    """Stops the stream's tasks: npurt treats it as aclrtStreamAbort (queued work is dropped)."""
    rt.stream_abort(stream_of(stream))
    return 0


# ---------------------------------------------------------------- the stream-config API
_configs: dict[int, object] = {}   # handle address -> the cdata that keeps the struct alive
# aclrtStreamConfigAttr -> the member of aclrtStreamConfigHandle it sets
_CONFIG_FIELD = {0: "workptr", 1: "workSize", 2: "flag", 3: "priority"}


@c_function("aclrtCreateStreamConfigHandle")
def aclrtCreateStreamConfigHandle():
    handle = cdata.ffi.new("aclrtStreamConfigHandle *")
    addr = int(cdata.ffi.cast("uintptr_t", handle))
    _configs[addr] = handle
    return addr


def _config(handle):
    if not handle:
        raise null("handle")
    got = _configs.get(handle)
    if got is None:
        raise InvalidValueError(f"0x{handle:x} is not a handle from aclrtCreateStreamConfigHandle")
    return got


@c_function("aclrtDestroyStreamConfigHandle")
def aclrtDestroyStreamConfigHandle(handle):
    _config(handle)
    del _configs[handle]
    return 0


@c_function("aclrtSetStreamConfigOpt")
def aclrtSetStreamConfigOpt(handle, attr, attrValue, valueSize):
    config = _config(handle)
    if not attrValue:
        raise null("attrValue")
    if attr not in _CONFIG_FIELD:
        raise InvalidValueError(f"attr {attr} is not an aclrtStreamConfigAttr (ACL_RT_STREAM_WORK_ADDR_PTR 0 .. "
                                "ACL_RT_STREAM_PRIORITY 3)")
    field = _CONFIG_FIELD[attr]
    if valueSize not in (1, 2, 4, 8):
        raise InvalidValueError(f"valueSize {valueSize} is not the size of an integer or pointer value")
    value = int.from_bytes(cdata.read(attrValue, valueSize), "little")
    if field == "workptr":
        config.workptr = cdata.ffi.cast("void *", value)
    else:
        setattr(config, field, value)
    return 0


@c_function("aclrtCreateStreamV2")
def aclrtCreateStreamV2(stream, handle):
    config = _config(handle)
    return _new(stream, rt.create_stream(int(config.priority), int(config.flag)))
