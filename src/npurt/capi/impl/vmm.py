"""Virtual memory management (acl_rt.h: aclrtReserveMemAddress ... aclrtMemGetAllocationPropertiesFromHandle,
the shareable-handle calls), over the runtime's VMM operations (npurt.runtime api/vmm.py).
An aclrtDrvMemHandle is the runtime's physical-memory handle int."""
from __future__ import annotations

import struct

from ... import runtime as rt
from ...runtime import constants as C
from .. import cdata
from ..registry import c_function
from ._common import null


def _prop(addr: int) -> dict:
    if not addr:
        raise null("prop")
    p = cdata.struct("aclrtPhysicalMemProp *", addr)
    return {"handleType": p.handleType, "allocationType": p.allocationType, "memAttr": p.memAttr,
            "location": {"type": p.location.type, "id": p.location.id}, "reserve": p.reserve}


@c_function("aclrtMemGetAllocationGranularity")
def aclrtMemGetAllocationGranularity(prop, option, granularity):
    if not granularity:
        raise null("granularity")
    granularity[0] = rt.mem_get_allocation_granularity(_prop(prop), option)
    return 0


@c_function("aclrtMallocPhysical")
def aclrtMallocPhysical(handle, size, prop, flags):
    if not handle:
        raise null("handle")
    handle[0] = rt.malloc_physical(size, _prop(prop), flags)
    return 0


@c_function("aclrtFreePhysical")
def aclrtFreePhysical(handle):
    rt.free_physical(handle)
    return 0


@c_function("aclrtReserveMemAddress")
def aclrtReserveMemAddress(virPtr, size, alignment, expectPtr, flags):
    if not virPtr:
        raise null("virPtr")
    virPtr[0] = rt.reserve_mem_address(size, alignment, expectPtr, flags)
    return 0


@c_function("aclrtReleaseMemAddress")
def aclrtReleaseMemAddress(virPtr):
    rt.release_mem_address(virPtr)
    return 0


@c_function("aclrtMapMem")
def aclrtMapMem(virPtr, size, offset, handle, flags):
    rt.map_mem(virPtr, size, offset, handle, flags)
    return 0


@c_function("aclrtMemMapNoAccess")
def aclrtMemMapNoAccess(virPtr, size, offset, handle, flags):
    rt.mem_map_no_access(virPtr, size, offset, handle, flags)
    return 0


@c_function("aclrtUnmapMem")
def aclrtUnmapMem(virPtr):
    rt.unmap_mem(virPtr)
    return 0


@c_function("aclrtMemSetAccess")
def aclrtMemSetAccess(virPtr, size, desc, count):
    if not desc:
        raise null("desc")
    descs = []
    for d in cdata.array("aclrtMemAccessDesc", desc, count):
        descs.append({"flags": d.flags, "location": {"type": d.location.type, "id": d.location.id}})
    rt.mem_set_access(virPtr, size, descs)
    return 0


@c_function("aclrtMemGetAccess")
def aclrtMemGetAccess(virPtr, location, flag):
    if not location:
        raise null("location")
    if not flag:
        raise null("flag")
    loc, flags = rt.mem_get_access(virPtr)
    out = cdata.struct("aclrtMemLocation *", location)
    out.type, out.id = loc["type"], loc["id"]
    flag[0] = flags
    return 0


@c_function("aclrtMemRetainAllocationHandle")
def aclrtMemRetainAllocationHandle(virPtr, handle):
    if not handle:
        raise null("handle")
    handle[0] = rt.mem_retain_allocation_handle(virPtr)
    return 0


@c_function("aclrtMemGetAllocationPropertiesFromHandle")
def aclrtMemGetAllocationPropertiesFromHandle(handle, prop):
    if not prop:
        raise null("prop")
    got = rt.mem_get_allocation_properties_from_handle(handle)
    out = cdata.struct("aclrtPhysicalMemProp *", prop)
    out.handleType, out.allocationType, out.memAttr = got["handleType"], got["allocationType"], got["memAttr"]
    out.location.type, out.location.id = got["location"]["type"], got["location"]["id"]
    out.reserve = got["reserve"]
    return 0


@c_function("aclrtMemExportToShareableHandle")
def aclrtMemExportToShareableHandle(handle, handleType, flags, shareableHandle):
    if not handle:
        raise null("handle")
    if not shareableHandle:
        raise null("shareableHandle")
    shareableHandle[0] = rt.mem_export_to_shareable_handle(handle, handleType, flags)
    return 0


@c_function("aclrtMemSetPidToShareableHandle")
def aclrtMemSetPidToShareableHandle(shareableHandle, pid, pidNum):
    if not pid:
        raise null("pid")
    rt.mem_set_pid_to_shareable_handle(shareableHandle, [pid[i] for i in range(pidNum)])
    return 0


@c_function("aclrtMemImportFromShareableHandle")
def aclrtMemImportFromShareableHandle(shareableHandle, deviceId, handle):
    if not handle:
        raise null("handle")
    handle[0] = rt.mem_import_from_shareable_handle(shareableHandle, deviceId)
    return 0


# ---------------------------------------------------------------- the V2 calls: a shareable handle by reference
# ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT: the uint64 shareable handle; _FABRIC: an aclrtMemFabricHandle
# (128 bytes) that carries it. npurt shares memory between the processes of one host, so a fabric
# handle works on loopback (the server/client sample's flow), not between hosts.
_FABRIC_MAGIC = b"npurtFAB"
_SHARE_TYPES = (C.ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, C.ACL_MEM_SHARE_HANDLE_TYPE_FABRIC)


def _share_type(shareType) -> int:
    if shareType not in _SHARE_TYPES:
        raise rt.InvalidValueError(f"shareType {shareType!r} is not ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT (1) or "
                                   "ACL_MEM_SHARE_HANDLE_TYPE_FABRIC (2)")
    return shareType


def _read_shared(addr: int, shareType: int) -> int:
    if shareType == C.ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT:
        return struct.unpack("<Q", cdata.read(addr, 8))[0]
    raw = cdata.read(addr, 128)
    if raw[:8] != _FABRIC_MAGIC:
        raise rt.ParamInvalidError("the aclrtMemFabricHandle does not hold a handle npurt exported")
    return struct.unpack("<Q", raw[8:16])[0]


@c_function("aclrtMemExportToShareableHandleV2")
def aclrtMemExportToShareableHandleV2(handle, flags, shareType, shareableHandle):
    if not handle:
        raise null("handle")
    if not shareableHandle:
        raise null("shareableHandle")
    shareType = _share_type(shareType)
    value = rt.mem_export_to_shareable_handle(handle, C.ACL_MEM_HANDLE_TYPE_NONE, flags)
    if shareType == C.ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT:
        cdata.write(shareableHandle, struct.pack("<Q", value))
    else:
        cdata.write(shareableHandle, (_FABRIC_MAGIC + struct.pack("<Q", value)).ljust(128, b"\0"))
    return 0


@c_function("aclrtMemImportFromShareableHandleV2")
def aclrtMemImportFromShareableHandleV2(shareableHandle, shareType, flags, handle):
    if not shareableHandle:
        raise null("shareableHandle")
    if not handle:
        raise null("handle")
    if flags != 0:
        raise rt.InvalidValueError(f"flags is reserved and must be 0, got {flags}")
    value = _read_shared(shareableHandle, _share_type(shareType))
    handle[0] = rt.mem_import_from_shareable_handle(value, rt.current_context().device.id)
    return 0


@c_function("aclrtMemSetPidToShareableHandleV2")
def aclrtMemSetPidToShareableHandleV2(shareableHandle, shareType, pid, pidNum):
    if not shareableHandle:
        raise null("shareableHandle")
    if not pid:
        raise null("pid")
    value = _read_shared(shareableHandle, _share_type(shareType))
    rt.mem_set_pid_to_shareable_handle(value, [pid[i] for i in range(pidNum)])
    return 0


@c_function("aclrtMemP2PMap")
def aclrtMemP2PMap(devPtr, size, dstDevId, flags):
    """Page tables for another device's access (11-05_unified_addressing.md): simulated device
    memory needs none, so the range and the device are validated and nothing else happens;
    peer access itself is still aclrtDeviceEnablePeerAccess's."""
    if not devPtr:
        raise null("devPtr")
    if flags != 0:
        raise rt.InvalidValueError(f"flags is reserved and must be 0, got {flags}")
    rt.check_device_id(dstDevId)
    rt.check_device_range(devPtr, size, "aclrtMemP2PMap")
    return 0
