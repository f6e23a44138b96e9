"""Managed memory (unified virtual memory): one address the host and the device both use
(aclrtMemAllocManaged, aclrtMemManagedPrefetchAsync, aclrtMemManagedAdvise, aclrtMemManagedGetAttr(s)).

The runtime places UVM allocations in [0x90000000000, +3 TB) of the process's address space
(the range the runtime's documentation gives): here they are ordinary host memory mapped at
those addresses, so the host reads and writes them directly (a C program's `*ptr`, fread into
them) and kernels, copies and sets take the same pointer as device memory of the device it was
allocated on. There is one copy of the bytes, so every point is a coherence point: what the
host wrote before a launch is what the kernel reads; what a kernel wrote is visible to the host
once the stream is synchronized (the documented rule). Sizes are rounded up to 2 MB. Prefetch is
a stream-ordered task that records the location; advice is recorded; both are validated as the
runtime does and reported back by aclrtMemManagedGetAttr(s). Only SoCs with UVM (Atlas A2 / A3:
the 910B parts) offer it; elsewhere aclrtMemAllocManaged is ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
"""
from __future__ import annotations

import bisect

from ..driver import vmm as drv
from . import constants as C
from .errors import FeatureNotSupportedError, InvalidValueError, OutOfMemoryError
from .forking import fork_safe_lock
from .memory import LIVE
from .tasks import Task

UVM_BASE = 0x90000000000
UVM_SIZE = 3 << 40
GRANULE = 2 << 20


class ManagedRange:
    """One allocation; shaped like a LIVE pool block for the launch checks (addr, requested,
    align32, state, uses): all of its rounded size is usable."""

    __slots__ = ("addr", "size", "requested", "asked", "align32", "state", "device_id", "read_mostly", "preferred",
                 "accessed_by", "last_prefetch", "uses", "segment")

    def __init__(self, addr: int, size: int, asked: int, device_id: int):
        self.addr, self.size, self.requested, self.asked, self.device_id = addr, size, size, asked, device_id
        self.align32, self.state, self.segment = True, LIVE, None
        self.read_mostly = False
        self.preferred = (C.ACL_MEM_LOCATIONTYPE_INVALID, 0)   # (aclrtMemManagedLocationType, id)
        self.accessed_by: set[tuple[int, int]] = set()
        self.last_prefetch = (C.ACL_MEM_LOCATIONTYPE_INVALID, 0)
        self.uses = None  # stream-ordered use, as a pinned host range records it


class ManagedMemory:
    """The managed allocations of the process, by address."""

    def __init__(self):
        self.lock = fork_safe_lock()
        self.ranges: dict[int, ManagedRange] = {}
        self.starts: list[int] = []
        self.cursor = UVM_BASE

    def __bool__(self) -> bool:
        return bool(self.starts)

    def find(self, addr: int, nbytes: int = 1) -> ManagedRange | None:
        """The managed range holding [addr, addr + nbytes), or None (lock-free)."""
        if not self.starts or not UVM_BASE <= addr < UVM_BASE + UVM_SIZE:
            return None
        try:
            i = bisect.bisect_right(self.starts, addr) - 1
            r = self.ranges.get(self.starts[i]) if i >= 0 else None
        except IndexError:
            return None
        return r if r is not None and addr + nbytes <= r.addr + r.size else None

    def alloc(self, device, size: int, flag: int) -> int:
        if not getattr(device.spec, "uvm", False):
            raise FeatureNotSupportedError(
                f"the {device.spec.name} has no unified virtual memory (aclrtMemAllocManaged needs an Atlas A2/A3 "
                "part: NPURT_SOC=Ascend910B3)", C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
        if type(size) is not int or size <= 0:
            raise InvalidValueError(f"size must be a positive int, got {size!r}")
        if flag != C.ACL_RT_MEM_ATTACH_GLOBAL:
            raise InvalidValueError(f"flag must be ACL_RT_MEM_ATTACH_GLOBAL (1), got {flag!r}")
        rounded = -(-size // GRANULE) * GRANULE
        with self.lock:
            addr = None
            start = self.cursor
            while addr is None:
                if start + rounded > UVM_BASE + UVM_SIZE:
                    start = self._first_gap(rounded)
                    if start is None:
                        raise OutOfMemoryError(f"no {rounded} bytes of the managed address range are left")
                addr = drv.map_anonymous_near(start, rounded)
                if addr is None:
                    start += rounded  # something else lives there: look further on
            self.cursor = addr + rounded
            self.ranges[addr] = ManagedRange(addr, rounded, size, device.id)
            bisect.insort(self.starts, addr)
            return addr

    def _first_gap(self, size: int) -> int | None:
        cursor = UVM_BASE
        for start in self.starts:
            if start - cursor >= size:
                return cursor
            cursor = self.ranges[start].addr + self.ranges[start].size
        return cursor if UVM_BASE + UVM_SIZE - cursor >= size else None

    def free(self, addr: int) -> None:
        with self.lock:
            r = self.ranges.get(addr)
            if r is None:
                inside = self.find(addr)
                where = f" ({addr - inside.addr} bytes inside the one at 0x{inside.addr:x})" if inside else ""
                raise InvalidValueError(f"aclrtFree(0x{addr:x}): not the start of managed memory{where}")
            del self.ranges[addr]
            del self.starts[bisect.bisect_left(self.starts, addr)]
            drv.unmap_anonymous(r.addr, r.size)

    # ------------------------------------------------------------ prefetch and advice
    def range_of(self, ptr: int, size: int, what: str) -> ManagedRange:
        if type(ptr) is not int or not ptr:
            raise InvalidValueError(f"{what}: ptr is NULL or not an address")
        if type(size) is not int or size <= 0:
            raise InvalidValueError(f"{what}: size must be positive")
        r = self.find(ptr, size)
        if r is None:
            raise InvalidValueError(f"{what}: [0x{ptr:x}, +{size}) is not inside memory from aclrtMemAllocManaged")
        return r

    def advise(self, ptr: int, size: int, advice: int, location: tuple[int, int]) -> None:
        r = self.range_of(ptr, size, "aclrtMemManagedAdvise")
        _check_location(location, allow_invalid=advice in (C.ACL_MEM_ADVISE_SET_READ_MOSTLY,
                                                          C.ACL_MEM_ADVISE_UNSET_READ_MOSTLY,
                                                          C.ACL_MEM_ADVISE_UNSET_PREFERRED_LOCATION))
        if advice == C.ACL_MEM_ADVISE_SET_READ_MOSTLY:
            r.read_mostly = True
        elif advice == C.ACL_MEM_ADVISE_UNSET_READ_MOSTLY:
            r.read_mostly = False
        elif advice == C.ACL_MEM_ADVISE_SET_PREFERRED_LOCATION:
            r.preferred = location
        elif advice == C.ACL_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
            r.preferred = (C.ACL_MEM_LOCATIONTYPE_INVALID, 0)
        elif advice == C.ACL_MEM_ADVISE_SET_ACCESSED_BY:
            r.accessed_by.add(location)
        elif advice == C.ACL_MEM_ADVISE_UNSET_ACCESSED_BY:
            r.accessed_by.discard(location)
        else:
            raise InvalidValueError(f"advise {advice!r} is not an aclrtMemManagedAdviseType value (0-5)")

    def attribute(self, attribute: int, ptr: int, size: int) -> int | list:
        """aclrtMemManagedGetAttr's value (a list of (type, id) for ACCESSED_BY)."""
        r = self.range_of(ptr, size, "aclrtMemManagedGetAttr")
        values = {
            C.ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: int(r.read_mostly),
            C.ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION: r.preferred[1] if r.preferred[0] else -2,
            C.ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE: r.preferred[0],
            C.ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID: r.preferred[1],
            C.ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION: r.last_prefetch[1] if r.last_prefetch[0] else -2,
            C.ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE: r.last_prefetch[0],
            C.ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID: r.last_prefetch[1],
        }
        if attribute == C.ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY:
            return sorted(r.accessed_by)
        if attribute not in values:
            raise InvalidValueError(f"attribute {attribute!r} is not an aclrtMemManagedRangeAttribute value (1-8)")
        return values[attribute]


def _check_location(location: tuple[int, int], allow_invalid: bool = False) -> None:
    kind, ident = location
    valid = (C.ACL_MEM_LOCATIONTYPE_DEVICE, C.ACL_MEM_LOCATIONTYPE_HOST, C.ACL_MEM_LOCATIONTYPE_HOST_NUMA,
             C.ACL_MEM_LOCATIONTYPE_HOST_NUMA_CURRENT)
    if kind not in valid and not (allow_invalid and kind == C.ACL_MEM_LOCATIONTYPE_INVALID):
        raise InvalidValueError(f"location type {kind!r} is not an aclrtMemManagedLocationType for this call")


class PrefetchTask(Task):
    """aclrtMemManagedPrefetchAsync: one copy of the bytes, so moving them is a no-op; the task
    keeps the stream order and records the location when it runs."""

    __slots__ = ("range", "location", "addr", "nbytes")
    kind = "prefetch"

    def __init__(self, rng: ManagedRange, location: tuple[int, int], addr: int, nbytes: int):
        self.range, self.location, self.addr, self.nbytes = rng, location, addr, nbytes

    def run(self) -> None:
        self.range.last_prefetch = self.location

    def details(self) -> dict:
        return {"kind": "prefetch", "bytes": self.nbytes}


MANAGED = ManagedMemory()
