"""Stream-ordered memory pool operations (acl_rt_memory_soma.h: aclrtMemPoolCreate, Destroy,
SetAttr, GetAttr, MallocAsync, FreeAsync, TrimTo); the pool: runtime/mempool.py. Pools are
ints of their own kind ("memory pool" handles), the same in the C face and Python."""
from __future__ import annotations

from .. import constants as C
from ..context import current_context
from ..errors import FeatureNotSupportedError, InvalidValueError, ParamInvalidError
from ..handles import table
from ..mempool import MIN_BLOCK, MemPool
from ..runtime import RUNTIME
from .events import create_event, destroy_event, record_event, stream_wait_event
from .memory import free
from .streams import launch_host_func, stream_of

rt = RUNTIME
POOLS = table("memory pool")


class _Ops:
    """What a pool needs of the runtime: device memory for its segments, events for the
    cross-stream reuse it orders."""

    @staticmethod
    def malloc(device, size: int) -> int:
        return device.memory.malloc(size, C.ACL_MEM_MALLOC_HUGE_ONLY, True)

    @staticmethod
    def free(addr: int) -> None:
        free(addr, managed=True)  # stream-ordered: queued work that still uses it finishes first

    @staticmethod
    def record(stream):
        event = create_event()
        record_event(event, stream)
        return event

    @staticmethod
    def wait(stream, event) -> None:
        stream_wait_event(stream, event)

    @staticmethod
    def drop(event) -> None:
        destroy_event(event)


def mem_pool_create(props: dict) -> int:
    """aclrtMemPoolCreate: props {allocType, handleType, location {type, id}, maxSize}; maxSize
    0 is the device's memory (rounded down to 2 MB), else rounded up to 2 MB; more than the
    device has is 107000."""
    device = current_context().device
    if not isinstance(props, dict):
        raise InvalidValueError("poolProps must be an aclrtMemPoolProps (a dict)")
    location = props.get("location") or {}
    if props.get("allocType", 0) != C.ACL_MEM_ALLOCATION_TYPE_PINNED:
        raise InvalidValueError(f"poolProps.allocType is {props.get('allocType')!r}; expected MEM_ALLOCATION_TYPE_PINNED(0)")
    if location.get("type", C.ACL_MEM_LOCATION_TYPE_DEVICE) != C.ACL_MEM_LOCATION_TYPE_DEVICE:
        raise InvalidValueError(f"poolProps.location.type is {location.get('type')!r}; expected MEM_LOCATION_TYPE_DEVICE(1)")
    if not getattr(device.spec, "stream_ordered_pools", False):
        raise FeatureNotSupportedError(f"stream-ordered memory pools are not supported on the {device.spec.name} "
                                       "(Atlas A2 parts only: NPURT_SOC=Ascend910B3)", C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
    owner = rt.device(location.get("id", device.id))
    total = owner.backend.usable
    max_size = props.get("maxSize", 0)
    if type(max_size) is not int or max_size < 0:
        raise InvalidValueError(f"poolProps.maxSize must be a non-negative int, got {max_size!r}")
    max_size = total // MIN_BLOCK * MIN_BLOCK if max_size == 0 else -(-max_size // MIN_BLOCK) * MIN_BLOCK
    if max_size > total:
        raise ParamInvalidError(f"memory pool size {max_size >> 20} MB after 2 MB alignment exceeds the device "
                                f"memory ({total >> 20} MB) of device {owner.id}")
    pool = MemPool(owner, max_size, _Ops)
    pool.handle = POOLS.add(pool)
    return pool.handle


def pool_of(handle: int) -> MemPool:
    if not handle:
        raise InvalidValueError("memPool is NULL")
    try:
        pool = POOLS.get(handle)
    except InvalidValueError:
        raise ParamInvalidError(f"0x{handle:x}: the memory pool is not created or was destroyed") from None
    return pool


def mem_pool_destroy(handle: int) -> None:
    pool = pool_of(handle)
    pool.destroy()
    POOLS.remove(handle)


def mem_pool_set_attr(handle: int, attr: int, value: int) -> None:
    pool_of(handle).set_attr(attr, value)


def mem_pool_get_attr(handle: int, attr: int) -> int:
    return pool_of(handle).get_attr(attr)


def mem_pool_malloc_async(size: int, handle: int, stream) -> int:
    """aclrtMemPoolMallocAsync: memory of `size` bytes (2 MB multiples) for work on `stream`
    (not the default stream: NULL is refused, as in the runtime); 0 for size 0."""
    pool = pool_of(handle)
    if stream is None:
        raise InvalidValueError("stream is NULL")
    if type(size) is not int or size < 0:
        raise InvalidValueError(f"size must be a non-negative int, got {size!r}")
    if size == 0:
        return 0
    s = stream_of(stream)
    if s.device is not pool.device:
        raise ParamInvalidError(f"the stream is on device {s.device.id}, the pool on device {pool.device.id}")
    return pool.malloc_async(size, s)


def mem_pool_free_async(ptr: int, stream) -> None:
    """aclrtMemPoolFreeAsync: back to its pool in stream order; a pointer from aclrtMalloc is
    freed once the stream's work queued so far has run (as the runtime does with a host func)."""
    if not ptr:
        raise InvalidValueError("ptr is NULL")
    if stream is None:
        raise InvalidValueError("stream is NULL")
    s = stream_of(stream)
    for pool in POOLS.values():
        if pool.contains(ptr):
            pool.free_async(ptr, s)
            return
    launch_host_func(s, free, ptr, name="aclrtMemPoolFreeAsync")


def mem_pool_trim_to(handle: int, min_bytes_to_keep: int) -> None:
    if type(min_bytes_to_keep) is not int or min_bytes_to_keep < 0:
        raise InvalidValueError(f"minBytesToKeep must be a non-negative int, got {min_bytes_to_keep!r}")
    pool_of(handle).trim_to(min_bytes_to_keep)


__all__ = ["mem_pool_create", "mem_pool_destroy", "mem_pool_set_attr", "mem_pool_get_attr",
           "mem_pool_malloc_async", "mem_pool_free_async", "mem_pool_trim_to", "pool_of"]
