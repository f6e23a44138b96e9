"""`torch.npu.memory` (also `torch_npu.npu.memory`): the memory functions torch_npu keeps in
torch_npu/npu/memory.py, over npurt's caching pool.

* the statistics and cache functions of torch.npu (memory_allocated, memory_stats,
  empty_cache, ...), the same objects;
* `set_per_process_memory_fraction(fraction, device)` / `get_...`: torch_npu's checks (a
  float in 0~1); allocations of npu tensors beyond fraction x total memory raise
  torch.npu.OutOfMemoryError (npurt's own allocations are not capped);
* `caching_allocator_alloc(size, device, stream)` / `caching_allocator_delete(ptr)`: raw
  device memory from the pool, freed in the order of the stream it was allocated for;
* `_set_allocator_settings(s)`: PYTORCH_NPU_ALLOC_CONF's syntax, the keys torch_npu lets
  change at run time (npurt.torch.alloc_conf); `get_allocator_backend()` is "native";
* `NPUPluggableAllocator(so, alloc, free)`, `change_current_allocator(a)`: npu tensors from a
  shared library's own functions (npurt.torch.pluggable);
* `host_empty_cache()`: npurt keeps no cache of pinned host blocks (each is freed with its
  tensor), so there is nothing to give back; `host_memory_stats()` and its resets are the
  pinned allocator's statistics (npurt.torch.pinned).
"""
from __future__ import annotations


import torch

from ..runtime import fork_safe_lock, free, malloc_on
from . import alloc_conf, mem_pools, pinned, storage
from .device import index_of
from .mem_pools import _dump_snapshot, _record_memory_history, _snapshot  # noqa: F401 - torch.npu.memory's
from .mem_pools import change_current_allocator  # noqa: F401 - torch_npu's pluggable allocators (pluggable.py)
from .pluggable import NPUPluggableAllocator  # noqa: F401

_raw: dict[int, tuple] = {}  # address -> (its stream, DeviceInfo, block, bytes asked) (caching_allocator_*)
_lock = fork_safe_lock()


def get_per_process_memory_fraction(device=None) -> float:
    index = index_of(device)
    alloc_conf.settings()  # the allocator starts: PYTORCH_NPU_ALLOC_CONF's fraction applies
    return storage.FRACTIONS.get(index, 1.0)


def set_per_process_memory_fraction(fraction, device=None) -> None:
    index = index_of(device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    alloc_conf.settings()  # the allocator starts first: the environment's fraction does not undo this one
    storage.set_fraction(index, fraction)


def caching_allocator_alloc(size: int, device=None, stream=None) -> int:
    """`size` bytes of device memory from npurt's pool; returns the device address."""
    index = index_of(device)
    if stream is None:
        stream = torch.npu.current_stream(index)
    if isinstance(stream, torch.npu.Stream):
        rt = stream.npurt_stream.runtime_stream
    elif isinstance(stream, int):
        rt = None  # a raw aclrtStream handle: the allocation is simply ordered by its free
    else:
        raise TypeError("Invalid type for stream argument, must be `torch_npu.npu.Stream` or `int` "
                        "representing a pointer to a existing stream")
    inf = storage.info(index)
    mem = inf.memory
    reserved, maps = mem.reserved, mem.segment_maps
    ptr = malloc_on(inf.device, int(size))
    block = mem.live[ptr]
    inf.counters.note(1, int(size), block.size, mem.reserved - reserved, mem.segment_maps - maps)
    with _lock:
        _raw[ptr] = (rt, inf, block, int(size))
    return ptr


def caching_allocator_delete(mem_ptr: int) -> None:
    with _lock:
        if mem_ptr not in _raw:
            raise RuntimeError(f"invalid device pointer: {mem_ptr:#x} (not from caching_allocator_alloc)")
        _, inf, block, size = _raw.pop(mem_ptr)
    mem = inf.memory
    reserved, unmaps = mem.reserved, mem.segment_unmaps
    free(mem_ptr)
    inf.counters.note(-1, size, block.size, mem.reserved - reserved, unmaps - mem.segment_unmaps)


def _set_allocator_settings(settings: str) -> None:
    """Change the caching allocator's run-time settings (npurt.torch.alloc_conf: torch_npu's
    keys, checks and messages)."""
    alloc_conf.set_allocator_settings(settings)
    mem_pools.refresh()  # expandable_segments may have changed


def memory_snapshot(mempool_id=None) -> list:
    """torch_npu's memory_snapshot(): the segments of _snapshot() (of one MemPool's when
    `mempool_id` is given)."""
    segments = _snapshot()["segments"]
    if mempool_id is not None:
        segments = [seg for seg in segments if tuple(seg.get("segment_pool_id", ())) == tuple(mempool_id)]
    return segments


def get_allocator_backend() -> str:
    """torch_npu's only backend name: "native" (its caching allocator; here npurt's pool)."""
    return "native"


def host_empty_cache() -> None:
    """Nothing to give back: npurt frees each pinned block with its tensor."""


host_memory_stats = pinned.host_memory_stats
host_memory_stats_as_nested_dict = pinned.host_memory_stats_as_nested_dict
reset_accumulated_host_memory_stats = pinned.reset_accumulated_host_memory_stats
reset_peak_host_memory_stats = pinned.reset_peak_host_memory_stats
