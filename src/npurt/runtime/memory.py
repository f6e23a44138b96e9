"""Device memory: the runtime's caching pool over the driver's page allocations.

Two levels, as in the real runtime:

* the driver maps page-granular *segments* (4 KiB pages, 2 MiB huge pages, 1 GiB pages);
* the pool carves segments into *blocks* and serves malloc/free from blocks it has cached,
  so the hot path never reaches the driver.

Fast path (malloc of a size that has a cached block of exactly that size, free of a block no
queued work uses) is a handful of single dict operations and no lock; with the C accelerator
(npurt.runtime.accel: block records, bins and counters in C structures) a few pointer moves. It relies on the GIL in
CPython 3.11 making each of `dict.popitem()`, `dict.pop()` and `dict[k] = v` atomic, and on
the rule below:

    A free block belongs to whoever removes it from its bin.

A bin is a dict used as an insertion-ordered set of blocks: `popitem()` (fast malloc, best
fit) takes the block cached last, `pop(block)` (the locked slow path: coalescing, giving
segments back) takes a given one; both are atomic and O(1), so exactly one of two racing
claimers gets a block, and claiming costs the same however many blocks are cached (a list's
`remove` made merging n freed blocks O(n^2): minutes after 10^5 frees, issue 29).

Coalescing is lazy: frees only mark their segment dirty, and a malloc that finds no cached
block big enough merges the dirty segments one at a time until one yields a block that fits.
Each merge walks one segment (its blocks are indexed per segment, so unindexing a merged
block is O(blocks in the segment), never O(blocks on the device)); the cost of a large malloc
after 10^6 small frees is one segment's walk, not the device's.
Counters are plain attribute updates; CPython only switches threads at calls and backward
jumps, never inside `obj.attr += n` on a plain attribute, so they stay exact. (Free-threaded
builds are refused at import for this reason: see npurt.runtime.)

Stream-ordered reuse: tasks that touch a block record (stream -> sequence number) in
`block.uses`. `free` of a block whose recorded work has not finished parks it as *pending*;
it returns to the cache only once that work has completed, so new allocations never alias
memory that queued work still reads or writes. The stream's retirement of that work gives it
back to its bin (a retire callback armed per stream at the smallest sequence number waited
for), so the next malloc of its size takes the fast path instead of scanning. A malloc that finds no memory while blocks
are pending waits for their work and retries before it reports ACL_ERROR_RT_MEMORY_ALLOCATION
(207001), as torch's caching allocator does.
"""
from __future__ import annotations

import bisect
import functools
import heapq
import itertools
import threading
from typing import TYPE_CHECKING

from . import constants as C
from .accel import SPEEDUPS, Bin, BlockBase, PoolBase
from .config import POISON_BYTE
from .errors import InvalidValueError, NpuError, OutOfMemoryError, as_int

if TYPE_CHECKING:
    from ..driver import DeviceBackend

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
NORMAL_PAGE, HUGE_PAGE, HUGE1G_PAGE = 4 * KiB, 2 * MiB, 1 * GiB
SIZE_CLASS = 512            # every block size is a multiple of this
SMALL_REQUEST = 1 * MiB     # requests up to this share 2 MiB segments
SMALL_SEGMENT = 2 * MiB

# block states
FREE, LIVE, PENDING = 0, 1, 2
LARGE_CACHE = "large"  # the key of the pool malloc_large serves (torch's large blocks)
_FAST_MAX = SMALL_REQUEST - 32  # sizes whose block (size + 32, rounded) fits SMALL_REQUEST
_FAST_ROUND = 32 + SIZE_CLASS - 1
_CLASS_MASK = ~(SIZE_CLASS - 1)

_BASE_POLICIES = {
    C.ACL_MEM_MALLOC_HUGE_FIRST: ("huge_first", False),
    C.ACL_MEM_MALLOC_HUGE_ONLY: ("huge_only", False),
    C.ACL_MEM_MALLOC_NORMAL_ONLY: ("normal_only", False),
    C.ACL_MEM_MALLOC_HUGE_FIRST_P2P: ("huge_first", True),
    C.ACL_MEM_MALLOC_HUGE_ONLY_P2P: ("huge_only", True),
    C.ACL_MEM_MALLOC_NORMAL_ONLY_P2P: ("normal_only", True),
    C.ACL_MEM_MALLOC_HUGE1G_ONLY: ("huge1g_only", False),
    C.ACL_MEM_MALLOC_HUGE1G_ONLY_P2P: ("huge1g_only", True),
}
_MODIFIER_BITS = (C.ACL_MEM_TYPE_LOW_BAND_WIDTH | C.ACL_MEM_TYPE_HIGH_BAND_WIDTH
                  | C.ACL_MEM_ACCESS_USER_SPACE_READONLY)


def align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


_UNPADDED = (6, 7)  # ACL_MEM_MALLOC_HUGE1G_ONLY, ACL_MEM_MALLOC_HUGE1G_ONLY_P2P


def usable_size(block) -> int:
    """Bytes of an allocation that copies and kernels may touch: ALIGN_UP(size, 32) + 32, the
    padding ACL gives every malloc (ALIGN_UP(size, 32) for malloc_align32 and the HUGE1G
    policies). Tools still judge accesses against `block.requested`."""
    return ((block.requested + 31) & ~31) + (0 if block.align32 else 32)


def parse_policy(policy: int, size: int) -> tuple[str, bool]:
    """(placement, p2p) of an aclrtMemMallocPolicy value.

    A base policy may be OR-ed with one bandwidth type and the read-only bit (the policy
    page allows it). A value with no known base is treated as the real runtime does: huge
    pages for 2 MiB and more, normal pages below.
    """
    if not isinstance(policy, int) or policy < 0:
        raise InvalidValueError(f"malloc policy {policy!r} is not a non-negative int "
                                "(use ACL_MEM_MALLOC_HUGE_FIRST = 0, HUGE_ONLY = 1, NORMAL_ONLY = 2, ...)")
    if (policy & C.ACL_MEM_TYPE_LOW_BAND_WIDTH) and (policy & C.ACL_MEM_TYPE_HIGH_BAND_WIDTH):
        raise InvalidValueError("malloc policy combines ACL_MEM_TYPE_LOW_BAND_WIDTH and "
                                "ACL_MEM_TYPE_HIGH_BAND_WIDTH; pick one")
    base = policy & ~_MODIFIER_BITS
    if base in _BASE_POLICIES:
        return _BASE_POLICIES[base]
    return ("huge_only" if size >= 2 * MiB else "normal_only"), False


def note_use(holder, stream, seq: int) -> None:
    """Remember that task `seq` of `stream` uses `holder` (a device Block or a pinned host
    range), so freeing it does not let the memory be reused or unmapped before that task
    retired. None (pageable host memory) is ignored."""
    if holder is None:
        return
    uses = holder.uses
    if uses is None:
        holder.uses = {stream: seq}
    else:
        uses[stream] = seq
        n = len(uses)
        if n >= 8 and not n & (n - 1):  # at 8, 16, 32, ... entries: amortized O(1) per use
            prune_uses(uses)


def note_uses(holders, stream, seq: int) -> None:
    """note_use for each of `holders` (one call for the allocations a launch touches)."""
    for holder in holders:
        if holder is None:  # pageable host memory: nothing to hold
            continue
        uses = holder.uses
        if uses is None:
            holder.uses = {stream: seq}
        else:
            uses[stream] = seq
            n = len(uses)
            if n >= 8 and not n & (n - 1):
                prune_uses(uses)


def prune_uses(uses: dict) -> None:
    """Forget the streams whose recorded work has retired, so a long-lived buffer does not
    keep every stream that ever touched it alive (a server making a stream per request)."""
    for stream, seq in list(uses.items()):
        # test and delete with no call in between: a concurrent note_use of a newer task
        # cannot slip in (GIL), so its entry is never lost
        if stream.completed_seq >= seq and stream in uses and uses[stream] == seq:
            del uses[stream]


if SPEEDUPS is not None:  # the same three in C: a Python frame less per holder of every enqueue
    note_use, note_uses, prune_uses = (  # noqa: F811
        SPEEDUPS.note_use, SPEEDUPS.note_uses, SPEEDUPS.prune_uses)


def uses_pending(uses: dict | None) -> bool:
    """True while a task recorded in `uses` (stream -> sequence number) has not retired;
    clears `uses` once none is left."""
    if not uses:
        return False
    for stream, seq in list(uses.items()):
        if stream.completed_seq < seq:
            return True
    uses.clear()
    return False


class Segment:
    """One driver allocation: `size` bytes of `page`-sized pages at device address `va`."""

    __slots__ = ("va", "size", "page", "first", "starts")

    def __init__(self, va: int, size: int, page: int):
        self.va, self.size, self.page = va, size, page
        self.first: Block | None = None
        self.starts: list[int] = []  # sorted start addresses of its blocks (find, per segment)


class Block(BlockBase):
    """A piece of a segment: cached (FREE), handed out (LIVE), or freed while queued work
    still uses it (PENDING). The record (accel.BlockBase: Block(addr, size, segment, pool)):
    addr, size, requested (the size asked for: what diagnostics and tools report against),
    align32 (malloc_align32: no 32 bytes of padding), segment, prev/next (its neighbours in
    the segment), state, uses (None or stream -> last sequence number using it), pool."""

    __slots__ = ()

    def contains(self, addr: int, nbytes: int) -> bool:
        return self.addr <= addr and addr + nbytes <= self.addr + self.requested

    def work_pending(self) -> bool:
        return uses_pending(self.uses)

    def __repr__(self) -> str:
        state = ("free", "live", "pending-free")[self.state]
        return f"<Block 0x{self.addr:x} {self.requested}/{self.size} B {state}>"


class PagePool:
    """Cached blocks carved from segments of one page size. Bins map an exact block size to
    the free blocks of that size (an accel.Bin: an ordered set with O(1) take of any block)."""

    def __init__(self, owner: "DeviceMemory", page: int):
        self.owner, self.page = owner, page
        self.bins: dict[int, Bin] = {}
        self.bin_sizes: list[int] = []  # sorted sizes of the bins best_fit searches
        # A bin is `untracked` once best_fit dropped its (empty) size from bin_sizes: each
        # split leaves a remainder of a new size, so without pruning best_fit would walk ever
        # more empty bins. The bin itself stays (a concurrent fast-path free may hold it); a
        # push into it re-adds the size. (A free racing with the pruning may leave a block
        # only exact-size mallocs and coalescing find, until the next push of that size.)
        self.segments: dict[int, Segment] = {}
        # segments where a block was freed since the last coalescing: only these can have
        # mergeable neighbours. (A mark lost to a race only delays a merge.)
        self.dirty: set[Segment] = set()

    def push(self, block: Block) -> None:
        """Return a block to its bin (the fast path when the bin exists and is searched)."""
        size = block.size
        lst = self.bins.get(size)
        if lst is None or lst.untracked:
            with self.owner.lock:
                lst = self.bins.get(size)
                if lst is None:
                    lst = self.bins[size] = Bin()
                    bisect.insort(self.bin_sizes, size)
                    if self.page == NORMAL_PAGE:
                        self.owner._note_bin(size, lst)  # the C fast path's array of small bins
                elif lst.untracked:
                    lst.untracked = False
                    bisect.insort(self.bin_sizes, size)
        block.state = FREE
        lst[block] = None

    def claim(self, block: Block) -> bool:
        """Take a specific free block out of its bin; False if someone else holds it."""
        lst = self.bins.get(block.size)
        if lst is None:
            return False
        return lst.pop(block, False) is None  # atomic, O(1)

    def best_fit(self, size: int) -> Block | None:
        """Smallest cached block of at least `size` (caller holds the lock)."""
        sizes = self.bin_sizes
        i = bisect.bisect_left(sizes, size)
        found = None
        j = len(sizes)
        for k in range(i, len(sizes)):
            try:
                found = self.bins[sizes[k]].popitem()[0]
            except KeyError:
                continue
            j = k + (not self.bins[sizes[k]])  # the bin it came from is pruned too if now empty
            break
        empty = [k for k in range(i, j) if not self.bins[sizes[k]]]
        for k in reversed(empty):  # prune the empty bins we walked past
            self.bins[sizes[k]].untracked = True
            del sizes[k]
        return found


class DeviceMemory(PoolBase):
    """The memory manager of one device: pools per page size, the live-block table, stats.

    With the C accelerator, `malloc` and `free` are PoolBase's: the cached-block case in C,
    the rest through `_malloc` and `_free` below; `allocated`, `peak` and `num_frees` are C
    fields (read and written as attributes all the same)."""

    def __init__(self, backend: "DeviceBackend", poison: bool = False):
        self.backend = backend
        self.poison = poison
        self.lock = threading.RLock()
        self.pools = {p: PagePool(self, p) for p in (NORMAL_PAGE, HUGE_PAGE, HUGE1G_PAGE)}
        # torch's large blocks (malloc_large), apart from aclrtMalloc's as torch_npu's caching
        # allocator keeps its segments apart from other users of the device
        self.pools[LARGE_CACHE] = PagePool(self, HUGE_PAGE)
        self.normal_pool = self.pools[NORMAL_PAGE]
        self.small_bins = self.normal_pool.bins   # the bins the fast path pops from
        self._set_small_pool(self.normal_pool, self.normal_pool.dirty)
        self.live: dict[int, Block] = {}          # start address -> LIVE block
        self.blocks: dict[int, Block] = {}        # start address -> every block
        self.segment_starts: list[int] = []       # sorted start addresses of every segment
        self.segment_at: dict[int, Segment] = {}  # start address -> segment
        # freed blocks waiting for queued work: per stream, a heap of (sequence number the
        # block waits for, tie-breaker, block), so collecting them costs what finished, not
        # what is pending (torch frees a temporary per op while the host runs far ahead)
        self.pending: dict = {}
        self.pending_count = 0
        self._pending_tie = itertools.count()
        # stream -> the sequence number a retire callback is armed for: its retirement gives
        # that stream's finished pending blocks back to their bins (no scan at the next malloc)
        self._armed: dict = {}
        self.released: dict[int, str] = {}        # addresses invalidated by reset, for messages
        # the device's virtual memory management (vmm.py): addresses from vmm_base on are
        # reserved ranges, resolved by it (set by the Device)
        self.vmm = None
        self.vmm_base = getattr(backend, "vmm_base", 0) or (1 << 64)
        self.children: list = []  # caching pools on reserved ranges of the device (vmm.reserved_pool)
        self.expandable = False   # torch's expandable-segments pool (its large blocks split finer)
        self.no_split = False     # a torch MemPool(no_split=True): every block keeps its whole segment
        self.keep_cache = False   # a child pool whose owner still uses it: the device's empty_cache leaves it
        self.parent = None        # a child pool: the device's DeviceMemory (vmm.reserved_pool)
        self.reserve_limit: int | None = None  # the device's: bytes all its pools may hold (torch's fraction)
        # statistics (see memory_stats)
        self.allocated = 0
        self.peak = 0
        self.reserved = 0
        self.peak_reserved = 0
        # the fast path counts nothing but frees: num_allocs = frees + live + forgotten at reset
        self.forgotten = 0      # live blocks dropped by release_all (counted as allocated)
        self.slow_allocs = 0    # served by the slow path
        self.slow_hits = 0      # ... of which from the cache (best fit / coalescing)
        self.num_frees = 0
        self.segment_maps = 0
        self.segment_unmaps = 0
        self.num_ooms = 0

    # ------------------------------------------------------------ malloc / free
    def _malloc_any(self, size: int, policy: int = 0, align32: bool = False) -> int:
        """malloc called with keywords (the C fast path takes positional arguments)."""
        return self._malloc(size, policy, align32)

    def _python_malloc(self, size: int, policy: int = 0, align32: bool = False) -> int:
        """Allocate `size` bytes; returns a 64-byte aligned device address."""
        # The fast path: HUGE_FIRST (0) of a small size whose exact bin has a cached block.
        # ACL's rounding (up to 32, plus 32 bytes) and the 512-byte size class fold into one
        # step because 32 divides SIZE_CLASS.
        if type(size) is int and policy == 0 and 0 < size <= _FAST_MAX and not align32:
            lst = self.small_bins.get((size + _FAST_ROUND) & _CLASS_MASK)
            if lst:
                try:
                    block = lst.popitem()[0]  # atomic: the block is ours (see the module docstring)
                except KeyError:
                    block = None
                if block is not None:
                    block.state = LIVE
                    block.requested = size
                    block.align32 = False
                    self.live[block.addr] = block
                    allocated = self.allocated = self.allocated + block.size
                    if allocated > self.peak:
                        self.peak = allocated
                    return block.addr
        return self._malloc(size, policy, align32)

    def _malloc(self, size, policy, align32: bool) -> int:
        """malloc beyond the fast path: checks, other policies and sizes, a cache miss."""
        if type(size) is not int:
            size = as_int(size, "malloc size")
        if size <= 0:
            raise InvalidValueError(f"malloc size must be a positive int, got {size!r}")
        # ACL's rounding rule (up to 32, plus 32 bytes; no plus for malloc_align32 and the
        # HUGE1G policies: memory.cpp aclMallocMemInner), then up to the size class; 32
        # divides SIZE_CLASS, so the two roundings fold into one
        if policy and policy in _UNPADDED:
            align32 = True
        if align32:
            bsize = (size + SIZE_CLASS - 1) & ~(SIZE_CLASS - 1)
        else:
            bsize = (size + 32 + SIZE_CLASS - 1) & ~(SIZE_CLASS - 1)
        if policy == 0 and bsize <= SMALL_REQUEST:
            pool = self.normal_pool
        else:
            pool = self._pool_for(policy, bsize)
        lst = pool.bins.get(bsize)
        if lst:
            try:
                block = lst.popitem()[0]
            except KeyError:
                block = None
            if block is not None:
                block.state = LIVE
                block.requested = size
                block.align32 = align32
                self.live[block.addr] = block
                allocated = self.allocated = self.allocated + bsize
                if allocated > self.peak:
                    self.peak = allocated
                return block.addr
        return self._malloc_slow(size, bsize, pool, policy, align32)

    def _free(self, addr: int) -> None:
        """Free a block. If queued work still uses it, it returns to the cache only when that
        work has finished (stream-ordered reuse)."""
        block = self.live.pop(addr, None)
        if block is None:
            raise self._bad_free(addr)
        if block.pool is None:  # memory imported from another process (runtime/ipc.py)
            self.live[addr] = block
            raise InvalidValueError(f"free(0x{addr:x}): this is IPC memory imported from another process; "
                                    "close the import (ipc_mem_close / aclrtIpcMemClose) instead of freeing it")
        self.num_frees += 1
        size = block.size
        self.allocated -= size
        if block.uses and uses_pending(block.uses):
            block.state = PENDING
            with self.lock:
                if self._park(block):
                    return
            # its work finished meanwhile: it goes back to the cache now
        if self.poison:
            self.backend.view(block.addr, size).fill(POISON_BYTE)
        pool = block.pool
        pool.dirty.add(block.segment)
        lst = pool.bins.get(size)
        if lst is not None and not lst.untracked:
            block.state = FREE
            lst[block] = None
        else:
            pool.push(block)  # the bin is made (or searched again) under the lock

    if SPEEDUPS is None:  # the pure-Python pool: these are the entry points themselves
        malloc = _python_malloc
        free = _free

    def _pool_for(self, policy: int, bsize: int) -> PagePool:
        placement, _p2p = parse_policy(policy, bsize)
        if placement == "huge_first":
            return self.pools[HUGE_PAGE if bsize > SMALL_REQUEST else NORMAL_PAGE]
        if placement == "huge_only":
            return self.pools[HUGE_PAGE]
        if placement == "huge1g_only":
            return self.pools[HUGE1G_PAGE]
        return self.pools[NORMAL_PAGE]

    def _malloc_slow(self, size: int, bsize: int, pool: PagePool, policy: int, align32: bool = False) -> int:
        try:
            return self._malloc_locked(size, bsize, pool, policy, align32)
        except OutOfMemoryError:
            if not self.pending_count or not self._wait_for_pending_frees():
                raise
            self.num_ooms -= 1  # the retry decides
        return self._malloc_locked(size, bsize, pool, policy, align32)

    def _wait_for_pending_frees(self) -> bool:
        """Out of memory while stream-ordered frees wait for queued work: wait for that work
        (as torch's caching allocator synchronizes before it reports OOM), so the retry can
        reuse those blocks. Outside the lock: the work may allocate too. False if the wait
        is not possible (a task of one of those streams is the caller)."""
        with self.lock:
            waits = [(stream, max(entry[0] for entry in heap)) for stream, heap in self.pending.items() if heap]
        for stream, seq in waits:
            try:
                stream.synchronize(seq, report_errors=False)
            except NpuError:  # a self-wait (DeadlockError), a destroyed stream: report the OOM
                return False
        return True

    def _malloc_locked(self, size: int, bsize: int, pool: PagePool, policy: int, align32: bool) -> int:
        with self.lock:
            self.collect_pending()
            block = pool.best_fit(bsize)
            if block is None:  # merge freed neighbours before asking the driver for more
                self._coalesce(pool, release_empty=False, until=bsize)
                block = pool.best_fit(bsize)
            cached = block is not None
            if block is None:
                block = self._new_segment(pool, bsize)
            if block is None:  # give every cached segment back to the driver, then retry
                self._release_cached()
                block = self._new_segment(pool, bsize)
            if block is None and pool.page == HUGE_PAGE and parse_policy(policy, bsize)[0] == "huge_first":
                pool = self.pools[NORMAL_PAGE]  # HUGE_FIRST falls back to normal pages
                block = pool.best_fit(bsize) or self._new_segment(pool, bsize)
            if block is None:
                self.num_ooms += 1
                raise self._oom(size, pool.page)
            if block.size - bsize >= SIZE_CLASS:
                self._split(block, bsize)
            block.state = LIVE
            block.requested = size
            block.align32 = align32
            self.live[block.addr] = block
            self.slow_hits += cached
            self.slow_allocs += 1
            self.allocated += block.size
            self.peak = max(self.peak, self.allocated)
            return block.addr

    def malloc_large(self, size: int, bsize: int, segment: int, max_split: int | None = None,
                     max_round: int = 0, gc_limit: int | None = None, split_above: int = SMALL_REQUEST) -> int:
        """A block of `bsize` bytes (the caller rounded `size`) from the pool of large blocks a
        caching allocator with torch's rules uses (torch_npu's NPUCachingAllocator over
        aclrtMalloc; npurt.torch computes the sizes from PYTORCH_NPU_ALLOC_CONF):

        * the smallest cached block that fits, unless it is *oversize* (>= `max_split`) and the
          request is not, or the request is oversize and the block is `max_round` or more
          bigger than it (get_free_block);
        * otherwise, with `gc_limit`, cached whole segments are given back, oldest first,
          until the pool's segments hold no more than `gc_limit` bytes (garbage collection);
          then a new segment of `segment` bytes; where the driver has none, every cached
          segment is given back and the segment asked for again;
        * a block is split only for a request below `max_split` that leaves more than
          `split_above` bytes (should_split: 1 MiB; 511 for expandable segments): an oversize
          block is always handed out whole.
        """
        pool = self.pools[LARGE_CACHE]
        lst = pool.bins.get(bsize)
        if lst:  # an exact fit is never refused
            try:
                block = lst.popitem()[0]
            except KeyError:
                block = None
            if block is not None:
                return self._hand_out(block, size, bsize)
        try:
            return self._malloc_large_locked(size, bsize, segment, max_split, max_round, gc_limit, split_above)
        except OutOfMemoryError:
            if not self.pending_count or not self._wait_for_pending_frees():
                raise
            self.num_ooms -= 1  # the retry decides
        return self._malloc_large_locked(size, bsize, segment, max_split, max_round, gc_limit, split_above)

    def _hand_out(self, block: Block, size: int, bsize: int) -> int:
        block.state = LIVE
        block.requested = size
        block.align32 = False
        self.live[block.addr] = block
        allocated = self.allocated = self.allocated + block.size
        if allocated > self.peak:
            self.peak = allocated
        return block.addr

    def _large_fit(self, pool: PagePool, bsize: int, max_split: int | None, max_round: int) -> Block | None:
        block = pool.best_fit(bsize)
        if block is None or max_split is None:
            return block
        if (bsize < max_split <= block.size) or (bsize >= max_split and block.size >= bsize + max_round):
            pool.push(block)  # torch looks at the smallest fit only: a bigger one is no better
            return None
        return block

    def _malloc_large_locked(self, size, bsize, segment, max_split, max_round, gc_limit, split_above) -> int:
        pool = self.pools[LARGE_CACHE]
        with self.lock:
            self.collect_pending()
            block = self._large_fit(pool, bsize, max_split, max_round)
            if block is None:
                self._coalesce(pool, release_empty=False, until=bsize)
                block = self._large_fit(pool, bsize, max_split, max_round)
            cached = block is not None
            if block is None:
                if gc_limit is not None:
                    self._collect_garbage(pool, gc_limit)
                block = self._new_segment(pool, bsize, segment)
            if block is None:
                self._release_cached()
                block = self._new_segment(pool, bsize, segment)
            if block is None:
                self.num_ooms += 1
                raise self._oom(size, pool.page)
            if (max_split is None or bsize < max_split) and block.size - bsize > split_above:
                self._split(block, bsize)
            self.slow_hits += cached
            self.slow_allocs += 1
            return self._hand_out(block, size, bsize)

    def _collect_garbage(self, pool: PagePool, limit: int) -> None:
        """Give back cached segments of `pool` that hold one free block, oldest first, until
        its segments hold at most `limit` bytes (caller holds the lock)."""
        held = sum(seg.size for seg in pool.segments.values())
        for seg in list(pool.segments.values()):  # creation order: the oldest first
            if held <= limit:
                return
            block = seg.first
            if block.next is None and block.state == FREE and pool.claim(block):
                self._unmap(pool, seg)
                held -= seg.size

    def _new_segment(self, pool: PagePool, bsize: int, seg_size: int = 0) -> Block | None:
        page = pool.page
        if seg_size:
            seg_size = align_up(max(seg_size, bsize), max(page, SMALL_SEGMENT))
        elif page == NORMAL_PAGE and bsize <= SMALL_REQUEST:
            seg_size = SMALL_SEGMENT
        else:
            seg_size = align_up(bsize, max(page, SMALL_SEGMENT) if page != NORMAL_PAGE else page)
        owner = self.parent or self
        if owner.reserve_limit is not None and owner.reserved_in_total() + seg_size > owner.reserve_limit:
            return None  # as if the driver had no memory: the caller empties caches, then fails
        va = self.backend.map_pages(seg_size, page)
        if va is None:
            return None
        seg = Segment(va, seg_size, page)
        block = Block(va, seg_size, seg, pool)
        seg.first = block
        pool.segments[va] = seg
        self.segment_at[va] = seg
        bisect.insort(self.segment_starts, va)
        self._index(block)
        self.reserved += seg_size
        if self.reserved > self.peak_reserved:
            self.peak_reserved = self.reserved
        self.segment_maps += 1
        return block

    def _split(self, block: Block, bsize: int) -> None:
        rest = Block(block.addr + bsize, block.size - bsize, block.segment, block.pool)
        rest.prev, rest.next = block, block.next
        if block.next is not None:
            block.next.prev = rest
        block.next = rest
        block.size = bsize
        self._index(rest)
        block.pool.dirty.add(block.segment)  # the remainder may touch a free neighbour
        block.pool.push(rest)

    def _index(self, block: Block) -> None:
        self.blocks[block.addr] = block
        bisect.insort(block.segment.starts, block.addr)

    def _unindex(self, block: Block) -> None:
        del self.blocks[block.addr]
        starts = block.segment.starts
        del starts[bisect.bisect_left(starts, block.addr)]

    def _coalesce(self, pool: PagePool, release_empty: bool, until: int = 0) -> None:
        """Merge runs of adjacent free blocks; with `release_empty`, of every segment, and
        unmap segments that are entirely free; otherwise of the dirty segments, one at a
        time, stopping once one holds a free block of at least `until` bytes (the rest stay
        dirty for a later merge). Caller holds the lock."""
        if release_empty:
            segments = list(pool.segments.values())
            pool.dirty.clear()  # the same set: the C fast path holds the small pool's
            for seg in segments:
                if seg.va in pool.segments:
                    self._merge_segment(pool, seg, release_empty=True)
            return
        dirty = pool.dirty
        while dirty:
            try:
                seg = dirty.pop()  # atomic: a concurrent free may add to the set meanwhile
            except KeyError:
                break
            if seg.va in pool.segments and self._merge_segment(pool, seg, release_empty=False) >= until > 0:
                break

    def _merge_segment(self, pool: PagePool, seg: Segment, release_empty: bool) -> int:
        """Merge the runs of free blocks of one segment; the size of the largest free block
        it then holds. Each absorbed block costs O(1) (claimed from its bin by identity, its
        start cut from the segment's index in one slice per run)."""
        largest = 0
        block = seg.first
        while block is not None:
            if block.state != FREE or not pool.claim(block):
                block = block.next
                continue
            # `block` is claimed; absorb following free blocks we can claim
            absorbed = 0
            nxt = block.next
            while nxt is not None and nxt.state == FREE and pool.claim(nxt):
                block.size += nxt.size
                block.next = nxt.next
                if nxt.next is not None:
                    nxt.next.prev = block
                del self.blocks[nxt.addr]
                absorbed += 1
                nxt = block.next
            if absorbed:  # the absorbed blocks' starts follow block's own in the index
                i = bisect.bisect_left(seg.starts, block.addr) + 1
                del seg.starts[i:i + absorbed]
            if release_empty and block is seg.first and block.next is None:
                self._unmap(pool, seg)
                return 0
            pool.push(block)
            largest = max(largest, block.size)
            block = block.next
        return largest

    def _unmap(self, pool: PagePool, seg: Segment) -> None:
        self._unindex(seg.first)
        del pool.segments[seg.va]
        del self.segment_at[seg.va]
        del self.segment_starts[bisect.bisect_left(self.segment_starts, seg.va)]
        self.backend.unmap_pages(seg.va, seg.size, seg.page)
        self.reserved -= seg.size
        self.segment_unmaps += 1

    # ------------------------------------------------------------ cache management
    def _park(self, block: Block) -> bool:
        """Queue a PENDING block under one of the streams whose work it waits for; False if
        none has work left (caller holds the lock)."""
        for stream, seq in list(block.uses.items()):
            if stream.completed_seq < seq:
                heap = self.pending.get(stream)
                if heap is None:
                    heap = self.pending[stream] = []
                heapq.heappush(heap, (seq, next(self._pending_tie), block))
                self.pending_count += 1
                armed = self._armed.get(stream)
                if (armed is None or seq < armed) and hasattr(stream, "on_retired"):
                    self._armed[stream] = seq
                    stream.on_retired(seq, functools.partial(self._on_retired, stream))
                return True
        block.uses.clear()
        return False

    def _on_retired(self, stream) -> None:
        """`stream` retired the task a pending block waited for (in the retiring thread):
        give its finished pending blocks back to their bins, and arm for the next. Never
        waits: with the pool's lock busy the blocks stay pending, for the next slow-path
        malloc's collect_pending."""
        if not self.lock.acquire(blocking=False):
            if self._armed.get(stream) is not None:
                del self._armed[stream]  # the next park arms again
            return
        try:
            self._armed.pop(stream, None)
            heap = self.pending.get(stream)
            if heap:
                self._collect_stream(stream, heap)
            heap = self.pending.get(stream)
            if heap:
                seq = heap[0][0]
                self._armed[stream] = seq
                stream.on_retired(seq, functools.partial(self._on_retired, stream))
        finally:
            self.lock.release()

    def _collect_stream(self, stream, heap: list) -> int:
        """collect_pending for one stream's heap (caller holds the lock)."""
        done = 0
        completed = stream.completed_seq
        while heap and heap[0][0] <= completed:
            block = heapq.heappop(heap)[2]
            self.pending_count -= 1
            if block.work_pending() and self._park(block):
                continue  # still used by another stream: now waits under that one
            if self.poison:
                self.backend.view(block.addr, block.size).fill(POISON_BYTE)
            block.pool.dirty.add(block.segment)
            block.pool.push(block)
            done += 1
        if not heap and self.pending.get(stream) is heap:
            del self.pending[stream]
        return done

    def collect_pending(self) -> int:
        """Return pending-free blocks whose work has finished to the cache; how many."""
        if not self.pending_count:
            return 0
        done = 0
        with self.lock:
            for stream, heap in list(self.pending.items()):
                done += self._collect_stream(stream, heap)
        return done

    def reserved_in_total(self) -> int:
        """The bytes this pool and its children hold in segments."""
        return self.reserved + sum(k.reserved for k in list(self.children))

    def empty_cache(self) -> None:
        """Give every cached segment that holds no live block back to the driver (its pages
        go back to the OS)."""
        for child in list(self.children):
            if not child.keep_cache:
                child.empty_cache()
        self._release_own_cache()

    def _release_own_cache(self) -> None:
        with self.lock:
            self.collect_pending()
            for pool in self.pools.values():
                self._coalesce(pool, release_empty=True)
            # empty bins stay: a concurrent fast-path push may hold a reference to one

    def _release_cached(self) -> None:
        """Before an out-of-memory error: the cached segments go back, a child's and the device's
        own (torch's release_cached_blocks in a MemPool; not other children's: lock order)."""
        self.empty_cache()
        if self.parent is not None:
            self.parent._release_own_cache()

    def release_all(self, reason: str) -> list[Block]:
        """Device reset: forget every block and segment; returns the blocks that were live.
        The driver's arena is reset by the caller."""
        with self.lock:
            leaked = list(self.live.values())
            for addr in self.live:
                self.released[addr] = reason
            if len(self.released) > 100_000:  # bounded memory for diagnostics
                self.released.clear()
            self.live.clear()
            self.blocks.clear()
            self.segment_starts.clear()
            self.segment_at.clear()
            self.pending.clear()
            self._armed.clear()
            self.pending_count = 0
            for key, pool in self.pools.items():
                self.pools[key] = PagePool(self, pool.page)
            self.normal_pool = self.pools[NORMAL_PAGE]
            self.small_bins = self.normal_pool.bins
            self._set_small_pool(self.normal_pool, self.normal_pool.dirty)
            self.forgotten += len(leaked)
            self.allocated = self.reserved = 0
            return leaked

    # ------------------------------------------------------------ lookup
    def find(self, addr: int) -> Block | None:
        """The block whose [addr, addr + size) holds `addr`, in any state, or None."""
        block = self.blocks.get(addr)
        if block is not None:
            return block
        if addr >= self.vmm_base and self.vmm is not None:
            return self.vmm.find(addr)  # a mapped run of a reserved range (a LIVE Block's shape), or None
        for _ in range(3):  # the index may change under us; retry on inconsistency
            block = self._find_in_segment(addr)
            if block is not False:
                return block
        with self.lock:
            block = self._find_in_segment(addr)
            return block or None

    def _find_in_segment(self, addr: int):
        """The block holding `addr` (None if no block does), or False when the index changed
        under the lookup."""
        try:
            i = bisect.bisect_right(self.segment_starts, addr) - 1
            if i < 0:
                return None
            seg = self.segment_at.get(self.segment_starts[i])
            if seg is None:
                return False
            if addr >= seg.va + seg.size:
                return None
            starts = seg.starts
            j = bisect.bisect_right(starts, addr) - 1
            block = self.blocks.get(starts[j]) if j >= 0 else None
        except IndexError:
            return False
        if block is None or block.addr > addr:
            return False
        return block if addr < block.addr + block.size else None

    def stats(self) -> dict:
        """Counters of this device's memory, PyTorch-style names."""
        self.collect_pending()  # a stream-ordered free whose work is done counts as free
        committed = self.backend.committed_bytes
        kids = list(self.children)  # pools on reserved ranges share `live`; their bytes count here
        for k in kids:
            k.collect_pending()
        frees = self.num_frees + sum(k.num_frees for k in kids)
        allocs = frees + len(self.live) + self.forgotten
        return {
            "allocated_bytes": self.allocated + sum(k.allocated for k in kids),
            "peak_allocated_bytes": self.peak + sum(k.peak for k in kids),
            "reserved_bytes": self.reserved + sum(k.reserved for k in kids),
            "peak_reserved_bytes": self.peak_reserved + sum(k.peak_reserved for k in kids),
            "committed_bytes": committed,
            "active_blocks": len(self.live),
            "pending_free_blocks": self.pending_count,
            "num_allocs": allocs,
            "num_frees": frees,
            "pool_hits": allocs - (self.slow_allocs - self.slow_hits),  # all but segment maps
            "segment_maps": self.segment_maps,
            "segment_unmaps": self.segment_unmaps,
            "num_ooms": self.num_ooms,
        }

    def reset_peak(self) -> None:
        self.peak = self.allocated
        self.peak_reserved = self.reserved

    # ------------------------------------------------------------ error messages
    def _bad_free(self, addr: int) -> InvalidValueError:
        if not isinstance(addr, int):
            return InvalidValueError(f"free expects a device address int, got {type(addr).__name__}")
        if addr in self.released:
            return InvalidValueError(
                f"free(0x{addr:x}): this allocation was already released by {self.released[addr]}")
        block = self.find(addr)
        if block is None:
            return InvalidValueError(
                f"free(0x{addr:x}): no allocation of this device starts here; pass the exact "
                "address malloc returned")
        if block.state in (FREE, PENDING) and block.addr == addr:
            return InvalidValueError(f"free(0x{addr:x}): double free; this block was already freed")
        return InvalidValueError(
            f"free(0x{addr:x}): address is {addr - block.addr} bytes inside the allocation at "
            f"0x{block.addr:x}; pass the start address malloc returned")

    def _oom(self, size: int, page: int) -> OutOfMemoryError:
        arena = getattr(self.backend, "arena", None)
        free = arena.free_bytes if arena is not None else 0
        total = arena.usable if arena is not None else 0
        kind = {NORMAL_PAGE: "normal", HUGE_PAGE: "huge (2 MiB)", HUGE1G_PAGE: "1 GiB"}[page]
        return OutOfMemoryError(
            f"out of device memory: cannot allocate {size} bytes with {kind} pages "
            f"(device free {free} of {total} bytes; {self.allocated} bytes allocated in "
            f"{len(self.live)} blocks, {self.reserved} reserved by the pool). Free memory you "
            "no longer need, or allocate less.")
