"""The device memory of one simulated NPU: a lazily committed arena of host RAM.

The arena is one anonymous mapping of the SoC's full capacity made with MAP_NORESERVE, so a
64 GiB device maps on a machine with less RAM: pages cost RAM only once touched, and
`madvise(MADV_DONTNEED)` hands them back when the driver unmaps a range. The driver hands
out page-granular ranges ("physical" allocations, 4 KiB, 2 MiB or 1 GiB pages); the
runtime's caching pool carves those into user blocks.
"""
from __future__ import annotations

import bisect
import ctypes
import mmap
import threading

import numpy as np

MAP_NORESERVE = 0x4000  # Linux value; Python's mmap module does not export the name

NORMAL_PAGE = 4 << 10
HUGE_PAGE = 2 << 20
HUGE1G_PAGE = 1 << 30

PAGE_SIZE = mmap.PAGESIZE  # the host's page: the granularity of residency
_mincore = ctypes.CDLL(None, use_errno=True).mincore
_mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)

PAGE_KINDS = {NORMAL_PAGE: "normal", HUGE_PAGE: "huge", HUGE1G_PAGE: "huge1g"}


def align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


class PageAllocator:
    """First-fit allocation of page-granular ranges of a capacity (offsets, not VAs), and the
    count of what is committed per page size: the bookkeeping of a device's memory."""

    def __init__(self, usable: int):
        self.usable = usable
        self._lock = threading.Lock()
        self._free_starts = [0]          # sorted starts of free ranges
        self._free_sizes = {0: usable}   # start -> size
        self.committed = {kind: 0 for kind in PAGE_KINDS.values()}

    def take(self, size: int, page: int) -> int | None:
        """Reserve `size` bytes (rounded up to `page`) aligned to `page`; the offset, or None
        when no free range is large enough."""
        size = align_up(size, page)
        with self._lock:
            for start in self._free_starts:
                free = self._free_sizes[start]
                offset = align_up(start, page)
                if offset + size > start + free:
                    continue
                self._take(start, free, offset, size)
                self.committed[PAGE_KINDS[page]] += size
                return offset
        return None

    def give(self, offset: int, size: int, page: int) -> None:
        """Give a range back to the free list."""
        size = align_up(size, page)
        with self._lock:
            self.committed[PAGE_KINDS[page]] -= size
            self._give(offset, size)

    # the page-source verbs of an arena (driver/paged.py), for bookkeeping with no memory behind
    # it (the null driver); an arena also gives the pages' memory back to the OS
    def map_pages(self, size: int, page: int) -> int | None:
        return self.take(size, page)

    def unmap_pages(self, offset: int, size: int, page: int) -> None:
        self.give(offset, size, page)

    def release_all(self) -> None:
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._free_starts = [0]
            self._free_sizes = {0: self.usable}
            self.committed = {kind: 0 for kind in PAGE_KINDS.values()}

    @property
    def committed_bytes(self) -> int:
        return sum(self.committed.values())

    @property
    def free_bytes(self) -> int:
        return self.usable - self.committed_bytes

    def largest_free(self, page: int) -> int:
        """Largest `page`-aligned range that one take could still get."""
        best = 0
        with self._lock:
            for start, free in self._free_sizes.items():
                aligned = align_up(start, page)
                best = max(best, (start + free - aligned) // page * page)
        return best

    # ------------------------------------------------------------ free-list bookkeeping
    def _take(self, start: int, free: int, offset: int, size: int) -> None:
        i = bisect.bisect_left(self._free_starts, start)
        del self._free_starts[i]
        del self._free_sizes[start]
        if offset > start:
            self._insert(start, offset - start)
        end, free_end = offset + size, start + free
        if free_end > end:
            self._insert(end, free_end - end)

    def _insert(self, start: int, size: int) -> None:
        bisect.insort(self._free_starts, start)
        self._free_sizes[start] = size

    def _give(self, offset: int, size: int) -> None:
        i = bisect.bisect_left(self._free_starts, offset)
        # merge with the following range
        if i < len(self._free_starts) and self._free_starts[i] == offset + size:
            nxt = self._free_starts.pop(i)
            size += self._free_sizes.pop(nxt)
        # merge with the preceding range
        if i > 0:
            prev = self._free_starts[i - 1]
            if prev + self._free_sizes[prev] == offset:
                self._free_sizes[prev] += size
                return
        self._free_starts.insert(i, offset)
        self._free_sizes[offset] = size


class HbmArena(PageAllocator):
    """Capacity-sized mapping plus the page allocator over it."""

    def __init__(self, capacity: int, system_reserved: int = 0):
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE
        # an OSError here (ulimit -v, vm.overcommit_memory=2) is explained by the runtime's init
        self._mm = mmap.mmap(-1, capacity, flags=flags, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        self.capacity = capacity
        # the top of the memory belongs to the driver and firmware: never handed out, and
        # not part of what get_mem_info reports as total
        super().__init__(capacity - system_reserved)
        self.mem = np.frombuffer(self._mm, dtype=np.uint8)
        self.host_address = self.mem.ctypes.data

    # ------------------------------------------------------------ page allocation
    def unmap_pages(self, offset: int, size: int, page: int) -> None:
        """Give a range back: its pages return to the OS and its space to the free list."""
        self._mm.madvise(mmap.MADV_DONTNEED, offset, align_up(size, page))
        self.give(offset, size, page)

    def release_all(self) -> None:
        """Return every page to the OS (device reset / finalize)."""
        self._mm.madvise(mmap.MADV_DONTNEED, 0, self.capacity)
        self.reset()

    def resident_bytes(self) -> int:
        """RAM the kernel really backs this arena with now, from mincore(2).

        (Not the Rss of /proc/self/smaps: the kernel merges the adjacent, identical mappings
        of several devices' arenas into one VMA, so a VMA's Rss is not this arena's.)"""
        vec = np.zeros(self.capacity // PAGE_SIZE, dtype=np.uint8)
        if _mincore(self.host_address, self.capacity, vec.ctypes.data) != 0:
            raise OSError(ctypes.get_errno(), "mincore failed on the device memory arena")
        return int(np.count_nonzero(vec & 1)) * PAGE_SIZE
