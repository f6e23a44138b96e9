"""Profiling (acl_prof.h: aclprofInit ... aclprofRangeStop) and mstx (mstx/ms_tools_ext.h).

One implementation serves both faces: these C functions call the pyACL facade's `acl.prof`
functions (`npurt.acl.prof`, over npurt's profiler), which sit on the same floor, so a C program
and a Python script profile alike and write the same PROF_* directories. A failure's message
is re-recorded under the C function's name. mstx markers (void functions) record through the
same markers while a session collects msproftx data and are no-ops otherwise, as on CANN
without a profiler attached.
"""
from __future__ import annotations

import ctypes
import os

from ...runtime import fork_safe_lock
from ... import runtime as rt
from ...acl import prof as acl_prof
from .. import cdata
from ..errors import record
from ..registry import c_function
from ._common import null


def _c(ret: int, cname: str) -> int:
    """A facade return code, its recorded message renamed to the C function."""
    if ret:
        msg = rt.get_recent_err_msg()
        _, _, rest = msg.partition(": ")
        record(ret, cname, rest or msg)
    return ret


def _value(result, cname: str):
    """A facade handle (0 on failure), its message renamed."""
    if not result:
        code = rt.get_last_error(clear=False)
        if code:
            _c(code, cname)
    return result


@c_function("aclprofInit")
def aclprofInit(profilerResultPath, length):
    if not profilerResultPath:
        raise null("profilerResultPath")
    return _c(acl_prof.init(cdata.read(profilerResultPath, length).split(b"\0")[0].decode()), "aclprofInit")


@c_function("aclprofFinalize")
def aclprofFinalize():
    return _c(acl_prof.finalize(), "aclprofFinalize")


@c_function("aclprofCreateConfig")
def aclprofCreateConfig(deviceIdList, deviceNums, aicoreMetrics, aicoreEvents, dataTypeConfig):
    devices = list(deviceIdList[0:deviceNums]) if deviceIdList and deviceNums else []
    return _value(acl_prof.create_config(devices, aicoreMetrics, aicoreEvents, dataTypeConfig), "aclprofCreateConfig")


@c_function("aclprofDestroyConfig")
def aclprofDestroyConfig(profilerConfig):
    return _c(acl_prof.destroy_config(profilerConfig), "aclprofDestroyConfig")


@c_function("aclprofSetConfig")
def aclprofSetConfig(configType, config, configLength):
    if not config:
        raise null("config")
    text = cdata.read(config, configLength).split(b"\0")[0].decode()
    return _c(acl_prof.set_config(configType, text), "aclprofSetConfig")


@c_function("aclprofStart")
def aclprofStart(profilerConfig):
    return _c(acl_prof.start(profilerConfig), "aclprofStart")


@c_function("aclprofStop")
def aclprofStop(profilerConfig):
    return _c(acl_prof.stop(profilerConfig), "aclprofStop")


@c_function("aclprofCreateStamp")
def aclprofCreateStamp():
    return _value(acl_prof.create_stamp(), "aclprofCreateStamp")


@c_function("aclprofDestroyStamp")
def aclprofDestroyStamp(stamp):
    acl_prof.destroy_stamp(stamp)


@c_function("aclprofSetStampTraceMessage")
def aclprofSetStampTraceMessage(stamp, msg, msgLen):
    if not msg:
        raise null("msg")
    text = cdata.read(msg, msgLen).decode(errors="replace")
    return _c(acl_prof.set_stamp_trace_message(stamp, text, len(text.encode())), "aclprofSetStampTraceMessage")


@c_function("aclprofMark")
def aclprofMark(stamp):
    return _c(acl_prof.mark(stamp), "aclprofMark")


@c_function("aclprofMarkEx")
def aclprofMarkEx(msg, msgLen, stream):
    if not msg:
        raise null("msg")
    return _c(acl_prof.mark_ex(cdata.read(msg, msgLen).decode(errors="replace"), stream), "aclprofMarkEx")


@c_function("aclprofPush")
def aclprofPush(stamp):
    return _c(acl_prof.push(stamp), "aclprofPush")


@c_function("aclprofPop")
def aclprofPop():
    return _c(acl_prof.pop(), "aclprofPop")


@c_function("aclprofRangeStart")
def aclprofRangeStart(stamp, rangeId):
    if not rangeId:
        raise null("rangeId")
    rid, ret = acl_prof.range_start(stamp)
    if not ret:
        rangeId[0] = rid
    return _c(ret, "aclprofRangeStart")


@c_function("aclprofRangeStop")
def aclprofRangeStop(rangeId):
    return _c(acl_prof.range_stop(rangeId), "aclprofRangeStop")


@c_function("aclprofCreateStepInfo")
def aclprofCreateStepInfo():
    return _value(acl_prof.create_step_info(), "aclprofCreateStepInfo")


@c_function("aclprofDestroyStepInfo")
def aclprofDestroyStepInfo(stepinfo):
    acl_prof.destroy_step_info(stepinfo)


@c_function("aclprofGetStepTimestamp")
def aclprofGetStepTimestamp(stepInfo, tag, stream):
    return _c(acl_prof.get_step_timestamp(stepInfo, tag, stream), "aclprofGetStepTimestamp")


# model subscription. C's config holds the address of the program's int fd (`&pipeFd[1]`):
# aclprofModelUnSubscribe closes that fd and sets it to -1 once no subscribed model writes to
# it, as hicann/runtime's ProfAclMgr::CloseSubscribeFd (prof_acl_mgr.cpp); the pyACL face
# (an int fd) leaves closing to the caller.
_fd_of_config: dict[int, int] = {}     # config handle -> address of the int fd
_config_of_model: dict[int, int] = {}  # subscribed model id -> config handle


@c_function("aclprofCreateSubscribeConfig")
def aclprofCreateSubscribeConfig(timeInfoSwitch, aicoreMetrics, fd):
    if not fd:
        raise null("fd")
    handle = _value(acl_prof.create_subscribe_config(timeInfoSwitch, aicoreMetrics,
                                                     ctypes.c_int.from_address(fd).value),
                    "aclprofCreateSubscribeConfig")
    if handle:
        _fd_of_config[handle] = fd
    return handle


@c_function("aclprofModelSubscribe")
def aclprofModelSubscribe(modelId, profSubscribeConfig):
    ret = _c(acl_prof.model_subscribe(modelId, profSubscribeConfig), "aclprofModelSubscribe")
    if not ret:
        _config_of_model[modelId] = profSubscribeConfig
    return ret


@c_function("aclprofModelUnSubscribe")
def aclprofModelUnSubscribe(modelId):
    ret = _c(acl_prof.model_unsubscribe(modelId), "aclprofModelUnSubscribe")
    config = _config_of_model.pop(modelId, None)
    if ret or config is None:
        return ret
    fd_addr = _fd_of_config.get(config)
    if fd_addr is None:
        return ret
    fd = ctypes.c_int.from_address(fd_addr)
    still_used = any(_fd_of_config.get(c) is not None and ctypes.c_int.from_address(_fd_of_config[c]).value == fd.value
                     for c in _config_of_model.values())
    if not still_used and fd.value >= 0:
        try:
            os.close(fd.value)
        except OSError:
            pass  # the program closed it already
        fd.value = -1
    return ret


@c_function("MsprofSetDeviceIdByGeModelIdx")
def MsprofSetDeviceIdByGeModelIdx(geModelIdx, deviceId):
    acl_prof.register_model_device(geModelIdx, deviceId)
    return 0


@c_function("MsprofUnsetDeviceIdByGeModelIdx")
def MsprofUnsetDeviceIdByGeModelIdx(geModelIdx, deviceId):
    acl_prof.unregister_model_device(geModelIdx, deviceId)
    return 0


def _op_status(result, cname: str) -> tuple:
    value, ret = result
    return value, _c(ret, cname)


@c_function("aclprofGetOpNum")
def aclprofGetOpNum(opInfo, opInfoLen, opNumber):
    if not opNumber:
        raise null("opNumber")
    n, ret = _op_status(acl_prof.get_op_num(opInfo, opInfoLen), "aclprofGetOpNum")
    if not ret:
        opNumber[0] = n
    return ret


def _len_getter(cname: str, fn):
    def get(opInfo, opInfoLen, index, length):
        if not length:
            raise null("opTypeLen" if "Type" in cname else "opNameLen")
        n, ret = _op_status(fn(opInfo, opInfoLen, index), cname)
        if not ret:
            length[0] = n
        return ret
    return get


def _str_getter(cname: str, fn):
    def get(opInfo, opInfoLen, index, out, outLen):
        if not out:
            raise null("opType" if "Type" in cname else "opName")
        text, ret = _op_status(fn(opInfo, opInfoLen, index, outLen), cname)
        if not ret:
            raw = text.encode() + b"\0"
            ctypes.memmove(out, raw, len(raw))
        return ret
    return get


for _cname, _fn in (("aclprofGetOpTypeLen", acl_prof.get_op_type_len), ("aclprofGetOpNameLen", acl_prof.get_op_name_len)):
    c_function(_cname)(_len_getter(_cname, _fn))
for _cname, _fn in (("aclprofGetOpType", acl_prof.get_op_type), ("aclprofGetOpName", acl_prof.get_op_name)):
    c_function(_cname)(_str_getter(_cname, _fn))
for _cname, _fn in (("aclprofGetOpStart", acl_prof.get_op_start), ("aclprofGetOpEnd", acl_prof.get_op_end),
                    ("aclprofGetOpDuration", acl_prof.get_op_duration), ("aclprofGetModelId", acl_prof.get_model_id)):
    c_function(_cname)(lambda opInfo, opInfoLen, index, _f=_fn: _f(opInfo, opInfoLen, index))


@c_function("aclprofDestroySubscribeConfig")
def aclprofDestroySubscribeConfig(profSubscribeConfig):
    return _c(acl_prof.destroy_subscribe_config(profSubscribeConfig), "aclprofDestroySubscribeConfig")


@c_function("aclprofGetOpDescSize")
def aclprofGetOpDescSize(opDescSize):
    if not opDescSize:
        raise null("opDescSize")
    size, ret = acl_prof.get_op_desc_size()
    if not ret:
        opDescSize[0] = size
    return _c(ret, "aclprofGetOpDescSize")


# ---------------------------------------------------------------- mstx
_domains: dict[int, tuple[str, object]] = {}
_ranges: dict[int, int] = {}       # mstx range id -> the profiler's range id
_ids = iter(range(1, 1 << 62))
_lock = fork_safe_lock()


def _stamped(message: int):
    """A stamp carrying `message` while a session runs; None otherwise (mstx is then a no-op)."""
    stamp = acl_prof.create_stamp()
    if not stamp:
        rt.get_recent_err_msg()  # not profiling: nothing to record, leave no error behind
        rt.get_last_error()
        return None
    text = cdata.string(message) or ""
    acl_prof.set_stamp_trace_message(stamp, text, len(text.encode()))
    return stamp


@c_function("mstxMarkA")
def mstxMarkA(message, stream):
    if not message:
        return
    text = cdata.string(message)
    if acl_prof.mark_ex(text, stream):
        rt.get_recent_err_msg()
        rt.get_last_error()


@c_function("mstxRangeStartA")
def mstxRangeStartA(message, stream):
    stamp = _stamped(message)
    if stamp is None:
        return 0  # MSTX_INVALID_RANGE_ID
    rid, ret = acl_prof.range_start(stamp)
    acl_prof.destroy_stamp(stamp)
    if ret:
        return 0
    with _lock:
        mid = next(_ids)
        _ranges[mid] = rid
    return mid


@c_function("mstxRangeEnd")
def mstxRangeEnd(id):  # noqa: A002 - the C parameter's name
    with _lock:
        rid = _ranges.pop(id, None)
    if rid is not None and acl_prof.range_stop(rid):
        rt.get_recent_err_msg()
        rt.get_last_error()


@c_function("mstxDomainCreateA")
def mstxDomainCreateA(name):
    block = cdata.ffi.new("char[8]")
    addr = int(cdata.ffi.cast("uintptr_t", block))
    _domains[addr] = (cdata.string(name) or "", block)
    return addr


@c_function("mstxDomainDestroy")
def mstxDomainDestroy(domain):
    _domains.pop(domain, None)


def _in_domain(domain, message):
    name = _domains.get(domain, ("", None))[0]
    text = cdata.string(message) or ""
    return f"{name}::{text}" if name else text


@c_function("mstxDomainMarkA")
def mstxDomainMarkA(domain, message, stream):
    if acl_prof.mark_ex(_in_domain(domain, message), stream):
        rt.get_recent_err_msg()
        rt.get_last_error()


@c_function("mstxDomainRangeStartA")
def mstxDomainRangeStartA(domain, message, stream):
    text = _in_domain(domain, message).encode()
    buf = cdata.ffi.new("char[]", text)
    return mstxRangeStartA(int(cdata.ffi.cast("uintptr_t", buf)), stream)


@c_function("mstxDomainRangeEnd")
def mstxDomainRangeEnd(domain, id):  # noqa: A002
    mstxRangeEnd(id)
