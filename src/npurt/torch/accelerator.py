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
`torch.accelerator.Graph` becomes `Graph` below (torch's refuses a device without a C++
implementation).
"""
from __future__ import annotations

import gc

import torch

from . import device as _device
from . import graphs as _graphs
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


class Graph:
    """torch.accelerator.Graph on npu. torch's class is C++ (`torch._C._acceleratorGraph`) and
    builds its backend's implementation from a C++ registry (REGISTER_GRAPH_IMPL), which
    torch_npu fills with one over its NPUGraph (NPUAcceleratorGraphImpl, NPUGraph.cpp) and a
    Python backend cannot; this class has torch's Python interface (torch/accelerator/graphs.py)
    over npurt's NPUGraph, as torch_npu's implementation: capture on the current stream,
    `instantiate()` a no-op (the capture's end builds the graph), and while it captures,
    `torch.npu.NPUGraph.get_currently_capturing_graph()` is refused."""

    def __init__(self, keep_graph: bool = False, *, pool=None, capture_error_mode: str = "default"):
        self.keep_graph = keep_graph
        self.graph_pool = pool
        self.capture_error_mode = capture_error_mode
        self._graph = _graphs.NPUGraph()
        self._graph._for_accelerator = True

    def capture_begin(self) -> None:
        mode = "global" if self.capture_error_mode == "default" else self.capture_error_mode
        self._graph.capture_begin(pool=self.graph_pool, capture_error_mode=mode)

    def capture_end(self) -> None:
        self._graph.capture_end()

    def instantiate(self) -> None:
        pass  # torch_npu's NPUAcceleratorGraphImpl::instantiate does nothing either

    def replay(self) -> None:
        self._graph.replay()

    def reset(self) -> None:
        self._graph.reset()

    def pool(self):
        return self._graph.pool()

    def enable_debug_mode(self) -> None:
        pass  # npurt's graphs can always be dumped

    def debug_dump(self, path: str) -> None:
        self._graph.debug_dump(path)

    def __enter__(self) -> None:
        # torch's Graph.__enter__: settle the device and its caches, then capture
        torch.accelerator.synchronize()
        if torch.compiler.config.force_cudagraph_gc:
            gc.collect()
        torch.accelerator.empty_cache()
        torch.accelerator.empty_host_cache()
        self.capture_begin()

    def __exit__(self, *exc_info) -> None:
        self.capture_end()


def install() -> None:
    """Point torch's generic entry points at torch.npu (idempotent)."""
    for name, fn in REPLACEMENTS.items():
        if name not in _ORIGINAL and hasattr(torch._C, name):
            _ORIGINAL[name] = getattr(torch._C, name)
            setattr(torch._C, name, fn)
    _streams.install_generic()
    if hasattr(torch.accelerator, "Graph"):
        torch.accelerator.Graph = torch.accelerator.graphs.Graph = Graph
