"""Built model runtime instances (aclmdlRIBuildBegin ... aclmdlRIBuildEnd) and the control flow
of their streams: stream activation, stream switches, labels.

A built model is the other way to make an aclmdlRI (beside capture, graph.py): the program
binds streams to it and enqueues work on them.

* `build_begin()` makes an empty model (a `graph.Graph`, so execute_async, execute,
  destroy_graph and abort_graph take it as they take a captured graph).
* `bind_stream(model, stream, flag)`: `stream` must have been created with
  ACL_STREAM_PERSISTENT (acl_rt.h's aclmdlRIBindStream documentation), bound to no other
  model. HEAD (ACL_MODEL_STREAM_FLAG_HEAD, 0) streams start when the model runs; DEFAULT
  (ACL_MODEL_STREAM_FLAG_DEFAULT, 0x7FFFFFFF) streams start only when a task activates them.
  From then on the work enqueued on the stream (copies, kernels, events, and the control tasks
  below) is appended to the stream's program in the model; nothing runs.
* `end_task(model, stream)`: the model's end (the runtime's end-graph task): a run completes
  when it reaches it; the other streams stop there.
* `build_end(model)`: the model is loaded: it can run; its streams take no more work.
* `unbind_stream(model, stream)`: the stream is an ordinary stream again; the model keeps the
  program it recorded.

Control tasks, on a bound stream (elsewhere ACL_ERROR_RT_STREAM_MODEL, 107005: the stream is not
bound to a model):

* `active_stream(target, stream)` (aclrtActiveStream): starts `target`, a stream of the same
  model, from its first task (again if it has finished; nothing if it is running).
* `switch_stream(left, cond, right, dtype, true_stream, stream)` (aclrtSwitchStream): compares
  the int32 or int64 words at device addresses `left` and `right` with ACL_RT_EQUAL ...
  ACL_RT_LESS_OR_EQUAL as it runs; when true it activates `true_stream`; the stream goes on
  either way. Argument checks as ApiErrorDecorator::StreamSwitchEx: NULL pointers, a condition
  outside 0..5 or a data type outside 0..1 are ACL_ERROR_RT_PARAM_INVALID (107000).
* Labels (aclrtCreateLabel, aclrtSetLabel, aclrtCreateLabelList, aclrtSwitchLabelByIndex):
  `set_label(label, stream)` marks the current end of the stream's program (once per label);
  `switch_label_by_index(ptr, max_value, labels, stream)` reads the uint32 at `ptr` as it runs
  and jumps to `labels[index]`, which must be set on the same stream (checked at build_end);
  an index >= max_value or beyond the list makes no jump (npurt's choice: the runtime's
  device-side behaviour for it is not in its sources). Labels belong to built models: a label
  on a capturing stream is refused (ApiErrorDecorator::LabelCreate: "ACL Graph mode is not
  supported").

A run (`execute_async(model, stream)`) is one task on `stream` that interprets the model (runs
of one model are ordered: a run launched on another stream waits for the previous one): the
HEAD streams in binding order, each activated stream after them, cooperatively: a stream runs
until its program ends, or until it waits for an event another stream of the model records
that has not been recorded yet in this run (it resumes once that record ran). A wait for an
event recorded outside the model waits for that record to complete. The run ends at the end
task; if no stream can go on before it, the run fails with ACL_ERROR_RT_MODEL_EXECUTE
(507011) naming the streams and what they wait for.
"""
from __future__ import annotations

import time
from collections import deque

import numpy as np

from . import address
from . import constants as C
from .errors import FeatureNotSupportedError, InvalidHandleError, NpuError, ParamInvalidError, TaskError
from .graph import CaptureError, Graph, JoinTask, _run_tasks, refuse_if_capturing
from .graph_edit import MODEL_TASKS, TASK_DEFAULT
from .handles import table
from .memory import note_uses
from .tasks import Task

STREAM_FLAG_HEAD, STREAM_FLAG_DEFAULT = 0x0, 0x7FFFFFFF   # ACL_MODEL_STREAM_FLAG_* (api_ref, aclmdlRIBindStream)
SWITCH_INT32, SWITCH_INT64 = 0, 1                          # aclrtCompareDataType
_COMPARE = {0: ("==", lambda a, b: a == b), 1: ("!=", lambda a, b: a != b), 2: (">", lambda a, b: a > b),
            3: (">=", lambda a, b: a >= b), 4: ("<", lambda a, b: a < b), 5: ("<=", lambda a, b: a <= b)}
LABELS = table("label")
LABEL_LISTS = table("label list")
_EXTERNAL_POLL_S = 0.001


class ModelStreamError(NpuError):
    """A control task on a stream no model binds (ACL_ERROR_RT_STREAM_MODEL)."""


class _Program:
    """What a bound stream recorded: its ops, in order."""

    def __init__(self, stream, head: bool):
        self.stream, self.head = stream, head
        self.ops: list = []

    def __repr__(self) -> str:
        return f"<program of stream {self.stream.stream_id}: {len(self.ops)} op(s)>"


class BuiltModel(Graph):
    """A model made by build_begin: a program per bound stream."""

    def __init__(self, device, context):
        super().__init__(device, context)
        self.programs: list[_Program] = []      # in binding order
        self.built = False
        self.recorded_inside: set = set()       # events some stream of the model records
        self.holders: list = []
        self.last_run = None                    # (stream, seq) of the latest run enqueued

    def __repr__(self) -> str:
        return (f"<npurt built model {self.handle:#x}: {len(self.programs)} stream(s), "
                f"{'built' if self.built else 'building'}>")

    def task_count(self) -> int:
        return sum(1 for p in self.programs for op in p.ops if op[0] == "task")

    def program_of(self, stream) -> _Program | None:
        for p in self.programs:
            if p.stream is stream:
                return p
        return None

    def as_json(self) -> dict:
        return {"graph": self.handle, "device": self.device.id, "built": self.built, "replays": self.replays,
                "streams": [{"stream": p.stream.stream_id, "head": p.head,
                             "ops": [_op_text(op) for op in p.ops]} for p in self.programs]}

    def describe(self) -> str:
        lines = [f"built model {self.handle:#x}: {len(self.programs)} stream(s)"]
        for p in self.programs:
            lines.append(f"  stream {p.stream.stream_id} ({'head' if p.head else 'activated'}):")
            lines.extend(f"    #{i} {_op_text(op)}" for i, op in enumerate(p.ops))
        return "\n".join(lines)

    def release(self) -> None:
        for p in self.programs:
            if isinstance(p.stream.capture, _Binding) and p.stream.capture.model is self:
                p.stream.capture = None

    def enqueue_replay(self, stream) -> int:
        if not self.built:
            raise ParamInvalidError(f"model {self.handle:#x} is still being built: call build_end "
                                    "(aclmdlRIBuildEnd) before running it")
        with self.lock:
            self.aborted = False
            last = self.last_run
            if last is not None and last[0] is not stream and last[0].completed_seq < last[1]:
                stream.enqueue(JoinTask(*last))  # runs of one model are ordered, whatever the stream
            seq = stream.enqueue(ModelRunTask(self), holders=tuple(self.holders))
            self.last_run = (stream, seq)
            self.replays += 1
        return seq


def _op_text(op) -> str:
    kind = op[0]
    if kind == "task":
        return op[1].describe()
    if kind in ("record", "wait", "reset"):
        return f"{kind} event {op[1].event_id}"
    if kind == "active":
        return f"activate stream {op[1].stream_id}"
    if kind == "switch":
        _, left, cond, right, dtype, target = op
        return (f"activate stream {target.stream_id} if the {'int64' if dtype else 'int32'} at 0x{left:x} "
                f"{_COMPARE[cond][0]} the one at 0x{right:x}")
    if kind == "label":
        return f"label {op[1].handle:#x}"
    if kind == "goto":
        return f"jump to label [uint32 at 0x{op[1]:x}] of {len(op[3].labels)} (max {op[2]})"
    return "end of the model"


class _Binding:
    """The recorder of a bound stream (Stream.capture): work enqueued on it joins its program.
    A copy from pageable host memory is recorded too: it reads that memory when the model runs
    (memops.memcpy_async asks `reads_host_at_run`)."""

    reads_host_at_run = True

    def __init__(self, model: BuiltModel, program: _Program):
        self.model, self.program = model, program
        self.origin = program.stream
        self.invalid = None
        self.where = f"(the stream is bound to built model {model.handle:#x})\n"

    def _ops(self) -> list:
        if self.model.built:
            raise ParamInvalidError(f"stream {self.origin.stream_id} belongs to model {self.model.handle:#x}, "
                                    "which is built (build_end): it takes no more work; unbind it first")
        return self.program.ops

    def take(self, stream, task: Task, on_seq, holders) -> int:
        ops = self._ops()
        event = getattr(task, "event", None)
        if task.kind == "record_event":
            ops.append(("record", event))
            self.model.recorded_inside.add(event)
        elif task.kind == "reset_event":
            ops.append(("reset", event))
        else:
            held = tuple(h for h in holders if h is not None)
            if held:
                note_uses(held, self.model.hold, 1)
                self.model.holders.extend(held)
            ops.append(("task", task))
        return stream.enqueued_seq

    def wait(self, stream, event) -> int:
        self._ops().append(("wait", event))
        return stream.enqueued_seq

    def refuse_wait(self, stream) -> None:
        refuse_if_capturing(stream, "waiting for the stream (it is bound to a model: its work runs when the "
                                    "model runs)")

    def invalidate(self, why: str) -> None:
        self.invalid = self.invalid or why


# ---------------------------------------------------------------- building
def build_begin(device, context, flag: int = 0) -> BuiltModel:
    if flag != 0:
        raise ParamInvalidError(f"build_begin: flag {flag!r} is reserved and must be 0")
    return BuiltModel(device, context)


def _model(model) -> BuiltModel:
    if type(model) is not BuiltModel:
        raise ParamInvalidError(f"{model!r} is not a model made by build_begin (aclmdlRIBuildBegin)")
    if model.destroyed:
        raise InvalidHandleError(f"model {model.handle:#x} was destroyed")
    return model


def bind_stream(model: BuiltModel, stream, flag: int = STREAM_FLAG_HEAD) -> None:
    model = _model(model)
    if flag not in (STREAM_FLAG_HEAD, STREAM_FLAG_DEFAULT):
        raise ParamInvalidError(f"bind_stream: flag {flag:#x} is neither ACL_MODEL_STREAM_FLAG_HEAD (0) nor "
                                "ACL_MODEL_STREAM_FLAG_DEFAULT (0x7FFFFFFF)")
    if stream is None or stream.is_default:
        raise ParamInvalidError("bind_stream: the default stream cannot be bound to a model")
    if stream.destroyed:
        raise InvalidHandleError(f"stream {stream.stream_id} was destroyed")
    if not stream.flags & C.ACL_STREAM_PERSISTENT:
        raise ParamInvalidError(f"bind_stream: stream {stream.stream_id} was not created with ACL_STREAM_PERSISTENT "
                                "(aclrtCreateStreamWithConfig(&s, 0, ACL_STREAM_PERSISTENT)), as a model's stream "
                                "must be")
    if isinstance(stream.capture, _Binding):
        raise ParamInvalidError(f"bind_stream: stream {stream.stream_id} is already bound to model "
                                f"{stream.capture.model.handle:#x}")
    if stream.capture is not None:
        raise CaptureError(f"bind_stream: stream {stream.stream_id} is being captured",
                           C.ACL_ERROR_RT_STREAM_CAPTURED)
    if model.built:
        raise ParamInvalidError(f"bind_stream: model {model.handle:#x} is built already")
    if stream.device is not model.device:
        raise ParamInvalidError(f"bind_stream: stream {stream.stream_id} is on device {stream.device.id}, the "
                                f"model on device {model.device.id}")
    program = model.program_of(stream)
    if program is None:
        program = _Program(stream, flag == STREAM_FLAG_HEAD)
        model.programs.append(program)
    stream.capture = _Binding(model, program)
    stream.device.touch(stream)  # a bound stream is not drained (Device.drained)


def unbind_stream(model: BuiltModel, stream) -> None:
    model = _model(model)
    binding = stream.capture if stream is not None else None
    if not isinstance(binding, _Binding) or binding.model is not model:
        raise ModelStreamError(f"unbind_stream: stream {getattr(stream, 'stream_id', None)} is not bound to model "
                               f"{model.handle:#x}", C.ACL_ERROR_RT_STREAM_MODEL)
    stream.capture = None


def _binding(stream, what: str) -> _Binding:
    binding = stream.capture if stream is not None else None
    if isinstance(binding, _Binding):
        return binding
    if binding is not None:
        raise ParamInvalidError(f"{what}: stream {stream.stream_id} is being captured; {what} belongs to models "
                                "built with aclmdlRIBuildBegin (ACL Graph mode is not supported)")
    sid = "the default stream" if stream is None or stream.is_default else f"stream {stream.stream_id}"
    raise ModelStreamError(f"{what}: {sid} is not bound to a model (aclmdlRIBindStream)",
                           C.ACL_ERROR_RT_STREAM_MODEL)


def end_task(model: BuiltModel, stream) -> None:
    model = _model(model)
    binding = _binding(stream, "end_task")
    if binding.model is not model:
        raise ModelStreamError(f"end_task: stream {stream.stream_id} is bound to model {binding.model.handle:#x}, "
                               f"not {model.handle:#x}", C.ACL_ERROR_RT_STREAM_MODEL)
    binding._ops().append(("end",))


def build_end(model: BuiltModel) -> None:
    model = _model(model)
    if model.built:
        raise ParamInvalidError(f"build_end: model {model.handle:#x} is built already")
    if not any(p.head for p in model.programs):
        raise ParamInvalidError(f"build_end: model {model.handle:#x} has no head stream "
                                "(bind_stream(..., ACL_MODEL_STREAM_FLAG_HEAD)): nothing would start it")
    if not any(op[0] == "end" for p in model.programs for op in p.ops):
        raise ParamInvalidError(f"build_end: model {model.handle:#x} has no end task (end_task / "
                                "aclmdlRIEndTask): a run would never complete")
    for p in model.programs:
        for op in p.ops:
            if op[0] != "goto":
                continue
            for label in op[3].labels:
                if label.destroyed or label.program is not p:
                    where = ("is not set" if label.program is None else
                             f"is set on stream {label.program.stream.stream_id}")
                    raise ParamInvalidError(f"build_end: label {label.handle:#x} of a switch on stream "
                                            f"{p.stream.stream_id} {where}: a label switch jumps within its "
                                            "own stream")
    model.built = True


# ---------------------------------------------------------------- control tasks
def active_stream(target, stream) -> None:
    binding = _binding(stream, "active_stream")
    tb = target.capture if target is not None else None
    if not isinstance(tb, _Binding) or tb.model is not binding.model:
        raise ModelStreamError(f"active_stream: the stream to activate ({getattr(target, 'stream_id', None)}) is not "
                               f"bound to model {binding.model.handle:#x}, as the activating stream is",
                               C.ACL_ERROR_RT_STREAM_MODEL)
    binding._ops().append(("active", target))


def _device_word(model: BuiltModel, addr, nbytes: int, what: str) -> int:
    if type(addr) is not int or addr == 0:
        raise ParamInvalidError(f"{what} is NULL")
    span = address.locate(model.device.runtime, addr, nbytes, "value")
    if span.device is None:
        raise ParamInvalidError(f"{what} 0x{addr:x} is host memory; it must be device memory")
    model.holders.append(span.block)
    return addr


def switch_stream(left, cond: int, right, dtype: int, true_stream, stream) -> None:
    if not left or not right:
        raise ParamInvalidError("switch_stream: leftValue and rightValue must not be NULL")
    if true_stream is None:
        raise ParamInvalidError("switch_stream: trueStream must not be NULL")
    if type(cond) is not int or cond not in _COMPARE:
        raise ParamInvalidError(f"switch_stream: condition {cond!r} is outside ACL_RT_EQUAL (0) .. "
                                "ACL_RT_LESS_OR_EQUAL (5)")
    if dtype not in (SWITCH_INT32, SWITCH_INT64):
        raise ParamInvalidError(f"switch_stream: dataType {dtype!r} is neither ACL_RT_SWITCH_INT32 (0) nor "
                                "ACL_RT_SWITCH_INT64 (1)")
    binding = _binding(stream, "switch_stream")
    tb = true_stream.capture
    if not isinstance(tb, _Binding) or tb.model is not binding.model:
        raise ModelStreamError(f"switch_stream: trueStream {true_stream.stream_id} is not bound to model "
                               f"{binding.model.handle:#x}", C.ACL_ERROR_RT_STREAM_MODEL)
    size = 8 if dtype == SWITCH_INT64 else 4
    model = binding.model
    binding._ops().append(("switch", _device_word(model, left, size, "switch_stream: leftValue"), cond,
                           _device_word(model, right, size, "switch_stream: rightValue"), dtype, true_stream))


class Label:
    """A position in a bound stream's program (aclrtLabel)."""

    def __init__(self):
        self.program = None
        self.index = 0
        self.destroyed = False
        self.handle = LABELS.add(self)

    def __repr__(self) -> str:
        where = "not set" if self.program is None else f"set on stream {self.program.stream.stream_id} at #{self.index}"
        return f"<npurt label {self.handle:#x}: {where}>"


class LabelList:
    def __init__(self, labels: tuple):
        self.labels = labels
        self.handle = LABEL_LISTS.add(self)


def create_label() -> Label:
    return Label()


def label_of(handle) -> Label:
    label = handle if type(handle) is Label else LABELS.get(handle)
    if label.destroyed:
        raise InvalidHandleError(f"label {label.handle:#x} was destroyed")
    return label


def destroy_label(label: Label) -> None:
    label = label_of(label)
    label.destroyed = True
    LABELS.remove(label.handle)


def set_label(label: Label, stream) -> None:
    label = label_of(label)
    binding = _binding(stream, "set_label")
    if label.program is not None:
        raise ParamInvalidError(f"set_label: label {label.handle:#x} is set already (on stream "
                                f"{label.program.stream.stream_id}); a label marks one position")
    ops = binding._ops()
    label.program, label.index = binding.program, len(ops)
    ops.append(("label", label))


def create_label_list(labels) -> LabelList:
    items = tuple(label_of(x) for x in labels)
    if not items:
        raise ParamInvalidError("create_label_list: the list needs at least one label")
    return LabelList(items)


def label_list_of(handle) -> LabelList:
    return handle if type(handle) is LabelList else LABEL_LISTS.get(handle)


def destroy_label_list(label_list: LabelList) -> None:
    LABEL_LISTS.remove(label_list_of(label_list).handle)


def switch_label_by_index(ptr, max_value: int, label_list: LabelList, stream) -> None:
    if not ptr:
        raise ParamInvalidError("switch_label_by_index: ptr is NULL")
    if label_list is None:
        raise ParamInvalidError("switch_label_by_index: labelList is NULL")
    label_list = label_list_of(label_list)
    if type(max_value) is not int or max_value < 0:
        raise ParamInvalidError(f"switch_label_by_index: maxValue {max_value!r} is not a uint32")
    binding = _binding(stream, "switch_label_by_index")
    binding._ops().append(("goto", _device_word(binding.model, ptr, 4, "switch_label_by_index: ptr"), max_value,
                           label_list))


# ---------------------------------------------------------------- running
def _word(addr: int, dtype: int) -> int:
    return int(address.view(addr, 8 if dtype == SWITCH_INT64 else 4).view(
        np.int64 if dtype == SWITCH_INT64 else np.int32)[0])


def _wait_external(event, model: BuiltModel) -> None:
    """A wait inside a run for an event recorded outside the model: its latest record."""
    while True:
        rec = event.record
        if rec is None or rec.ran or event.destroyed:
            return
        if model.aborted:
            raise TaskError(f"model {model.handle:#x} was aborted", C.ACL_ERROR_RT_MODEL_ABORT_NORMAL)
        time.sleep(_EXTERNAL_POLL_S)


def run_model(model: BuiltModel, runner: Task) -> None:
    """One run of a built model (see the module docstring), inside the task `runner`."""
    pcs: dict = {}
    ready: deque = deque()
    waiting: dict = {}      # event -> programs parked until a stream of the model records it
    recorded: set = set()

    def activate(program) -> None:
        if program in ready or any(program in w for w in waiting.values()):
            return  # running already
        pcs[program] = 0
        ready.append(program)

    for p in model.programs:
        if p.head:
            activate(p)
    by_stream = {p.stream: p for p in model.programs}
    while ready:
        p = ready.popleft()
        ops, pc = p.ops, pcs[p]
        while pc < len(ops):
            if model.aborted:
                raise TaskError(f"model {model.handle:#x} was aborted", C.ACL_ERROR_RT_MODEL_ABORT_NORMAL)
            op = ops[pc]
            pc += 1
            kind = op[0]
            if kind == "task":
                _run_tasks((op[1],), runner)
            elif kind == "record":
                recorded.add(op[1])
                ready.extend(waiting.pop(op[1], ()))
            elif kind == "wait":
                event = op[1]
                if event in model.recorded_inside:
                    if event not in recorded:
                        pc -= 1
                        waiting.setdefault(event, []).append(p)
                        break
                else:
                    _wait_external(event, model)
            elif kind == "reset":
                recorded.discard(op[1])
            elif kind == "active":
                activate(by_stream[op[1]])
            elif kind == "switch":
                _, left, cond, right, dtype, target = op
                if _COMPARE[cond][1](_word(left, dtype), _word(right, dtype)):
                    activate(by_stream[target])
            elif kind == "goto":
                _, ptr, max_value, label_list = op
                index = _word(ptr, SWITCH_INT32) & 0xFFFFFFFF
                if index < max_value and index < len(label_list.labels):
                    pc = label_list.labels[index].index
            elif kind == "end":
                return
        pcs[p] = pc
    stuck = [f"stream {p.stream.stream_id} waits for event {ev.event_id}" for ev, ps in waiting.items() for p in ps]
    raise TaskError(f"model {model.handle:#x} stopped before its end task: "
                    + ("; ".join(stuck) if stuck else "every activated stream finished without reaching it"),
                    C.ACL_ERROR_RT_MODEL_EXECUTE)


class ModelRunTask(Task):
    """One run of a built model, on the stream it was launched on."""

    __slots__ = ("model",)
    kind = "model_run"

    def __init__(self, model: BuiltModel):
        self.model = model

    def run(self) -> None:
        run_model(self.model, self)

    def accesses(self) -> tuple:
        return tuple(a for p in self.model.programs for op in p.ops if op[0] == "task" for a in op[1].accesses())

    def describe(self) -> str:
        return f"run of built model {self.model.handle:#x}"

    def details(self) -> dict:
        return {"name": "model run", "tasks": self.model.task_count()}


# ---------------------------------------------------------------- queries
_OP_TYPES = {"record": 2, "wait": 3, "reset": 4}       # aclmdlRITaskType of the event ops
_KIND_TYPES = {"kernel": 1, "value_write": 5, "value_wait": 6}


class BuiltTask:
    """A task of a built model's stream (aclmdlRITask): its type can be asked; its sequence id
    and parameters cannot (ApiImpl::TaskGetSeqId: "Non ACL Graph mode is not supported")."""

    def __init__(self, model: BuiltModel, op):
        self.graph, self.op = model, op
        self.handle = MODEL_TASKS.add(self)

    def release(self) -> None:
        MODEL_TASKS.remove(self.handle)

    def task_type(self) -> int:
        kind = self.op[0]
        if kind == "task":
            return _KIND_TYPES.get(self.op[1].kind, TASK_DEFAULT)
        return _OP_TYPES.get(kind, TASK_DEFAULT)


def bound_model(stream) -> BuiltModel | None:
    """The model `stream` is bound to, or None."""
    binding = stream.capture if stream is not None else None
    return binding.model if isinstance(binding, _Binding) else None


def model_streams(model: BuiltModel) -> list:
    """aclmdlRIGetStreams of a built model: its bound streams, in binding order."""
    return [p.stream for p in _model(model).programs]


def tasks_of_stream(stream) -> list:
    binding = _binding(stream, "get_tasks_by_stream")
    cache = binding.model.model_tasks
    out = []
    for i, op in enumerate(binding.program.ops):
        key = (id(binding.program), i)
        task = cache.get(key)
        if task is None:
            task = cache[key] = BuiltTask(binding.model, op)
        out.append(task)
    return out


def not_for_built(what: str) -> FeatureNotSupportedError:
    return FeatureNotSupportedError(f"{what}: supported for captured graphs only (Non ACL Graph mode is not "
                                    "supported)")
