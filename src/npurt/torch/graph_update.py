"""Updating captured npu graphs: torch_npu's op handlers and `auto_dispatch_capture`.

Some ops take host-side arguments that change between replays (an attention op's
`actual_seq_lengths`). torch_npu lets a graph re-enqueue just those ops with new arguments
(torch_npu/npu/graphs.py `_GraphDispatchMode`, torch_npu/npu/_npugraph_handlers/):

    with torch.npu.graph(g, auto_dispatch_capture=True):
        out = model(x)                      # ops with a handler: each one its own task group
    g.update(cpu_update_input=[{"actual_seq_lengths": [100]}])
    g.replay()                              # runs the updated ops

* `register_npu_graph_handler(names)` decorates an `NpuGraphOpHandler` subclass (the class is
  stored, never an instance: all hooks are classmethods) under op names as `func.__name__`
  gives them ("op", "op.default", "op.out"). `HANDLERS` is the registry
  (torch_npu's `_NPU_GRAPH_OP_HANDLERS`).
* A handler's `UPDATE_SPECS` maps an op name to `[("arg", index, key) | ("kwarg", name, key)]`:
  which argument slot the update payload's `key` replaces.
* During an `auto_dispatch_capture` capture, `GraphDispatchMode` sees every op; one with a
  handler (whose optional `should_handle` agrees) is enqueued inside a task group, preceded by a
  wait on an `ExternalEvent` (reset after it), and a `GraphDispatchRecord` keeps the call
  (npu tensors by weak reference, everything else deep-copied). `update()` then, on one update
  stream shared by every graph, re-enqueues each recorded call with its new arguments as the
  group's new tasks and records the event, so the next replay waits for the update.

Built-in handlers are registered for torch_npu's fused attention ops (`npu_fused_infer_
attention_score` v1/v2, `npu_fusion_attention_v3` and its grad, `_npu_paged_attention`,
`npu_multi_head_latent_attention`) with torch_npu's update specs. Those ops are torch_npu-only
kernels that npurt has no reference for, so nothing dispatches to these handlers here; their
specs are what torch_npu's update plans (graph_update_plan.py) are checked against.
"""
from __future__ import annotations

import logging
import re
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..runtime import graph_edit as _edit
from .optask import current_stream as _current_runtime_stream
from .streams import runtime_stream

log = logging.getLogger(__name__)

HANDLERS: dict = {}
_NPU_GRAPH_OP_HANDLERS = HANDLERS  # torch_npu's name (torch_npu/npu/_npugraph_handlers/npugraph_handler.py)


# ---------------------------------------------------------------- task groups (torch.npu.graph_task_*)
class NPUTaskGroupHandle:
    """A task group of a capture (torch_npu's `_NPUTaskGroupHandle`); `task_group` is the group."""

    def __init__(self, task_group):
        self.task_group = task_group

    def __repr__(self) -> str:
        return f"<torch.npu task group handle {self.task_group!r}>"


def _stream(stream):
    return _current_runtime_stream(torch.npu.current_device()) if stream is None else runtime_stream(stream)


def graph_task_group_begin(stream) -> None:
    """The work enqueued on the capturing `stream` until graph_task_group_end is one group."""
    _edit.capture_task_group_begin(_stream(stream))


def graph_task_group_end(stream) -> NPUTaskGroupHandle:
    return NPUTaskGroupHandle(_edit.capture_task_group_end(_stream(stream)))


def graph_task_update_begin(stream, handle: NPUTaskGroupHandle) -> None:
    """The work enqueued on `stream` until graph_task_update_end replaces the group's (same
    number and kinds of tasks), in `stream`'s order."""
    group = handle.task_group if isinstance(handle, NPUTaskGroupHandle) else handle
    _edit.capture_task_update_begin(_stream(stream), group)


def graph_task_update_end(stream) -> None:
    _edit.capture_task_update_end(_stream(stream))


# ---------------------------------------------------------------- handlers
def _is_npu_tensor(t) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == "npu"


def weak_ref_tensor(t: torch.Tensor) -> torch.Tensor:
    """A tensor viewing `t`'s memory that does not keep it alive (torch_npu's
    `_C._weak_ref_tensor`): the record must not own the graph's buffers."""
    storage = torch._C._construct_storage_from_data_pointer(t.untyped_storage().data_ptr(), t.device,
                                                            t.untyped_storage().nbytes())
    out = torch.empty(0, dtype=t.dtype, device=t.device)
    out.set_(storage, t.storage_offset(), t.size(), t.stride())
    return out


class NpuGraphOpHandler:
    """Base of op handlers: classmethod hooks, stateless (the registry holds the class)."""

    UPDATE_SPECS: dict = {}

    @classmethod
    def prepare_capture(cls, func, args, kwargs):
        """Before the op's task group: may swap `func` (e.g. to its .out overload) and its
        arguments. Returns (func, args, kwargs)."""
        return func, args, kwargs

    @classmethod
    def postprocess_result(cls, result, kwargs):
        """What the caller gets back, after the group has been recorded."""
        return result

    @classmethod
    def get_update_specs(cls, op_name: str) -> list:
        return cls.UPDATE_SPECS.get(op_name, [])

    @classmethod
    def update_args(cls, record: "GraphDispatchRecord", update_input: dict) -> None:
        """Write the payload's keys into the recorded argument slots the specs name."""
        for loc, where, key in cls.get_update_specs(record.op_cache_entry.__name__):
            if key not in update_input:
                continue
            if loc == "arg":
                if len(record.args) > where:
                    record.args[where] = update_input[key]
            elif loc == "kwarg":
                record.kwargs[where] = update_input[key]

    @classmethod
    def record_wrap_kwarg(cls, key: str, value, tensor_param_names: list):
        """How a keyword argument is kept in the record: npu tensors (alone, or in a list or
        tuple) by weak reference, anything else deep-copied."""
        if value is None:
            return None
        if isinstance(value, (list, tuple)):
            return type(value)(weak_ref_tensor(t) if _is_npu_tensor(t) else deepcopy(t) for t in value)
        if key in tensor_param_names and _is_npu_tensor(value):
            return weak_ref_tensor(value)
        return deepcopy(value)


def register_npu_graph_handler(op_names):
    """Class decorator: register the handler class under one op name or a list of them (a
    later registration of a name replaces the earlier one, with a warning)."""
    names = [op_names] if isinstance(op_names, str) else list(op_names)

    def decorate(cls):
        for name in names:
            if name in HANDLERS:
                log.warning("NpuGraphOpHandler for '%s' is being overridden: %s -> %s", name,
                            HANDLERS[name].__name__, cls.__name__)
            HANDLERS[name] = cls
        return cls
    return decorate


def _overloads(op: str) -> list:
    return [op, f"{op}.default", f"{op}.out"]


def _specs(ops: list, specs: list) -> dict:
    return {name: list(specs) for name in ops}


class _TensorListOutHandler(NpuGraphOpHandler):
    """Ops whose `out=` is a list of tensors: the caller gets that list."""

    @classmethod
    def postprocess_result(cls, result, kwargs):
        return kwargs["out"]


# torch_npu's built-in handlers (torch_npu/npu/_npugraph_handlers/ifa_handler.py, simple_handler.py,
# _fa3_graph_handler.py): which argument of each fused op an update replaces
_IFA = _overloads("npu_fused_infer_attention_score")
_IFA2 = _overloads("npu_fused_infer_attention_score_v2")
_FA3 = _overloads("npu_fusion_attention_v3")
_FA3_GRAD = _overloads("npu_fusion_attention_grad_v3")


@register_npu_graph_handler(_IFA)
class IFAv1Handler(_TensorListOutHandler):
    UPDATE_SPECS = _specs(_IFA, [("arg", 5, "actual_seq_lengths"), ("arg", 6, "actual_seq_lengths_kv")])


@register_npu_graph_handler(_IFA2)
class IFAv2Handler(_TensorListOutHandler):
    UPDATE_SPECS = _specs(_IFA2, [("arg", 7, "actual_seq_qlen"), ("arg", 8, "actual_seq_kvlen")])


class _BnsdBypass(_TensorListOutHandler):
    """FA v3: the BNSD layout takes no update (torch_npu's handler lets it through unrecorded)."""

    LAYOUT_ARG = 4

    @classmethod
    def should_handle(cls, func, args, kwargs) -> bool:
        layout = kwargs.get("input_layout") or (args[cls.LAYOUT_ARG] if len(args) > cls.LAYOUT_ARG else None)
        return layout != "BNSD"


@register_npu_graph_handler(_FA3)
class FA3ForwardHandler(_BnsdBypass):
    UPDATE_SPECS = _specs(_FA3, [("arg", 14, "actual_seq_qlen"), ("arg", 15, "actual_seq_kvlen")])


@register_npu_graph_handler(_FA3_GRAD)
class FA3BackwardHandler(_BnsdBypass):
    LAYOUT_ARG = 5
    UPDATE_SPECS = _specs(_FA3_GRAD, [("arg", 21, "actual_seq_qlen"), ("arg", 22, "actual_seq_kvlen")])


@register_npu_graph_handler(["_npu_paged_attention.default", "npu_multi_head_latent_attention.out"])
class PagedAttentionHandler(NpuGraphOpHandler):
    UPDATE_SPECS = {"_npu_paged_attention.default": [("arg", 7, "context_lens")],
                    "npu_multi_head_latent_attention.out": [("arg", 5, "context_lens")]}


# ---------------------------------------------------------------- capture and update
@dataclass
class GraphDispatchRecord:
    """One op call recorded during an auto_dispatch_capture capture."""
    event: Any = None
    handle: Any = None
    kwargs: dict = field(default_factory=dict)
    args: list = field(default_factory=list)
    op_cache_entry: Any = None


_TENSOR_PARAM = re.compile(r"Tensor(?:\(a!\)|\?)?\s+(\w+)")


class GraphDispatchMode(TorchDispatchMode):
    """Records the calls of ops with a handler during a capture, each in its own task group,
    and re-enqueues them with new arguments on update (torch_npu's `_GraphDispatchMode`)."""

    update_stream = None          # one for every graph, as torch_npu's class attribute
    tensor_schema_name: dict = {}  # op name -> names of its tensor parameters

    def __new__(cls):
        cls._live_update_stream()
        return super().__new__(cls)

    @classmethod
    def _live_update_stream(cls):
        # made again when a device reset or finalize destroyed the runtime stream behind it
        s = cls.update_stream
        if s is None or runtime_stream(s).destroyed:
            s = cls.update_stream = torch.npu.Stream()
        return s

    def __init__(self):
        super().__init__()
        self.graph_dispatch_records: list = []

    @classmethod
    def is_infra_mode(cls) -> bool:
        return True

    @classmethod
    def update_schema(cls, name: str, schema: str) -> None:
        cls.tensor_schema_name.setdefault(name, _TENSOR_PARAM.findall(schema))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = {} if kwargs is None else kwargs
        handler = HANDLERS.get(func.__name__)
        if handler is None or (hasattr(handler, "should_handle") and not handler.should_handle(func, args, kwargs)):
            return func(*args, **kwargs)
        stream = torch.npu.current_stream()
        event = torch.npu.ExternalEvent()
        event.wait(stream)     # each replay waits for the latest update of this op ...
        event.reset(stream)    # ... and consumes it
        func, args, kwargs = handler.prepare_capture(func, args, kwargs)
        self.update_schema(str(func.__name__), str(func._schema))
        graph_task_group_begin(stream)
        result = func(*args, **kwargs)
        handle = graph_task_group_end(stream)
        self.graph_dispatch_records.append(self._record(event, handle, args, kwargs, func, handler))
        return handler.postprocess_result(result, kwargs)

    def _record(self, event, handle, args, kwargs, func, handler) -> GraphDispatchRecord:
        kept = [weak_ref_tensor(a) if _is_npu_tensor(a) else deepcopy(a) for a in args]
        names = self.tensor_schema_name.get(str(func.__name__), [])
        kept_kwargs = {k: handler.record_wrap_kwarg(k, v, names) for k, v in kwargs.items()}
        return GraphDispatchRecord(event=event, handle=handle, kwargs=kept_kwargs, args=kept, op_cache_entry=func)

    def update_capture_record(self, cpu_update_input: list) -> None:
        """Re-enqueue every recorded call with its update payload (one payload serves all
        records when a single one is given)."""
        records = self.graph_dispatch_records
        if len(cpu_update_input) == 1:
            cpu_update_input = [dict(cpu_update_input[0]) for _ in records]
        if len(cpu_update_input) != len(records):
            raise RuntimeError(f"Currently, there are {len(records)} operators that need to be updated by "
                               f"capture, and there are only {len(cpu_update_input)} elements in the incoming "
                               "cpu_update_input list")
        update_stream = self._live_update_stream()
        with torch.npu.stream(update_stream):
            for record, payload in zip(records, cpu_update_input):
                graph_task_update_begin(update_stream, record.handle)
                for key in payload:
                    if key in record.kwargs:
                        record.kwargs[key] = payload[key]
                handler = HANDLERS.get(record.op_cache_entry.__name__)
                if handler is None:
                    raise RuntimeError(f"No handler for recorded op: {record.op_cache_entry.__name__}. This "
                                       "indicates the handler was unregistered between capture and update.")
                handler.update_args(record, payload)
                record.op_cache_entry(*record.args, **record.kwargs)
                graph_task_update_end(update_stream)
                record.event.record(update_stream)
