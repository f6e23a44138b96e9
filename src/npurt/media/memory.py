"""DVPP memory: dvpp_malloc / dvpp_free, and the check that a picture lies in it.

As acldvppMalloc does, the size is rounded up to a multiple of 32 plus 32 bytes
(`(size + 63) // 32 * 32`, so a size of 0 still gets 32 bytes) and the memory comes from
the device's caching pool with the huge-page-first policy; the start is 512-byte aligned
(DVPP needs 128). It is ordinary device memory: copies, kernels and models may use it,
and acl.rt.free releases it as dvpp_free does (the runtime's rtDvppFree is its device
free). The other way round does not hold: DVPP reads and writes pictures only in memory
from dvpp_malloc (the header of aclrtMalloc says so), so `locate` refuses any other
address with a message that says what to call instead.
"""
from __future__ import annotations

from .. import runtime as api  # the runtime's operations: its published surface
from ..runtime import (InvalidValueError, RUNTIME, Span, address, as_int, constants as C,
                       resolve as _locate_any)

ALIGN = 128  # start alignment DVPP needs for picture and stream data

# start address -> requested size of every live dvpp_malloc allocation. An allocation freed
# through acl.rt.free stays listed until its address is reused; the size check in
# `is_dvpp` tells a reused address from the DVPP allocation it once was.
_ALLOCATIONS: dict[int, int] = {}


def aligned_size(size) -> int:
    """The bytes acldvppMalloc really allocates for `size`."""
    size = as_int(size, "dvpp_malloc size")
    if size < 0:
        raise InvalidValueError(f"dvpp_malloc size must be non-negative, got {size}")
    return (size + 63) // 32 * 32


def malloc(size, policy: int = C.ACL_MEM_MALLOC_HUGE_FIRST) -> int:
    """DVPP memory on the current device: a device address."""
    n = aligned_size(size)
    addr = api.malloc(n, policy)
    _ALLOCATIONS[addr] = n
    return addr


def malloc_with_cfg(size, policy: int, cfg) -> int:
    """dvpp_malloc with an aclrtMallocConfig (checked as for acl.rt.malloc_with_cfg)."""
    n = aligned_size(size)
    addr = api.malloc_with_cfg(n, policy, cfg)
    _ALLOCATIONS[addr] = n
    return addr


def free(ptr) -> None:
    """Free memory from dvpp_malloc (any device memory, as the real runtime allows)."""
    if ptr == 0:
        raise InvalidValueError("dvpp_free: null pointer")
    api.free(ptr)
    _ALLOCATIONS.pop(ptr, None)


def is_dvpp(span: Span) -> bool:
    block = span.block
    return _ALLOCATIONS.get(block.addr) == block.requested


def locate(addr, nbytes: int, role: str, device) -> Span:
    """Where `nbytes` of DVPP data at `addr` live; an error unless the whole range lies in
    a live dvpp_malloc allocation of `device` with a 128-byte aligned start."""
    addr = as_int(addr, f"the {role} address")
    if addr == 0:
        raise InvalidValueError(f"the {role} address is null")
    span = _locate_any(RUNTIME, addr, nbytes, role)
    if span.device is None:
        raise InvalidValueError(
            f"the {role} address 0x{addr:x} is host memory; DVPP reads and writes only device memory from "
            "acl.media.dvpp_malloc (copy the data there with acl.rt.memcpy)")
    if span.device is not device:
        raise InvalidValueError(f"the {role} address 0x{addr:x} is memory of device {span.device.id}; "
                                f"the channel and stream work on device {device.id}")
    if address.is_host_alias(addr) or not is_dvpp(span):
        raise InvalidValueError(
            f"the {role} address 0x{addr:x} is not DVPP memory: pictures and JPEG/PNG data must be in memory "
            "from acl.media.dvpp_malloc, not acl.rt.malloc")
    if addr % ALIGN:
        raise InvalidValueError(f"the {role} address 0x{addr:x} is not {ALIGN}-byte aligned; DVPP data must "
                                f"start on a {ALIGN}-byte boundary (dvpp_malloc returns aligned memory)")
    return span
