"""Host memory the runtime knows about: page-locked allocations and registered ranges.

`malloc_host` returns real, page-aligned host memory from its own anonymous mapping (its
address is a usable host pointer). `host_register` marks an existing host range as
page-locked and gives it a device-side alias that only device code (kernel arguments) may
use. Both count as *pinned*: memcpy_async from or to them is truly asynchronous.
"""
from __future__ import annotations

import bisect
import mmap
import threading

import numpy as np

from . import address
from . import constants as C
from ..driver.layout import DEVICE_WINDOW, HOST_ALIAS_OFFSET
from .errors import InvalidValueError, NpuError, OutOfMemoryError, ResourceExhaustedError, as_int
from .memory import uses_pending

PAGE = mmap.PAGESIZE
ALIAS_WINDOW = DEVICE_WINDOW - HOST_ALIAS_OFFSET  # per device, for host_register aliases


class HostRange:
    """A pinned host range: a malloc_host allocation or a registered buffer."""

    __slots__ = ("addr", "size", "mm", "registered", "alias", "device_id", "flags", "uses", "readonly")

    def __init__(self, addr: int, size: int, mm=None, registered=False, alias=0, device_id=-1, flags=0):
        self.addr, self.size, self.mm = addr, size, mm
        self.registered, self.alias, self.device_id, self.flags = registered, alias, device_id, flags
        self.readonly = False  # registered with ACL_HOST_REGISTER_READONLY: nothing may write it
        self.uses: dict | None = None  # stream -> last sequence number of an async copy using it

    def __repr__(self) -> str:
        what = "registered host range" if self.registered else "malloc_host allocation"
        return f"<{what} 0x{self.addr:x} {self.size} B>"

    def view(self, addr: int, nbytes: int) -> np.ndarray:
        """uint8 view of [addr, addr + nbytes) through the mapping (malloc_host memory): the
        view holds the mapping, so free_host defers the unmap until the view is gone."""
        try:
            return np.frombuffer(self.mm, np.uint8, nbytes, addr - self.addr)
        except ValueError:  # the mapping is closed: freed before this access began
            raise InvalidValueError(
                f"0x{addr:x} lies in malloc_host memory that was freed (free_host) before this access; "
                "free host memory only once the copies and kernels that use it have finished") from None


class HostMemory:
    """The process's pinned host ranges."""

    def __init__(self) -> None:
        self.ranges: dict[int, HostRange] = {}   # start -> range
        self.starts: list[int] = []
        self.aliases: dict[int, HostRange] = {}  # alias start -> registered range
        self.lock = threading.Lock()
        self.closing: list[HostRange] = []       # freed while async copies still use them
        address.host_memory = self  # host views of malloc_host memory go through its mapping

    # ------------------------------------------------------------ malloc_host
    def malloc(self, size: int) -> int:
        if type(size) is not int:
            size = as_int(size, "malloc_host size")
        if size <= 0:
            raise InvalidValueError(f"malloc_host size must be a positive int, got {size!r}")
        length = (size + PAGE - 1) // PAGE * PAGE
        try:
            mm = mmap.mmap(-1, length, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        except (OSError, OverflowError, MemoryError) as exc:
            raise OutOfMemoryError(f"malloc_host({size}): the host cannot provide this memory ({exc})",
                                   C.ACL_ERROR_BAD_ALLOC) from None
        addr = np.frombuffer(mm, np.uint8).ctypes.data
        self._add(HostRange(addr, size, mm=mm))
        self.collect_closing()
        return addr

    def free(self, addr: int) -> None:
        rng = self.ranges.get(addr)
        if rng is None or rng.registered:
            raise InvalidValueError(self._not_ours(addr, "free_host", "malloc_host"))
        if rng.alias:  # registered MAPPED too: its device alias goes with it
            with self.lock:
                self.aliases.pop(rng.alias, None)
                rng.alias = 0
        self._remove(rng)
        if uses_pending(rng.uses):  # queued copies still read or write it: unmap it later
            with self.lock:
                self.closing.append(rng)
        else:
            _close(rng)
        self.collect_closing()

    def collect_closing(self) -> None:
        """Unmap freed ranges whose queued copies have finished."""
        if not self.closing:
            return
        with self.lock:
            done = [r for r in self.closing if not uses_pending(r.uses)]
            self.closing = [r for r in self.closing if uses_pending(r.uses)]
        for rng in done:
            _close(rng)

    # ------------------------------------------------------------ registration
    def register(self, addr: int, size: int, device, flags: int) -> HostRange:
        if type(addr) is not int or addr <= 0 or addr >= address.HOST_LIMIT:
            raise InvalidValueError(f"host_register: 0x{addr:x} is not a host address" if isinstance(addr, int)
                                    else f"host_register expects an int address, got {type(addr).__name__}")
        if addr % 4096:
            raise InvalidValueError(f"host_register: 0x{addr:x} is not 4 KiB aligned (the range to "
                                    "register must start on a page boundary)")
        if type(size) is not int or size <= 0:
            raise InvalidValueError(f"host_register size must be a positive int, got {size!r}")
        readonly = bool(flags & C.ACL_HOST_REGISTER_READONLY)
        if not address.host_readable(addr, size):
            raise InvalidValueError(f"host_register: [0x{addr:x}, +{size}) is not mapped, readable host memory")
        if not readonly and not address.host_writable(addr, size):
            raise InvalidValueError(f"host_register: [0x{addr:x}, +{size}) is read-only memory; register it "
                                    "with ACL_HOST_REGISTER_READONLY (the device then only reads it)")
        with self.lock:
            hit = self._find(addr, size)
            if (hit is not None and not hit.registered and not hit.alias and addr + size <= hit.addr + hit.size
                    and flags in (C.ACL_HOST_REGISTER_MAPPED, C.ACL_HOST_REG_MAPPED,
                                  C.ACL_HOST_REG_MAPPED | C.ACL_HOST_REG_PINNED)):
                # malloc_host memory is pinned already; registering it MAPPED (the zero-copy
                # pattern: aclrtHostRegisterV2 on aclrtMallocHost memory) maps it for the device,
                # as on an NPU: the whole allocation gets a device alias until host_unregister
                hit.alias = self._alias_slot(device, hit.size)
                hit.device_id, hit.flags = device.id, flags
                self.aliases[hit.alias] = hit
                return hit
            if hit is not None or self._overlaps(addr, size):
                raise NpuError(f"host_register: [0x{addr:x}, +{size}) overlaps a range that is already "
                               "registered or allocated with malloc_host", C.ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
            alias = self._alias_slot(device, size)
            rng = HostRange(addr, size, registered=True, alias=alias, device_id=device.id, flags=flags)
            rng.readonly = readonly
            self._add(rng, locked=True)
            self.aliases[alias] = rng
        return rng

    def _alias_slot(self, device, size: int) -> int:
        """First free page-aligned range of `size` in the device's alias window (caller
        holds the lock); aliases of unregistered ranges are reused."""
        need = (size + PAGE - 1) // PAGE * PAGE
        base = device.backend.alias_base
        taken = sorted((r.alias, r.alias + (r.size + PAGE - 1) // PAGE * PAGE)
                       for r in self.aliases.values() if r.device_id == device.id)
        start = base
        for lo, hi in taken:
            if lo - start >= need:
                break
            start = max(start, hi)
        if start + need > base + ALIAS_WINDOW:
            raise ResourceExhaustedError(
                f"host_register: device {device.id}'s alias window ({ALIAS_WINDOW >> 30} GiB) has no "
                f"room for {size} more bytes; unregister ranges you no longer need",
                C.ACL_ERROR_RT_RESOURCE_ALLOC_FAIL)
        return start

    def unregister(self, addr: int) -> None:
        rng = self.ranges.get(addr)
        if rng is not None and not rng.registered and rng.alias:  # mapped malloc_host memory: unmap only
            for stream, seq in list((rng.uses or {}).items()):
                stream.synchronize(until=seq, report_errors=False)
            with self.lock:
                self.aliases.pop(rng.alias, None)
                rng.alias = 0
            return
        if rng is None or not rng.registered:
            raise NpuError(f"host_unregister(0x{addr:x}): this address was not registered with host_register"
                           if isinstance(addr, int) else "host_unregister expects an int address",
                           C.ACL_ERROR_HOST_MEMORY_NOT_REGISTERED)
        # the buffer is the user's, who may free it right after: let queued copies that use
        # it finish first (their failures stay on their streams)
        for stream, seq in list((rng.uses or {}).items()):
            stream.synchronize(until=seq, report_errors=False)
        self._remove(rng)
        self.aliases.pop(rng.alias, None)

    def alias_target(self, alias: int, nbytes: int) -> int:
        """Host address behind a device alias (for kernels); errors if out of range."""
        return self.alias_range(alias, nbytes)[0]

    def alias_range(self, alias: int, nbytes: int) -> tuple[int, HostRange]:
        """(host address, registered range) behind a device alias; errors if out of range."""
        keys = sorted(self.aliases)
        i = bisect.bisect_right(keys, alias) - 1
        if i >= 0:
            rng = self.aliases[keys[i]]
            if alias + nbytes <= rng.alias + rng.size:
                return rng.addr + (alias - rng.alias), rng
        raise InvalidValueError(f"0x{alias:x} is not inside a registered host range's device alias")

    def freed(self, addr: int, nbytes: int = 1) -> HostRange | None:
        """A malloc_host range freed with free_host that npurt still maps (a queued copy
        holds it) and that [addr, addr + nbytes) meets: a use after free npurt can see."""
        for rng in list(self.closing):
            if addr < rng.addr + rng.size and rng.addr < addr + max(nbytes, 1):
                return rng
        return None

    # ------------------------------------------------------------ lookup
    def find(self, addr: int, nbytes: int = 1) -> HostRange | None:
        """The pinned range holding `addr` (None for pageable memory). Raises if the access
        starts inside a pinned range but runs past its end."""
        rng = self.ranges.get(addr)
        if rng is None:
            if not self.starts:
                return None
            rng = self._find(addr, 1)
            if rng is None:
                return None
        if addr + nbytes > rng.addr + rng.size:
            raise InvalidValueError(
                f"{nbytes} bytes at 0x{addr:x} run past the end of the {rng!r} "
                f"by {addr + nbytes - rng.addr - rng.size} bytes")
        return rng

    def containing(self, addr: int) -> HostRange | None:
        """The pinned range holding `addr`, or None."""
        return self._find(addr, 1)

    def _find(self, addr: int, nbytes: int) -> HostRange | None:
        i = bisect.bisect_right(self.starts, addr) - 1
        if i < 0:
            return None
        try:
            rng = self.ranges.get(self.starts[i])
        except IndexError:
            return None
        if rng is not None and addr < rng.addr + rng.size:
            return rng
        return None

    def _overlaps(self, addr: int, size: int) -> bool:
        i = bisect.bisect_left(self.starts, addr)
        return i < len(self.starts) and self.starts[i] < addr + size

    def _add(self, rng: HostRange, locked: bool = False) -> None:
        if locked:
            self.ranges[rng.addr] = rng
            bisect.insort(self.starts, rng.addr)
            return
        with self.lock:
            self.ranges[rng.addr] = rng
            bisect.insort(self.starts, rng.addr)

    def _remove(self, rng: HostRange) -> None:
        with self.lock:
            del self.ranges[rng.addr]
            del self.starts[bisect.bisect_left(self.starts, rng.addr)]

    def _not_ours(self, addr, call: str, origin: str) -> str:
        if not isinstance(addr, int):
            return f"{call} expects an int address, got {type(addr).__name__}"
        if address.is_device(addr):
            return (f"{call}(0x{addr:x}): that is a device address; free device memory with "
                    "free(), host memory from malloc_host with free_host()")
        rng = self._find(addr, 1)
        if rng is not None:
            return (f"{call}(0x{addr:x}): address is {addr - rng.addr} bytes inside {rng!r}; pass "
                    f"the start address {origin} returned")
        return f"{call}(0x{addr:x}): not an address returned by {origin} (or already freed)"

    def release_all(self) -> None:
        with self.lock:
            for rng in [*self.ranges.values(), *self.closing]:
                if rng.mm is not None:
                    _close(rng)
            self.closing.clear()
            self.ranges.clear()
            self.starts.clear()
            self.aliases.clear()


def _close(rng: HostRange) -> None:
    try:
        rng.mm.close()
    except BufferError:  # a numpy view of it (ptr_to_numpy) is alive; the mapping goes with it
        pass
