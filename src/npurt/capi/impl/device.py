"""Devices (acl_rt.h: aclrtSetDevice ... aclrtGetDeviceInfo), peer access, device limits,
overflow detection and system parameters, over the runtime's device operations."""
from __future__ import annotations

from ... import runtime as rt
from .. import cdata
from ..errors import snake
from ..registry import c_function
from ._common import null, stream_of


def _out(p, name, value):
    if not p:
        raise null(name)
    p[0] = value
    return 0


@c_function("aclrtSetDevice")
def aclrtSetDevice(deviceId):
    rt.set_device(deviceId)
    return 0


@c_function("aclrtResetDevice")
def aclrtResetDevice(deviceId):
    rt.reset_device(deviceId)
    return 0


@c_function("aclrtResetDeviceForce")
def aclrtResetDeviceForce(deviceId):
    rt.reset_device_force(deviceId)
    return 0


@c_function("aclrtGetDevice")
def aclrtGetDevice(deviceId):
    if not deviceId:
        raise null("deviceId")
    deviceId[0] = rt.get_device()
    return 0


@c_function("aclrtGetDeviceCount")
def aclrtGetDeviceCount(count):
    return _out(count, "count", rt.get_device_count())


@c_function("aclrtSetTsDevice")
def aclrtSetTsDevice(tsId):
    rt.set_ts_device(tsId)
    return 0


@c_function("aclrtSynchronizeDevice")
def aclrtSynchronizeDevice():
    rt.synchronize_device()
    return 0


@c_function("aclrtSynchronizeDeviceWithTimeout")
def aclrtSynchronizeDeviceWithTimeout(timeout):
    rt.synchronize_device(timeout)
    return 0


@c_function("aclrtDeviceCanAccessPeer")
def aclrtDeviceCanAccessPeer(canAccessPeer, deviceId, peerDeviceId):
    return _out(canAccessPeer, "canAccessPeer", rt.device_can_access_peer(deviceId, peerDeviceId))


@c_function("aclrtDeviceEnablePeerAccess")
def aclrtDeviceEnablePeerAccess(peerDeviceId, flags):
    rt.device_enable_peer_access(peerDeviceId, flags)
    return 0


@c_function("aclrtDeviceDisablePeerAccess")
def aclrtDeviceDisablePeerAccess(peerDeviceId):
    rt.device_disable_peer_access(peerDeviceId)
    return 0


@c_function("aclrtDevicePeerAccessStatus")
def aclrtDevicePeerAccessStatus(deviceId, peerDeviceId, status):
    return _out(status, "status", rt.device_peer_access_status(deviceId, peerDeviceId))


@c_function("aclrtGetDeviceInfo")
def aclrtGetDeviceInfo(deviceId, attr, value):
    return _out(value, "value", rt.get_device_info(deviceId, attr))


@c_function("aclrtGetDeviceCapability")
def aclrtGetDeviceCapability(deviceId, devFeatureType, value):
    return _out(value, "value", rt.get_device_capability(deviceId, devFeatureType))


@c_function("aclrtQueryDeviceStatus")
def aclrtQueryDeviceStatus(deviceId, deviceStatus):
    return _out(deviceStatus, "deviceStatus", rt.query_device_status(deviceId))


@c_function("aclrtSetDeviceSatMode")
def aclrtSetDeviceSatMode(mode):
    rt.set_device_sat_mode(mode)
    return 0


@c_function("aclrtGetDeviceSatMode")
def aclrtGetDeviceSatMode(mode):
    return _out(mode, "mode", rt.get_device_sat_mode())


@c_function("aclrtGetOverflowStatus")
def aclrtGetOverflowStatus(outputAddr, outputSize, stream):
    rt.get_overflow_status(outputAddr, outputSize, stream_of(stream))
    return 0


@c_function("aclrtResetOverflowStatus")
def aclrtResetOverflowStatus(stream):
    rt.reset_overflow_status(stream_of(stream))
    return 0


@c_function("aclrtDeviceGetStreamPriorityRange")
def aclrtDeviceGetStreamPriorityRange(leastPriority, greatestPriority):
    least, greatest = rt.device_get_stream_priority_range()
    _out(leastPriority, "leastPriority", least)
    return _out(greatestPriority, "greatestPriority", greatest)


@c_function("aclrtGetDevicesTopo")
def aclrtGetDevicesTopo(deviceId, otherDeviceId, value):
    return _out(value, "value", rt.get_devices_topo(deviceId, otherDeviceId))


@c_function("aclrtGetLogicDevIdByUserDevId")
def aclrtGetLogicDevIdByUserDevId(userDevid, logicDevId):
    return _out(logicDevId, "logicDevId", rt.get_logic_dev_id_by_user_dev_id(userDevid))


@c_function("aclrtGetUserDevIdByLogicDevId")
def aclrtGetUserDevIdByLogicDevId(logicDevId, userDevid):
    return _out(userDevid, "userDevid", rt.get_user_dev_id_by_logic_dev_id(logicDevId))


@c_function("aclrtGetLogicDevIdByPhyDevId")
def aclrtGetLogicDevIdByPhyDevId(phyDevId, logicDevId):
    return _out(logicDevId, "logicDevId", rt.get_logic_dev_id_by_phy_dev_id(phyDevId))


@c_function("aclrtGetPhyDevIdByLogicDevId")
def aclrtGetPhyDevIdByLogicDevId(logicDevId, phyDevId):
    return _out(phyDevId, "phyDevId", rt.get_phy_dev_id_by_logic_dev_id(logicDevId))


@c_function("aclrtDeviceGetBareTgid")
def aclrtDeviceGetBareTgid(pid):
    return _out(pid, "pid", rt.device_get_bare_tgid())


@c_function("aclrtDeviceSetLimit")
def aclrtDeviceSetLimit(limit, value):
    rt.device_set_limit(limit, value)
    return 0


@c_function("aclrtDeviceGetLimit")
def aclrtDeviceGetLimit(limit, value):
    return _out(value, "value", rt.device_get_limit(limit))


@c_function("aclrtDeviceGetUuid")
def aclrtDeviceGetUuid(deviceId, uuid):
    if not uuid:
        raise null("uuid")
    data = bytes(rt.device_get_uuid(deviceId)["bytes"])
    cdata.write(uuid, data[:16].ljust(16, b"\0"))
    return 0


@c_function("aclrtGetDeviceUtilizationRate")
def aclrtGetDeviceUtilizationRate(deviceId, utilizationInfo):
    if not utilizationInfo:
        raise null("utilizationInfo")
    rates = rt.get_device_utilization_rate(deviceId)
    info = cdata.struct("aclrtUtilizationInfo *", utilizationInfo)
    for field in ("cubeUtilization", "vectorUtilization", "aicpuUtilization", "memoryUtilization"):
        setattr(info, field, rates[snake(field)])
    return 0


@c_function("aclrtSetSysParamOpt")
def aclrtSetSysParamOpt(opt, value):
    rt.set_sys_param_opt(opt, value)
    return 0


@c_function("aclrtGetSysParamOpt")
def aclrtGetSysParamOpt(opt, value):
    return _out(value, "value", rt.get_sys_param_opt(opt))


@c_function("aclrtCtxSetSysParamOpt")
def aclrtCtxSetSysParamOpt(opt, value):
    rt.ctx_set_sys_param_opt(opt, value)
    return 0


@c_function("aclrtCtxGetSysParamOpt")
def aclrtCtxGetSysParamOpt(opt, value):
    return _out(value, "value", rt.ctx_get_sys_param_opt(opt))


@c_function("aclrtGetFloatOverflowStatus")
def aclrtGetFloatOverflowStatus(outputAddr, outputSize, stream):
    rt.get_overflow_status(outputAddr, outputSize, stream_of(stream))
    return 0


@c_function("aclrtResetFloatOverflowStatus")
def aclrtResetFloatOverflowStatus(stream):
    rt.reset_overflow_status(stream_of(stream))
    return 0


@c_function("aclrtGetPhyDevIdByUserDevId")
def aclrtGetPhyDevIdByUserDevId(userDevId, phyDevId):
    logic = rt.get_logic_dev_id_by_user_dev_id(userDevId)
    return _out(phyDevId, "phyDevId", rt.get_phy_dev_id_by_logic_dev_id(logic))


@c_function("aclrtGetUserDevIdByPhyDevId")
def aclrtGetUserDevIdByPhyDevId(phyDevId, userDevId):
    logic = rt.get_logic_dev_id_by_phy_dev_id(phyDevId)
    return _out(userDevId, "userDevId", rt.get_user_dev_id_by_logic_dev_id(logic))


@c_function("aclGetDeviceCapability")
def aclGetDeviceCapability(deviceId, deviceInfo, value):
    """ACL_DEVICE_INFO_AI_CORE_NUM, _VECTOR_CORE_NUM or _L2_SIZE of a device (acl.get_device_capability)."""
    if not value:
        raise null("value")
    value[0] = rt.get_hardware_info(deviceId, deviceInfo)
    return 0
