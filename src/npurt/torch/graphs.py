"""torch.npu graphs (torch_npu's `torch.npu.NPUGraph` family) over npurt's ACL graphs.

    g = torch.npu.NPUGraph()
    static_x = torch.zeros(8, device="npu")
    with torch.npu.graph(g):              # warm-up first, as with CUDA graphs
        static_y = model(static_x)        # recorded, not run
    static_x.copy_(batch); g.replay()     # new input into the static tensor, then replay

As torch_npu (torch_npu/npu/graphs.py, which follows torch.cuda.graphs):
* `NPUGraph.capture_begin(pool=None, capture_error_mode="global")` captures the current
  stream (never the default stream); `capture_end()`, `replay()` (on the current stream),
  `reset()`, `pool()`. `capture_error_mode` is "global", "thread_local" or "relaxed".
* `torch.npu.graph(npu_graph, pool=None, stream=None, capture_error_mode="global")`
  synchronizes the device, then captures `stream` (default: a side stream of the graph
  context) with it current.
* `graph_pool_handle()` gives an opaque pool id. npurt's graphs keep the memory their work uses
  (a tensor freed during or after capture is not reused while the graph lives), which is what
  a private pool guarantees; sharing a pool between graphs shares nothing more.
* `is_current_stream_capturing()`.
* `make_graphed_callables(callables, sample_args, num_warmup_iters=3)`: warms each callable
  up on a side stream, captures its forward with static inputs, and returns a callable that
  copies its inputs into them and replays. Only forward graphs: a callable whose inputs or
  parameters require grad is refused (NotImplementedError), because backward capture is not
  done yet.

A call the capture forbids (a synchronous copy such as `.cpu()` / `.item()`, a synchronize of
the capturing stream) raises npurt's CaptureError (a RuntimeError carrying the aclError code)
and invalidates the capture.
"""
from __future__ import annotations

import gc
import itertools
import json

import torch

from ..graphs import MODES as _MODES
from ..runtime import CaptureError, capture_begin as _begin, capture_end as _end, capture_info as _info
from ..runtime import destroy_graph as _destroy, execute_async as _execute
from ..runtime import graph as _graph_module
from .device import current_device, synchronize
from .optask import current_stream as _current_runtime_stream
from .streams import Stream, stream as _stream_scope

_pools = itertools.count(1)


def graph_pool_handle():
    """An opaque id for a memory pool that graphs may share (graph(..., pool=...))."""
    return (0, next(_pools))


def is_current_stream_capturing() -> bool:
    return _info(_current_runtime_stream(current_device()))[0] != _graph_module.STATUS_NONE


def _mode(capture_error_mode: str) -> int:
    mode = _MODES.get(capture_error_mode)
    if mode is None:
        raise ValueError(f"capture_error_mode must be one of {', '.join(_MODES)}, got {capture_error_mode!r}")
    return mode


class NPUGraph:
    """One captured graph of npu work (torch_npu's NPUGraph)."""

    def __init__(self):
        self._graph = None
        self._capturing = None
        self._pool = None

    def capture_begin(self, pool=None, capture_error_mode: str = "global") -> None:
        if self._graph is not None or self._capturing is not None:
            raise RuntimeError("this NPUGraph holds a capture already; call reset() first")
        s = _current_runtime_stream(current_device())
        if s.is_default:
            raise RuntimeError("NPU graphs cannot be captured on the default stream: capture inside "
                               "`with torch.npu.stream(s):` or use `with torch.npu.graph(g):`")
        _begin(s, _mode(capture_error_mode))
        self._capturing = s
        self._pool = pool if pool is not None else graph_pool_handle()

    def capture_end(self) -> None:
        if self._capturing is None:
            raise RuntimeError("capture_end() without capture_begin()")
        s, self._capturing = self._capturing, None
        self._graph = _end(s)

    def replay(self) -> None:
        if self._graph is None:
            raise RuntimeError("replay() of an NPUGraph that holds no capture (capture it first)")
        _execute(self._graph, _current_runtime_stream(current_device()))

    def reset(self) -> None:
        if self._graph is not None:
            g, self._graph = self._graph, None
            _destroy(g)

    def pool(self):
        """The pool id this graph was captured with (share it: graph(..., pool=g.pool()))."""
        if self._pool is None:
            raise RuntimeError("pool() of an NPUGraph that was never captured")
        return self._pool

    def debug_dump(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(None if self._graph is None else self._graph.as_json(), f, indent=1)

    def __del__(self):
        try:
            self.reset()
        except Exception:  # noqa: BLE001 - interpreter teardown
            pass


class graph:
    """`with torch.npu.graph(g, pool=None, stream=None, capture_error_mode="global"):`."""

    default_capture_stream = None     # torch_npu's name: the side stream of the last default capture
    _capture_streams: dict = {}       # device index -> that device's side stream

    @classmethod
    def _default_capture_stream(cls) -> Stream:
        # One side stream per device, as torch_npu keeps one; made again when a device reset or
        # finalize destroyed the runtime stream behind it (a destroyed stream cannot capture).
        device = current_device()
        s = cls._capture_streams.get(device)
        if s is None or s._npurt._s.destroyed:
            s = cls._capture_streams[device] = Stream()
        cls.default_capture_stream = s
        return s

    def __init__(self, npu_graph: NPUGraph, pool=None, stream=None, capture_error_mode: str = "global"):
        if not isinstance(npu_graph, NPUGraph):
            raise TypeError(f"torch.npu.graph expects a torch.npu.NPUGraph, got {type(npu_graph).__name__}")
        if stream is None:
            stream = graph._default_capture_stream()
        self.npu_graph, self.pool, self.capture_error_mode = npu_graph, pool, capture_error_mode
        self.capture_stream = stream
        self._scope = _stream_scope(stream)

    def __enter__(self):
        synchronize()
        gc.collect()
        self._scope.__enter__()
        try:
            self.npu_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self._scope.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.npu_graph.capture_end()
        except CaptureError:
            if exc_type is None:
                raise
        finally:
            self._scope.__exit__(exc_type, exc, tb)


def _requires_grad(fn, args) -> bool:
    params = list(fn.parameters()) if isinstance(fn, torch.nn.Module) else []
    return torch.is_grad_enabled() and any(t.requires_grad for t in [*args, *params] if isinstance(t, torch.Tensor))


class _Graphed:
    """A callable replaying a captured forward: inputs are copied into the static ones."""

    def __init__(self, fn, graph_: NPUGraph, static_in: tuple, static_out):
        self.fn, self.graph, self.static_in, self.static_out = fn, graph_, static_in, static_out

    def __call__(self, *args):
        if len(args) != len(self.static_in):
            raise TypeError(f"graphed callable takes {len(self.static_in)} tensor arguments, got {len(args)}")
        for static, new in zip(self.static_in, args):
            if static.shape != new.shape or static.dtype != new.dtype:
                raise ValueError(f"graphed callable: an argument of shape {tuple(new.shape)} {new.dtype} does not "
                                 f"match the captured {tuple(static.shape)} {static.dtype}")
            static.copy_(new)
        self.graph.replay()
        return self.static_out


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False,
                           pool=None):
    """Graph each callable's forward (torch.cuda.make_graphed_callables' call shape)."""
    single = not isinstance(callables, tuple)
    fns = (callables,) if single else callables
    samples = (sample_args,) if single else sample_args
    out = []
    side = Stream()
    for fn, args in zip(fns, samples):
        args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        if _requires_grad(fn, args):
            raise NotImplementedError("make_graphed_callables: npurt graphs forward passes only; run it under "
                                      "torch.no_grad() (or with inputs and parameters that do not require grad)")
        with _stream_scope(side):
            for _ in range(num_warmup_iters):
                fn(*args)
        synchronize()
        g = NPUGraph()
        with graph(g, pool=pool, stream=side):
            static_out = fn(*args)
        out.append(_Graphed(fn, g, args, static_out))
    return out[0] if single else tuple(out)
