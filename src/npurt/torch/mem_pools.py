"""torch_npu's allocator extras over npurt's virtual memory management: expandable segments,
`torch.npu.MemPool` / `torch.npu.use_mem_pool`, and memory snapshots.

* **Expandable segments** (`PYTORCH_NPU_ALLOC_CONF=expandable_segments:True`): npu tensors of a
  device come from a caching pool on one reserved range as large as the device's memory
  (npurt.runtime's ReservedBackend): each segment is physical memory mapped into the range,
  freed address space is reused whole, and `torch.npu.empty_cache()` unmaps what no tensor
  uses. A large allocation after many small frees needs free bytes, not a contiguous free run:
  the fragmentation out-of-memory errors of fixed segments do not happen.
* **MemPool**: `with torch.npu.use_mem_pool(pool):` makes the npu tensors the thread creates
  come from `pool` (a caching pool on a reserved range of its own), which keeps its memory for
  its own reuse; `pool.snapshot()` is the pool's part of `_snapshot()`.
* **Snapshots** (`torch.npu.memory._record_memory_history()`, `_snapshot()`, `_dump_snapshot()`):
  PyTorch's snapshot format, as torch.cuda.memory._snapshot() produces it: "segments" (each
  with its "blocks": active_allocated, active_pending_free, inactive) and "device_traces"
  (alloc, free_requested, free_completed, segment_alloc, segment_free events with Python
  frames; a free that queued work delays completes when that work has retired), which
  torch.cuda._memory_viz reads (trace_plot, segment_plot, segsum, ...).

Every pool shares the device's table of live blocks (`DeviceMemory.live`), so every path that
looks a tensor's storage up (ops, copies, kernels, tools) finds it; frees go to the pool that
made the block.
"""
from __future__ import annotations

import contextlib
import itertools
import pickle
import sys
import threading
import time
import traceback
import weakref

import torch

from ..runtime import BLOCK_FREE as FREE, BLOCK_LIVE as LIVE, BLOCK_PENDING as PENDING, HOOKS, RUNTIME
from ..runtime import fork_safe_lock, reserved_pool
from . import alloc_conf, pluggable, storage
from .device import index_of

_lock = fork_safe_lock()
_ALL_POOLS: "weakref.WeakSet" = weakref.WeakSet()  # every MemPool alive (for _snapshot)


SMALL_SEGMENT = 2 << 20  # the caching pool's segment for small requests ("small" in the snapshot)


def _torch_pool(device, size: int):
    """reserved_pool, for npu tensors: torch's CPU kernels view device memory as one host
    array, which reaches reserved ranges only where the driver put the VMM window right after
    the memory on the host (SimulatedDevice.adjacent, the usual case)."""
    pool = reserved_pool(device, size)  # (the driver reserves the window's host side on first use)
    if not getattr(device.backend, "adjacent", False):
        release_pool(device, pool)
        raise RuntimeError(f"npu:{device.id}: the driver could not place the device's VMM window next to its memory "
                           "on the host, so npu tensors cannot live in reserved ranges (expandable segments, MemPool) "
                           "in this process")
    inf = storage.INFOS.get(device.id)
    if inf is not None and inf.device is device and inf._u8.numel() < device.backend.host_buffer().size:
        del storage.INFOS[device.id]  # made before the window was: its host views stop at the memory
    return pool


# ---------------------------------------------------------------- pools on reserved ranges
def refresh() -> None:
    """Route allocations as the allocator settings now say (npurt.torch.alloc_conf: parsed
    from PYTORCH_NPU_ALLOC_CONF when npurt.torch registers, changed by _set_allocator_settings)."""
    global _expandable
    _expandable = expandable_requested()
    storage.ROUTE = route if (_expandable or _ALL_POOLS or pluggable.CURRENT) else None


def release_pool(device, memory) -> bool:
    """Give a pool's reserved range and memory back to the device if none of its blocks is in
    use; True if it did."""
    if memory not in device.memory.children:
        return False  # a reset dropped it already
    memory.empty_cache()
    if memory.blocks or memory.pending_count:
        return False
    device.memory.children.remove(memory)
    memory.backend.close()
    return True


def expandable_requested() -> bool:
    """`expandable_segments:True` in the allocator settings."""
    return alloc_conf.settings().expandable_segments


_EXPANDABLE: dict[int, tuple] = {}  # device index -> (runtime Device, its expandable pool)


def expandable_pool(device) -> object | None:
    """The device's expandable-segments pool when the setting is on (made on first use)."""
    if not _expandable:
        return None
    got = _EXPANDABLE.get(device.id)
    if got is not None and got[0] is device and got[1] in device.memory.children:
        return got[1]
    with _lock:
        got = _EXPANDABLE.get(device.id)
        if got is None or got[0] is not device or got[1] not in device.memory.children:
            # twice the memory: freed address space never blocks an allocation the bytes allow
            got = _EXPANDABLE[device.id] = (device, _torch_pool(device, 2 * device.backend.usable))
            got[1].expandable = True
    return got[1]


class MemPool:
    """torch.npu.MemPool: a pool of npu memory the allocations made under
    `torch.npu.use_mem_pool(pool)` come from, kept for the pool's own reuse."""

    _ids = itertools.count(1)

    def __init__(self, allocator=None, use_on_oom: bool = False, no_split: bool = False):
        if isinstance(allocator, pluggable.NPUPluggableAllocator):
            allocator = allocator.allocator()
        if allocator is not None and not isinstance(allocator, pluggable.CustomAllocator):
            raise TypeError("MemPool's allocator is an NPUPluggableAllocator's allocator() (or None), got "
                            f"{type(allocator).__name__}")
        self.allocator = allocator  # None: npurt's caching pool; else each tensor is one alloc of it
        self.use_on_oom = use_on_oom
        if use_on_oom:
            storage.OOM_FALLBACK = oom_fallback
        self.no_split = bool(no_split)  # blocks are never split: each keeps its whole segment
        self._id = (0, next(MemPool._ids))
        self._pools: dict[int, tuple] = {}  # device index -> (runtime Device, DeviceMemory)
        self._users = 0
        _ALL_POOLS.add(self)
        storage.ROUTE = route

    @property
    def id(self) -> tuple:
        return self._id

    def use_count(self) -> int:
        """How many use_mem_pool contexts use the pool now, plus the pool object itself."""
        return 1 + self._users

    def memory(self, device):
        got = self._pools.get(device.id)
        if self.allocator is not None:
            if got is None or got[0] is not device:
                got = self._pools[device.id] = (device, pluggable.PluggableMemory(device, self.allocator, _stream_of))
            return got[1]
        if got is None or got[0] is not device or got[1] not in device.memory.children:
            got = self._pools[device.id] = (device, _torch_pool(device, device.backend.usable))
            # torch.npu.empty_cache() leaves a live pool's cache (torch frees a private pool's
            # cached blocks only once the pool is gone)
            got[1].keep_cache = True
            got[1].no_split = self.no_split
        return got[1]

    def __del__(self) -> None:
        # the pool is gone: its memory goes back to the device, unless tensors still use it
        # (they keep their pool's blocks; the range then lives until a reset)
        try:
            for device, memory in list(self._pools.values()):
                if self.allocator is not None:
                    continue  # its tensors go back to the library one by one
                memory.keep_cache = False  # what its tensors leave cached goes at the next empty_cache
                release_pool(device, memory)
        except Exception:  # noqa: BLE001 - interpreter shutdown, a runtime torn down
            pass

    def snapshot(self) -> list:
        """The pool's segments, as in `_snapshot()["segments"]`."""
        out = []
        for device, memory in list(self._pools.values()):
            if self.allocator is None:
                out.extend(_segments(device, memory, pool_id=self._id, expandable=False))
        return out

    def __repr__(self) -> str:
        return f"<torch.npu.MemPool id={self._id}>"


_current = threading.local()  # .stack: [(MemPool, device index)]


@contextlib.contextmanager
def use_mem_pool(pool: MemPool, device=None):
    """Allocations of npu tensors in this thread (on `device`, default: the current one) come
    from `pool` inside the block."""
    if not isinstance(pool, MemPool):
        raise TypeError(f"use_mem_pool expects a torch.npu.MemPool, got {type(pool).__name__}")
    index = index_of(device)
    stack = getattr(_current, "stack", None)
    if stack is None:
        stack = _current.stack = []
    stack.append((pool, index))
    pool._users += 1
    try:
        yield
    finally:
        pool._users -= 1
        stack.pop()


def push_route(pool: MemPool, index: int) -> None:
    """Allocations of npu tensors on device `index` in this thread come from `pool` until
    pop_route (torch's beginAllocateToPool, for the current thread)."""
    stack = getattr(_current, "stack", None)
    if stack is None:
        stack = _current.stack = []
    stack.append((pool, index))
    storage.ROUTE = route


def pop_route(pool: MemPool, index: int) -> None:
    """End this thread's allocation to `pool` on device `index` (endAllocateToPool); nothing
    when it was not routed there."""
    stack = getattr(_current, "stack", None) or []
    for i in range(len(stack) - 1, -1, -1):
        if stack[i][0] is pool and stack[i][1] == index:
            del stack[i]
            return


def route(inf):
    """The pool the next npu tensor of DeviceInfo `inf` comes from: the thread's MemPool for the
    device, else the expandable pool when the setting is on, else None (the device's own)."""
    stack = getattr(_current, "stack", None)
    if stack:
        for pool, index in reversed(stack):
            if index == inf.index:
                return pool.memory(inf.device)
    if pluggable.CURRENT:  # change_current_allocator
        return _current_pluggable(inf.device)
    return expandable_pool(inf.device)


def oom_fallback(inf, nbytes: int, routed):
    """torch's last resort before an out-of-memory error outside a MemPool (DeviceCachingAllocator
    ::malloc, use_on_oom_pools): a block the memory already cached in a live MemPool made with
    use_on_oom=True, on this device; no new segment (the fraction or the device refused one).
    (pool memory, address) or None."""
    if routed is not None and routed is not _EXPANDABLE.get(inf.index, (None, None))[1]:
        return None  # under use_mem_pool (or a pluggable allocator): its own pool's failure stands
    for pool in list(_ALL_POOLS):
        if not pool.use_on_oom or pool.allocator is not None:
            continue
        got = pool._pools.get(inf.index)
        if got is None or got[0] is not inf.device or got[1] not in inf.device.memory.children:
            continue
        ptr = storage.try_malloc(inf, got[1], nbytes)
        if ptr is not None:
            return got[1], ptr
    return None


def _stream_of(index: int) -> int:
    """The raw handle of device `index`'s current stream (what a pluggable allocator is given)."""
    return torch.npu.current_stream(index).npu_stream


_PLUGGED: dict = {}  # device index -> (Device, PluggableMemory) of the current allocator


def _current_pluggable(device):
    custom = pluggable.CURRENT[0]
    got = _PLUGGED.get(device.id)
    if got is None or got[0] is not device or got[1].allocator is not custom:
        got = _PLUGGED[device.id] = (device, pluggable.PluggableMemory(device, custom, _stream_of))
    return got[1]


def change_current_allocator(allocator) -> None:
    """torch.npu.memory.change_current_allocator: every later npu tensor comes from `allocator`
    (an NPUPluggableAllocator); refused once npu memory was allocated."""
    pluggable.change_current_allocator(allocator, initialized=bool(storage.INFOS))
    storage.ROUTE = route


# ---------------------------------------------------------------- memory history and snapshots
class _History:
    """What _record_memory_history collects: per device, PyTorch's trace events."""

    def __init__(self):
        self.enabled = None       # None, "state" (frames of live blocks only) or "all" (and the trace)
        self.stacks = "python"
        self.max_entries = sys.maxsize
        self.traces: dict[int, list] = {}
        self.frames: dict[int, list] = {}    # address -> frames of its allocation
        self.segments: dict[int, set] = {}   # device id -> segment starts seen
        self.pending: list = []              # stream-ordered frees not completed yet

    def __call__(self, name: str, **fields) -> None:
        if name == "mem_alloc" and fields.get("device") is not None:
            self._alloc(fields["device"], fields["addr"], fields["size"])
        elif name == "mem_free" and fields.get("device") is not None:
            self._free(fields["device"], fields["addr"], fields["size"], fields.get("uses"))
        elif name == "device_release":
            self.segments.pop(fields["device"].id, None)
            self.pending = [p for p in self.pending if p[0] is not fields["device"]]

    def _frames(self) -> list:
        if self.stacks is None:
            return []
        stack = traceback.extract_stack()[:-3]
        return [{"filename": f.filename, "line": f.lineno or 0, "name": f.name} for f in reversed(stack)]

    def _event(self, device, action: str, addr: int, size: int, frames=(), pool_id=(0, 0)) -> None:
        if self.enabled != "all":
            return
        trace = self.traces.setdefault(device.id, [])
        trace.append({"action": action, "addr": addr, "size": size, "stream": 0,
                      "time_us": time.time_ns() // 1000, "frames": list(frames), "pool_id": pool_id})
        if len(trace) > self.max_entries:
            del trace[: len(trace) - self.max_entries]

    def _sync_segments(self, device) -> None:
        """segment_alloc / segment_free events for the segments that came and went."""
        now = {seg.va: seg.size for memory in _memories(device) for pool in memory.pools.values()
               for seg in list(pool.segments.values())}
        seen = self.segments.setdefault(device.id, set())
        for va in sorted(set(now) - seen):
            self._event(device, "segment_alloc", va, now[va])
        for va in sorted(seen - set(now)):
            self._event(device, "segment_free", va, 0)
        self.segments[device.id] = set(now)

    def _alloc(self, device, addr: int, size: int) -> None:
        self._settle(device)
        frames = self._frames()
        self.frames[addr] = frames
        self._sync_segments(device)
        block = device.memory.live.get(addr)
        self._event(device, "alloc", addr, block.size if block is not None else size, frames,
                    _pool_id_of(block.pool.owner) if block is not None and block.pool is not None else (0, 0))

    def _free(self, device, addr: int, size: int, uses) -> None:
        self._settle(device)
        block = device.memory.live.get(addr)
        bsize = block.size if block is not None else size
        frames = self.frames.pop(addr, [])
        self._event(device, "free_requested", addr, bsize, frames)
        # npurt's free is stream-ordered: a block that queued work still uses is reusable only
        # once that work retired; its free_completed comes when it is seen so (_settle)
        if block is not None and block.work_pending():
            self.pending.append((device, addr, bsize, frames))
        else:
            self._event(device, "free_completed", addr, bsize, frames)

    def _settle(self, device=None) -> None:
        """free_completed for the stream-ordered frees whose work has retired since."""
        still = []
        for entry in self.pending:
            dev, addr, bsize, frames = entry
            if device is not None and dev is not device:
                still.append(entry)
                continue
            dev.memory.collect_pending()
            for child in dev.memory.children:
                child.collect_pending()
            block = dev.memory.find(addr)
            if block is not None and block.state == PENDING:
                still.append(entry)
            else:
                self._event(dev, "free_completed", addr, bsize, frames)
        self.pending = still


HISTORY = _History()


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries: int = sys.maxsize,
                           device=None, clear_history: bool = False, **_kw) -> None:
    """torch.npu.memory._record_memory_history: start (enabled="all" or "state", or True) or
    stop (None / False) recording the allocation history the snapshot reports."""
    if enabled is True:
        enabled = "all"
    if enabled is False:
        enabled = None
    if enabled not in (None, "state", "all"):
        raise ValueError(f'enabled must be None, "state" or "all", got {enabled!r}')
    if stacks not in ("python", "all", None):
        raise ValueError(f'stacks must be "python" or "all", got {stacks!r}')
    with _lock:
        if clear_history:
            HISTORY.traces.clear()
        was = HISTORY.enabled
        HISTORY.enabled, HISTORY.stacks, HISTORY.max_entries = enabled, stacks, max_entries
        if enabled and not was:
            HOOKS.add(HISTORY)
        elif was and not enabled:
            HOOKS.remove(HISTORY)


def _memories(device) -> list:
    return [device.memory, *device.memory.children]


_STATE = {LIVE: "active_allocated", PENDING: "active_pending_free", FREE: "inactive"}


def _segments(device, memory, pool_id=(0, 0), expandable: bool = False) -> list:
    out = []
    with memory.lock:
        for pool in memory.pools.values():
            for seg in sorted(pool.segments.values(), key=lambda s: s.va):
                blocks = []
                block = seg.first
                while block is not None:
                    state = _STATE[block.state]
                    requested = block.requested if block.state != FREE else block.size
                    blocks.append({"address": block.addr, "size": block.size,
                                   "requested_size": min(requested, block.size), "state": state,
                                   "frames": HISTORY.frames.get(block.addr, []) if block.state != FREE else []})
                    block = block.next
                allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
                active = sum(b["size"] for b in blocks if b["state"] != "inactive")
                out.append({"device": device.id, "address": seg.va, "total_size": seg.size,
                            "allocated_size": allocated, "active_size": active,
                            "requested_size": sum(b["requested_size"] for b in blocks if b["state"] != "inactive"),
                            "stream": 0, "segment_type": "small" if seg.size <= SMALL_SEGMENT else "large",
                            "segment_pool_id": pool_id, "is_expandable": expandable, "frames": [],
                            "blocks": blocks})
    return out


def _snapshot(device=None, augment_with_fx_traces: bool = False) -> dict:
    """torch.npu.memory._snapshot(): the segments of every device's pools (the device's own, the
    expandable one, MemPools) with their blocks, and the recorded trace of each device. With
    `augment_with_fx_traces`, frames of FX-generated code get their FX node's metadata (torch's
    torch._utils._augment_memory_snapshot_stack_traces, as torch_npu's _snapshot does)."""
    snapshot = _plain_snapshot()
    if augment_with_fx_traces:
        snapshot = torch._utils._augment_memory_snapshot_stack_traces(snapshot)
    return snapshot


def _plain_snapshot() -> dict:
    if HISTORY.enabled:
        HISTORY._settle()
    segments = []
    traces = []
    pool_ids = {}
    for pool in list(_live_mem_pools()):
        for dev, memory in pool._pools.values():
            pool_ids[id(memory)] = pool.id
    devices = [d for d in RUNTIME.devices if d is not None] if RUNTIME.initialized else []
    for dev in devices:
        expandable = _EXPANDABLE.get(dev.id, (None, None))[1]
        for memory in _memories(dev):
            segments.extend(_segments(dev, memory, pool_id=pool_ids.get(id(memory), (0, 0)),
                                      expandable=memory is expandable))
    count = max([d.id + 1 for d in devices] + [0])
    for i in range(count):
        traces.append(list(HISTORY.traces.get(i, [])))
    return {"segments": segments, "device_traces": traces,
            "allocator_settings": {"expandable_segments": _expandable}}


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """torch.npu.memory._dump_snapshot: _snapshot() pickled to `filename`."""
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


def _live_mem_pools():
    return list(_ALL_POOLS)


def _pool_id_of(memory) -> tuple:
    """The id of the MemPool whose memory `memory` is ((0, 0): the device's own pools)."""
    for pool in _live_mem_pools():
        for _dev, mine in list(pool._pools.values()):
            if mine is memory:
                return pool.id
    return (0, 0)


_expandable = False
alloc_conf.on_change(refresh)  # (routing is set when the settings are first read)
