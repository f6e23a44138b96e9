"""torch's caching-allocator rules for npu tensors, as torch_npu's NPUCachingAllocator applies
them (torch_npu/csrc/core/npu/NPUCachingAllocator.cpp, c10/core/AllocatorConfig.h), from the
settings of PYTORCH_NPU_ALLOC_CONF (alloc_conf.py).

* **Rounding** (round_size): a request gets 32 bytes of padding (AddPadSize, the Ascend 910B
  rule), then is rounded up to a multiple of 512 bytes, or, where `roundup_power2_divisions`
  gives its power-of-two interval (1 MiB, 2 MiB, ... 32 GiB and above) n > 1 divisions and the
  size is above 512 * n, up to the next of n equal steps between two powers of two.
* **Small and large blocks**: a rounded size up to 1 MiB is a small block (2 MiB segments,
  split down to 512 bytes): npurt's device pool already serves those by the same rules (ACL's
  32-byte padding, 512-byte classes, 2 MiB segments), so they stay on its fast path. A larger
  one is a large block, from the pool's own pool of large blocks (DeviceMemory.malloc_large):
* **Segments** (get_allocation_size): a large block below 10 MiB comes from a segment of
  `large_segment_size_mb` (20 MiB); a bigger one from a segment of its size rounded up to
  2 MiB. With expandable segments (where torch_npu maps a growing segment in steps of
  `large_segment_size_mb`, else `segment_size_mb`, else 20 MiB), a segment is at least that
  step, or the block rounded up to 2 MiB: npurt's expandable pool maps each segment apart
  rather than growing one, so a step's unused tail is not there for the next block.
* **Splitting and oversize blocks**: a block is split only if more than 1 MiB would remain
  and the request is below `max_split_size_mb`; a block of `max_split_size_mb` or more
  (oversize) is never split, never serves a smaller request, and serves an oversize request
  only when it is less than `max_non_split_rounding_mb` (20 MiB) bigger.
* **Garbage collection**: with `garbage_collection_threshold` t and a memory fraction set
  (set_per_process_memory_fraction or `per_process_memory_fraction`), a request the cache
  cannot serve first gives back cached whole large segments, oldest first, until the large
  segments hold at most t of the bytes the process is allowed.
* **MemPool(no_split=True)**: no block of the pool is split; each keeps its whole segment.

Not applied: roundup_power2_divisions of the first interval to small blocks (they keep the
device pool's 512-byte classes); garbage collection of small segments.
"""
from __future__ import annotations

PAD = 32                      # AddPadSize: the padding every request gets on Ascend 910B
MIN_BLOCK = 512               # kMinBlockSize
SMALL_SIZE = 1 << 20          # kSmallSize: the largest small block
SMALL_MAX = SMALL_SIZE - PAD  # the largest request whose block is small
MIN_LARGE_ALLOC = 10 << 20    # kMinLargeAlloc: below it, a large block gets a large_segment_size segment
ROUND_LARGE = 2 << 20         # kRoundLarge
LARGE_BUFFER = 20 << 20       # kLargeBuffer: large_segment_size's default
SMALL_BUFFER = 2 << 20        # kSmallBuffer: the small blocks' segment
INTERVALS = 16                # roundup_power2_divisions' intervals: 1 MiB, 2 MiB, ... (the last open)


def divisions_table(raw: tuple) -> tuple[int, ...]:
    """The division count of each power-of-two interval, from `roundup_power2_divisions` as
    alloc_conf keeps it (its tokens without brackets and separators): one number is every
    interval's; `MB:n` pairs set the interval of MB (the first pair also every interval below
    it), `>:n` every interval after the last pair's (c10's parseRoundUpPower2Divisions)."""
    table = [0] * INTERVALS
    if len(raw) == 1:
        return (int(raw[0]),) * INTERVALS
    first, last = True, 0
    for key, value in zip(raw[::2], raw[1::2]):
        n = int(value)
        if key == ">":
            for k in range(last + 1, INTERVALS):
                table[k] = n
            continue
        index = min(max(int(key).bit_length() - 1, 0), INTERVALS - 1)
        if first:
            for k in range(index):
                table[k] = n
            first = False
        table[index] = n
        last = index
    return tuple(table)


def _divisions_of(size: int, table: tuple) -> int:
    index = max(size.bit_length() - 1 - 20, 0)  # log2(size) - log2(1 MiB)
    return table[min(index, INTERVALS - 1)]


def _next_division(size: int, divisions: int) -> int:
    """roundup_power2_next_division: `size` up to the next of `divisions` steps between the
    powers of two around it (a power of two stays)."""
    if size & (size - 1) == 0:
        return size
    floor = 1 << (size.bit_length() - 1)
    step = floor >> (divisions.bit_length() - 1)
    if step == 0:
        return floor << 1
    low = size & ~(step - 1)
    return size if low == size else low + step


def round_size(nbytes: int, table: tuple) -> int:
    """The block size a request of `nbytes` gets (round_size)."""
    size = nbytes + PAD
    if size < MIN_BLOCK:
        return MIN_BLOCK
    divisions = _divisions_of(size, table) if table else 0
    if divisions > 1 and size > MIN_BLOCK * divisions:
        return _next_division(size, divisions)
    return (size + MIN_BLOCK - 1) // MIN_BLOCK * MIN_BLOCK


class Rules:
    """The large-block rules of one set of allocator settings (alloc_conf.AllocatorSettings)."""

    __slots__ = ("table", "max_split", "max_round", "large_segment", "expandable_segment", "gc_threshold")

    def __init__(self, settings=None):
        self.table = divisions_table(settings.roundup_power2_divisions) \
            if settings is not None and settings.roundup_power2_divisions else ()
        self.max_split = getattr(settings, "max_split_size", None)
        rounding = getattr(settings, "max_non_split_rounding_size", None)
        self.max_round = LARGE_BUFFER if rounding is None else rounding
        self.large_segment = getattr(settings, "large_segment_size", LARGE_BUFFER) or LARGE_BUFFER
        custom = getattr(settings, "segment_size", 0)
        # get_custom_expandable_segment_size: large_segment_size_mb when set, else segment_size_mb
        self.expandable_segment = self.large_segment if self.large_segment != LARGE_BUFFER else (custom or LARGE_BUFFER)
        self.gc_threshold = getattr(settings, "garbage_collection_threshold", 0.0)

    def segment_for(self, bsize: int) -> int:
        """get_allocation_size of a large block."""
        if bsize < MIN_LARGE_ALLOC:
            return self.large_segment
        return (bsize + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


RULES = Rules()


def set_rules(settings) -> None:
    """Apply new allocator settings to the large-block rules (alloc_conf.configure)."""
    global RULES
    RULES = Rules(settings)


def malloc_large(memory, nbytes: int, allowed: int | None, expandable: bool) -> int:
    """A large block for `nbytes` from `memory` (a DeviceMemory: the device's own pool, a
    MemPool's or the expandable pool) by torch's rules; `allowed`: the bytes the process may
    use on the device (the memory fraction), None when no fraction is set."""
    r = RULES
    bsize = round_size(nbytes, r.table)
    if expandable:  # a segment of at least the custom size; blocks split down to 512 bytes
        segment = max(r.expandable_segment, (bsize + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE)
        return memory.malloc_large(nbytes, bsize, segment, None, 0, None, MIN_BLOCK - 1)
    gc_limit = int(r.gc_threshold * allowed) if r.gc_threshold > 0 and allowed is not None else None
    if memory.no_split:  # MemPool(no_split=True): a block keeps its whole segment, small ones too
        segment = SMALL_BUFFER if bsize <= SMALL_SIZE else r.segment_for(bsize)
        return memory.malloc_large(nbytes, bsize, segment, r.max_split, r.max_round, gc_limit, 1 << 62)
    return memory.malloc_large(nbytes, bsize, r.segment_for(bsize), r.max_split, r.max_round, gc_limit)
