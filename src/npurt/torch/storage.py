"""Storage of npu tensors: npurt's caching pool, and the arena views the CPU kernels read through.

* Every npu storage is one npurt allocation (`malloc_on` the tensor's device). The DLPack
  deleter frees it when torch drops the storage, so the free is npurt's stream-ordered one:
  memory a queued op still uses goes back to the pool only after that op ran.
* A task reaches device memory through a *host view*: one CPU tensor over each device's whole
  HBM arena (64 GiB, lazily committed), viewed once per dtype (an `ArenaView`); the view of a
  tensor is one `as_strided` of it, built when the task runs (refs.py).
* `DeviceInfo` is what ops need of one device, looked up once; after a finalize the runtime
  has new devices (and arenas), and `info()` makes a new one, letting the old arena go with
  its views.
"""
from __future__ import annotations

import collections
import math

import torch

from .. import devices as _devices
from ..runtime import HOOKS, RUNTIME, dead_address_message, fork_safe_lock, free, malloc_on
from ..runtime import OutOfMemoryError as NpuOutOfMemory
from . import _dlpack, caching, forked, host_backing

ITEMSIZE: dict[torch.dtype, int] = {}
ROUTE = None  # mem_pools.route when MemPools or expandable segments may take allocations
# graph_pools.hand_over once storages over memory they do not own exist: given an owner tuple
# whose storage died, True when another storage over the block takes the block over
HANDOVER = None


def itemsize(dtype: torch.dtype) -> int:
    n = ITEMSIZE.get(dtype)
    if n is None:
        n = ITEMSIZE[dtype] = torch.empty((), dtype=dtype).element_size()
    return n


class ArenaView:
    """A device's arena as one CPU tensor of one dtype (element i at byte i * itemsize), and
    the caches of host views into it (refs.read_view, refs.write_view): a view of the arena is
    valid whatever lives there, and the same addresses come back (the pool reuses them)."""

    __slots__ = ("tensor", "addr", "dtype", "reads", "writes")

    def __init__(self, tensor: torch.Tensor):
        self.tensor, self.addr, self.dtype = tensor, tensor.data_ptr(), tensor.dtype
        self.reads: dict = {}   # (element offset, shape, stride) -> host view
        self.writes: dict = {}  # (element offset, shape, stride) -> host tensor of exactly those bytes


class DeviceInfo:
    """What ops need of one npurt device, looked up once: its memory, address base and the
    arena's host views per dtype."""

    __slots__ = ("index", "device", "devs", "memory", "live", "va_base", "views", "_u8", "limit", "counters")

    def __init__(self, device):
        self.index = device.id
        self.device = device
        self.devs = RUNTIME.devices  # a new list after a finalize: tells a stale DeviceInfo
        self.memory = device.memory
        self.live = device.memory.live
        self.va_base = device.backend.va_base
        self.counters = COUNTERS[self.index] = TensorCounters()  # a new device: new counts
        # bytes: torch.npu.set_per_process_memory_fraction's cap on the memory npu tensors hold
        fraction = FRACTIONS.get(self.index)
        self.limit = None if fraction is None else int(fraction * device.backend.usable)
        device.memory.reserve_limit = self.limit  # torch's rule: the reserved bytes of all its pools
        host = device.backend.host_buffer()  # the driver contract: the whole memory as one host array
        if host is None:
            raise RuntimeError(f"npu:{self.index}: this driver gives no host view of device memory, which "
                               "npurt.torch's CPU kernels run on (use the simulated driver)")
        self._u8 = torch.from_numpy(host)  # no copy: the device memory itself
        self.views: dict[torch.dtype, ArenaView] = {torch.uint8: ArenaView(self._u8)}

    def view_of(self, dtype: torch.dtype) -> ArenaView:
        """The arena as one CPU tensor of `dtype`."""
        v = self.views.get(dtype)
        if v is None:
            v = self.views[dtype] = ArenaView(self._u8.view(dtype))
        return v


INFOS: dict[int, DeviceInfo] = {}


FRACTIONS: dict[int, float] = {}  # device index -> torch.npu.set_per_process_memory_fraction's fraction


def set_fraction(index: int, fraction: float) -> None:
    FRACTIONS[index] = fraction
    inf = INFOS.get(index)
    if inf is not None:  # DeviceInfos made later read FRACTIONS
        inf.limit = inf.device.memory.reserve_limit = int(fraction * inf.device.backend.usable)


ON_START: list = []  # run before the first DeviceInfo is made (alloc_conf: the environment's settings)


def info(index: int | None) -> DeviceInfo:
    """The DeviceInfo of npu:`index` (None: the current device); the runtime starts on first use."""
    if index is None:
        index = _devices.current_device()
    inf = INFOS.get(index)
    if inf is not None and inf.devs is RUNTIME.devices:
        return inf
    forked.check()  # a child forked after the NPU was initialized cannot use it (torch_npu's rule)
    for start in ON_START:
        start()
    dev = _devices.runtime_device(index)  # initializes the runtime; InvalidDeviceError if out of range
    # (a finalized runtime's DeviceInfo is dropped here: the old arena goes with its views)
    inf = INFOS[index] = DeviceInfo(dev)
    return inf


SMALL_SIZE = 1 << 20  # torch's kSmallSize: blocks up to 1 MiB count in the small pool
STAT_NAMES = ("allocation", "active", "allocated_bytes", "active_bytes", "requested_bytes", "segment",
              "reserved_bytes")


class TensorCounters:
    """torch's per-pool statistics of what npu tensors (and caching_allocator_alloc) hold on one
    device: for each stat and pool (all, small_pool, large_pool) current, peak, allocated
    (total increase) and freed (total decrease). Segments and reserved bytes are the pool's
    segment maps and unmaps seen across these allocations and frees (and empty_cache).

    An allocation or free only appends its amounts to `pending` (a deque's append is atomic,
    so threads need no lock for it, and the order of the appends is the order of the
    events); they are applied in that order, under the lock, whenever the statistics are
    read (`values`) or changed otherwise, and every `FOLD_AT` events. Applied in order, the
    peaks come out exactly as if each event had been counted when it happened."""

    FOLD_AT = 1024

    def __init__(self):
        self.lock = fork_safe_lock()
        self.pending: collections.deque = collections.deque()
        self._values = {(stat, pool): [0, 0, 0, 0] for stat in STAT_NAMES
                       for pool in ("all", "small_pool", "large_pool")}
        # a block counts as active exactly while it is allocated here (the stream-ordered free
        # keeps a block in use in the pool's hands, not in these counts), so the two pairs of
        # stats are one row each: what each allocation and free moves is the rows of
        # allocation, allocated_bytes and requested_bytes, each in "all" and in the pool
        for pool in ("all", "small_pool", "large_pool"):
            self._values[("active", pool)] = self._values[("allocation", pool)]
            self._values[("active_bytes", pool)] = self._values[("allocated_bytes", pool)]
        self._rows = {pool: tuple(self._values[(stat, p)] for stat in ("allocation", "allocated_bytes", "requested_bytes")
                                  for p in ("all", pool))
                      for pool in ("small_pool", "large_pool")}

    @property
    def values(self) -> dict:
        """(stat, pool) -> [current, peak, allocated, freed], every event counted."""
        self.fold()
        return self._values

    def note(self, sign: int, requested: int, size: int, reserved_delta: int, segments_delta: int) -> None:
        """An allocation (sign 1) or free (-1) of a block of `size` bytes for `requested`, and
        what it changed of the pool's reserved bytes and segments."""
        pending = self.pending
        pending.append((sign, requested, size, reserved_delta, segments_delta))
        if len(pending) > self.FOLD_AT:
            self.fold(blocking=False)  # (held: a fold runs, and takes this event too)

    def fold(self, blocking: bool = True) -> None:
        """Apply the pending events, in order. Never waits when not `blocking`, so a free
        that a garbage collection runs inside a fold (or a read) cannot deadlock."""
        pending = self.pending
        if pending and self.lock.acquire(blocking):
            try:
                self._apply_pending(pending)
            finally:
                self.lock.release()

    def _apply_pending(self, pending) -> None:
        """Each event: the rows of allocation, allocated_bytes and requested_bytes, in "all"
        and in the pool, move by 1, size and requested (what _add of each stat with sign *
        amount does), written out (twice as fast as a loop over the rows)."""
        take, small, large = pending.popleft, self._rows["small_pool"], self._rows["large_pool"]
        while pending:
            sign, requested, size, reserved_delta, segments_delta = take()
            ca, cp, ba, bp, ra, rp = small if size <= SMALL_SIZE else large
            if sign > 0:
                n = ca[0] + 1
                ca[0] = n
                ca[2] += 1
                if n > ca[1]:
                    ca[1] = n
                n = cp[0] + 1
                cp[0] = n
                cp[2] += 1
                if n > cp[1]:
                    cp[1] = n
                n = ba[0] + size
                ba[0] = n
                ba[2] += size
                if n > ba[1]:
                    ba[1] = n
                n = bp[0] + size
                bp[0] = n
                bp[2] += size
                if n > bp[1]:
                    bp[1] = n
                n = ra[0] + requested
                ra[0] = n
                ra[2] += requested
                if n > ra[1]:
                    ra[1] = n
                n = rp[0] + requested
                rp[0] = n
                rp[2] += requested
                if n > rp[1]:
                    rp[1] = n
            else:
                ca[0] -= 1
                ca[3] += 1
                cp[0] -= 1
                cp[3] += 1
                ba[0] -= size
                ba[3] += size
                bp[0] -= size
                bp[3] += size
                ra[0] -= requested
                ra[3] += requested
                rp[0] -= requested
                rp[3] += requested
            if reserved_delta or segments_delta:
                pool = "small_pool" if size <= SMALL_SIZE else "large_pool"
                if reserved_delta:
                    self._add("reserved_bytes", pool, reserved_delta)
                if segments_delta:
                    self._add("segment", pool, segments_delta)

    def _add(self, stat: str, pool: str, delta: int) -> None:
        for p in ("all", pool):
            v = self._values[(stat, p)]
            v[0] += delta
            if delta > 0:
                v[2] += delta
                v[1] = max(v[1], v[0])
            else:
                v[3] -= delta

    def note_release(self, reserved_delta: int, segments_delta: int) -> None:
        """empty_cache gave segments back (of either pool: counted against the large one first)."""
        self.fold()
        with self.lock:
            for pool in ("large_pool", "small_pool"):
                have = self._values[("reserved_bytes", pool)][0]
                take = max(reserved_delta, -have) if pool == "large_pool" else reserved_delta
                if take:
                    self._add("reserved_bytes", pool, take)
                    reserved_delta -= take
            if segments_delta:
                self._add("segment", "large_pool", segments_delta)

    def reset_peak(self) -> None:
        self.fold()
        with self.lock:
            for v in self._values.values():
                v[1] = v[0]

    def reset_accumulated(self) -> None:
        self.fold()
        with self.lock:
            for v in self._values.values():
                v[2] = v[3] = 0

    def flat(self) -> dict:
        self.fold()
        with self.lock:
            return {f"{stat}.{pool}.{metric}": v[i] for (stat, pool), v in self._values.items()
                    for i, metric in enumerate(("current", "peak", "allocated", "freed"))}


COUNTERS: dict[int, TensorCounters] = {}  # device index -> its DeviceInfo's counters


def release(owner: tuple) -> None:
    """Free the npurt allocation behind an npu storage (the DLPack deleter calls this with the
    owner tuple (release, device memory, address, block, requested bytes, counters)). Only what
    we allocated: after a device reset the address may belong to someone else (the pool's Block
    objects are new)."""
    _, mem, ptr, block, requested, count = owner
    if mem.live.get(ptr) is block:
        if HANDOVER is not None and HANDOVER(owner):
            return
        reserved, maps = mem.reserved, mem.segment_unmaps
        if not HOOKS.active:
            mem.free(ptr)
        elif mem.vmm is not None:  # the device's own pool
            free(ptr, managed=True)  # stream-ordered by design: tools do not report a free in use
        else:  # a pool on a reserved range (mem_pools.py): told to observers as the runtime's free is
            HOOKS.emit("mem_free", device=mem.backend.device, addr=ptr, size=block.requested, managed=True,
                       uses=dict(block.uses or {}))
            mem.free(ptr)
        count.note(-1, requested, block.size, mem.reserved - reserved, maps - mem.segment_unmaps)


def span_bytes(shape, stride, size: int) -> int:
    """Bytes a strided tensor reaches from its first element (0 when it has no element)."""
    if not all(shape):
        return 0
    return (1 + sum((n - 1) * s for n, s in zip(shape, stride))) * size


def contiguous_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def strides_for(shape, memory_format) -> tuple[int, ...]:
    """Strides (in elements) of a new tensor of `shape` laid out as `memory_format`."""
    shape = tuple(shape)
    if memory_format == torch.channels_last and len(shape) == 4:
        n, c, h, w = shape
        return (h * w * c, 1, w * c, c)
    if memory_format == torch.channels_last_3d and len(shape) == 5:
        n, c, d, h, w = shape
        return (d * h * w * c, 1, h * w * c, w * c, c)
    if memory_format not in (None, torch.contiguous_format, torch.preserve_format):
        raise RuntimeError(f"unsupported memory format {memory_format} for a tensor of {len(shape)} dimensions")
    return contiguous_strides(shape)


def empty_strided(shape, stride, dtype: torch.dtype, index: int | None) -> torch.Tensor:
    """A new npu tensor (uninitialized) in npurt's pool."""
    inf = info(index)
    return alloc(inf, shape, stride, dtype, span_bytes(shape, stride, itemsize(dtype)))


class OutOfMemoryError(torch.OutOfMemoryError, NpuOutOfMemory):
    """torch.npu.OutOfMemoryError: an npu allocation failed. A torch.OutOfMemoryError (a
    RuntimeError, what torch_npu raises and code checks for) and an npurt.OutOfMemoryError
    (ACL_ERROR_RT_MEMORY_ALLOCATION)."""

    def __init__(self, message: str, code: int | None = None):
        NpuOutOfMemory.__init__(self, message, code)


def give_back_cache(inf: DeviceInfo) -> None:
    """empty_cache of one device: its cached segments go back to the driver (and their pages to
    the host), counted in the tensor statistics."""
    reserved, unmaps = inf.memory.reserved, inf.memory.segment_unmaps
    _devices.empty_cache(inf.index)
    inf.counters.note_release(inf.memory.reserved - reserved, unmaps - inf.memory.segment_unmaps)


def _check_host_backing(inf: DeviceInfo, nbytes: int) -> None:
    """Refuse a large tensor the host cannot back (host_backing.py's rule over the memory npu
    tensors of this process hold); the pools' caches go back to the host before a refusal."""
    infos = [other for other in INFOS.values() if other.devs is RUNTIME.devices]
    why = host_backing.refusal(nbytes, sum(other.memory.allocated for other in infos))
    if why is not None and any(other.memory.reserved > other.memory.allocated for other in infos):
        for other in infos:
            give_back_cache(other)
        why = host_backing.refusal(nbytes, sum(other.memory.allocated for other in infos))
    if why is not None:
        raise OutOfMemoryError(f"NPU out of memory. Tried to allocate {nbytes / (1 << 30):.2f} GiB "
                               f"(NPU {inf.index}): {why}", 207001)


def alloc(inf: DeviceInfo, shape, stride, dtype: torch.dtype, nbytes: int) -> torch.Tensor:
    """A new npu tensor of `nbytes` on the device of `inf` (the hot path of every op)."""
    mem = inf.memory
    routed = None
    if nbytes >= host_backing.HOST_CHECK_MIN:
        _check_host_backing(inf, nbytes)
    if ROUTE is not None:  # a MemPool in use, or expandable segments (mem_pools.py)
        routed = ROUTE(inf)
        mem = routed or mem
    reserved, maps = mem.reserved, mem.segment_maps
    try:
        ptr = _malloc_from(inf, mem, nbytes)
    except NpuOutOfMemory as exc:
        # torch's last resort before an out-of-memory error: a cached block of a MemPool made
        # with use_on_oom=True (allocations outside a MemPool only)
        fallback = None if OOM_FALLBACK is None else OOM_FALLBACK(inf, nbytes, routed)
        if fallback is None:
            allowed = "" if inf.limit is None else \
                f"; this process is allowed {inf.limit} bytes by set_per_process_memory_fraction"
            raise OutOfMemoryError(f"NPU out of memory. Tried to allocate {nbytes} bytes (NPU {inf.index}): "
                                   f"{exc.message}{allowed}", exc.code) from None
        mem, ptr = fallback
        reserved, maps = mem.reserved, mem.segment_maps
    block = mem.live[ptr]
    count = inf.counters
    count.note(1, nbytes, block.size, mem.reserved - reserved, mem.segment_maps - maps)
    return _dlpack.tensor_at(ptr, shape, stride, dtype, inf.index, (release, mem, ptr, block, nbytes, count))


def alloc_at(inf: DeviceInfo, shape, stride, dtype: torch.dtype, nbytes: int) -> tuple:
    """(tensor, address, block) of a new npu tensor of `nbytes` > 0 bytes: `alloc`, with the
    common case (a small block of the device's own pool, no tool listening) in one step and
    the address and block it has in hand returned (the hot path's: no look-up after)."""
    mem = inf.memory
    if ROUTE is None and not HOOKS.active and nbytes <= caching.SMALL_MAX and not mem.no_split:
        reserved, maps = mem.reserved, mem.segment_maps
        try:
            ptr = mem.malloc(nbytes, 0)
        except NpuOutOfMemory:
            ptr = None  # alloc's way: its last resort and its error
        if ptr is not None:
            block = mem.live[ptr]
            inf.counters.note(1, nbytes, block.size, mem.reserved - reserved, mem.segment_maps - maps)
            return _dlpack.tensor_at(ptr, shape, stride, dtype, inf.index,
                                     (release, mem, ptr, block, nbytes, inf.counters)), ptr, block
    t = alloc(inf, shape, stride, dtype, nbytes)
    ptr = t.data_ptr()
    return t, ptr, inf.live[ptr]


def _malloc_from(inf: DeviceInfo, mem, nbytes: int) -> int:
    if nbytes > caching.SMALL_MAX or mem.no_split:  # a large block: torch's rules (caching.py)
        ptr = caching.malloc_large(mem, nbytes, inf.limit, mem.expandable)
        if HOOKS.active:
            HOOKS.emit("mem_alloc", device=inf.device, addr=ptr, size=nbytes, managed=True)
    elif mem is not inf.memory:
        ptr = mem.malloc(nbytes or 1, 0)
        if HOOKS.active:
            HOOKS.emit("mem_alloc", device=inf.device, addr=ptr, size=nbytes or 1, managed=True)
    elif HOOKS.active:
        ptr = malloc_on(inf.device, nbytes or 1, managed=True)  # a tensor owns it, freed when collected
    else:
        ptr = mem.malloc(nbytes or 1, 0)
    return ptr


def try_malloc(inf: DeviceInfo, mem, nbytes: int) -> int | None:
    """A block for an npu tensor of `nbytes` from pool `mem`, or None where it has no memory."""
    try:
        return _malloc_from(inf, mem, nbytes)
    except NpuOutOfMemory:
        return None


# (DeviceInfo, nbytes, the pool the allocation was routed to or None) -> (pool, address) or
# None: mem_pools.py sets it (MemPool(use_on_oom=True))
OOM_FALLBACK = None


def empty(shape, dtype: torch.dtype, index: int | None) -> torch.Tensor:
    shape = tuple(shape)
    return empty_strided(shape, contiguous_strides(shape), dtype, index)


def storage_base(t: torch.Tensor) -> int:
    """Device address where `t`'s storage (our allocation) starts."""
    return t.data_ptr() - t.storage_offset() * t.element_size()


def block_of(inf: DeviceInfo, t: torch.Tensor):
    """The live npurt block holding `t`'s storage; a clear error if it was released."""
    base = t.data_ptr() - t.storage_offset() * t.element_size()
    block = inf.live.get(base)
    if block is None:
        block = inf.memory.find(base)
        raise RuntimeError(f"npu tensor {tuple(t.shape)} {t.dtype} on npu:{inf.index}: "
                           + dead_address_message(inf.device, base, block, "storage"))
    return block


def host_view(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor over the same device memory as npu tensor `t` (same shape and strides).
    For use inside tasks (device memory is the device's until the stream reaches them)."""
    inf = info(t.get_device())
    size = t.element_size()
    ptr = t.data_ptr()
    return inf.view_of(t.dtype).tensor.as_strided(t.shape, t.stride(), (ptr - inf.va_base) // size if ptr else 0)


def nbytes_of(t: torch.Tensor) -> int:
    return span_bytes(t.shape, t.stride(), t.element_size())


def numel(shape) -> int:
    return math.prod(shape)
