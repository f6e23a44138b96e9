"""memcheck: what is allocated, and accesses and frees that do not fit it.

The table mirrors the runtime's allocations as the hooks report them (device memory,
malloc_host memory, host registrations), with the user's line that made each one. It finds:

* accesses past the *requested* size, even where the allocation's padding (ACL rounds a
  request up to 32 bytes and adds 32) would let the hardware survive them;
* what the runtime refuses (mem_error): use after free, illegal addresses, illegal and
  double frees, a memcpy kind that contradicts its addresses;
* a plain free (aclrtFree, which on an NPU does not wait) of memory that work not yet
  ordered before the free still uses.

Allocations made before the sanitizer was enabled are adopted on first sight (all their
bytes count as written) instead of being reported.
"""
from __future__ import annotations

import bisect
import itertools
from collections import OrderedDict

from .intervals import IntervalSet
from .report import Actor, Report

_ids = itertools.count(1)
MAX_DEAD = 4096


class Allocation:
    """One allocation: device memory (device set), malloc_host memory or a registered host
    range (device None; `kind` says which)."""

    __slots__ = ("id", "device", "addr", "size", "managed", "site", "kind", "init", "freed_site",
                 "in_use_reported", "live", "uses", "unread")

    def __init__(self, device, addr: int, size: int, managed: bool, site, kind: str, init: bool = True):
        self.id = next(_ids)
        self.device, self.addr, self.size, self.managed, self.site, self.kind = device, addr, size, managed, site, kind
        self.init = IntervalSet() if init else None   # None: not tracked (all bytes count as written)
        self.freed_site = None
        self.in_use_reported = False
        self.live = True
        self.uses: dict | None = None  # at a free: {stream agent: last seq} the stream-ordered free waits for
        self.unread: list = []         # initcheck: reads of unwritten bytes not yet reported (see initcheck)

    @property
    def end(self) -> int:
        return self.addr + self.size

    def describe(self) -> str:
        where = f"device {self.device.id}" if self.device is not None else "host"
        what = {"device": "allocation", "host": "malloc_host allocation",
                "registered": "registered host range"}.get(self.kind, "allocation")
        made = f" made at {self.site}" if self.site is not None else ""
        return f"the {self.size}-byte {where} {what} at 0x{self.addr:x}{made}"


class Allocations:
    """Live allocations by start address, and recently freed ones (for double frees)."""

    def __init__(self) -> None:
        self.live: dict[int, Allocation] = {}
        self.starts: list[int] = []
        self.dead: OrderedDict = OrderedDict()

    def add(self, a: Allocation) -> None:
        old = self.live.get(a.addr)
        if old is not None:  # the runtime forgot it without telling us (a reset): replace
            self.remove(old)
        self.live[a.addr] = a
        bisect.insort(self.starts, a.addr)
        self.dead.pop(a.addr, None)

    def remove(self, a: Allocation, site=None) -> None:
        if self.live.get(a.addr) is a:
            del self.live[a.addr]
            del self.starts[bisect.bisect_left(self.starts, a.addr)]
        a.freed_site = site
        self.dead[a.addr] = a
        if len(self.dead) > MAX_DEAD:
            self.dead.popitem(last=False)

    def find(self, addr: int) -> Allocation | None:
        """The live allocation whose [addr, addr + size) holds `addr`."""
        a = self.live.get(addr)
        if a is not None:
            return a
        i = bisect.bisect_right(self.starts, addr) - 1
        if i >= 0:
            a = self.live[self.starts[i]]
            if addr < a.end:
                return a
        return None

    def near(self, addr: int) -> Allocation | None:
        """The live allocation starting at or before `addr` (for accesses past its end)."""
        i = bisect.bisect_right(self.starts, addr) - 1
        return self.live[self.starts[i]] if i >= 0 else None

    def of_device(self, device) -> list[Allocation]:
        return [a for a in self.live.values() if a.device is device]


# ---------------------------------------------------------------- reports
_ERROR_KINDS = {
    "out_of_bounds": ("illegal access", "out of bounds"),
    "use_after_free": ("use after free", "memory that was freed"),
    "invalid_address": ("illegal address", "an address that is not usable memory"),
    "invalid_free": ("illegal free", "a free of an address that is not a live allocation"),
    "kind_mismatch": ("memcpy kind mismatch", "a memcpy kind that contradicts its addresses"),
}
_FIXES = {
    "out_of_bounds": "keep every access inside the allocation's requested size (allocate more, or copy less)",
    "use_after_free": "free memory only after the last task that uses it, and do not use a pointer after free",
    "invalid_address": "pass an address returned by malloc/malloc_host (or a live buffer of this process)",
    "invalid_free": "free each allocation once, with the exact address malloc returned (host memory with free_host)",
    "kind_mismatch": "pass the kind the addresses call for, or ACL_MEMCPY_DEFAULT",
}


def refused_report(kind: str, message: str, actor: Actor, addr, nbytes: int, device, double: bool = False,
                   freed=None) -> Report:
    """A memcheck report for an operation the runtime refused (mem_error)."""
    name, what = _ERROR_KINDS.get(kind, ("illegal access", kind))
    fix = _FIXES.get(kind, "")
    details = []
    if double:
        name, what = "double free", "a second free of the same allocation"
        fix = "free each allocation exactly once"
    if freed is not None:
        details.append(f"{freed.describe()} was freed" + (f" at {freed.freed_site}" if freed.freed_site else ""))
    details.append(message if kind == "kind_mismatch" else f"the runtime refused it: {message}")
    return Report("memcheck", name, f"{what} ({nbytes} bytes at 0x{addr:x})" if isinstance(addr, int) and nbytes
                  else f"{what} (0x{addr:x})" if isinstance(addr, int) else what,
                  actors=[actor], details=details, fix=fix, address=addr if isinstance(addr, int) else None,
                  nbytes=nbytes, device=getattr(device, "id", None), key=(kind, actor.site))


def oob_report(alloc: Allocation, lo: int, hi: int, write: bool, actor: Actor) -> Report:
    past = hi - alloc.end
    kind = "illegal write" if write else "illegal read"
    return Report(
        "memcheck", kind, f"{hi - lo} bytes at 0x{lo:x}, {past} byte{'s' if past != 1 else ''} past the end of "
        f"{alloc.describe()}",
        actors=[actor],
        details=["the bytes past the requested size lie in the allocation's padding, so an NPU would not "
                 "fault: it would silently read or clobber whatever the padding holds"],
        fix=f"allocate at least {hi - alloc.addr} bytes, or keep the access within {alloc.size}",
        address=lo, nbytes=hi - lo, device=getattr(alloc.device, "id", None), key=("oob", alloc.site, actor.site))


def free_in_use_report(alloc: Allocation, free_actor: Actor, users: list[Actor]) -> Report:
    if alloc.device is None:  # free_host of pinned memory
        why = ("acl.rt.free_host does not wait for queued copies on an NPU: the DMA engine would read or write "
               "the freed pages (npurt keeps them mapped until the copy ran; the hardware does not)")
    else:
        why = ("acl.rt.free does not wait for queued work on an NPU: the memory can be handed out again "
               "while that work still reads or writes it")
    return Report(
        "memcheck", "illegal free",
        f"{alloc.describe()} is freed while work that is not ordered before the free still uses it",
        actors=[free_actor, *users],
        details=[why],
        fix="synchronize the stream that uses the memory (or an event recorded after its last use) before "
            "the free",
        address=alloc.addr, nbytes=alloc.size, device=getattr(alloc.device, "id", None),
        key=("in_use", free_actor.site, *(u.site for u in users)))
