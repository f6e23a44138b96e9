"""Editing captured graphs (graph.py): task groups and their updates, per-task queries and
parameters.

* Task groups (aclmdlRICaptureTaskGrpBegin/End): `capture_task_group_begin(s)` ...
  `capture_task_group_end(s)` during a capture makes the tasks between them one group; a
  replay runs the tasks the group holds when it runs. `capture_task_update_begin(upd, group)`,
  the new tasks enqueued on `upd`, `capture_task_update_end(upd)` replace them: the update is a
  task of `upd` (stream order), and must keep the number and kinds of the tasks (else
  ACL_ERROR_RT_PARAM_INVALID, the group unchanged). Group and update calls on a stream that
  is not capturing / not updating: ACL_ERROR_RT_STREAM_NOT_CAPTURED (107029).
* Per-task queries (aclmdlRIGetStreams, GetTasksByStream, TaskGetType, TaskGetSeqId,
  TaskGetParams/SetParams, TaskDisable, aclmdlRIUpdate, KernelTaskGetAttribute): a graph's
  streams are one per lane (lane 0: the stream `execute` uses); its tasks are its nodes in
  capture order (`ModelTask`). Parameters set and disables wait until `update_graph` applies
  them to the replays after it. A body of a conditional task cannot be queried
  (RT_ERROR_FEATURE_NOT_SUPPORT, as ApiImpl::StreamGetTasks / TaskGetType).
"""
from __future__ import annotations

import copy
import traceback

from . import address
from . import constants as C
from .errors import FeatureNotSupportedError, InvalidHandleError, ParamInvalidError
from .graph import (GRAPHS, CaptureError, Graph, _capture_of, _check_aborted, _node_text, _plan, _run_tasks,
                    graph_of, refuse_if_capturing)
from .handles import table
from .memory import note_uses
from .runtime import RUNTIME
from .tasks import NopTask, Task

GROUPS = table("task group")


# ---------------------------------------------------------------- task groups and updates
class TaskGroup:
    """Tasks of a capture that can be replaced after it (capture_task_group_begin/end, then
    capture_task_update_begin/end): a replay runs the tasks the group holds when it runs."""

    def __init__(self, graph: Graph, lane: int):
        self.graph, self.lane = graph, lane
        self.tasks: list = []
        self.holders: list = []
        self.handle = GROUPS.add(self)
        graph.groups_made.append(self)

    def __repr__(self) -> str:
        return f"<npurt task group {self.handle:#x} of graph {self.graph.handle:#x}: {len(self.tasks)} task(s)>"

    def replay_task(self, graph: Graph) -> Task:
        return GroupTask(self, graph)

    def replay_holders(self) -> tuple:
        return tuple(self.holders)

    def release(self) -> None:
        GROUPS.remove(self.handle)


def group_of(handle) -> TaskGroup:
    group = handle if type(handle) is TaskGroup else GROUPS.get(handle)
    if group.graph.destroyed:
        raise InvalidHandleError(f"task group {group.handle:#x}: its graph {group.graph.handle:#x} was destroyed")
    return group



def capture_task_group_begin(stream) -> None:
    """aclmdlRICaptureTaskGrpBegin: the tasks captured on `stream` from now to the group's end
    form one group, updatable after the capture."""
    cap = _capture_of(stream, "capture_task_group_begin")
    lane = cap.lanes[stream]
    if lane in cap.groups:
        raise CaptureError(f"capture_task_group_begin: a task group is already open on stream "
                           f"{stream.stream_id}", C.ACL_ERROR_RT_PARAM_INVALID)
    group = TaskGroup(cap.graph, lane)
    cap.groups[lane] = group
    cap._add(lane, "group", group)


def capture_task_group_end(stream) -> TaskGroup:
    """aclmdlRICaptureTaskGrpEnd: close the group open on `stream`; returns it."""
    cap = _capture_of(stream, "capture_task_group_end")
    group = cap.groups.pop(cap.lanes[stream], None)
    if group is None:
        raise CaptureError(f"capture_task_group_end: no task group is open on stream {stream.stream_id} "
                           "(capture_task_group_begin)", C.ACL_ERROR_RT_PARAM_INVALID)
    return group


class _Updating:
    """The recorder of a stream between capture_task_update_begin and _end: the tasks enqueued
    on it are the group's new tasks (nothing runs)."""

    def __init__(self, stream, group: TaskGroup):
        self.origin, self.group = stream, group
        self.tasks: list = []
        self.holders: list = []
        self.invalid = None
        self.where = "".join(traceback.format_stack(limit=8)[:-3])

    def take(self, stream, task, on_seq, holders) -> int:
        if task.kind in ("record_event", "reset_event"):
            raise CaptureError(f"{task.kind} during a task update: the update holds only the group's new "
                               "tasks", C.ACL_ERROR_RT_PARAM_INVALID)
        held = tuple(h for h in holders if h is not None)
        if held:  # held from now on: a temporary freed in the update block stays the graph's
            note_uses(held, self.group.graph.hold, 1)
        self.tasks.append(task)
        self.holders.extend(held)
        return stream.enqueued_seq

    def wait(self, stream, event):
        raise CaptureError("stream_wait_event during a task update: the update holds only the group's new "
                           "tasks", C.ACL_ERROR_RT_PARAM_INVALID)

    def refuse_wait(self, stream) -> None:
        refuse_if_capturing(stream, "waiting for the stream (it is recording a task update)")

    def invalidate(self, why: str) -> None:
        self.invalid = self.invalid or why


def capture_task_update_begin(stream, group: TaskGroup) -> None:
    """aclmdlRICaptureTaskUpdateBegin: the tasks enqueued on `stream` until update_end replace
    the group's (same number, same kinds, in order)."""
    group = group_of(group)
    if stream.capture is not None:
        raise CaptureError(f"capture_task_update_begin: stream {stream.stream_id} is being captured or "
                           "updating already", C.ACL_ERROR_RT_STREAM_CAPTURED)
    if stream.device is not group.graph.device:
        raise ParamInvalidError(f"capture_task_update_begin: the group's graph is on device "
                                f"{group.graph.device.id}, stream {stream.stream_id} on {stream.device.id}")
    stream.capture = _Updating(stream, group)
    stream.device.touch(stream)  # a capturing stream is not drained (Device.drained)


def capture_task_update_cancel(stream) -> None:
    """Leave update mode without updating (the group keeps its tasks)."""
    if type(stream.capture) is not _Updating:
        raise CaptureError(f"stream {stream.stream_id} is not updating a task group",
                           C.ACL_ERROR_RT_STREAM_NOT_CAPTURED)
    stream.capture = None


class ApplyUpdateTask(Task):
    """The update itself, in the update stream's order: replays that run after it run the new
    tasks (order them with an event, as the runtime's samples do)."""

    __slots__ = ("group", "tasks")
    kind = "graph_task_update"

    def __init__(self, group: TaskGroup, tasks: list):
        self.group, self.tasks = group, tasks

    def run(self) -> None:
        self.group.tasks = self.tasks

    def describe(self) -> str:
        return f"update of task group {self.group.handle:#x} ({len(self.tasks)} task(s))"


def capture_task_update_end(stream) -> int:
    """aclmdlRICaptureTaskUpdateEnd: check the new tasks against the group's and queue the
    update on `stream`; a mismatch leaves the group as it was (ACL_ERROR_RT_PARAM_INVALID)."""
    upd = stream.capture
    if type(upd) is not _Updating:
        raise CaptureError(f"capture_task_update_end: stream {stream.stream_id} is not updating a task group "
                           "(capture_task_update_begin)", C.ACL_ERROR_RT_STREAM_NOT_CAPTURED)
    stream.capture = None
    group = upd.group
    if upd.invalid is not None:
        raise CaptureError(f"the task update on stream {stream.stream_id} is invalid: {upd.invalid}",
                           C.ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED)
    old = [t.kind for t in group.tasks]
    new = [t.kind for t in upd.tasks]
    if old != new:
        raise ParamInvalidError(f"capture_task_update_end: task group {group.handle:#x} holds {len(old)} task(s) "
                                f"({', '.join(old) or 'none'}); the update gave {len(new)} "
                                f"({', '.join(new) or 'none'}): an update keeps the number and kinds of tasks")
    held = tuple(upd.holders)
    group.holders.extend(held)
    return stream.enqueue(ApplyUpdateTask(group, upd.tasks), holders=held)


class GroupTask(Task):
    """A replayed task group: runs the tasks the group holds as it runs."""

    __slots__ = ("group", "graph")
    kind = "graph_task_group"

    def __init__(self, group: TaskGroup, graph: Graph):
        self.group, self.graph = group, graph

    def run(self) -> None:
        _check_aborted(self.graph)
        _run_tasks(self.group.tasks, self)

    def accesses(self) -> tuple:
        return tuple(a for t in self.group.tasks for a in t.accesses())

    def describe(self) -> str:
        return f"task group {self.group.handle:#x} ({len(self.group.tasks)} task(s))"

    def details(self) -> dict:
        return {"name": "graph task group", "tasks": len(self.group.tasks)}


# ---------------------------------------------------------------- per-task queries and parameters
TASK_DEFAULT, TASK_KERNEL, TASK_EVENT_RECORD, TASK_EVENT_WAIT, TASK_EVENT_RESET, TASK_VALUE_WRITE, \
    TASK_VALUE_WAIT = range(7)   # aclmdlRITaskType
MODEL_TASKS = table("model ri task")
_NODE_TYPES = {"record": TASK_EVENT_RECORD, "extrecord": TASK_EVENT_RECORD, "join": TASK_EVENT_WAIT,
               "extwait": TASK_EVENT_WAIT, "reset": TASK_EVENT_RESET}
_TASK_TYPES = {"kernel": TASK_KERNEL, "value_write": TASK_VALUE_WRITE, "value_wait": TASK_VALUE_WAIT}


class ModelTask:
    """A task of a captured graph as aclmdlRIGetTasksByStream hands it out (aclmdlRITask):
    the node at `index` of the graph's capture order, on lane `lane`. Parameters set on it
    (set_task_params, disable_task) wait in `pending` until update_graph applies them."""

    def __init__(self, graph: Graph, lane: int, index: int):
        self.graph, self.lane, self.index = graph, lane, index
        self.handle = MODEL_TASKS.add(self)

    def release(self) -> None:
        MODEL_TASKS.remove(self.handle)

    def node(self):
        return self.graph.nodes[self.index]

    def task_type(self) -> int:
        _lane, kind, payload = self.node()
        if kind == "task":
            return _TASK_TYPES.get(payload[0].kind, TASK_DEFAULT)
        return _NODE_TYPES.get(kind, TASK_DEFAULT)


def _live_graph(graph: Graph) -> Graph:
    graph = graph_of(graph)
    if graph.parent is not None:  # ApiImpl: "stream belongs to sub ACL Graph, does not support ..."
        raise FeatureNotSupportedError(f"graph {graph.handle:#x} is a body of a conditional task: its streams and "
                                       "tasks cannot be queried (as in the runtime)")
    return graph


def graph_streams(graph: Graph) -> list:
    """aclmdlRIGetStreams of a captured graph: one stream per lane (lane 0: the stream
    aclmdlRIExecute runs it on, made now if needed; then the joined lanes' streams)."""
    graph = _live_graph(graph)
    with graph.lock:
        if graph.exec_stream is None:
            graph.exec_stream = graph.device.new_stream(graph.context)
            graph.exec_stream.held_by = graph.handle
    return [graph.exec_stream, *graph.lane_streams]


def tasks_of_stream(stream) -> list:
    """aclmdlRIGetTasksByStream for a stream of a captured graph: its tasks in capture order
    (task groups and conditional tasks count as one task each, of type DEFAULT)."""
    graph = GRAPHS.get(stream.held_by) if stream.held_by is not None else None
    if graph is None:
        raise ParamInvalidError(f"stream {stream.stream_id} is not a stream of a model (aclmdlRIGetStreams gives "
                                "them)")
    graph = _live_graph(graph)
    lane = 0 if stream is graph.exec_stream else graph.lane_streams.index(stream) + 1
    cache = graph.model_tasks
    out = []
    for i, (node_lane, kind, _payload) in enumerate(graph.nodes):
        if node_lane != lane:
            continue
        task = cache.get(i)
        if task is None:
            task = cache[i] = ModelTask(graph, lane, i)
        out.append(task)
    return out


def model_task_of(handle) -> ModelTask:
    task = handle if type(handle) is ModelTask else MODEL_TASKS.get(handle)
    if task.graph.destroyed:
        raise InvalidHandleError(f"task {task.handle:#x}: its graph {task.graph.handle:#x} was destroyed")
    return task


def task_params(task: ModelTask) -> dict:
    """aclmdlRITaskGetParams as plain data: {"type": ..., and the fields of its kind}."""
    task = model_task_of(task)
    _lane, kind, payload = task.node()
    ttype = task.task_type()
    out = {"type": ttype}
    if kind in ("extrecord", "extwait", "reset"):
        out.update(event=payload, external=kind != "reset")
    elif kind in ("record", "join"):
        out.update(event=None, external=False)
    elif ttype == TASK_VALUE_WRITE:
        out.update(addr=payload[0].addr, value=payload[0].value)
    elif ttype == TASK_VALUE_WAIT:
        out.update(addr=payload[0].addr, value=payload[0].value, flag=payload[0].flag)
    elif ttype == TASK_KERNEL:
        k = payload[0]
        # a task group counts as one task of type DEFAULT: a kernel task is in none (taskGrp NULL)
        out.update(func=k.func, num_blocks=k.num_blocks, args=k.args_ptr, args_size=k.func.args_size,
                   op_info=task.graph.op_info.get(task.index))
    return out


def set_task_params(task: ModelTask, **params) -> None:
    """aclmdlRITaskSetParams: new parameters for a task of the same type (applied by
    update_graph). Value writes and waits: addr, value (and flag); external event tasks: event;
    kernels: num_blocks. Anything else: 107000 with what can be set."""
    task = model_task_of(task)
    _lane, kind, payload = task.node()
    ttype = task.task_type()
    if params.get("type", ttype) != ttype:
        raise ParamInvalidError(f"set_task_params: task {task.handle:#x} is of type {ttype}; the parameters are of "
                                f"type {params['type']} (a task keeps its type)")
    params.pop("type", None)
    if ttype == TASK_KERNEL and set(params) - {"num_blocks"}:
        raise ParamInvalidError("set_task_params: a kernel task's parameters are set with set_kernel_task_params "
                                "(kernel/operations.py)")
    if ttype not in (TASK_VALUE_WRITE, TASK_VALUE_WAIT, TASK_KERNEL):  # ApiImpl::TaskSetParams
        raise ParamInvalidError(f"set_task_params: task {task.handle:#x} ({_node_text(kind, payload)}) is of type "
                                f"{ttype}; only kernel (1), value write (5) and value wait (6) tasks take parameters")
    allowed = {TASK_VALUE_WRITE: {"addr", "value"}, TASK_VALUE_WAIT: {"addr", "value", "flag"},
               TASK_KERNEL: {"num_blocks"}}[ttype]
    bad = set(params) - allowed
    if bad or not params:
        raise ParamInvalidError(f"set_task_params: for this task ({_node_text(kind, payload)}) npurt can set "
                                f"{', '.join(sorted(allowed)) or 'nothing'}; got {', '.join(sorted(params)) or 'none'}")
    if "num_blocks" in params and (type(params["num_blocks"]) is not int or params["num_blocks"] < 1):
        raise ParamInvalidError(f"set_task_params: numBlocks {params['num_blocks']!r} must be a positive int")
    task.graph.pending_updates[task.index] = ("set", params)



def disable_task(task: ModelTask) -> None:
    """aclmdlRITaskDisable: after update_graph the task does nothing at replay (ApiImpl::
    ModelTaskDisable refuses a task of type DEFAULT)."""
    task = model_task_of(task)
    if task.task_type() == TASK_DEFAULT:
        raise ParamInvalidError(f"disable_task: task {task.handle:#x} is of type DEFAULT, which cannot be disabled")
    task.graph.pending_updates[task.index] = ("disable", None)


def update_graph(graph: Graph) -> None:
    """aclmdlRIUpdate: apply the parameters set and the disables since the last update; replays
    enqueued after it use them."""
    graph = _live_graph(graph)
    with graph.lock:
        pending, graph.pending_updates = graph.pending_updates, {}
        for index, (what, params) in sorted(pending.items()):
            lane, kind, payload = graph.nodes[index]
            if what == "disable":
                graph.nodes[index] = (lane, "task", (NopTask(), ()))
            elif what == "kernel":
                new, held, op_info = params
                note_uses(held, graph.hold, 1)
                graph.nodes[index] = (lane, "task", (new, held))
                if op_info is None:
                    graph.op_info.pop(index, None)
                else:
                    graph.op_info[index] = op_info
            elif kind in ("extrecord", "extwait", "reset"):
                graph.nodes[index] = (lane, kind, params["event"])
            else:
                new = copy.copy(payload[0])
                held = list(payload[1])
                for name, value in params.items():
                    setattr(new, "num_blocks" if name == "num_blocks" else name, value)
                if "addr" in params:
                    span = address.locate(graph.device.runtime, params["addr"], 8, "value")
                    if span.device is None:
                        raise ParamInvalidError(f"update_graph: 0x{params['addr']:x} is host memory; the word must "
                                                "be device memory")
                    held = [span.block]
                    note_uses(held, graph.hold, 1)
                graph.nodes[index] = (lane, "task", (new, tuple(held)))
        graph.steps = _plan(graph.nodes)


def kernel_task_attribute(task: ModelTask, attr: int) -> int:
    """aclmdlRIKernelTaskGetAttribute (GetKernelAttribute, kernel_utils.cc): a launch attribute
    of a captured kernel task. SCHEM_MODE: as launched, else the kernel's (0);
    DYN_UBUF_SIZE: as launched, else 0; DATA_DUMP: 1 if the launch enabled it; TIMEOUT (s) /
    TIMEOUT_US: the timeout in effect (a launch's own, else the op execute timeout; 0 for a
    launch whose timeout 0 means never). ENGINE_TYPE, BLOCKDIM_OFFSET, BLOCK_TASK_PREFETCH,
    ENABLE_PROFILING and unknown ids, and a task that is not a kernel: ACL_ERROR_RT_PARAM_INVALID."""
    task = model_task_of(task)
    if task.task_type() != TASK_KERNEL:
        raise ParamInvalidError(f"kernel_task_attribute: task {task.handle:#x} is not a kernel task (check it with "
                                "aclmdlRITaskGetType)")
    k = task.node()[2][0]
    attrs = k.attrs or {}
    if attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE:
        return attrs.get(attr, 0)
    if attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE:
        return attrs.get(attr, 0)
    if attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP:
        return 1 if attrs.get(attr) == 1 else 0
    if attr in (C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT, C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US):
        us = RUNTIME.effective_op_execute_timeout_us() if k.timeout_ns is None else k.timeout_ns // 1000
        return us // 1_000_000 if attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT else us
    raise ParamInvalidError(f"kernel_task_attribute: attribute {attr!r} cannot be read from a kernel task (readable: "
                            "SCHEM_MODE 1, DYN_UBUF_SIZE 2, DATA_DUMP 6, TIMEOUT 7, TIMEOUT_US 8)")
