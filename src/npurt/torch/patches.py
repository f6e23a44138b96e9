"""The few Python-level patches that make torch treat npu like a C++-registered device.

Each fills a hook torch has no Python API for (see docs/torch.md):

* `torch.UntypedStorage(n, device="npu")` needs a C++ allocator for PrivateUse1 (a null one
  crashes the process); it is made from an npu tensor instead. `torch.load`, `storage.npu()`
  and `storage.to("npu")` go through it.
* Autograd runs backward ops in its own device threads, whose current stream would be the
  default one: backward is queued on the stream(s) current where `backward()` was called.
* torch.compile's default backend (inductor) has no code generator for npu and would fail
  with `KeyError: 'npu'`: it is refused by name, pointing at the backends that work.
* At interpreter exit, work still queued runs to the end before torch tears down (a worker
  running a torch kernel during teardown aborts the process).
* torch's Python meta kernels (the refs npurt asks for output shapes) are wrapped in
  `torch._disable_dynamo`, whose first call imports torch._dynamo: seconds, on the first op of
  every script. Outside a dynamo trace that wrapper only calls the function, so each wrapper
  is given a disabler that calls the function directly until torch._dynamo is imported (by
  torch.compile or the user) and torch's own from then on. sympy, which type promotion
  imports on the first elementwise meta call (about a second), is imported in a background
  thread while npurt.torch imports torch (npurt/torch/__init__.py).
"""
from __future__ import annotations

import atexit
import importlib
import sys

import torch
import torch._compile

from .. import devices as _devices
from ..runtime import RUNTIME, current_streams
from . import optask

_orig_storage_new = None
_orig_engine = None
_orig_inductor_call = None

INDUCTOR_REFUSAL = ("torch.compile's default backend (inductor) cannot generate code for npu tensors: "
                    "use torch.compile(model, backend=\"eager\") or backend=\"aot_eager\"")


def _storage_new(cls, *args, device=None, **kwargs):
    if device is not None and torch.device(device).type == "npu":
        if args and isinstance(args[0], int) and not kwargs:
            return torch.empty(args[0], dtype=torch.uint8, device=device).untyped_storage()
        host = _orig_storage_new(cls, *args, **kwargs)  # from data: build on the host, then copy
        out = torch.empty(host.nbytes(), dtype=torch.uint8, device=device).untyped_storage()
        out.copy_(host)
        return out
    if device is None:
        return _orig_storage_new(cls, *args, **kwargs)
    return _orig_storage_new(cls, *args, device=device, **kwargs)


def _engine_run_backward(*args, **kwargs):
    """autograd's entry to the C++ engine, with backward queued on the caller's streams."""
    saved = dict(optask.BACKWARD_STREAMS)
    optask.BACKWARD_STREAMS.update(current_streams())
    try:
        if _devices.device_count() > 1:
            # the engine has one device queue per device the Python guard reports, and torch fixes
            # that count at 1: a graph with nodes on npu:1 and up (a rank's device, DataParallel's
            # replicas) fails its assertion, so with several npus backward runs in the calling thread
            with torch.autograd.set_multithreading_enabled(False):
                return _orig_engine(*args, **kwargs)
        return _orig_engine(*args, **kwargs)
    finally:
        optask.BACKWARD_STREAMS.clear()
        optask.BACKWARD_STREAMS.update(saved)


def _on_npu(t) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == "npu"


def _inductor_call(self, model_, inputs_):
    """The inductor backend's entry, refusing graphs with npu inputs or parameters."""
    state = list(model_.parameters()) + list(model_.buffers()) if isinstance(model_, torch.nn.Module) else []
    if any(_on_npu(t) for t in list(inputs_) + state):
        raise RuntimeError(INDUCTOR_REFUSAL)
    return _orig_inductor_call(self, model_, inputs_)


def drain(timeout_s: float = 60.0) -> None:
    """Let every device finish its queued work (errors are left to the streams)."""
    if not RUNTIME.initialized:
        return
    for device in list(RUNTIME.devices):
        if device is None:
            continue
        for stream in device.all_streams():
            try:
                stream.synchronize(timeout_ms=int(timeout_s * 1000), report_errors=False)
            except Exception:  # noqa: BLE001 - a failed or stuck stream must not block exit
                pass


_DISABLE_DYNAMO_CODE = torch._compile._disable_dynamo(lambda: None).__code__
# where torch keeps the Python refs, prims, decompositions and meta kernels
_META_MODULES = ("torch._refs", "torch._refs.nn.functional", "torch._refs.linalg", "torch._refs.special",
                 "torch._refs.fft", "torch._prims", "torch._decomp", "torch._decomp.decompositions",
                 "torch._meta_registrations")


def _deferred_disable(fn, recursive: bool):
    """What torch._disable_dynamo(fn) does, without importing dynamo while nothing traces."""
    real = None

    def call(*args, **kwargs):
        nonlocal real
        if real is None:
            dynamo = sys.modules.get("torch._dynamo")
            if dynamo is None:          # nothing can be tracing: disabling changes nothing
                return fn(*args, **kwargs)
            real = dynamo.disable(fn, recursive, wrapping=False)
        return real(*args, **kwargs)

    return call


def defer_dynamo_disable() -> int:
    """Give every _disable_dynamo wrapper of torch's refs, prims, decompositions and meta
    kernels the deferred disabler; returns how many."""
    from torch._decomp import decomposition_table, meta_table
    seen, done = set(), 0
    roots = []
    for name in _META_MODULES:
        try:
            roots += list(vars(importlib.import_module(name)).values())
        except ImportError:      # a module this torch version does not have
            continue
    for f in roots + list(meta_table.values()) + list(decomposition_table.values()):
        while callable(f) and id(f) not in seen:   # decorator stacks: follow __wrapped__
            seen.add(id(f))
            if getattr(f, "__code__", None) is _DISABLE_DYNAMO_CODE:
                cells = dict(zip(f.__code__.co_freevars, (c.cell_contents for c in f.__closure__)))
                fn = cells["fn"]
                if getattr(fn, "__dynamo_disable", None) is None:
                    fn.__dynamo_disable = _deferred_disable(fn, cells.get("recursive", True))
                    done += 1
            f = getattr(f, "__wrapped__", None)
    return done


def apply() -> None:
    global _orig_storage_new, _orig_engine, _orig_inductor_call
    if _orig_storage_new is None:
        _orig_storage_new = torch.UntypedStorage.__new__
        torch.UntypedStorage.__new__ = _storage_new
    if _orig_engine is None:
        from torch import autograd
        from torch.autograd import graph
        _orig_engine = graph._engine_run_backward
        graph._engine_run_backward = _engine_run_backward
        autograd._engine_run_backward = _engine_run_backward
    if _orig_inductor_call is None:
        _orig_inductor_call = torch._TorchCompileInductorWrapper.__call__
        torch._TorchCompileInductorWrapper.__call__ = _inductor_call
    atexit.register(drain)
    defer_dynamo_disable()
