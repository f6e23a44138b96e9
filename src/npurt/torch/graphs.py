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
* `is_current_stream_capturing()`; `NPUGraph.get_currently_capturing_graph()` (the graph capturing
  the current stream; refused during a `torch.accelerator.Graph` capture, as torch_npu's).
* `make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False,
  pool=None)`, as torch.cuda's: warms each callable up on a side stream (forward and, when its
  outputs require grad, backward), captures the forwards in order and the backwards in reverse
  order with static inputs, outputs and grads, and returns a graphed callable (a Module with its
  forward replaced, used while `training` is what it was when graphed) whose forward copies its
  inputs into the static ones and replays the forward graph, and whose backward copies the
  incoming grads into the static grad outputs and replays the backward graph (parameters get
  their grads through it).

A call the capture forbids (a synchronous copy such as `.cpu()` / `.item()`, a synchronize of
the capturing stream) raises npurt's CaptureError (a RuntimeError carrying the aclError code)
and does nothing; the capture goes on, as CANN's does.
"""
from __future__ import annotations

import gc
import itertools
import json
import logging

import torch

from ..graphs import MODES as _MODES
from ..runtime import CaptureError, capture_begin as _begin, capture_end as _end, capture_info as _info
from ..runtime import destroy_graph as _destroy, execute_async as _execute, launch_host_func as _launch_host_func
from . import random as _random
from ..runtime import graph as _graph_module
from .device import current_device, synchronize
from . import alloc_conf, graph_if, graph_pools, graph_trace, super_kernel
from .graph_debug import TENSOR_BUFFER_SPEC as _NPUGRAPH_TENSOR_BUFFER_SPEC_MARKER  # noqa: F401 - torch_npu's
from .graph_debug import TENSOR_PTR_SPEC as _NPUGRAPH_TENSOR_PTR_SPEC_MARKER  # noqa: F401 - names of them
from .graph_debug import build_save_path as _build_save_npugraph_tensor_path  # noqa: F401
from .graph_debug import make_tensor_ptr_spec as _make_npugraph_tensor_ptr_spec  # noqa: F401
from .graph_debug import materialize_tensor_arg as _materialize_npugraph_tensor_arg  # noqa: F401
from .graph_update import GraphDispatchMode
from .optask import current_stream as _current_runtime_stream
from .streams import Stream, stream as _stream_scope

_pools = itertools.count(1)
log = logging.getLogger(__name__)


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


# the graphs capturing now, by the runtime graph their capture builds (a side stream that joined
# the capture builds the same one), as torch_npu's _currently_capturing_graphs by capture id
_capturing_graphs: dict = {}


class NPUGraph:
    """One captured graph of npu work (torch_npu's NPUGraph)."""

    # set by torch.accelerator.Graph (npurt.torch.accelerator) on the NPUGraph it captures with
    _for_accelerator = False

    def __init__(self):
        self._graph = None
        self._capturing = None
        self._pool = None
        self._routed = None   # (device, pool id) this capture's allocations go to
        self._mode = 0        # the capture's mode (IF bodies are captured in it)
        self._if_stack: list = []  # the IF bodies being captured, innermost last (graph_if.py)
        self._rng = {}
        self.graph_dispatch_mode = GraphDispatchMode()   # records updatable ops (graph_update.py)
        self.auto_dispatch_capture = False

    @staticmethod
    def get_currently_capturing_graph() -> "NPUGraph":
        """The NPUGraph capturing the current stream (torch_npu's NPUGraph.cpp
        get_currently_capturing_npu_graph, with its messages)."""
        status, built = _info(_current_runtime_stream(current_device()))
        if status == _graph_module.STATUS_NONE:
            raise RuntimeError("The current NPU stream is not currently capturing.")
        owner = _capturing_graphs.get(id(built), (None, None))[1]
        if owner is None:
            raise RuntimeError("get_currently_capturing_graph() can be used only between capture_begin() and "
                               "capture_end(). Did you use a stream without making it depend upon the original "
                               "stream used for capture?")
        if owner._for_accelerator:
            raise RuntimeError("torch.npu.NPUGraph.get_currently_capturing_graph() is not supported during "
                               "torch.accelerator.Graph capture.")
        return owner

    def _forget_capture(self) -> None:
        for key in [k for k, (_, g) in _capturing_graphs.items() if g is self]:
            del _capturing_graphs[key]

    def capture_begin(self, pool=None, capture_error_mode: str = "global") -> None:
        if self._graph is not None or self._capturing is not None:
            raise RuntimeError("this NPUGraph holds a capture already; call reset() first")
        if alloc_conf.settings().pin_memory_expandable_segments:   # torch_npu's NPUGraph::capture_begin check
            raise RuntimeError("ACLGraph capture is not supported when pin_memory_expandable_segments=True. Please "
                               "unset pin_memory_expandable_segments in PYTORCH_NPU_ALLOC_CONF to use ACLGraph with "
                               "pin_memory, or avoid pin_memory calls inside capture regions.")
        s = _current_runtime_stream(current_device())
        if s.is_default:
            raise RuntimeError("NPU graphs cannot be captured on the default stream: capture inside "
                               "`with torch.npu.stream(s):` or use `with torch.npu.graph(g):`")
        self._mode = _mode(capture_error_mode)
        _begin(s, self._mode)
        built = _info(s)[1]
        _capturing_graphs[id(built)] = (built, self)
        self._capturing = s
        self._pool = pool if pool is not None else graph_pool_handle()
        # a private pool of torch_npu._C's pool API (graph trees): the capture allocates from it
        self._routed = graph_pools.capture_begin(current_device(), self._pool)

    def capture_end(self) -> None:
        if self._capturing is None:
            raise RuntimeError("capture_end() without capture_begin()")
        s, self._capturing = self._capturing, None
        self._forget_capture()
        if self._routed is not None:
            graph_pools.end_allocate_to_pool(*self._routed)
            self._routed = None
        captured = _info(s)[1]
        try:
            self._graph = _end(s)
        finally:
            # the random state its ops draw from at each replay (random.py)
            self._rng = _random.capture_epilogue(captured) if captured is not None else {}

    def begin_capture_to_if_node(self, pred) -> None:
        """Capture what follows into an IF node's body, run at replay when `pred` (a one-element
        npu bool tensor, read at replay) is true; end it with end_capture_to_conditional_node()."""
        graph_if.begin(self, pred, _capturing_graphs, self._mode)

    def end_capture_to_conditional_node(self) -> None:
        graph_if.end(self, _capturing_graphs)

    def replay(self) -> None:
        if self._graph is None:
            raise RuntimeError("replay() of an NPUGraph that holds no capture (capture it first)")
        s = _current_runtime_stream(current_device())
        for index, rng in self._rng.items():
            if rng.used:
                _launch_host_func(s, setattr, rng, "replay", _random.replay_prologue(index, rng))
        _execute(self._graph, s)

    def reset(self) -> None:
        if self._graph is not None:
            g, self._graph = self._graph, None
            _destroy(g)

    def update(self, cpu_update_input: list) -> None:
        """Re-enqueue the ops an `auto_dispatch_capture` capture recorded with new arguments
        (one dict per recorded op, or one for all); the replays after it run them."""
        if not self.auto_dispatch_capture:
            raise RuntimeError("The current graph configuration does not support update,Try to capture by "
                               "setting auto_dispatch_capture=True during capture")
        self.graph_dispatch_mode.update_capture_record(cpu_update_input)

    def super_kernel_optimize(self, optimize_options=None, debug_options=None) -> None:
        """torch_npu's super-kernel fusion of the captured graph: the options are checked as
        torch_npu checks them; the graph replays as before (npurt/torch/super_kernel.py)."""
        super_kernel.validate_options("optimize_options", optimize_options)
        super_kernel.validate_options("debug_options", debug_options)
        if self._graph is None:
            raise RuntimeError("Called NPUGraph::super_kernel_optimize without a preceding successful capture.")

    def pool(self):
        """The pool id this graph was captured with (share it: graph(..., pool=g.pool()))."""
        if self._pool is None:
            raise RuntimeError("pool() of an NPUGraph that was never captured")
        return self._pool

    def debug_dump(self, path: str) -> None:
        """Write the captured graph as JSON (aclmdlRIDebugJsonPrint) and, beside it,
        `<stem>.aligned.json`, a Chrome trace of it (graph_trace.py). Without a capture the file
        is left as it is, as torch_npu's."""
        if self._graph is None:
            log.warning("NPUGraph.debug_dump(%r): the graph holds no capture; nothing written", path)
            return
        with open(path, "w") as f:
            json.dump(self._graph.as_json(), f, indent=1)
        try:  # looked up at call time: torch_npu.npu._npugraph_utils.align_trace_json
            graph_trace.align_trace_json(path, None)
        except Exception:  # noqa: BLE001 - the derived trace is optional; the dump stays
            log.warning("Failed to generate aligned trace for %s; the raw dump is kept", path, exc_info=True)

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

    def __init__(self, npu_graph: NPUGraph, pool=None, stream=None, auto_dispatch_capture: bool = False,
                 capture_error_mode: str = "global"):
        if not isinstance(npu_graph, NPUGraph):
            raise TypeError(f"torch.npu.graph expects a torch.npu.NPUGraph, got {type(npu_graph).__name__}")
        if stream is None:
            stream = graph._default_capture_stream()
        self.npu_graph, self.pool, self.capture_error_mode = npu_graph, pool, capture_error_mode
        self.capture_stream = stream
        self._scope = _stream_scope(stream)
        npu_graph.auto_dispatch_capture = bool(auto_dispatch_capture)

    def __enter__(self):
        synchronize()
        gc.collect()
        self._scope.__enter__()
        mode = self.npu_graph.graph_dispatch_mode if self.npu_graph.auto_dispatch_capture else None
        try:
            if mode is not None:
                mode.__enter__()
            try:
                self.npu_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
            except BaseException:
                if mode is not None:
                    mode.__exit__(None, None, None)
                raise
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
            if self.npu_graph.auto_dispatch_capture:
                self.npu_graph.graph_dispatch_mode.__exit__(exc_type, exc, tb)
            self._scope.__exit__(exc_type, exc, tb)


def _graphed_function(fwd: NPUGraph, bwd: NPUGraph | None, params: tuple, n_user: int, out_spec,
                      surface: tuple, static_out: tuple, static_grad_out: tuple, static_grad_in: tuple):
    """The callable replaying one captured forward, whose backward replays the captured
    backward (torch's make_graphed_callables semantics: inputs copied into the static ones,
    static outputs returned detached, incoming grads copied into the static grad outputs)."""

    class Graphed(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            for static, new in zip(surface[:n_user], inputs[:n_user]):
                if static.data_ptr() != new.data_ptr():
                    static.copy_(new)
            fwd.replay()
            return tuple(o.detach() for o in static_out)

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, *grads):
            if bwd is None:
                raise RuntimeError("graphed callable: no backward graph was captured (its outputs did not "
                                   "require grad when it was graphed)")
            for static, grad in zip(static_grad_out, grads):
                if static is not None and grad is not None and static.data_ptr() != grad.data_ptr():
                    static.copy_(grad)
            bwd.replay()
            return tuple(None if b is None else b.detach() for b in static_grad_in)

    def functionalized(*user_args):
        flat = torch.utils._pytree.arg_tree_leaves(*user_args)
        if len(flat) != n_user:
            raise TypeError(f"graphed callable takes {n_user} tensor arguments, got {len(flat)}")
        for static, new in zip(surface, flat):
            if not isinstance(new, torch.Tensor) or static.shape != new.shape or static.dtype != new.dtype:
                what = (f"of shape {tuple(new.shape)} {new.dtype}" if isinstance(new, torch.Tensor)
                        else f"of type {type(new).__name__}")
                raise ValueError(f"graphed callable: an argument {what} does not match the captured "
                                 f"{tuple(static.shape)} {static.dtype}")
        out = Graphed.apply(*flat, *params)
        return torch.utils._pytree.tree_unflatten(list(out), out_spec)

    return functionalized


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False,
                           pool=None):
    """Graph each callable's forward and, when its outputs require grad, its backward
    (torch.cuda.make_graphed_callables' semantics and call shape). A Module comes back with
    its forward replaced (the graphs run while `training` is what it was when graphed); a
    function comes back as a graphed function."""
    single = not isinstance(callables, tuple)
    fns = (callables,) if single else callables
    samples = (sample_args,) if single else sample_args
    if len(fns) != len(samples):
        raise ValueError(f"make_graphed_callables: {len(fns)} callables but {len(samples)} sample arg tuples")
    surfaces, params_of, n_users, samples_flat = [], [], [], []
    for fn, args in zip(fns, samples):
        args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        flat = torch.utils._pytree.arg_tree_leaves(*args)
        if not all(isinstance(a, torch.Tensor) for a in flat):
            raise TypeError("make_graphed_callables: sample_args may hold only tensors")
        if isinstance(fn, torch.nn.Module):
            if fn._backward_hooks or fn._forward_hooks or fn._forward_pre_hooks:
                raise RuntimeError("make_graphed_callables: modules must have no hooks registered when graphed")
            if any(b.requires_grad for b in fn.buffers()):
                raise RuntimeError("make_graphed_callables: a module's buffers must have requires_grad=False")
            params = tuple(fn.parameters())
        else:
            params = ()
        samples_flat.append(args)
        surfaces.append(tuple(flat) + params)
        params_of.append(params)
        n_users.append(len(flat))
    synchronize()
    side = Stream()
    with _stream_scope(side):  # warm-up: lazy initialisation stays out of the captures
        for fn, args, surface in zip(fns, samples_flat, surfaces):
            for _ in range(num_warmup_iters):
                outs = torch.utils._pytree.tree_leaves(fn(*args))
                needing = tuple(o for o in outs if o.requires_grad)
                if needing:
                    torch.autograd.grad(needing, tuple(i for i in surface if i.requires_grad),
                                        grad_outputs=tuple(torch.zeros_like(o) for o in needing),  # not
                                        # empty_like as torch.cuda: no read of unwritten memory
                                        only_inputs=True, allow_unused=allow_unused_input)
    synchronize()
    pool = pool if pool is not None else graph_pool_handle()
    fwd_graphs, static_outs, specs = [], [], []
    for fn, args in zip(fns, samples_flat):  # forwards in order, then backwards in reverse, as torch
        g = NPUGraph()
        with graph(g, pool=pool, stream=side):
            result = fn(*args)
        flat, spec = torch.utils._pytree.tree_flatten(result)
        fwd_graphs.append(g)
        static_outs.append(tuple(flat))
        specs.append(spec)
    bwd_graphs, grad_outs, grad_ins = [None] * len(fns), [()] * len(fns), [()] * len(fns)
    for k in reversed(range(len(fns))):
        outs, surface = static_outs[k], surfaces[k]
        grad_out = tuple(torch.empty_like(o) if o.requires_grad else None for o in outs)
        needing = tuple(o for o in outs if o.requires_grad)
        grads = None
        if needing:
            g = bwd_graphs[k] = NPUGraph()
            with graph(g, pool=pool, stream=side):
                grads = torch.autograd.grad(needing, tuple(i for i in surface if i.requires_grad),
                                            grad_outputs=tuple(o for o in grad_out if o is not None),
                                            only_inputs=True, allow_unused=allow_unused_input)
        it = iter(grads or ())
        grad_ins[k] = tuple(next(it) if (a.requires_grad and grads is not None) else None for a in surface)
        grad_outs[k] = grad_out
    out = []
    for k, fn in enumerate(fns):
        graphed = _graphed_function(fwd_graphs[k], bwd_graphs[k], params_of[k], n_users[k], specs[k],
                                    surfaces[k], static_outs[k], grad_outs[k], grad_ins[k])
        if isinstance(fn, torch.nn.Module):
            fn.forward = _graphed_forward(fn, fn.training, graphed, fn.forward)
            fn._npu_graphs = (fwd_graphs[k], bwd_graphs[k])  # kept alive with the module
            out.append(fn)
        else:
            graphed._npu_graphs = (fwd_graphs[k], bwd_graphs[k])
            out.append(graphed)
    return out[0] if single else tuple(out)


def _graphed_forward(module, training: bool, graphed, original):
    def forward(*args, **kwargs):
        if module.training == training:
            return graphed(*args, **kwargs)
        return original(*args, **kwargs)
    return forward
