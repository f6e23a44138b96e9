"""Pinned host memory for npu work: `pin_memory=True` factories, non-blocking copies to the host,
and the host allocator's statistics torch_npu reports.

torch makes pinned CPU tensors through the accelerator's C++ hook `getPinnedMemoryAllocator`,
which a Python backend cannot provide (torch raises NotImplementedError). So:

* `Tensor.pin_memory()` / `is_pinned()` are CPU kernels over npurt's page-locked host memory
  (npurt.torch.copies; registered by aten.cpu_kernels);
* torch's factories that take `pin_memory=` (`torch.empty`, `zeros`, `ones`, `full`, `tensor`,
  `arange`, `empty_like`, ..., and `Tensor.new_*`) are wrapped (`install()`): with
  `pin_memory=True` the tensor is made in pinned memory; without it the call is torch's own;
* `aten::_to_copy` of an npu tensor (`.to("cpu", non_blocking=True)`, `.cpu(non_blocking=True)`)
  is a PrivateUse1 kernel doing what torch's generic one does — an empty result laid out as
  `memory_format` says, then `copy_` — with the result in pinned memory when torch pins it
  (non_blocking, to the CPU, strided), so the copy is queued and returns at once;
* `host_memory_stats()` (torch_npu's keys: `allocations`, `allocated_bytes`, `active_requests`,
  `active_bytes` each `.current/.peak/.allocated/.freed`, `num_host_alloc`, `num_host_free`,
  `host_alloc_time.*`, `host_free_time.*` in µs), `reset_accumulated_host_memory_stats()`,
  `reset_peak_host_memory_stats()`. npurt keeps no cache of pinned blocks: each block is made for
  its tensor and freed with it, so allocations and active requests are the same count.
"""
from __future__ import annotations

import collections
import functools
import time
import weakref

import numpy as np
import torch
from torch.jit import _builtins as _jit_builtins

from ..array import pinned as _pinned
from ..runtime import fork_safe_lock

_lock = fork_safe_lock()
_STATS = ("allocations", "allocated_bytes", "active_requests", "active_bytes")
_counts = {name: [0, 0, 0, 0] for name in _STATS}          # current, peak, allocated, freed
_times = {"host_alloc_time": [0, 0, None, 0], "host_free_time": [0, 0, None, 0]}  # total, max, min, count
_events = {"num_host_alloc": 0, "num_host_free": 0}


def _add(name: str, delta: int) -> None:
    v = _counts[name]
    v[0] += delta
    if delta > 0:
        v[2] += delta
        v[1] = max(v[1], v[0])
    else:
        v[3] -= delta


def _time(name: str, us: int) -> None:
    t = _times[name]
    t[0] += us
    t[1] = max(t[1], us)
    t[2] = us if t[2] is None else min(t[2], us)
    t[3] += 1


def _freed(nbytes: int) -> None:
    with _lock:
        for name, delta in (("allocations", -1), ("active_requests", -1), ("allocated_bytes", -nbytes),
                            ("active_bytes", -nbytes)):
            _add(name, delta)
        _events["num_host_free"] += 1
        _time("host_free_time", 0)   # freed with its tensor, by npurt's pinned allocator: no wait


def empty_pinned(nbytes: int) -> np.ndarray:
    """`nbytes` of page-locked host memory (a uint8 array), counted in host_memory_stats()."""
    start = time.perf_counter_ns()
    arr = _pinned.empty_pinned(max(int(nbytes), 1), np.uint8)
    took = (time.perf_counter_ns() - start) // 1000
    size = arr.nbytes
    with _lock:
        for name, delta in (("allocations", 1), ("active_requests", 1), ("allocated_bytes", size),
                            ("active_bytes", size)):
            _add(name, delta)
        _events["num_host_alloc"] += 1
        _time("host_alloc_time", took)
    weakref.finalize(arr, _freed, size)
    return arr


def pinned_like(t: torch.Tensor) -> torch.Tensor:
    """An uninitialized CPU tensor in pinned memory with `t`'s shape, strides and dtype."""
    span = 0 if t.numel() == 0 else 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    arr = empty_pinned(span * t.element_size())
    flat = torch.from_numpy(arr)[: span * t.element_size()].view(t.dtype)
    return flat.as_strided(t.shape, t.stride())


def pin_memory(t: torch.Tensor, device=None) -> torch.Tensor:
    """aten::_pin_memory: a copy of CPU tensor `t` in page-locked host memory (contiguous)."""
    arr = empty_pinned(t.numel() * t.element_size())
    out = torch.from_numpy(arr)[: t.numel() * t.element_size()].view(t.dtype).view(t.shape)
    out.copy_(t)
    return out


def to_copy(self, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
            memory_format=None):
    """aten::_to_copy of an npu tensor, as torch's generic kernel, pinning a non-blocking copy's
    CPU result (torch pins it through the hook a Python backend cannot have)."""
    if layout not in (None, torch.strided):
        raise RuntimeError(f"_to_copy to layout {layout} is not supported for npu tensors")
    dtype = self.dtype if dtype is None else dtype
    device = self.device if device is None else torch.device(device)
    fmt = torch.preserve_format if memory_format is None else memory_format
    out = torch.empty_like(self, dtype=dtype, device=device, memory_format=fmt)
    if device.type == "cpu" and (pin_memory or (non_blocking and pin_memory is None)):
        out = pinned_like(out)
    out.copy_(self, non_blocking=non_blocking)
    return out


def host_memory_stats() -> "collections.OrderedDict":
    """torch_npu's host (pinned) allocator statistics, sorted by key."""
    with _lock:
        out = {f"{name}.{metric}": v[i] for name, v in _counts.items()
               for i, metric in enumerate(("current", "peak", "allocated", "freed"))}
        out.update(_events)
        for name, (total, most, least, count) in _times.items():
            out.update({f"{name}.total": total, f"{name}.max": most, f"{name}.min": least or 0,
                        f"{name}.count": count, f"{name}.avg": total // count if count else 0})
    return collections.OrderedDict(sorted(out.items()))


def host_memory_stats_as_nested_dict() -> dict:
    out: dict = {}
    for key, value in host_memory_stats().items():
        name, metric = key.rsplit(".", 1) if "." in key else (key, None)
        if metric is None:
            out[name] = value
        else:
            out.setdefault(name, {})[metric] = value
    return out


def reset_accumulated_host_memory_stats() -> None:
    with _lock:
        for v in _counts.values():
            v[2] = v[3] = 0
        for k in _events:
            _events[k] = 0
        for k in _times:
            _times[k] = [0, 0, None, 0]


def reset_peak_host_memory_stats() -> None:
    with _lock:
        for v in _counts.values():
            v[1] = v[0]


# ---------------------------------------------------------------- pin_memory=True factories
FACTORIES = ("empty", "empty_strided", "zeros", "ones", "full", "tensor", "arange", "range", "linspace",
             "logspace", "eye", "rand", "randn", "randint", "randperm", "empty_like", "zeros_like", "ones_like",
             "full_like", "rand_like", "randn_like", "randint_like", "scalar_tensor")
METHODS = ("new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full", "new_tensor")
_ORIGINAL: dict = {}


def _pinning(fn):
    @functools.wraps(fn)
    def make(*args, pin_memory=False, **kwargs):
        if not pin_memory:
            return fn(*args, **kwargs)
        t = fn(*args, **kwargs)
        if t.device.type != "cpu":
            raise RuntimeError(f"pin_memory=True applies to CPU tensors only, this one is on {t.device}")
        return pin_memory_of(t)
    make.__npurt_pinning__ = fn
    return make


def pin_memory_of(t: torch.Tensor) -> torch.Tensor:
    """`t` moved into pinned memory, keeping its strides (torch's factories' layout)."""
    out = pinned_like(t)
    out.copy_(t)
    out.requires_grad_(t.requires_grad)
    return out


def _as_script_builtin(wrapper, fn) -> None:
    """TorchScript compiles a call to torch.randn & co. as the aten op it finds for the function
    object in its builtin table; a wrapper it does not find there it tries to compile from
    source and fails. The wrapper is registered under its original's op (torch's table is built
    once, possibly before the wrapping)."""
    op = _jit_builtins._find_builtin(fn)
    if op is not None:
        _jit_builtins._register_builtin(wrapper, op)


def install() -> None:
    """Wrap torch's pin_memory= factories (idempotent)."""
    for name in FACTORIES:
        fn = getattr(torch, name, None)
        if fn is not None and not hasattr(fn, "__npurt_pinning__"):
            _ORIGINAL[name] = fn
            wrapper = _pinning(fn)
            _as_script_builtin(wrapper, fn)
            setattr(torch, name, wrapper)
    for name in METHODS:
        fn = getattr(torch.Tensor, name, None)
        if fn is not None and not hasattr(fn, "__npurt_pinning__"):
            _ORIGINAL[f"Tensor.{name}"] = fn
            setattr(torch.Tensor, name, _pinning(fn))
