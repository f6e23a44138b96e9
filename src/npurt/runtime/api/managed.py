"""Managed memory operations (acl_rt.h: aclrtMemAllocManaged, aclrtMemManagedPrefetchAsync,
aclrtMemManagedPrefetchBatchAsync, aclrtMemManagedAdvise, aclrtMemManagedGetAttr(s)); the memory
itself and its rules: runtime/managed.py. aclrtFree frees it (api/memory.py)."""
from __future__ import annotations

from .. import constants as C
from ..context import current_context
from ..errors import InvalidValueError
from ..managed import MANAGED, PrefetchTask, _check_location
from ..runtime import RUNTIME
from .streams import stream_of

rt = RUNTIME


def mem_alloc_managed(size: int, flag: int = C.ACL_RT_MEM_ATTACH_GLOBAL) -> int:
    """Managed memory of the current device: one address for the host and the device."""
    return MANAGED.alloc(current_context().device, size, flag)


def _location(location) -> tuple[int, int]:
    if isinstance(location, dict):
        return int(location.get("type", 0)), int(location.get("id", 0))
    kind, ident = location
    return int(kind), int(ident)


def mem_managed_prefetch_async(ptr: int, size: int, location, flags: int = 0, stream=None) -> int:
    """Queue a prefetch of [ptr, ptr + size) to `location` ({type, id}) on `stream`; the
    task's sequence number. Sizes must be 2 MB multiples (the runtime's rule)."""
    rt.check_initialized()
    if flags != 0:
        raise InvalidValueError(f"flags is reserved and must be 0, got {flags!r}")
    if type(size) is int and size % (2 << 20):
        raise InvalidValueError(f"prefetch size {size} must be a multiple of 2 MB")
    rng = MANAGED.range_of(ptr, size, "aclrtMemManagedPrefetchAsync")
    loc = _location(location)
    _check_location(loc)
    return stream_of(stream).enqueue(PrefetchTask(rng, loc, ptr, size))


def mem_managed_prefetch_batch_async(ptrs: list, sizes: list, locations: list, location_indices: list,
                                     flags: int = 0, stream=None) -> int:
    """The batch form: locations[k] applies from ptrs[location_indices[k]] on."""
    rt.check_initialized()
    if len(ptrs) != len(sizes) or not ptrs:
        raise InvalidValueError("ptrs and sizes must be non-empty and of one length")
    if len(locations) != len(location_indices) or not locations or location_indices[0] != 0 \
            or sorted(location_indices) != list(location_indices) or location_indices[-1] >= len(ptrs):
        raise InvalidValueError("prefetchLocIdxs must start at 0, ascend, and index into ptrs")
    seq = 0
    for i, (p, n) in enumerate(zip(ptrs, sizes)):
        k = max(j for j, start in enumerate(location_indices) if start <= i)
        seq = mem_managed_prefetch_async(p, n, locations[k], flags, stream)
    return seq


def mem_managed_advise(ptr: int, size: int, advice: int, location) -> None:
    rt.check_initialized()
    MANAGED.advise(ptr, size, advice, _location(location))


def mem_managed_get_attr(attribute: int, ptr: int, size: int):
    rt.check_initialized()
    return MANAGED.attribute(attribute, ptr, size)


__all__ = ["mem_alloc_managed", "mem_managed_prefetch_async", "mem_managed_prefetch_batch_async",
           "mem_managed_advise", "mem_managed_get_attr"]
