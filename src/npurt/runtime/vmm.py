"""Virtual memory management of one device: reserved address ranges, physical memory handles
and the mappings between them (aclrtReserveMemAddress, aclrtMallocPhysical, aclrtMapMem, ...).

A *reservation* is a range of device addresses in the device's VMM window (driver/vmm.py)
that holds no memory. *Physical memory* is a handle to memory of a granularity-multiple size.
A *mapping* puts all of one physical handle at an address of a reservation; until then (and
after aclrtUnmapMem) the address faults like any address that holds nothing: copies, memsets
and kernels are refused with ACL_ERROR_INVALID_PARAM / a kernel memory error, told to the
sanitizer as an invalid address ("reserved but not mapped").

Resolution: `DeviceMemory.find` hands an address of the VMM window to `VirtualMemory.find`,
which answers a *run*: a maximal stretch of adjacent accessible mappings of one reservation,
shaped like a LIVE pool block (addr, requested, state), so every caller of the address
resolution (copies, kernels, torch, tools) treats mapped memory as one allocation, across
the boundaries of the physical handles mapped side by side (an expandable segment). The hot
path of ordinary malloc is untouched: only a lookup that misses the pool's blocks gets here.

Bad input follows the runtime's layering: what the ACL layer checks (NULL, size 0, flags,
offset) is ACL_ERROR_INVALID_PARAM (100000); what the driver refuses (sizes not multiples of
the granularity, mapping over a mapped range or outside a reservation, unmapping what is not
mapped, releasing a reservation that still has mappings) comes back as DRV_ERROR_INVALID_VALUE,
which the runtime reports as ACL_ERROR_RT_PARAM_INVALID (107000) (errcode_manage.cc).
aclrtFreePhysical of memory still mapped is deferred until its last unmap (the pyACL guide:
"Deferred until unmapped").
"""
from __future__ import annotations

import bisect
import threading

from ..driver import vmm as drv
from ..driver.hbm import PageAllocator
from . import constants as C
from .errors import InvalidValueError, NpuError, OutOfMemoryError, ParamInvalidError
from .memory import LIVE, DeviceMemory

GRANULARITY = 2 << 20  # ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM and _RECOMMENDED (pyACL guide: 2 MB)
HUGE_PAGE = 2 << 20

ACCESS_NONE, ACCESS_READ, ACCESS_READWRITE = 0x0, 0x1, 0x3


class PhysicalHandle:
    """aclrtDrvMemHandle: physical memory of one device, mapped zero or more times."""

    def __init__(self, device, size: int, memory: "drv.PhysicalMemory", offset: list | None, prop: dict):
        self.device, self.size, self.memory, self.offset, self.prop = device, size, memory, offset, prop
        self.mappings: set[Mapping] = set()
        self.freed = False        # aclrtFreePhysical called while mapped: released at the last unmap
        self.released = False
        self.export = None        # the shareable handle (int) this process exported it as
        self.imported_from = None  # (pid, shareable) for an imported handle
        self.handle = 0

    def __repr__(self) -> str:
        return f"<npurt physical memory {self.size} B on device {self.device.id}>"


class Mapping:
    """All of one physical handle at [addr, addr + size) of a reservation."""

    __slots__ = ("addr", "size", "physical", "reservation", "access")

    def __init__(self, addr: int, size: int, physical: PhysicalHandle, reservation: "Reservation", access: int):
        self.addr, self.size, self.physical, self.reservation, self.access = addr, size, physical, reservation, access


class Run:
    """Adjacent accessible mappings of one reservation, seen by address resolution as one
    LIVE allocation (the attributes a pool Block offers to its readers)."""

    __slots__ = ("addr", "size", "requested", "align32", "state", "uses", "segment", "pool", "readonly",
                 "reservation")

    def __init__(self, addr: int, size: int, readonly: bool, reservation: "Reservation"):
        self.addr, self.size, self.requested = addr, size, size
        self.align32 = True      # no ACL padding: usable bytes == mapped bytes
        self.state = LIVE
        self.uses = None
        self.segment = self.pool = None
        self.readonly = readonly
        self.reservation = reservation

    def contains(self, addr: int, nbytes: int) -> bool:
        return self.addr <= addr and addr + nbytes <= self.addr + self.size

    def work_pending(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<mapped device memory 0x{self.addr:x} {self.size} B>"


class Reservation:
    """A reserved range of device addresses and the mappings inside it (sorted by address)."""

    def __init__(self, va: int, size: int):
        self.va, self.size = va, size
        self.starts: list[int] = []
        self.mappings: dict[int, Mapping] = {}
        self.runs: list[Run] = []
        self.run_starts: list[int] = []
        self.owner = None  # a caching pool on the range (ReservedBackend): it resolves the addresses

    @property
    def end(self) -> int:
        return self.va + self.size

    def mapping_at(self, addr: int) -> Mapping | None:
        i = bisect.bisect_right(self.starts, addr) - 1
        if i < 0:
            return None
        m = self.mappings[self.starts[i]]
        return m if addr < m.addr + m.size else None

    def overlaps(self, addr: int, size: int) -> Mapping | None:
        i = bisect.bisect_left(self.starts, addr + size) - 1
        if i < 0:
            return None
        m = self.mappings[self.starts[i]]
        return m if m.addr + m.size > addr else None

    def rebuild_runs(self) -> None:
        runs: list[Run] = []
        for start in self.starts:
            m = self.mappings[start]
            if m.access == ACCESS_NONE:
                continue
            readonly = m.access == ACCESS_READ
            last = runs[-1] if runs else None
            if last is not None and last.addr + last.size == m.addr and last.readonly == readonly:
                last.size += m.size
                last.requested = last.size
            else:
                runs.append(Run(m.addr, m.size, readonly, self))
        self.runs, self.run_starts = runs, [r.addr for r in runs]  # swapped in whole: lookups stay lock-free

    def run_at(self, addr: int) -> Run | None:
        runs, starts = self.runs, self.run_starts
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0:
            return None
        run = runs[i]
        return run if addr < run.addr + run.size else None


def _driver_refuses(message: str) -> ParamInvalidError:
    """What the driver's DRV_ERROR_INVALID_VALUE becomes: ACL_ERROR_RT_PARAM_INVALID."""
    return ParamInvalidError(message)


class VirtualMemory:
    """The VMM state of one device: its reservations and physical handles."""

    def __init__(self, device):
        self.device = device
        backend = device.backend
        self.base = getattr(backend, "vmm_base", 0)
        self.size = getattr(backend, "vmm_size", 0)
        self.end = self.base + self.size
        self.lock = threading.RLock()
        self.reservations: dict[int, Reservation] = {}
        self.starts: list[int] = []     # sorted reservation starts
        self.handles: set[PhysicalHandle] = set()

    @property
    def supported(self) -> bool:
        return self.size > 0

    def _host(self, va: int) -> int:
        return self.device.backend.vmm_host(va)

    # ------------------------------------------------------------ lookup (lock-free)
    def reservation_of(self, addr: int) -> Reservation | None:
        starts = self.starts
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0:
            return None
        r = self.reservations.get(starts[i])
        return r if r is not None and addr < r.end else None

    def find(self, addr: int):
        """The mapped run holding `addr`, or None (not reserved, or reserved and not mapped);
        in a range a caching pool owns, that pool's block (any state) or None."""
        for _ in range(3):  # the tables may change under us: retry on an inconsistent read
            try:
                r = self.reservation_of(addr)
                if r is not None and r.owner is not None:
                    return r.owner.find(addr)
                return r.run_at(addr) if r is not None else None
            except (IndexError, KeyError):
                continue
        with self.lock:
            r = self.reservation_of(addr)
            return r.run_at(addr) if r is not None else None

    def describe_unmapped(self, addr: int) -> str | None:
        """Why `addr` of the window holds no accessible memory, or None if it is not reserved."""
        r = self.reservation_of(addr)
        if r is None:
            return None
        m = r.mapping_at(addr)
        if m is not None and m.access == ACCESS_NONE:
            return (f"0x{addr:x} is mapped without access (aclrtMemMapNoAccess, or aclrtMemSetAccess with "
                    f"ACL_RT_MEM_ACCESS_FLAGS_NONE); set access with aclrtMemSetAccess first")
        return (f"0x{addr:x} lies in the range reserved with aclrtReserveMemAddress at 0x{r.va:x} "
                f"({r.size} bytes), but no physical memory is mapped there (aclrtMapMem it first)")

    # ------------------------------------------------------------ reservations
    def reserve(self, size: int, expect: int = 0) -> int:
        if not self.supported:
            raise NpuError("this driver has no virtual memory management", C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
        size = (size + GRANULARITY - 1) // GRANULARITY * GRANULARITY
        with self.lock:
            self._host_window()
            if expect:
                if expect % GRANULARITY or not self.base <= expect or expect + size > self.end:
                    raise _driver_refuses(
                        f"expectPtr 0x{expect:x} is not a {GRANULARITY}-aligned address of device "
                        f"{self.device.id}'s reservable range [0x{self.base:x}, 0x{self.end:x})")
                if self._overlapping(expect, size):
                    raise _driver_refuses(f"expectPtr 0x{expect:x} (+{size} bytes) overlaps a range already reserved")
                va = expect
            else:
                va = self._first_fit(size)
                if va is None:
                    raise OutOfMemoryError(
                        f"no {size} bytes of device {self.device.id}'s reservable address space are left "
                        f"({self.size} bytes in all); release reservations you no longer need")
            r = Reservation(va, size)
            self.reservations[va] = r
            bisect.insort(self.starts, va)
            return va

    def _host_window(self) -> None:
        """The driver reserves the window's host address space on the first reservation (a
        process that never uses VMM pays none); where the process has none left, say so."""
        ensure = getattr(self.device.backend, "ensure_vmm_window", None)
        if ensure is None:
            return
        try:
            ensure()
        except OSError as exc:
            raise OutOfMemoryError(
                f"cannot reserve the host address space behind device {self.device.id}'s reservable range "
                f"({self.size >> 20} MiB, three times the device memory): {exc.strerror or exc}; the process's "
                "address space is limited (ulimit -v): raise the limit, or simulate less memory per device "
                "with NPURT_HBM_SIZE (e.g. NPURT_HBM_SIZE=2G)") from None

    def _overlapping(self, va: int, size: int) -> bool:
        i = bisect.bisect_left(self.starts, va + size) - 1
        return i >= 0 and self.reservations[self.starts[i]].end > va

    def _first_fit(self, size: int) -> int | None:
        cursor = self.base
        for start in self.starts:
            if start - cursor >= size:
                return cursor
            cursor = max(cursor, self.reservations[start].end)
        return cursor if self.end - cursor >= size else None

    def release(self, va: int) -> None:
        with self.lock:
            r = self.reservations.get(va)
            if r is None:
                raise _driver_refuses(self._not_reserved(va, "aclrtReleaseMemAddress"))
            if r.mappings:
                raise _driver_refuses(
                    f"the range at 0x{va:x} still has {len(r.mappings)} mapping(s); aclrtUnmapMem them first")
            del self.reservations[va]
            del self.starts[bisect.bisect_left(self.starts, va)]

    def _not_reserved(self, va: int, what: str) -> str:
        inside = self.reservation_of(va) if type(va) is int else None
        if inside is not None:
            return (f"{what}: 0x{va:x} lies {va - inside.va} bytes inside the range reserved at 0x{inside.va:x}; "
                    "pass the address aclrtReserveMemAddress returned")
        return f"{what}: 0x{va:x} is not an address aclrtReserveMemAddress returned on device {self.device.id}"

    # ------------------------------------------------------------ physical memory
    def malloc_physical(self, size: int, prop: dict) -> PhysicalHandle:
        if not self.supported:
            raise NpuError("this driver has no virtual memory management", C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
        if size % GRANULARITY:
            raise _driver_refuses(
                f"physical memory size {size} is not a multiple of the allocation granularity {GRANULARITY} "
                "(aclrtMemGetAllocationGranularity)")
        backend = self.device.backend
        # the capacity it uses, taken from the device's page allocator one granule at a time
        # (physical memory needs no contiguous run; no byte of the arena is touched)
        offsets = []
        for _ in range(size // GRANULARITY):
            offset = backend.arena.map_pages(GRANULARITY, HUGE_PAGE)
            if offset is None:
                for o in offsets:
                    backend.arena.unmap_pages(o, GRANULARITY, HUGE_PAGE)
                raise OutOfMemoryError(
                    f"out of device memory: cannot create {size} bytes of physical memory on device "
                    f"{self.device.id} ({backend.free_bytes} bytes free)")
            offsets.append(offset)
        try:
            memory = drv.PhysicalMemory(size)
        except OSError as exc:
            for o in offsets:
                backend.arena.unmap_pages(o, GRANULARITY, HUGE_PAGE)
            raise OutOfMemoryError(f"cannot create physical memory: {exc}") from None
        handle = PhysicalHandle(self.device, size, memory, offsets, prop)
        with self.lock:
            self.handles.add(handle)
        return handle

    def adopt(self, memory: "drv.PhysicalMemory", prop: dict, source) -> "PhysicalHandle":
        """An imported handle: physical memory another process accounts for."""
        handle = PhysicalHandle(self.device, memory.size, memory, None, prop)
        handle.imported_from = source
        with self.lock:
            self.handles.add(handle)
        return handle

    def free_physical(self, handle: PhysicalHandle) -> None:
        with self.lock:
            if handle.freed or handle.released:
                raise _driver_refuses("aclrtFreePhysical: this physical memory handle was already freed")
            handle.freed = True
            if not handle.mappings:
                self._release_physical(handle)

    def _release_physical(self, handle: PhysicalHandle) -> None:
        handle.released = True
        self.handles.discard(handle)
        handle.memory.close()
        for offset in handle.offset or ():
            self.device.backend.arena.unmap_pages(offset, GRANULARITY, HUGE_PAGE)
        on_release = getattr(handle, "on_release", None)
        if on_release is not None:
            on_release(handle)

    # ------------------------------------------------------------ mapping
    def map(self, va: int, size: int, handle: PhysicalHandle, access: int = ACCESS_READWRITE) -> None:
        with self.lock:
            if handle.freed or handle.released:
                raise _driver_refuses("aclrtMapMem: the physical memory handle was freed")
            if handle.device is not self.device:
                raise _driver_refuses(
                    f"aclrtMapMem: the physical memory belongs to device {handle.device.id}, the address to "
                    f"device {self.device.id}")
            if size % GRANULARITY or va % GRANULARITY:
                raise _driver_refuses(
                    f"aclrtMapMem: address 0x{va:x} and size {size} must be multiples of the allocation "
                    f"granularity {GRANULARITY}")
            if size != handle.size:
                raise _driver_refuses(
                    f"aclrtMapMem: size {size} differs from the physical memory's size {handle.size} (a mapping "
                    "maps all of one physical allocation)")
            r = self.reservation_of(va)
            if r is None or va + size > r.end:
                raise _driver_refuses(
                    f"aclrtMapMem: [0x{va:x}, 0x{va + size:x}) is not inside one range reserved with "
                    "aclrtReserveMemAddress")
            clash = r.overlaps(va, size)
            if clash is not None:
                raise _driver_refuses(
                    f"aclrtMapMem: [0x{va:x}, 0x{va + size:x}) overlaps the mapping at 0x{clash.addr:x} "
                    f"({clash.size} bytes); aclrtUnmapMem it first")
            host = self._host(va)
            drv.map_file(host, size, handle.memory.fd, 0, writable=True)
            if access != ACCESS_READWRITE:
                self._protect(host, size, access)
            m = Mapping(va, size, handle, r, access)
            r.mappings[va] = m
            bisect.insort(r.starts, va)
            handle.mappings.add(m)
            r.rebuild_runs()

    def unmap(self, va: int) -> None:
        with self.lock:
            r = self.reservation_of(va) if type(va) is int else None
            m = r.mappings.get(va) if r is not None else None
            if m is None:
                where = "is not the start of a mapping" if r is not None else "is not in a reserved range"
                raise _driver_refuses(f"aclrtUnmapMem: 0x{va:x} {where}; nothing is mapped there")
            del r.mappings[va]
            del r.starts[bisect.bisect_left(r.starts, va)]
            r.rebuild_runs()  # lookups stop finding it before its pages go
            drv.unmap_range(self._host(va), m.size)
            handle = m.physical
            handle.mappings.discard(m)
            if handle.freed and not handle.mappings and not handle.released:
                self._release_physical(handle)

    def _protect(self, host: int, size: int, access: int) -> None:
        # read-only is enforced by the runtime's checks (a refused write is an error, not a
        # SIGSEGV of the process); no access is enforced by the pages too
        drv.set_protection(host, size, readable=access != ACCESS_NONE, writable=access != ACCESS_NONE)

    def set_access(self, va: int, size: int, access: int) -> None:
        """aclrtMemSetAccess over whole mappings of one reservation."""
        if access not in (ACCESS_NONE, ACCESS_READ, ACCESS_READWRITE):
            raise InvalidValueError(f"access flags {access!r} are not an aclrtMemAccessFlags value (0, 1, 3)")
        with self.lock:
            r = self.reservation_of(va)
            if r is None or va + size > r.end:
                raise _driver_refuses(f"aclrtMemSetAccess: [0x{va:x}, +{size}) is not inside one reserved range")
            covered = []
            cursor = va
            while cursor < va + size:
                m = r.mappings.get(cursor)
                if m is None:
                    raise _driver_refuses(
                        f"aclrtMemSetAccess: nothing is mapped at 0x{cursor:x}; the range must be whole mappings")
                covered.append(m)
                cursor += m.size
            if cursor != va + size:
                raise _driver_refuses("aclrtMemSetAccess: the range ends inside a mapping; use whole mappings")
            for m in covered:
                self._protect(self._host(m.addr), m.size, access)
                m.access = access
            r.rebuild_runs()

    def get_access(self, va: int) -> int:
        r = self.reservation_of(va) if type(va) is int else None
        m = r.mapping_at(va) if r is not None else None
        if m is None:
            raise _driver_refuses(f"aclrtMemGetAccess: nothing is mapped at 0x{va:x}")
        return m.access

    def handle_at(self, va: int) -> PhysicalHandle:
        """aclrtMemRetainAllocationHandle: the physical memory mapped at `va`."""
        r = self.reservation_of(va) if type(va) is int else None
        m = r.mapping_at(va) if r is not None else None
        if m is None:
            raise _driver_refuses(f"0x{va:x} is not an address of mapped physical memory (aclrtMapMem)")
        return m.physical

    def address_range(self, va: int) -> tuple[int, int] | None:
        """(base, size) of the reservation holding `va`, or None."""
        r = self.reservation_of(va)
        return (r.va, r.size) if r is not None else None

    # ------------------------------------------------------------ teardown
    def release_all(self) -> None:
        """Device reset: every mapping, reservation and physical handle of the device goes
        (caching pools on reserved ranges with them)."""
        self.device.memory.children.clear()
        window_open = getattr(getattr(self.device.backend, "vmm", None), "host_address", 0)
        with self.lock:
            for r in list(self.reservations.values()):
                for m in list(r.mappings.values()):
                    if window_open:  # (a closed driver gave the window's address space back)
                        drv.unmap_range(self._host(m.addr), m.size)
                r.mappings.clear()
                r.starts.clear()
                r.rebuild_runs()
            self.reservations.clear()
            self.starts = []
            for handle in list(self.handles):
                handle.mappings.clear()
                handle.freed = True
                self._release_physical(handle)


# ---------------------------------------------------------------- caching pools on reserved ranges
_POOL_PROP = {"handleType": 0, "allocationType": 0, "memAttr": C.ACL_HBM_MEM_HUGE, "location": {"type": 1, "id": 0},
              "reserve": 0}


class ReservedBackend:
    """A DeviceBackend over reserved ranges of a device: a caching pool (DeviceMemory) on it
    gets each segment as granularity-rounded physical memory mapped at addresses of its ranges
    (what torch_npu's expandable segments and memory pools do). Segments never need contiguous
    physical memory, and freed address space is reused whole: a large allocation after many
    small frees finds room as long as the device has the bytes.

    The address space is reserved as it is needed, in ranges of at least `RANGE` bytes (or the
    segment's size), up to `size` bytes in all, and a range goes back to the device's window
    when its last segment is unmapped: pools then hold about the address space of the memory
    they map, so several (torch MemPools, each allowed all of the device's memory) fit in the
    window together."""

    RANGE = 1 << 30

    def __init__(self, device, size: int):
        self.device, self.vmm = device, device.vmm
        backend = device.backend
        self.physical_id, self.spec, self.uuid = backend.physical_id, backend.spec, backend.uuid
        self.va_base, self.alias_base = backend.va_base, backend.alias_base
        self.arena = backend.arena  # (the pool's out-of-memory message reads the device's accounting)
        self.size = -(-size // GRANULARITY) * GRANULARITY
        self.ranges: dict[int, list] = {}  # start -> [Reservation, PageAllocator of its offsets, bytes mapped]
        self.handles: dict[int, tuple[PhysicalHandle, int, int]] = {}  # va -> (handle, bytes, range start)
        self.mapped, self.memory = 0, None  # bytes mapped; the pool on the ranges (adopt)
        self.vmm._host_window()  # the window's host side now: torch's views must span it (mem_pools)

    @property
    def reserved(self) -> int:
        return sum(r[0].size for r in self.ranges.values())

    def adopt(self, memory) -> None:
        """Let address resolution of the ranges ask `memory` (its blocks, in any state)."""
        self.memory = memory
        for r in self.ranges.values():
            r[0].owner = memory

    def _range_for(self, rounded: int):
        for start, r in self.ranges.items():
            offset = r[1].take(rounded, GRANULARITY)
            if offset is not None:
                return start, r, offset
        size = max(rounded, min(self.RANGE, self.size))
        if self.reserved + size > self.size:
            size = rounded
            if self.reserved + size > self.size:
                return None
        try:
            start = self.vmm.reserve(size)
        except OutOfMemoryError:  # the window is full
            return None
        reservation = self.vmm.reservations[start]
        reservation.owner = self.memory
        r = self.ranges[start] = [reservation, PageAllocator(reservation.size), 0]
        return start, r, r[1].take(rounded, GRANULARITY)

    def map_pages(self, size: int, page: int) -> int | None:
        rounded = -(-size // GRANULARITY) * GRANULARITY
        got = self._range_for(rounded)
        if got is None:
            return None
        start, r, offset = got
        va = start + offset
        try:
            handle = self.vmm.malloc_physical(rounded, dict(_POOL_PROP, location={"type": 1, "id": self.device.id}))
        except OutOfMemoryError:
            self._give(start, r, offset, rounded)
            return None
        self.vmm.map(va, rounded, handle)
        self.handles[va] = (handle, rounded, start)
        r[2] += rounded
        self.mapped += rounded
        return va

    def _give(self, start: int, r: list, offset: int, rounded: int) -> None:
        r[1].give(offset, rounded, GRANULARITY)
        if not r[2]:  # nothing mapped in the range any more: it goes back to the window
            del self.ranges[start]
            r[0].owner = None
            self.vmm.release(start)

    def unmap_pages(self, va: int, size: int, page: int) -> None:
        handle, rounded, start = self.handles.pop(va)
        self.vmm.unmap(va)
        self.vmm.free_physical(handle)
        r = self.ranges[start]
        r[2] -= rounded
        self.mapped -= rounded
        self._give(start, r, va - start, rounded)

    def view(self, va: int, nbytes: int):
        return self.device.backend.view(va, nbytes)

    def host_buffer(self):
        return self.device.backend.host_buffer()

    @property
    def usable(self) -> int:
        return self.device.backend.usable

    @property
    def committed_bytes(self) -> int:
        return self.mapped

    @property
    def free_bytes(self) -> int:
        return self.device.backend.free_bytes

    def largest_free(self, page: int) -> int:
        return min(self.device.backend.free_bytes, self.size - self.mapped)

    def reset(self) -> None:
        for va in list(self.handles):
            self.unmap_pages(va, 0, 0)

    def close(self) -> None:
        """Unmap everything and release the ranges (the pool on them is done)."""
        self.reset()
        for start, r in list(self.ranges.items()):
            r[0].owner = None
            self.vmm.release(start)
        self.ranges.clear()


def reserved_pool(device, size: int):
    """A caching pool (DeviceMemory) of `device` on a reserved range of `size` bytes; it shares
    the device's live-block table, so lookups of its blocks find them, and it is one of the
    device memory's `children` (statistics; a reset drops it)."""
    backend = ReservedBackend(device, size)
    pool = DeviceMemory(backend, poison=device.memory.poison)
    pool.live, pool.parent = device.memory.live, device.memory
    backend.adopt(pool)
    device.memory.children.append(pool)
    return pool
