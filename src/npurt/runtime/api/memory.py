"""Memory: device and host allocation, pointer attributes, copies and sets."""
from __future__ import annotations

from .. import address, graph, memops
from .. import constants as C
from ..context import _thread, current_context
from ..device import Device
from ..errors import InvalidValueError
from ..managed import MANAGED
from ..memory import HUGE1G_PAGE, HUGE_PAGE, LIVE, NORMAL_PAGE
from ..observers import HOOKS
from ..runtime import RUNTIME
from ..stream import Stream, copy_d2d
from .streams import stream_of

rt = RUNTIME
_VA_BASE = address.VA_BASE


# ================================================================ device memory
def malloc(size: int, policy: int = C.ACL_MEM_MALLOC_HUGE_FIRST, align32: bool = False) -> int:
    """Allocate device memory on the current device; a 64-byte aligned device address."""
    ctx = _thread.context
    if ctx is None or not ctx.alive:
        ctx = current_context()
    if HOOKS.active:
        return malloc_on(ctx.device, size, policy, align32)
    return ctx.memory.malloc(size, policy, align32)  # the hot path: one call less


def malloc_on(device: Device, size: int, policy: int = C.ACL_MEM_MALLOC_HUGE_FIRST,
              align32: bool = False, managed: bool = False) -> int:
    """malloc on a given device, whatever the calling thread's current context. `managed`:
    a Python object owns the memory and frees it when collected (tools do not report it as
    a leak at exit)."""
    addr = device.memory.malloc(size, policy, align32)
    if HOOKS.active:
        HOOKS.emit("mem_alloc", device=device, addr=addr, size=size, managed=managed)
    return addr


def free(ptr: int, managed: bool = False) -> None:
    """Free device memory (any device; the address says which). Stream-ordered: memory that
    queued work still uses is reused only after that work has finished. `managed`: the
    caller relies on that ordering by design (a collected DeviceArray); a plain free, as
    aclrtFree on an NPU, does not wait, so tools report one that unfinished work races."""
    if type(ptr) is int and ptr >= _VA_BASE and not HOOKS.active:  # fast path: a device address
        device = rt.device_by_physical.get((ptr - _VA_BASE) >> 40)
        if device is not None:
            device.memory.free(ptr)
            return
    if type(ptr) is int and 0 < ptr < _VA_BASE and MANAGED.find(ptr) is not None:
        MANAGED.free(ptr)  # aclrtFree frees managed memory too
        return
    if not HOOKS.active:
        _device_of(ptr, "free").memory.free(ptr)
        return
    try:
        device = _device_of(ptr, "free")
    except InvalidValueError as exc:
        HOOKS.emit("mem_error", kind="invalid_free", addr=ptr, nbytes=0, device=None, message=exc.message,
                   task=None)
        raise
    block = device.memory.live.get(ptr)
    if block is None:
        try:
            device.memory.free(ptr)  # raises the runtime's error for this address
        except InvalidValueError as exc:
            HOOKS.emit("mem_error", kind="invalid_free", addr=ptr, nbytes=0, device=device,
                       message=exc.message, task=None)
            raise
        return
    HOOKS.emit("mem_free", device=device, addr=ptr, size=block.requested, managed=managed,
               uses=dict(block.uses or {}))
    device.memory.free(ptr)


def _device_of(ptr, call: str) -> Device:
    rt.check_initialized()
    if type(ptr) is not int:
        raise InvalidValueError(f"{call} expects a device address int, got {type(ptr).__name__}")
    if ptr < address.VA_BASE:
        if ptr == 0:
            raise InvalidValueError(f"{call}: null pointer")
        raise InvalidValueError(f"{call}(0x{ptr:x}): that is a host address; device memory comes from "
                                "malloc, host memory from malloc_host is freed with free_host")
    device = rt.device_by_physical.get(address.physical_device(ptr))
    if device is None:
        raise InvalidValueError(f"{call}(0x{ptr:x}): the address belongs to no visible device")
    return device


def get_mem_info(attr: int) -> tuple[int, int]:
    """(free, total) bytes of the current device for an aclrtMemAttr; (0, 0) for memory
    kinds this SoC does not have."""
    device = current_context().device
    arena = device.backend
    kind = device.spec.memory_kind
    hbm = {C.ACL_HBM_MEM, C.ACL_HBM_MEM_HUGE, C.ACL_HBM_MEM_NORMAL, C.ACL_HBM_MEM_P2P_HUGE,
           C.ACL_HBM_MEM_P2P_NORMAL, C.ACL_HBM_MEM_HUGE1G, C.ACL_HBM_MEM_P2P_HUGE1G}
    ddr = {C.ACL_DDR_MEM, C.ACL_DDR_MEM_HUGE, C.ACL_DDR_MEM_NORMAL, C.ACL_DDR_MEM_P2P_HUGE,
           C.ACL_DDR_MEM_P2P_NORMAL}
    auto = set(range(C.ACL_MEM_NORMAL, C.ACL_MEM_P2P_HUGE1G + 1))
    if type(attr) is not int or attr not in hbm | ddr | auto:
        raise InvalidValueError(f"unknown memory attribute {attr!r} (see aclrtMemAttr)")
    if attr in ddr and kind == "HBM":
        return 0, 0
    names = {C.ACL_HBM_MEM_HUGE: HUGE_PAGE, C.ACL_HBM_MEM_P2P_HUGE: HUGE_PAGE, C.ACL_DDR_MEM_HUGE: HUGE_PAGE,
             C.ACL_DDR_MEM_P2P_HUGE: HUGE_PAGE, C.ACL_MEM_HUGE: HUGE_PAGE, C.ACL_MEM_P2P_HUGE: HUGE_PAGE,
             C.ACL_HBM_MEM_HUGE1G: HUGE1G_PAGE, C.ACL_HBM_MEM_P2P_HUGE1G: HUGE1G_PAGE,
             C.ACL_MEM_HUGE1G: HUGE1G_PAGE, C.ACL_MEM_P2P_HUGE1G: HUGE1G_PAGE}
    page = names.get(attr, NORMAL_PAGE)
    device.memory.collect_pending()  # a stream-ordered free whose work is done counts as free
    with device.memory.lock:  # bins may gain entries concurrently
        cached = sum(b.size for pool in device.memory.pools.values()
                     for lst in list(pool.bins.values()) for b in list(lst))
    free = arena.free_bytes + cached
    return free // page * page, arena.usable  # total: without the system's reserve


def empty_cache(device: Device | None = None) -> None:
    """Give the caching pool's unused segments back to the driver (and the OS)."""
    (device or current_context().device).memory.empty_cache()


def memory_stats(device: Device | None = None) -> dict:
    return (device or current_context().device).memory.stats()


def pointer_get_attributes(ptr: int) -> dict:
    """Where `ptr` lives: {"location": {"id", "type"}, "page_size", "rsv"} plus npurt extras
    ("allocation": start of the allocation holding it, "size": its size)."""
    rt.check_initialized()
    if type(ptr) is not int:
        raise InvalidValueError(f"pointer_get_attributes expects an int address, got {type(ptr).__name__}")
    if ptr >= address.VA_BASE:
        device = rt.device_by_physical.get(address.physical_device(ptr))
        if device is None:
            raise InvalidValueError(f"0x{ptr:x} belongs to no visible device")
        if address.is_host_alias(ptr):
            return {"location": {"id": device.id, "type": C.ACL_MEM_LOCATION_TYPE_DEVICE},
                    "page_size": 4096, "rsv": [0, 0, 0, 0], "allocation": ptr, "size": 0}
        block = device.memory.find(ptr)
        if block is None or block.state != LIVE:
            raise InvalidValueError(memops.dead_address_message(device, ptr, block, "queried"))
        if block.segment is None:  # mapped VMM memory: its reserved range is the allocation
            return {"location": {"id": device.id, "type": C.ACL_MEM_LOCATION_TYPE_DEVICE},
                    "page_size": HUGE_PAGE, "rsv": [0, 0, 0, 0], "allocation": block.reservation.va,
                    "size": block.reservation.size}
        return {"location": {"id": device.id, "type": C.ACL_MEM_LOCATION_TYPE_DEVICE},
                "page_size": block.segment.page, "rsv": [0, 0, 0, 0], "allocation": block.addr,
                "size": block.requested}
    if ptr <= 0:
        raise InvalidValueError("pointer_get_attributes: null or negative address")
    managed = MANAGED.find(ptr)
    if managed is not None:
        return {"location": {"id": managed.device_id, "type": C.ACL_MEM_LOCATION_TYPE_MANAGED},
                "page_size": HUGE_PAGE, "rsv": [0, 0, 0, 0], "allocation": managed.addr, "size": managed.asked}
    rng = rt.host.find(ptr)
    if rng is None:
        return {"location": {"id": 0, "type": C.ACL_MEM_LOCATION_TYPE_UNREGISTERED},
                "page_size": 4096, "rsv": [0, 0, 0, 0], "allocation": 0, "size": 0}
    return {"location": {"id": 0, "type": C.ACL_MEM_LOCATION_TYPE_HOST},
            "page_size": 4096, "rsv": [0, 0, 0, 0], "allocation": rng.addr, "size": rng.size}


# ================================================================ host memory
def malloc_host(size: int, managed: bool = False) -> int:
    """Page-locked (here: its own page-aligned mapping) host memory; a usable host pointer.
    Needs a current context, as ApiImpl::HostMalloc does."""
    current_context()
    addr = rt.host.malloc(size)
    if HOOKS.active:
        HOOKS.emit("mem_alloc", device=None, addr=addr, size=size, managed=managed)
    return addr


def free_host(ptr: int, managed: bool = False) -> None:
    rt.check_initialized()
    if HOOKS.active:
        rng = rt.host.ranges.get(ptr) if type(ptr) is int else None
        if rng is None or rng.registered:
            try:
                rt.host.free(ptr)  # raises the runtime's error for this address
            except InvalidValueError as exc:
                HOOKS.emit("mem_error", kind="invalid_free", addr=ptr, nbytes=0, device=None,
                           message=exc.message, task=None)
                raise
            return
        HOOKS.emit("mem_free", device=None, addr=ptr, size=rng.size, managed=managed, uses=dict(rng.uses or {}))
    rt.host.free(ptr)


def host_register(ptr: int, size: int, flags: int = C.ACL_HOST_REGISTER_MAPPED) -> int:
    """Mark an existing host range as pinned; returns its device-side alias (for kernels)."""
    device = current_context().device
    if flags not in (C.ACL_HOST_REGISTER_MAPPED, C.ACL_HOST_REGISTER_IOMEMORY, C.ACL_HOST_REGISTER_READONLY,
                     C.ACL_HOST_REG_MAPPED, C.ACL_HOST_REG_PINNED, C.ACL_HOST_REG_MAPPED | C.ACL_HOST_REG_PINNED):
        raise InvalidValueError(f"unknown host registration type {flags!r}")
    rng = rt.host.register(ptr, size, device, flags)
    alias = rng.alias + (ptr - rng.addr)
    if HOOKS.active:
        HOOKS.emit("host_register", addr=ptr, size=size, alias=alias, device=device)
    return alias


def host_unregister(ptr: int) -> None:
    rt.check_initialized()
    rng = rt.host.ranges.get(ptr) if type(ptr) is int else None
    rt.host.unregister(ptr)
    if HOOKS.active:
        HOOKS.emit("host_unregister", addr=ptr, size=rng.size)


def host_get_device_pointer(ptr: int, flag: int = 0) -> int:
    rt.check_initialized()
    if flag != 0:
        raise InvalidValueError("host_get_device_pointer: flag must be 0")
    rng = rt.host.ranges.get(ptr) if type(ptr) is int else None
    if rng is None or not (rng.registered or rng.alias):
        rng = rt.host._find(ptr, 1) if type(ptr) is int else None
        if rng is None or not (rng.registered or rng.alias):
            raise InvalidValueError(f"0x{ptr:x} is not registered host memory" if type(ptr) is int
                                    else "host_get_device_pointer expects an int address")
    return rng.alias + (ptr - rng.addr)


# ================================================================ copies and sets
def memcpy(dst: int, dest_max: int, src: int, count: int, kind: int) -> None:
    rt.check_initialized()
    if graph._active:  # a synchronous copy during a capture (ApiImpl::MemCopySync)
        graph.check_capture_safe("a synchronous memory copy (memcpy)")
    memops.memcpy(rt, dst, dest_max, src, count, kind)


def memcpy_async(dst: int, dest_max: int, src: int, count: int, kind: int, stream: Stream | None,
                 require_aligned: bool = True, keep=None) -> int:
    if type(stream) is not Stream or stream.destroyed:  # None, a wrong object, destroyed
        stream = stream_of(stream)
    if copy_d2d is not None:  # between two blocks' starts on one device: memops' fast path, in C
        seq = copy_d2d(rt, dst, dest_max, src, count, kind, stream, require_aligned, keep)
        if seq is not NotImplemented:
            return seq
    return memops.memcpy_async(rt, dst, dest_max, src, count, kind, stream, require_aligned, keep)


def copy_array_async(dev: int, arr, stream: Stream | None, to_device: bool = True, block=None) -> int:
    """Copy the whole of a C-contiguous numpy array to device memory at `dev` (or, with
    to_device=False, from there into the array), in stream order; the task holds the array
    until the copy ran (the Pythonic API's copies). `block`: the live block holding that
    device memory, if the caller owns it (memops.copy_array_async)."""
    if type(stream) is not Stream or stream.destroyed:
        stream = stream_of(stream)
    return memops.copy_array_async(rt, dev, arr, stream, to_device, block)


def memcpy2d(dst, dpitch, src, spitch, width, height, kind) -> None:
    rt.check_initialized()
    if graph._active:
        graph.check_capture_safe("a synchronous 2D memory copy (memcpy2d)")
    memops.memcpy2d(rt, dst, dpitch, src, spitch, width, height, kind)


def memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream: Stream | None) -> None:
    s = stream_of(stream)
    memops.memcpy2d(rt, dst, dpitch, src, spitch, width, height, kind, stream=s,
                    allowed=(memops.H2D, memops.D2H, memops.D2D))


def memset(ptr: int, max_count: int, value: int, count: int) -> None:
    rt.check_initialized()
    if graph._active:
        graph.check_capture_safe("a synchronous memory set (memset)")
    memops.memset(rt, ptr, max_count, value, count)


def memset_async(ptr: int, max_count: int, value: int, count: int, stream: Stream | None) -> int:
    if type(stream) is not Stream or stream.destroyed:  # None, a wrong object, destroyed
        stream = stream_of(stream)
    return memops.memset_async(rt, ptr, max_count, value, count, stream)


# ================================================================ user allocators
class AllocatorDesc:
    """aclrtAllocatorDesc: a user allocator object and its callbacks. npurt's own
    operations never allocate through it; model execution (GE) looks it up by stream."""

    __slots__ = ("obj", "alloc_func", "free_func", "alloc_advise_func", "get_addr_from_block_func", "handle")

    def __init__(self):
        self.obj = self.alloc_func = self.free_func = None
        self.alloc_advise_func = self.get_addr_from_block_func = None
        self.handle = 0

    def copy(self) -> "AllocatorDesc":
        twin = AllocatorDesc()
        for name in self.__slots__:
            setattr(twin, name, getattr(self, name))
        return twin


def allocator_create_desc() -> int:
    """A new, empty allocator description (its handle)."""
    desc = AllocatorDesc()
    desc.handle = rt.allocator_descs.add(desc)
    return desc.handle


def _desc(handle: int) -> AllocatorDesc:
    # allocator.cpp checks only for null (ACL_ERROR_INVALID_PARAM); an unknown handle is
    # refused with the same code instead of being dereferenced
    if not handle:
        raise InvalidValueError("allocatorDesc is null: create one with allocator_create_desc")
    desc = rt.allocator_descs.lookup(handle)
    if desc is None:
        raise InvalidValueError(f"0x{handle:x} is not an allocator description (from allocator_create_desc), "
                                "or it was destroyed")
    return desc


def allocator_destroy_desc(handle: int) -> None:
    _desc(handle)
    rt.allocator_descs.remove(handle)


def allocator_set(handle: int, member: str, value) -> None:
    """Set one member of a description: "obj", "alloc_func", "free_func",
    "alloc_advise_func" or "get_addr_from_block_func"."""
    setattr(_desc(handle), member, value)


def allocator_register(stream: int, handle: int) -> None:
    """Register a complete description for a stream (last registration wins). The stream is
    a key, as in allocator.cpp: it must not be 0 but is not otherwise checked."""
    if not stream:
        raise InvalidValueError("allocator_register: stream must not be 0 (the default stream cannot take "
                                "an external allocator)")
    desc = _desc(handle)
    for member, what in (("obj", "allocatorDesc->obj"), ("alloc_func", "allocatorDesc->allocFunc"),
                         ("free_func", "allocatorDesc->freeFunc"),
                         ("get_addr_from_block_func", "allocatorDesc->getAddrFromBlockFunc")):
        if getattr(desc, member) is None:
            raise InvalidValueError(f"allocator_register: {what} is not set")
    rt.stream_allocators[stream] = (handle, desc.copy())


def allocator_unregister(stream: int) -> None:
    """Forget a stream's allocator; a stream without one is fine (allocator.cpp)."""
    if not stream:
        raise InvalidValueError("allocator_unregister: stream must not be 0")
    rt.stream_allocators.pop(stream, None)


def allocator_of(stream: int) -> AllocatorDesc | None:
    """The description registered for a stream handle (a copy taken at registration), or None."""
    entry = rt.stream_allocators.get(stream)
    return None if entry is None else entry[1]


# ================================================================ configured allocation and range checks
def check_device_range(ptr: int, size: int, call: str) -> None:
    """A clear error unless [ptr, ptr + size) lies in one live allocation (mem_flush, cmo)."""
    rt.check_initialized()
    if type(size) is not int or size <= 0:
        raise InvalidValueError(f"{call}: size must be a positive int, got {size!r}")
    if type(ptr) is not int or not address.is_device(ptr):
        raise InvalidValueError(f"{call}: expects a device address from malloc, got {ptr!r}")
    memops.locate(rt, ptr, size, call)


def cmo_async(src: int, size: int, cmo_type: int, stream: Stream | None) -> None:
    """Cache prefetch hint: validated, and a no-op (the simulated device has no cache to warm)."""
    stream_of(stream)  # validates the stream
    if cmo_type != C.ACL_RT_CMO_TYPE_PREFETCH:
        raise InvalidValueError(f"cmo_async supports only ACL_RT_CMO_TYPE_PREFETCH (0), got {cmo_type!r}")
    check_device_range(src, size, "cmo_async")


def check_malloc_config(cfg, host: bool = False) -> None:
    """Validate an aclrtMallocConfig dict ({} or {"attrs": [{"attr", "value"}], "numAttrs"})."""
    if cfg is None or cfg == {}:
        return
    if not isinstance(cfg, dict):
        raise InvalidValueError(f"the malloc config must be a dict (aclrtMallocConfig), got {type(cfg).__name__}")
    attrs = cfg.get("attrs", [])
    if not isinstance(attrs, list) or not all(isinstance(a, dict) for a in attrs):
        raise InvalidValueError("malloc config 'attrs' must be a list of {'attr': ..., 'value': {...}} dicts")
    if "numAttrs" in cfg and cfg["numAttrs"] != len(attrs):
        raise InvalidValueError(f"malloc config numAttrs ({cfg['numAttrs']!r}) does not match the "
                                f"{len(attrs)} attrs given")
    for item in attrs:
        attr, value = item.get("attr"), item.get("value", {})
        if attr not in (C.ACL_RT_MEM_ATTR_RSV, C.ACL_RT_MEM_ATTR_MODULE_ID, C.ACL_RT_MEM_ATTR_DEVICE_ID,
                        C.ACL_RT_MEM_ATTR_VA_FLAG):
            raise InvalidValueError(f"unknown malloc attribute {attr!r} (see aclrtMallocAttrType)")
        if attr == C.ACL_RT_MEM_ATTR_DEVICE_ID and not host:
            dev = value.get("deviceId") if isinstance(value, dict) else None
            if dev != current_context().device.id:
                raise InvalidValueError(f"malloc config deviceId {dev!r} must be the current device "
                                        f"({current_context().device.id})")


def malloc_with_cfg(size: int, policy: int, cfg) -> int:
    current_context()
    check_malloc_config(cfg)
    return malloc(size, policy)


def malloc_host_with_cfg(size: int, cfg) -> int:
    rt.check_initialized()
    check_malloc_config(cfg, host=True)
    return malloc_host(size)
