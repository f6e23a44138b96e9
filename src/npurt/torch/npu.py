"""`torch.npu`: the device module torch_npu users call, over npurt.

Registered as `torch.npu` (and `sys.modules["torch.npu"]`) by `npurt.torch.register()`.
Names and semantics follow torch_npu (which follows `torch.cuda`): devices, streams and
events, memory statistics of npurt's caching pool, the per-device random generator, `amp`.
"""
from __future__ import annotations

import collections
import sys
import time
import warnings

import torch
from torch._utils import _get_device_index as _torch_get_device_index

from .. import devices as _devices
from ..runtime import launch_host_func
from . import acl_init, alloc_conf, forked, storage
from . import memory_summary as _memory_summary
from . import random as _random
from .backends import (aclnn, disable_deterministic_with_backward, enable_deterministic_with_backward,  # noqa: F401
                       enable_flash_sdp, enable_math_sdp, enable_mem_efficient_sdp, flash_sdp_enabled,
                       math_sdp_enabled, mem_efficient_sdp_enabled, preferred_linalg_library, sdp_kernel)
from .device import (can_device_access_peer, current_device, device, device_count, device_of,  # noqa: F401
                     get_device_name, get_device_properties, index_of, is_available,
                     set_device, synchronize)
from .options import (conv, get_mm_bmm_format_nd, matmul, set_mm_bmm_format_nd,  # noqa: F401
                      set_option)
from .storage import OutOfMemoryError  # noqa: F401
from .typed import STORAGES, TYPED
from . import npu_memory as memory  # torch.npu.memory
from .mem_pools import MemPool, use_mem_pool  # noqa: F401 - torch_npu's memory pools (issue 26)
from .npu_memory import (NPUPluggableAllocator, caching_allocator_alloc, caching_allocator_delete,  # noqa: F401
                         change_current_allocator,
                         get_allocator_backend, memory_snapshot, get_per_process_memory_fraction, host_empty_cache, host_memory_stats,
                         host_memory_stats_as_nested_dict, reset_accumulated_host_memory_stats,
                         reset_peak_host_memory_stats, set_per_process_memory_fraction)
from . import streams  # torch_npu.npu.streams: the module of Stream and Event  # noqa: F401
from .streams import (Event, ExternalEvent, ExternalStream, Stream, SyncLaunchStream, current_stream,  # noqa: F401
                      default_stream, set_stream, stream)
from . import raw_runtime as _raw_runtime
from .npu_config import (are_compatible_impl_enabled, get_device_capability, get_device_limit,  # noqa: F401
                         get_stream_limit, get_sync_debug_mode, reset_stream_limit, set_device_limit,
                         set_op_timeout_ms, set_stream_limit, set_sync_debug_mode, use_compatible_impl)
from . import graphs, graph_trace, graph_update, graph_update_plan  # torch_npu.npu.graphs, ._npugraph_handlers, ...
from .graphs import (NPUGraph, graph, graph_pool_handle, is_current_stream_capturing,  # noqa: F401
                     make_graphed_callables)
from .graph_update import (NpuGraphOpHandler, graph_task_group_begin, graph_task_group_end,  # noqa: F401
                           graph_task_update_begin, graph_task_update_end, register_npu_graph_handler)
from .super_kernel import super_kernel_scope_begin, super_kernel_scope_end  # noqa: F401
from . import graph_debug
from .host_funcs import (_launch_host_func, _launch_host_func_pending, _subscribe_report,  # noqa: F401
                         _unsubscribe_report)
graph_debug.register_ops()   # torch.ops.npu.print_npugraph_tensor / save_npugraph_tensor


_initialized = True  # torch.utils.checkpoint saves device RNG states only when this is set


def is_initialized() -> bool:
    return not forked.in_bad_fork


def init() -> None:
    """torch.npu.init(): the runtime starts on first use; this makes it start now (with
    torch_npu's ACL-initialization checks, module acl_init)."""
    forked.check()
    acl_init.check()
    _devices.thread_context()


def _is_in_bad_fork() -> bool:
    """A child forked after the NPU was initialized cannot use it (module forked)."""
    return forked.in_bad_fork


def _lazy_init() -> None:
    forked.check()
    _devices.thread_context()


def npurt():
    """torch_npu.npu.npurt(): the raw runtime calls (npuStreamCreate, npuStreamDestroy,
    npuHostRegister, npuHostUnregister; module npurt.torch.raw_runtime), runtime started."""
    _lazy_init()
    return _raw_runtime


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


# ---------------------------------------------------------------- memory
def _stats(device=None) -> dict:
    return _devices.memory_stats(index_of(device))


def memory_allocated(device=None) -> int:
    """Bytes held by live npu tensors (and caching_allocator_alloc), in pool block sizes: what
    torch_npu's caching allocator counts (npurt's other allocations are npurt.memory_allocated's)."""
    return storage.info(index_of(device)).counters.values[("allocated_bytes", "all")][0]


def max_memory_allocated(device=None) -> int:
    return storage.info(index_of(device)).counters.values[("allocated_bytes", "all")][1]


def memory_reserved(device=None) -> int:
    """Bytes npurt's caching pool holds from the device (live plus cached)."""
    return _stats(device)["reserved_bytes"]


def max_memory_reserved(device=None) -> int:
    return _stats(device)["peak_reserved_bytes"]


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def reset_peak_memory_stats(device=None) -> None:
    idx = index_of(device)
    _devices.reset_peak_memory_stats(idx)
    storage.info(idx).counters.reset_peak()


reset_max_memory_allocated = reset_peak_memory_stats
reset_max_memory_cached = reset_peak_memory_stats


def empty_cache() -> None:
    """Give cached, unused device memory of every device back (memory still in use, or
    freed while queued work uses it, stays)."""
    for i in range(device_count()):
        inf = storage.INFOS.get(i)
        if inf is None:
            _devices.empty_cache(i)
            continue
        storage.give_back_cache(inf)


def empty_virt_addr_cache() -> None:
    """torch_npu's: with expandable segments, unmap the cached segments no tensor uses and
    give their address space back. torch_npu keeps their physical memory for the next
    empty_cache(); npurt releases it at once (memory_reserved() reads the same either way)."""
    if not alloc_conf.settings().expandable_segments:
        raise RuntimeError("Unsupported config for empty_virt_addr_cache, please enable expandable_segments.")
    empty_cache()


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of the device."""
    return _devices.mem_get_info(index_of(device))


def memory_stats_as_nested_dict(device=None) -> dict:
    """memory_stats() as nested dicts ("allocated_bytes": {"all": {"current": ...}})."""
    out: dict = {}
    for key, value in memory_stats(device).items():
        node = out
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def memory_stats(device=None) -> "collections.OrderedDict":
    """torch_npu's statistics, sorted by key (an OrderedDict, as torch_npu returns):

    * `{allocation, active, allocated_bytes, active_bytes, requested_bytes, segment,
      reserved_bytes}.{all, small_pool, large_pool}.{current, peak, allocated, freed}` of the
      memory npu tensors (and caching_allocator_alloc) hold, as torch_npu's caching allocator
      counts its own blocks (npurt's other allocations, pyACL's for instance, are not in them);
      small_pool: blocks of 1 MiB or less;
    * except `reserved_bytes.all.current` / `.peak` and `segment.all.current`: what npurt's pool
      holds from the device, which is shared with npurt's other allocations;
    * `num_device_alloc` / `num_device_free` / `num_ooms` of npurt's pool; `num_alloc_retries`,
      `num_sync_all_streams` (npurt's pool neither retries after freeing its cache nor
      synchronizes streams to allocate: 0); `max_split_size` (PYTORCH_NPU_ALLOC_CONF's, -1 for
      none, as torch); `oversize_allocations.*` / `oversize_segments.*` (0: npurt's pool applies
      no max_split_size); `pending_free_blocks` (npurt: frees waiting for queued work).
    torch's `inactive_split*` statistics are not given: npurt's pool does not expose its split
    remainders."""
    idx = index_of(device)
    s = _stats(idx)
    pool = _devices.torch_names_of(s)
    out = storage.info(idx).counters.flat()
    for key in ("reserved_bytes.all.current", "reserved_bytes.all.peak", "segment.all.current",
                "num_device_alloc", "num_device_free", "num_ooms", "num_alloc_retries"):
        out[key] = pool[key]
    split = alloc_conf.settings().max_split_size
    out.update({"num_sync_all_streams": 0, "max_split_size": -1 if split is None else split,
                "pending_free_blocks": s["pending_free_blocks"], "num_oom_rejections": 0})
    for what in ("oversize_allocations", "oversize_segments"):
        for metric in ("current", "peak", "allocated", "freed"):
            out[f"{what}.{metric}"] = 0
    return collections.OrderedDict(sorted(out.items()))


def reset_accumulated_memory_stats(device=None) -> None:
    """Zero the `allocated` / `freed` totals of memory_stats()."""
    storage.info(index_of(device)).counters.reset_accumulated()


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """torch_npu's table of memory_stats() (module memory_summary)."""
    idx = index_of(device)
    return _memory_summary.summary(memory_stats(idx), idx, abbreviated)


# ---------------------------------------------------------------- random numbers
def manual_seed(seed: int) -> None:
    """Seed the current device's generator."""
    _random.manual_seed(seed, current_device())


def manual_seed_all(seed: int) -> None:
    for i in range(device_count()):
        _random.manual_seed(seed, i)


def seed() -> None:
    manual_seed(torch.seed())


def seed_all() -> None:
    manual_seed_all(torch.seed())


def initial_seed() -> int:
    return _random.initial_seed(current_device())


def get_rng_state(device="npu") -> torch.Tensor:
    return _random.get_state(index_of(device))


def set_rng_state(new_state: torch.Tensor, device="npu") -> None:
    _random.set_state(new_state, index_of(device))


def _set_rng_state_offset(offset: int, device="npu") -> None:
    """Set the device generator's offset (torch_npu's, as torch.cuda's)."""
    _random.set_offset(offset, index_of(device))


def _get_rng_state_offset(device="npu") -> int:
    return _random.get_offset(index_of(device))


def get_rng_state_all() -> list:
    return [_random.get_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        _random.set_state(state, i)


# ---------------------------------------------------------------- torch_npu-only switches
def set_compile_mode(jit_compile: bool = False) -> None:
    """torch_npu: online operator compilation on or off. Nothing to compile here."""


def is_jit_compile_false() -> bool:
    return True


class _Config:
    """torch.npu.config: torch_npu's switches. `allow_internal_format` (False, torch_npu's
    default): whether storage formats may be internal ones (shim/formats.py)."""

    allow_internal_format = False


config = _Config()


def current_blas_handle() -> None:
    """torch_npu's answer: NPU uses no BLAS handle (a warning, None)."""
    warnings.warn("NPU does not use blas handle.")
    return None


def utilization(device=None) -> int:
    """Percent of time the device was busy; npurt does not sample it (0)."""
    index_of(device)
    return 0


# ---------------------------------------------------------------- torch_npu's stream helpers
SLEEP_CYCLES_PER_MS = 1_000_000
"""The simulated device's clock for `_sleep`: torch_npu's test harness measures it
(get_cycles_per_ms) the same way, with events around `_sleep`."""


def _sleep(cycles: int) -> None:
    """Queue a task on the current stream that keeps it busy for `cycles` device cycles (as
    torch_npu's spin kernel does; here SLEEP_CYCLES_PER_MS cycles are a millisecond)."""
    seconds = max(0, int(cycles)) / SLEEP_CYCLES_PER_MS / 1000.0
    launch_host_func(current_stream().npurt_stream.runtime_stream, time.sleep, seconds, name="npu _sleep")


def _get_device_index(device, optional: bool = False, allow_cpu: bool = False) -> int:
    """The device index of `device` (torch.device, str, int or None), as torch_npu's helper
    (torch_npu/npu/utils.py); torch_npu.npu.utils has it too."""
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if allow_cpu:
            if device.type not in ("npu", "cpu"):
                raise ValueError(f"Expected a npu or cpu device, but got: {device}")
        elif device.type != "npu":
            raise ValueError(f"Expected a npu device, but got: {device}")
    if isinstance(device, globals()["device"]):
        return device.idx
    return _torch_get_device_index(device, optional, allow_cpu)


# ---------------------------------------------------------------- legacy typed constructors
globals().update(TYPED)  # FloatTensor, HalfTensor, LongTensor, ... (npurt/torch/typed.py)
globals().update(STORAGES)  # FloatStorage, IntStorage, ...

# set by npurt.torch.register(): torch.npu.amp
amp = None


# torch.npu.memory holds the memory functions too, as torch_npu's npu/memory.py does
for _name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
              "memory_cached", "max_memory_cached", "reset_peak_memory_stats", "reset_max_memory_allocated",
              "reset_max_memory_cached", "empty_cache", "mem_get_info", "memory_stats", "memory_summary",
              "memory_stats_as_nested_dict", "reset_accumulated_memory_stats", "empty_virt_addr_cache"):
    setattr(memory, _name, globals()[_name])
sys.modules["torch.npu.memory"] = memory
sys.modules["torch.npu.streams"] = streams
# torch_npu.npu is a package: with a __path__, `import torch_npu.npu._stream_check` (a submodule
# aliased on first import, apps/runner.TORCH_NPU_LAZY) reaches the import system's finders
__path__: list = []
# torch_npu's module paths of the graph pieces (torch_npu/npu/graphs.py, _npugraph_handlers/,
# _aclgraph_update_plan/): one npurt module each
GRAPH_MODULES = {"graphs": graphs, "_npugraph_utils": graph_trace, "_npugraph_handlers": graph_update,
                 "_npugraph_handlers.npugraph_handler": graph_update,
                 "_aclgraph_update_plan": graph_update_plan, "_aclgraph_update_plan.resolver": graph_update_plan}
for _path, _module in GRAPH_MODULES.items():
    sys.modules[f"torch.npu.{_path}"] = _module
