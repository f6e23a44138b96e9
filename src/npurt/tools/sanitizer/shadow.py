"""Shadow memory: a short history of who touched which bytes, and the race test.

Memory is split into *regions*: device allocations, pinned host ranges, and ad hoc ranges
of other host memory that was touched. Each region keeps its recent accesses (byte range,
read or write, the agent and its clock, who made it). A new access races with an earlier
one when their bytes overlap, at least one writes, they come from different agents and the
earlier one is not in the new one's vector clock. Overlapping views at different offsets
compare by bytes; a 2-D access (rows of `width` bytes every `pitch`) only meets the bytes of
its rows.

History is pruned as it goes: an access that covers an older one and is ordered after it
makes the older one redundant (anything racing with the older one races with it too, or is
ordered after both). A region keeps at most MAX_RECORDS. Freed regions stay as tombstones
until new memory is allocated over them, so an access through a block the pool handed to
someone else still meets the history of its previous owner. Ad hoc host history ends with
the buffer it was about (`released`): a numpy array's memory is handed to the next array the
host allocates, whose accesses have nothing to do with the old ones.
"""
from __future__ import annotations

import bisect
from collections import OrderedDict

from .clocks import ordered

MAX_RECORDS = 48
MAX_ADHOC = 4096


class Access:
    """One access in the history."""

    __slots__ = ("lo", "hi", "write", "agent", "clock", "who", "width", "pitch", "owner", "noted")

    def __init__(self, lo, hi, write, agent, clock, who, width=0, pitch=0, owner=None, noted=False):
        self.lo, self.hi, self.write, self.agent, self.clock = lo, hi, write, agent, clock
        self.who, self.width, self.pitch, self.owner = who, width, pitch, owner
        self.noted = noted  # the runtime knows this task uses the memory (stream-ordered free waits for it)

    def clipped(self, lo: int, hi: int) -> "Access":
        return Access(max(self.lo, lo), min(self.hi, hi), self.write, self.agent, self.clock, self.who,
                      self.width, self.pitch, self.owner, self.noted)


class Region:
    """A range of memory with its access history. `owner`: the Allocation (or None)."""

    __slots__ = ("lo", "hi", "records", "owner", "adhoc")

    def __init__(self, lo: int, hi: int, owner=None, adhoc: bool = False):
        self.lo, self.hi, self.owner, self.adhoc = lo, hi, owner, adhoc
        self.records: list[Access] = []


def _row_hits(base: int, width: int, pitch: int, end: int, lo: int, hi: int) -> bool:
    """Does a row [base + k*pitch, +width) below `end` meet [lo, hi)?"""
    k = max(0, -(-(lo - base - width + 1) // pitch))  # first row that ends after lo
    start = base + k * pitch
    return start < hi and start < end


def overlap(a_lo, a_hi, a_w, a_p, b_lo, b_hi, b_w, b_p) -> bool:
    """True if two accesses share a byte (2-D accesses: rows of w bytes every p)."""
    if a_lo >= b_hi or b_lo >= a_hi:
        return False
    if not a_w and not b_w:
        return True
    if not b_w:
        return _row_hits(a_lo, a_w, a_p, a_hi, b_lo, b_hi)
    if not a_w:
        return _row_hits(b_lo, b_w, b_p, b_hi, a_lo, a_hi)
    if a_p != b_p:
        return True  # different pitches: assume they meet (no false negatives)
    # same pitch: their columns must overlap (mod pitch) and their row spans do
    a0, b0 = a_lo % a_p, b_lo % b_p
    for shift in (-a_p, 0, a_p):
        if a0 + shift < b0 + b_w and b0 < a0 + shift + a_w:
            return True
    return False


class Shadow:
    def __init__(self) -> None:
        self.starts: list[int] = []
        self.regions: dict[int, Region] = {}
        self.adhoc: OrderedDict = OrderedDict()

    # ------------------------------------------------------------ regions
    def find(self, lo: int, hi: int) -> list[Region]:
        """The regions overlapping [lo, hi), in address order."""
        starts = self.starts
        i = bisect.bisect_right(starts, lo) - 1
        if i < 0:
            i = 0
        out = []
        regions = self.regions
        while i < len(starts) and starts[i] < hi:
            r = regions[starts[i]]
            if r.hi > lo:
                out.append(r)
            i += 1
        return out

    def _insert(self, region: Region) -> None:
        bisect.insort(self.starts, region.lo)
        self.regions[region.lo] = region
        if region.adhoc:
            self.adhoc[region.lo] = region
            if len(self.adhoc) > MAX_ADHOC:
                _, old = self.adhoc.popitem(last=False)
                self._remove(old)

    def _remove(self, region: Region) -> None:
        if self.regions.get(region.lo) is region:
            del self.regions[region.lo]
            del self.starts[bisect.bisect_left(self.starts, region.lo)]
        self.adhoc.pop(region.lo, None)

    def add_region(self, lo: int, hi: int, owner=None) -> Region:
        """New memory at [lo, hi): takes over the history (tombstones) of the bytes it
        covers; what lies outside stays with the remnants."""
        new = Region(lo, hi, owner)
        for old in self.find(lo, hi):
            self._remove(old)
            for part_lo, part_hi in ((old.lo, lo), (hi, old.hi)):
                if part_lo < part_hi:
                    rest = Region(part_lo, part_hi, old.owner, old.adhoc)
                    rest.records = [r.clipped(part_lo, part_hi) for r in old.records
                                    if r.lo < part_hi and r.hi > part_lo]
                    self._insert(rest)
            new.records += [r.clipped(lo, hi) for r in old.records if r.lo < hi and r.hi > lo]
        self._insert(new)
        return new

    def drop(self, lo: int, hi: int) -> None:
        """Forget the history of [lo, hi) (a device reset)."""
        for r in self.find(lo, hi):
            self._remove(r)

    def released(self, lo: int, hi: int) -> None:
        """Host memory [lo, hi) that npurt did not allocate was released (the numpy array a
        copy used was freed): forget its ad hoc history, so whatever the host allocator puts
        there next (another thread's array) does not meet it. Parts of ad hoc regions outside
        the range, and regions of memory npurt knows (pinned, registered), stay."""
        for old in self.find(lo, hi):
            if not old.adhoc:
                continue
            self._remove(old)
            for part_lo, part_hi in ((old.lo, lo), (hi, old.hi)):
                if part_lo < part_hi:
                    rest = Region(part_lo, part_hi, None, adhoc=True)
                    rest.records = [r.clipped(part_lo, part_hi) for r in old.records
                                    if r.lo < part_hi and r.hi > part_lo]
                    self._insert(rest)

    def ensure(self, lo: int, hi: int) -> list[Region]:
        """The regions covering [lo, hi), making ad hoc ones for bytes no region covers."""
        found = self.find(lo, hi)
        gaps, at = [], lo
        for r in found:
            if r.lo > at:
                gaps.append((at, r.lo))
            at = max(at, r.hi)
        if at < hi:
            gaps.append((at, hi))
        for g_lo, g_hi in gaps:
            region = Region(g_lo, g_hi, None, adhoc=True)
            self._insert(region)
            found.append(region)
        if gaps:
            found.sort(key=lambda r: r.lo)
        return found

    # ------------------------------------------------------------ accesses
    def access(self, regions: list[Region], lo: int, hi: int, write: bool, agent: int, clock: int,
               vc: dict, who, width: int = 0, pitch: int = 0, noted: bool = False) -> list[Access]:
        """Record an access to [lo, hi) in `regions`; returns the earlier accesses it races."""
        races = []
        for region in regions:
            r_lo, r_hi = max(lo, region.lo), min(hi, region.hi)
            keep = []
            records = region.records
            for old in records:
                if not overlap(old.lo, old.hi, old.width, old.pitch, r_lo, r_hi, width, pitch):
                    keep.append(old)
                    continue
                same = old.agent == agent
                before = same or ordered(old.agent, old.clock, vc)
                if not before and (write or old.write):
                    races.append(old)
                if (before and (write or not old.write) and lo <= old.lo and old.hi <= hi
                        and (not width or (old.width == width and old.pitch == pitch))):
                    continue  # covered and ordered before: redundant now
                keep.append(old)
            last = keep[-1] if keep else None
            if (last is not None and not width and not last.width and last.agent == agent
                    and last.clock == clock and last.write == write and last.lo <= r_hi and r_lo <= last.hi):
                last.lo, last.hi = min(last.lo, r_lo), max(last.hi, r_hi)  # the same task again
            else:
                keep.append(Access(r_lo, r_hi, write, agent, clock, who, width, pitch, region.owner, noted))
            if len(keep) > MAX_RECORDS:
                del keep[:len(keep) - MAX_RECORDS]
            region.records = keep
        return races

    def forget(self, region: Region, keep) -> None:
        """Keep only the records for which keep(record) is true."""
        region.records = [r for r in region.records if keep(r)]
