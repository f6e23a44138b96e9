"""torch's device-generic layer on npu: `torch.accelerator.*`, `torch.Stream`, `torch.Event`.

torch.accelerator's functions call `torch._C._accelerator_*`, which reach PrivateUse1's device
guard and caching allocator in C++; a Python backend has neither (torch fixes the guard's
device and stream functions as no-ops, and there is no device allocator: its memory functions
fail an internal assert). `install()` (npurt.torch.register() calls it) replaces those
`torch._C._accelerator_*` entry points, which torch.accelerator looks up at each call, by ones
over torch.npu — so `torch.accelerator.current_stream()` is the stream `torch.npu.stream(s)`
made current, `set_device_index(i)` is `torch.npu.set_device(i)`, `synchronize()` waits for the
device, and `memory_stats()` / `memory_allocated()` / `empty_cache()` / `get_memory_info()` are
torch.npu's — and makes `torch.Stream` / `torch.Event` the generic classes of
npurt.torch.streams. torch.accelerator's own argument checks (a device of another type: "doesn't
match the current accelerator") stay torch's, as they run before these calls.
"""
from __future__ import annotations

import torch

from . import device as _device
from . import streams as _streams

_ORIGINAL: dict = {}


def _exchange_device(index: int) -> int:
    previous = _device.current_device()
    if index is not None and index >= 0 and index != previous:
        _device.set_device(index)
    return previous


def _set_stream(stream) -> None:
    if isinstance(stream, _streams.Stream):
        _streams.set_stream(stream)
    elif stream.device_type == _streams.PRIVATEUSE1:
        _streams.set_stream(_streams.Stream._rebuild(stream.stream_id, stream.device_index, stream.device_type))
    else:
        _ORIGINAL["_accelerator_setStream"](stream)


def _nested(flat: dict) -> dict:
    """'a.b.c': v -> {'a': {'b': {'c': v}}} (torch.accelerator.memory_stats flattens it back)."""
    out: dict = {}
    for key, value in flat.items():
        node = out
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def _device_stats(index: int) -> dict:
    return _nested(dict(torch.npu.memory_stats(index)))


def _reset_accumulated(index: int) -> None:
    torch.npu.reset_accumulated_memory_stats(index)


REPLACEMENTS = {
    "_accelerator_getDeviceIndex": lambda: _device.current_device(),
    "_accelerator_setDeviceIndex": lambda index: _device.set_device(index) if index >= 0 else None,
    "_accelerator_exchangeDevice": _exchange_device,
    "_accelerator_maybeExchangeDevice": _exchange_device,
    "_accelerator_getStream": lambda index: _streams.current_stream(index),
    "_accelerator_setStream": _set_stream,
    "_accelerator_synchronizeDevice": lambda index: _device.synchronize(index),
    "_accelerator_isAllocatorInitialized": lambda: True,
    "_accelerator_emptyCache": lambda: torch.npu.empty_cache(),
    "_accelerator_emptyHostCache": lambda: torch.npu.host_empty_cache(),
    "_accelerator_getDeviceStats": _device_stats,
    "_accelerator_resetAccumulatedStats": _reset_accumulated,
    "_accelerator_resetPeakStats": lambda index: torch.npu.reset_peak_memory_stats(index),
    "_accelerator_getMemoryInfo": lambda index: torch.npu.mem_get_info(index),
}


def install() -> None:
    """Point torch's generic entry points at torch.npu (idempotent)."""
    for name, fn in REPLACEMENTS.items():
        if name not in _ORIGINAL and hasattr(torch._C, name):
            _ORIGINAL[name] = getattr(torch._C, name)
            setattr(torch._C, name, fn)
    _streams.install_generic()
