"""Virtual memory management operations (acl_rt.h: aclrtReserveMemAddress ... aclrtMemGetAllocationPropertiesFromHandle,
aclrtMemExportToShareableHandle / ImportFromShareableHandle).

The argument checks of the ACL layer (src/acl/aclrt_impl/memory.cpp: NULL outputs, size 0,
reserved flags and offsets, the physical memory properties) give ACL_ERROR_INVALID_PARAM;
the rest is the device's `VirtualMemory` (runtime/vmm.py). Physical memory handles are ints
of their own kind ("physical memory" handles), the same in the C and the pyACL face.

Sharing between processes: an exported handle is a record in the host's shared directory
(`shareable.py`) naming the exporting process, its file descriptor of the physical memory and
its allow-list; an importer opens the memory through /proc/<pid>/fd, so both processes map the
same pages.
"""
from __future__ import annotations

from .. import constants as C
from ..address import VA_BASE as C_VA_BASE
from ..context import current_context
from ..errors import FeatureNotSupportedError, InvalidValueError, ParamInvalidError
from ..handles import table
from ..runtime import RUNTIME
from .. import shareable
from ..vmm import ACCESS_NONE, ACCESS_READWRITE, GRANULARITY, PhysicalHandle
from .control import device_by_id

rt = RUNTIME
PHYSICAL = table("physical memory")

# aclrtMemAttr values aclrtMallocPhysical accepts (memory.cpp memAttrHandlers) and their page
_DEVICE_ATTRS = {C.ACL_HBM_MEM_HUGE: 2 << 20, C.ACL_HBM_MEM_NORMAL: 2 << 20, C.ACL_HBM_MEM_HUGE1G: 1 << 30,
                 C.ACL_MEM_NORMAL: 2 << 20, C.ACL_MEM_HUGE: 2 << 20, C.ACL_MEM_HUGE1G: 1 << 30}
_HOST_ONLY_ATTRS = {C.ACL_DDR_MEM_HUGE, C.ACL_DDR_MEM_NORMAL, C.ACL_DDR_MEM_P2P_HUGE, C.ACL_DDR_MEM_P2P_NORMAL}


def _int(value, what: str) -> int:
    if type(value) is not int or value < 0:
        raise InvalidValueError(f"{what} must be a non-negative int, got {value!r}")
    return value


def _prop(prop: dict) -> tuple[dict, int]:
    """The checked aclrtPhysicalMemProp (a dict: handleType, allocationType, memAttr,
    location {type, id}, reserve) and the granularity of its memory."""
    if not isinstance(prop, dict):
        raise InvalidValueError("prop must be an aclrtPhysicalMemProp (a dict), got "
                                f"{type(prop).__name__}")
    location = prop.get("location") or {}
    handle_type = prop.get("handleType", 0)
    alloc_type = prop.get("allocationType", 0)
    attr = prop.get("memAttr", C.ACL_HBM_MEM_HUGE)
    loc_type = location.get("type", C.ACL_MEM_LOCATION_TYPE_DEVICE)
    if handle_type != C.ACL_MEM_HANDLE_TYPE_NONE:
        raise InvalidValueError(f"prop.handleType is {handle_type!r}; it must be ACL_MEM_HANDLE_TYPE_NONE (0)")
    if alloc_type != C.ACL_MEM_ALLOCATION_TYPE_PINNED:
        raise InvalidValueError(f"prop.allocationType is {alloc_type!r}; it must be ACL_MEM_ALLOCATION_TYPE_PINNED (0)")
    if loc_type in (C.ACL_MEM_LOCATION_TYPE_UNREGISTERED, C.ACL_MEM_LOCATION_TYPE_MANAGED):
        raise InvalidValueError(f"prop.location.type {loc_type}: location type does not support "
                                "unregistered or managed memory")
    if loc_type == C.ACL_MEM_LOCATION_TYPE_DEVICE and attr in _HOST_ONLY_ATTRS:
        raise InvalidValueError(f"memAttr {attr} (DDR) only supports MEM_LOCATION_TYPE_HOST(0) or "
                                "MEM_LOCATION_TYPE_HOST_NUMA(4)")
    if attr not in _DEVICE_ATTRS and attr not in _HOST_ONLY_ATTRS:
        raise InvalidValueError(f"memAttr {attr!r}: the current physical memory attribute is not supported")
    if loc_type != C.ACL_MEM_LOCATION_TYPE_DEVICE:
        raise FeatureNotSupportedError("host physical memory (location type host / host NUMA) is not simulated; "
                                       "use ACL_MEM_LOCATION_TYPE_DEVICE", C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
    out = {"handleType": handle_type, "allocationType": alloc_type, "memAttr": attr,
           "location": {"type": loc_type, "id": location.get("id", 0)}, "reserve": prop.get("reserve", 0)}
    return out, max(_DEVICE_ATTRS.get(attr, GRANULARITY), GRANULARITY)


def _device_of_prop(prop: dict):
    return device_by_id(prop["location"]["id"])


def mem_get_allocation_granularity(prop: dict, option: int) -> int:
    """The granularity of physical memory with these properties: 2 MiB (1 GiB for the HUGE1G
    attributes), for both ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM and _RECOMMENDED."""
    rt.check_initialized()
    checked, granularity = _prop(prop)
    if option not in (C.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, C.ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED):
        raise ParamInvalidError(f"granularity option {option!r} is not MINIMUM (0) or RECOMMENDED (1)")
    _device_of_prop(checked)
    return granularity


def physical_of(handle: int) -> PhysicalHandle:
    if not handle:
        raise InvalidValueError("handle is NULL")
    return PHYSICAL.get(handle)


def malloc_physical(size: int, prop: dict, flags: int = 0) -> int:
    """aclrtMallocPhysical: a handle to `size` bytes of physical memory of prop's device."""
    rt.check_initialized()
    size = _int(size, "size")
    if size == 0:
        raise InvalidValueError("size must be positive")
    if flags != 0:
        raise InvalidValueError(f"flags is reserved and must be 0, got {flags!r}")
    checked, granularity = _prop(prop)
    device = _device_of_prop(checked)
    if size % granularity:
        raise ParamInvalidError(
            f"physical memory size {size} is not a multiple of the allocation granularity {granularity} "
            "(aclrtMemGetAllocationGranularity)")
    handle = device.vmm.malloc_physical(size, checked)
    handle.handle = PHYSICAL.add(handle)
    handle.on_release = _forget
    return handle.handle


def _forget(handle: PhysicalHandle) -> None:
    if handle.export is not None:
        shareable.withdraw(handle.export)
        handle.export = None
    PHYSICAL.remove(handle.handle)


def free_physical(handle: int) -> None:
    """aclrtFreePhysical; memory still mapped is released at its last aclrtUnmapMem."""
    rt.check_initialized()
    h = physical_of(handle)
    h.device.vmm.free_physical(h)


def reserve_mem_address(size: int, alignment: int = 0, expect_ptr: int = 0, flags: int = 0) -> int:
    """aclrtReserveMemAddress on the current device: `size` (rounded up to the granularity)
    bytes of device addresses holding nothing yet."""
    device = current_context().device
    size = _int(size, "size")
    if size == 0:
        raise InvalidValueError("size must be positive")
    if flags not in (0, 1):  # 1: kept for compatibility with early versions (memory.cpp)
        raise InvalidValueError(f"flags must be 0, got {flags!r}")
    if alignment not in (0, None):
        _int(alignment, "alignment")
    return device.vmm.reserve(size, _int(expect_ptr or 0, "expectPtr"))


def _vmm_of(va, what: str):
    if not va:
        raise InvalidValueError(f"{what}: virPtr is NULL")
    if type(va) is not int:
        raise InvalidValueError(f"{what}: virPtr must be an address int, got {type(va).__name__}")
    device = rt.device_by_physical.get((va - C_VA_BASE) >> 40) if va >= C_VA_BASE else None
    if device is None or not device.vmm.base <= va < device.vmm.end:
        raise ParamInvalidError(f"{what}: 0x{va:x} is not an address reserved with aclrtReserveMemAddress")
    return device.vmm


def release_mem_address(va: int) -> None:
    rt.check_initialized()
    _vmm_of(va, "aclrtReleaseMemAddress").release(va)


def map_mem(va: int, size: int, offset: int, handle: int, flags: int = 0) -> None:
    """aclrtMapMem: all of physical memory `handle` at `va` of a reserved range, readable and
    writable by the device."""
    _map(va, size, offset, handle, flags, ACCESS_READWRITE)


def mem_map_no_access(va: int, size: int, offset: int, handle: int, flags: int = 0) -> None:
    """aclrtMemMapNoAccess: as map_mem with no access until aclrtMemSetAccess grants it."""
    _map(va, size, offset, handle, flags, ACCESS_NONE)


def _map(va, size, offset, handle, flags, access) -> None:
    rt.check_initialized()
    vmm = _vmm_of(va, "aclrtMapMem")
    h = physical_of(handle)
    size = _int(size, "size")
    if size == 0:
        raise InvalidValueError("size must be positive")
    if flags != 0:
        raise InvalidValueError(f"flags must be 0, got {flags!r}")
    if offset != 0:
        raise ParamInvalidError(f"offset must be 0 (a mapping starts at the physical memory's start), got {offset!r}")
    vmm.map(va, size, h, access)


def unmap_mem(va: int) -> None:
    rt.check_initialized()
    _vmm_of(va, "aclrtUnmapMem").unmap(va)


def mem_set_access(va: int, size: int, descs: list) -> None:
    """aclrtMemSetAccess: `descs` is a list of aclrtMemAccessDesc dicts {flags, location}."""
    rt.check_initialized()
    vmm = _vmm_of(va, "aclrtMemSetAccess")
    size = _int(size, "size")
    if not descs:
        raise InvalidValueError("aclrtMemSetAccess: desc is NULL or count is 0")
    access = None
    for desc in descs:
        loc = desc.get("location") or {}
        if loc.get("type", C.ACL_MEM_LOCATION_TYPE_DEVICE) != C.ACL_MEM_LOCATION_TYPE_DEVICE:
            raise InvalidValueError("aclrtMemSetAccess: only device locations (ACL_MEM_LOCATION_TYPE_DEVICE) "
                                    "are simulated")
        if loc.get("id", 0) != vmm.device.id:
            raise ParamInvalidError(f"aclrtMemSetAccess: location id {loc.get('id')} is not the device "
                                    f"({vmm.device.id}) of the reserved range")
        access = desc.get("flags", ACCESS_READWRITE)
    vmm.set_access(va, size, access)


def mem_get_access(va: int) -> tuple[dict, int]:
    """aclrtMemGetAccess: (location {type, id}, flags) of the mapping at `va`."""
    rt.check_initialized()
    vmm = _vmm_of(va, "aclrtMemGetAccess")
    return {"type": C.ACL_MEM_LOCATION_TYPE_DEVICE, "id": vmm.device.id}, vmm.get_access(va)


def mem_retain_allocation_handle(va: int) -> int:
    """aclrtMemRetainAllocationHandle: the physical memory handle mapped at `va`."""
    rt.check_initialized()
    return _vmm_of(va, "aclrtMemRetainAllocationHandle").handle_at(va).handle


def mem_get_allocation_properties_from_handle(handle: int) -> dict:
    rt.check_initialized()
    return dict(physical_of(handle).prop)


# ---------------------------------------------------------------- sharing between processes
def mem_export_to_shareable_handle(handle: int, handle_type: int = 0, flags: int = 0) -> int:
    """aclrtMemExportToShareableHandle: a host-wide id another process imports; flags 0 checks
    the importer's pid against the allow-list (aclrtMemSetPidToShareableHandle), 1 does not."""
    rt.check_initialized()
    h = physical_of(handle)
    if handle_type != C.ACL_MEM_HANDLE_TYPE_NONE:
        raise InvalidValueError(f"handleType must be ACL_MEM_HANDLE_TYPE_NONE (0), got {handle_type!r}")
    if flags not in (C.ACL_RT_VMM_EXPORT_FLAG_DEFAULT, C.ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION):
        raise ParamInvalidError(f"flags {flags!r} is not in [0, 1]")
    if h.imported_from is not None:
        raise ParamInvalidError("this handle was imported; only the process that created the physical memory "
                                "exports it")
    if h.export is not None:
        raise ParamInvalidError(f"this physical memory was already exported (shareable handle {h.export}); a "
                                "handle and its shareable handle are one to one")
    h.export = shareable.publish(h.memory.fd, h.size, h.device.backend.physical_id, h.prop,
                                 validate=flags == C.ACL_RT_VMM_EXPORT_FLAG_DEFAULT)
    return h.export


def mem_set_pid_to_shareable_handle(shareable_handle: int, pids: list) -> None:
    rt.check_initialized()
    if not pids:
        raise InvalidValueError("pid is NULL or pidNum is 0")
    shareable.allow(_int(shareable_handle, "shareableHandle"), [int(p) for p in pids])


def mem_import_from_shareable_handle(shareable_handle: int, device_id: int) -> int:
    """aclrtMemImportFromShareableHandle: this process's handle to another process's exported
    physical memory (the same pages)."""
    rt.check_initialized()
    device = device_by_id(device_id)
    memory, record = shareable.open_shared(_int(shareable_handle, "shareableHandle"))
    if record["device"] != device.backend.physical_id:
        memory.close()
        raise ParamInvalidError(f"shareable handle {shareable_handle} is memory of physical device "
                                f"{record['device']}, not of device {device_id}")
    h = device.vmm.adopt(memory, record["prop"], (record["pid"], shareable_handle))
    h.handle = PHYSICAL.add(h)
    h.on_release = _forget
    return h.handle


__all__ = [
    "mem_get_allocation_granularity", "malloc_physical", "free_physical", "reserve_mem_address",
    "release_mem_address", "map_mem", "mem_map_no_access", "unmap_mem", "mem_set_access", "mem_get_access",
    "mem_retain_allocation_handle", "mem_get_allocation_properties_from_handle",
    "mem_export_to_shareable_handle", "mem_set_pid_to_shareable_handle", "mem_import_from_shareable_handle",
    "physical_of",
]
