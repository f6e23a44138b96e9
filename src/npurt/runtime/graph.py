"""ACL graphs (aclmdlRI): capture as a stream mode, and replay.

`capture_begin(stream, mode)` puts a stream in capture: from then on the work enqueued on it
(copies, memsets, kernels, host functions, event records and waits, value and notify tasks)
is recorded into a Graph instead of run. A stream that waits on an event recorded by a
capturing stream joins the capture (cross-stream capture) as a further lane; every joined
lane must rejoin the origin (its last captured work must be a record the origin, or a lane
that rejoined, waits for) before `capture_end(stream)`, which returns the graph, or fails with
ACL_ERROR_RT_STREAM_UNJOINED (107025).

Replay (`execute_async(graph, stream)`) enqueues fresh copies of the recorded tasks, in the
order they were captured, on `stream` (lane 0) and on streams the graph owns (one per joined
lane, made at capture end, counted against the device's stream limit), with the captured
cross-lane dependencies. Each replayed task is an ordinary task: it reads and writes the
addresses it was captured with, holds their memory (stream-ordered free), and tools
(sanitizer, profiler) see it as any other task. Replays of one graph are ordered: the lanes'
streams are shared, so a second replay's work on a lane follows the first's.

Capture modes (ApiErrorDecorator / Context::IsCaptureModeSupport): a call the runtime checks
(synchronous copy, 2D copy, memset) is refused with ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT
(107030) when the calling thread's exchange mode (aclmdlRICaptureThreadExchangeMode, default
GLOBAL) is GLOBAL and a GLOBAL capture is active in the context or the thread itself captures
THREAD_LOCAL; when it is THREAD_LOCAL and the thread captures GLOBAL or THREAD_LOCAL; never when
it is RELAXED. Synchronizing, querying or destroying a capturing stream, and replaying onto
one, are ACL_ERROR_RT_STREAM_CAPTURED (107027). A refusal does nothing and ends nothing: the
capture goes on, as CANN's does (CheckCaptureModeSupport, ApiErrorDecorator::StreamSynchronize);
the message names the call and where the capture began.

Editing captured graphs (task groups and their updates, per-task queries and parameters) is
graph_edit.py; conditional tasks and their bodies are graph_cond.py; built models
model_build.py. A node's payload of those kinds replays through its own `replay_task(graph)`.
"""
from __future__ import annotations

import copy
import itertools
import threading
import traceback

from .forking import fork_safe_lock
from . import constants as C
from .errors import FeatureNotSupportedError, InvalidHandleError, NpuError, ParamInvalidError, TaskError
from .event import EventNextRecord
from .handles import table
from .memory import note_uses
from .observers import HOOKS
from .tasks import NopTask, StreamProgress, Task

GLOBAL, THREAD_LOCAL, RELAXED = 0, 1, 2          # aclmdlRICaptureMode
STATUS_NONE, STATUS_ACTIVE, STATUS_INVALIDATED = 0, 1, 2   # aclmdlRICaptureStatus
MODE_NAMES = {GLOBAL: "GLOBAL", THREAD_LOCAL: "THREAD_LOCAL", RELAXED: "RELAXED"}
GRAPHS = table("model ri")
_model_ids = itertools.count(1)


class CaptureError(NpuError, RuntimeError):
    """A call refused because of a capture (107030 / 107027), or a capture that cannot end."""


class _ThreadModes(threading.local):
    exchange = GLOBAL      # aclmdlRICaptureThreadExchangeMode
    capturing = None       # the mode of a capture this thread began (None: none)


THREAD = _ThreadModes()
_lock = fork_safe_lock()
_active: list = []         # captures in progress (all contexts)


class GraphHold:
    """What keeps the memory a graph's tasks use from being reused while the graph lives: it
    stands in the blocks' use records (memory.note_uses) as a stream whose task 1 retires
    only when the graph is destroyed, so a buffer freed after capture (a temporary of the
    captured work) stays the graph's (stream-ordered free; the pool cannot wait for it)."""

    __slots__ = ("completed_seq", "graph_handle", "__weakref__")
    stream_id = "graph"

    def __init__(self, handle: int):
        self.completed_seq, self.graph_handle = 0, handle

    def synchronize(self, until=None, timeout_ms=-1, report_errors=True) -> None:
        raise NpuError(f"memory held by graph {self.graph_handle:#x} is released only by destroying the graph")


class Graph:
    """A captured graph: nodes in capture order, each (lane, kind, payload)."""

    def __init__(self, device, context):
        self.device, self.context = device, context
        self.nodes: list = []
        self.op_info: dict = {}  # node index -> shape info bytes (aclmdlRITaskSetParams, graph_edit.py)
        self.lanes = 1
        self.lane_streams: list = []   # streams for lanes 1.., made at capture end
        self.lock = threading.Lock()
        self.destroyed = False
        self.replays = 0
        self.exec_stream = None        # the stream execute() replays on, made on first use
        self.steps: list = []          # the replay plan: nodes with runs of batchable tasks fused
        self.name = ""                 # aclmdlRISetName
        self.model_id = next(_model_ids)   # aclmdlRIGetId
        self.parent = None             # the graph whose conditional task runs this one (a body)
        self.pending = False           # a body made by add_cond_task, not captured yet
        self.cond_handles: list = []   # CondHandles made for this graph
        self.bodies: list = []         # graphs of its conditional tasks
        self.destroy_callbacks: list = []  # (fn, user_data): run by destroy_graph
        self.aborted = False           # abort_graph: replays in flight stop at their next task
        self.groups_made: list = []    # its TaskGroups (capture_task_group_begin)
        self.model_tasks: dict = {}    # node index -> its ModelTask (tasks_of_stream)
        self.pending_updates: dict = {}   # node index -> ("set", params) / ("disable", None): update_graph
        self.handle = GRAPHS.add(self)
        self.hold = GraphHold(self.handle)

    def __repr__(self) -> str:
        return f"<npurt graph {self.handle:#x}: {self.task_count()} tasks on {self.lanes} lane(s)>"

    def release(self) -> None:
        """What destroy_graph undoes beyond the nodes (a built model unbinds its streams)."""

    def task_count(self) -> int:
        return sum(1 for n in self.nodes if n[1] == "task")

    def as_json(self) -> dict:
        """The graph as plain data (aclmdlRIDebugJsonPrint): lanes and nodes in capture order."""
        nodes = []
        for i, (lane, kind, payload) in enumerate(self.nodes):
            node = {"id": i, "lane": lane, "kind": kind}
            if kind == "task":
                node.update(type=payload[0].kind, what=payload[0].describe())
            elif kind == "join":
                node.update(after_lane=payload[0], after_node=payload[1])
            elif kind in ("extwait", "extrecord", "reset"):
                node.update(event=payload.event_id)
            elif kind == "group":
                node.update(group=payload.handle, tasks=[t.describe() for t in payload.tasks])
            elif kind == "cond":
                node.update(type=payload.type_name, bodies=[b.handle for b in payload.bodies],
                            cond=payload.cond.addr)
            nodes.append(node)
        return {"graph": self.handle, "device": self.device.id, "lanes": self.lanes, "replays": self.replays,
                "nodes": nodes}

    def describe(self) -> str:
        """The graph as text (aclmdlRIDebugPrint)."""
        lines = [f"graph {self.handle:#x}: {len(self.nodes)} nodes, {self.lanes} lane(s)"]
        for i, (lane, kind, payload) in enumerate(self.nodes):
            lines.append(f"  #{i} lane {lane} {kind}: {_node_text(kind, payload)}")
        return "\n".join(lines)


def _node_text(kind: str, payload) -> str:
    if kind == "task":
        return payload[0].describe()
    if kind == "join":
        return f"wait for node {payload[1]} of lane {payload[0]}"
    if kind == "extwait":
        return f"wait for event {payload.event_id}"
    if kind == "extrecord":
        return f"record event {payload.event_id} (external)"
    if kind == "reset":
        return f"reset event {payload.event_id}"
    if kind == "group":
        return f"task group {payload.handle:#x}: " + "; ".join(t.describe() for t in payload.tasks)
    if kind == "cond":
        return (f"{payload.type_name} on the word at 0x{payload.cond.addr:x}, bodies "
                + ", ".join(f"{b.handle:#x}" for b in payload.bodies))
    return "record"



class Capture:
    def __init__(self, origin, mode: int, graph: Graph):
        self.origin, self.mode, self.graph = origin, mode, graph
        self.thread = threading.get_ident()
        self.where = "".join(traceback.format_stack(limit=8)[:-3])
        self.lanes = {origin: 0}
        self.last = {0: None}            # lane -> index of its last node
        self.records: dict = {}          # event -> (lane, node index) of its latest captured record
        self.invalid: str | None = None
        self.context = origin.context
        self.groups: dict = {}           # lane -> the TaskGroup open on it (capture_task_group_begin)

    # ------------------------------------------------------------ recording
    def take(self, stream, task: Task, on_seq, holders) -> int:
        """Stream.enqueue of a capturing stream: record the task instead of queueing it."""
        if self.invalid is not None:
            raise CaptureError(f"the capture of stream {self.origin.stream_id} was invalidated: "
                               f"{self.invalid}", C.ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED)
        lane = self.lanes[stream]
        event = getattr(task, "event", None)
        group = self.groups.get(lane)
        if group is not None and task.kind in ("record_event", "reset_event"):
            raise CaptureError(f"{task.kind} inside a task group: a group holds only tasks that can be "
                               "updated (kernels, copies, memsets)", C.ACL_ERROR_RT_PARAM_INVALID)
        if task.kind == "record_event":
            self._add(lane, "record", None)
            self.records[event] = (lane, self.last[lane])
            event.captured = self
        elif task.kind == "reset_event":  # a reset happens at each replay, in the replay's order
            self._add(lane, "reset", event)
        else:
            held = tuple(h for h in holders if h is not None)
            if held:
                note_uses(held, self.graph.hold, 1)
            if group is not None:
                group.tasks.append(task)
                group.holders.extend(held)
            else:
                self._add(lane, "task", (task, held))
        return stream.enqueued_seq

    def record_external(self, stream, event) -> int:
        """record_event_with_flag(..., ACL_EVENT_RECORD_EXTERNAL): each replay records the event
        for real, so streams and graphs outside the graph can wait for it."""
        self._check_valid()
        self._add(self.lanes[stream], "extrecord", event)
        return stream.enqueued_seq

    def wait_external(self, stream, event) -> int:
        """stream_wait_event_with_flag(..., ACL_EVENT_WAIT_EXTERNAL): each replay waits for the
        event's record as it stands then (a record outside the graph, or another graph's)."""
        self._check_valid()
        self._add(self.lanes[stream], "extwait", event)
        return stream.enqueued_seq

    def _check_valid(self) -> None:
        if self.invalid is not None:
            raise CaptureError(f"the capture of stream {self.origin.stream_id} was invalidated: "
                               f"{self.invalid}", C.ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED)

    def _add(self, lane: int, kind: str, payload) -> None:
        nodes = self.graph.nodes
        nodes.append((lane, kind, payload))
        self.last[lane] = len(nodes) - 1

    def wait(self, stream, event) -> int:
        """stream_wait_event during a capture: a join (the stream enters the capture if it
        was not in it) or, for an event recorded outside, a wait at replay."""
        rec = self.records.get(event) if getattr(event, "captured", None) is self else None
        if rec is None:  # an event recorded outside the capture: waited for at each replay
            self._add(self.lanes[stream], "extwait", event)
            return stream.enqueued_seq
        lane = self.lanes.get(stream)
        if lane is None:
            if stream.device is not self.origin.device:
                raise CaptureError(f"stream {stream.stream_id} is on another device than the capture",
                                   C.ACL_ERROR_RT_CAPTURE_DEPENDENCY)
            lane = self.lanes[stream] = len(self.lanes)
            self.last[lane] = None
            stream.capture = self
            stream.device.touch(stream)  # a capturing stream is not drained (Device.drained)
        self._add(lane, "join", rec)
        return stream.enqueued_seq

    def refuse_wait(self, stream) -> None:
        """A host wait for a capturing stream (a synchronous call made of an enqueue and a
        wait, a synchronize): it would never end, since nothing runs during capture."""
        refuse_if_capturing(stream, "waiting for the stream (a synchronous operation on it)")

    def invalidate(self, why: str) -> None:
        if self.invalid is None:
            self.invalid = why

    def leave(self) -> None:
        for s in self.lanes:
            s.capture = None
        for event in self.records:
            if getattr(event, "captured", None) is self:
                event.captured = None
        with _lock:
            if self in _active:
                _active.remove(self)
            ident = threading.get_ident()
            mine = [c.mode for c in _active if c.thread == ident]
        if self.thread == ident:  # a capture of this thread that is still open keeps its mode
            THREAD.capturing = mine[-1] if mine else None

    def abandon(self, stream) -> None:
        """`stream` goes away without the capture ending (a device reset, a finalize, a
        context destroyed): the capture is invalid; if it began there, it ends and its graph
        is gone, so no other thread stays refused because of it."""
        self.invalidate(f"stream {stream.stream_id} was destroyed (device reset, finalize or context "
                        "destroyed) during the capture")
        if stream is self.origin:
            self.leave()
            graph = self.graph
            if graph.parent is not None:
                graph.pending, graph.nodes = True, []
            elif not graph.destroyed:
                _discard(graph)

    def unjoined(self) -> list:
        """Lanes whose last node is not a record some other lane's join waits for."""
        nodes = self.graph.nodes
        joined_from = {payload for _, kind, payload in nodes if kind == "join"}
        out = []
        for s, lane in self.lanes.items():
            if lane == 0:
                continue
            last = self.last[lane]
            if last is None or nodes[last][1] != "record" or (lane, last) not in joined_from:
                out.append(s)
        return out


# ---------------------------------------------------------------- mode checks
def check_capture_safe(what: str, context=None) -> None:
    """Refuse (107030), as CheckCaptureModeSupport does, a call that a capture in progress
    forbids in this thread. The capture goes on: CANN's check returns the code and ends nothing
    (src/runtime/feature/aclgraph/capture_model_utils.cc, error_message_manage.hpp's
    CHECK_CAPTURE_MODE_SUPPORT_AND_RETURN); a refused call did nothing, so the graph lacks
    nothing it would have had."""
    if not _active:
        return
    exchange, mine = THREAD.exchange, THREAD.capturing
    if exchange == RELAXED:
        return
    ident = threading.get_ident()
    culprits = []
    for cap in list(_active):
        if context is not None and cap.context is not context:
            continue
        if exchange == GLOBAL and (cap.mode == GLOBAL or (cap.thread == ident and cap.mode == THREAD_LOCAL)):
            culprits.append(cap)
        elif exchange == THREAD_LOCAL and cap.thread == ident and mine in (GLOBAL, THREAD_LOCAL):
            culprits.append(cap)
    if not culprits:
        return
    if HOOKS.active:  # the sanitizer reports it with both sites (the call, the capture's begin)
        for cap in culprits:
            HOOKS.emit("capture_refused", capture=cap, call=what, code=C.ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT,
                       mode=MODE_NAMES[cap.mode], thread_mode=MODE_NAMES[exchange])
    cap = culprits[0]
    raise CaptureError(
        f"{what} is not allowed while stream {cap.origin.stream_id} is being captured in "
        f"{MODE_NAMES[cap.mode]} mode (this thread's mode is {MODE_NAMES[exchange]}); the call did "
        f"nothing and the capture goes on. Use the asynchronous form on the capturing stream, or capture in RELAXED mode, or "
        f"call aclmdlRICaptureThreadExchangeMode. The capture began at:\n{cap.where}",
        C.ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT)


def refuse_if_capturing(stream, what: str) -> None:
    """Synchronize / query / destroy of a capturing stream: 107027, and the capture goes on, as
    in ApiErrorDecorator::StreamSynchronize (src/runtime/api/impl/api_error.cc), which returns
    RT_ERROR_STREAM_CAPTURED and ends nothing."""
    cap = stream.capture
    if cap is None:
        return
    if HOOKS.active and type(cap) is Capture:
        HOOKS.emit("capture_refused", capture=cap, call=what, code=C.ACL_ERROR_RT_STREAM_CAPTURED,
                   mode=MODE_NAMES[cap.mode], thread_mode=MODE_NAMES[THREAD.exchange])
    raise CaptureError(f"{what}: stream {stream.stream_id} is being captured (its work is recorded, not "
                       f"run); end the capture first. The call did nothing; the capture goes on. It began at:\n{cap.where}",
                       C.ACL_ERROR_RT_STREAM_CAPTURED)


def exchange_mode(mode: int) -> int:
    """aclmdlRICaptureThreadExchangeMode: set this thread's mode, return the previous one."""
    if mode not in MODE_NAMES:
        raise ParamInvalidError(f"capture mode {mode!r} is not GLOBAL (0), THREAD_LOCAL (1) or RELAXED (2)")
    old, THREAD.exchange = THREAD.exchange, mode
    return old


# ---------------------------------------------------------------- capture
def capture_begin(stream, mode: int = GLOBAL, into: Graph | None = None) -> None:
    """Put `stream` in capture (aclmdlRICaptureBegin); `into`: capture into that empty body of
    a conditional task instead of a new graph (aclmdlRICaptureToModelRIBegin)."""
    if stream is None or stream.is_default:
        raise ParamInvalidError("capture_begin: the default stream cannot be captured; capture a stream you "
                                "created (create_stream)")
    if stream.destroyed:
        raise InvalidHandleError(f"stream {stream.stream_id} was destroyed")
    if type(mode) is not int or mode not in MODE_NAMES:
        raise ParamInvalidError(f"capture mode {mode!r} is not GLOBAL (0), THREAD_LOCAL (1) or RELAXED (2)")
    if stream.capture is not None:
        raise CaptureError(f"stream {stream.stream_id} is already being captured", C.ACL_ERROR_RT_STREAM_CAPTURED)
    if into is not None:  # capture_to_model: the body of a conditional task
        if into.destroyed:
            raise InvalidHandleError(f"graph {into.handle:#x} was destroyed")
        if not into.pending:
            raise CaptureError(f"graph {into.handle:#x} is not an empty body of a conditional task (made by "
                               "add_cond_task and not captured yet): it cannot be captured into",
                               C.ACL_ERROR_RT_MODEL_CAPTURED)
        if into.device is not stream.device:
            raise ParamInvalidError(f"graph {into.handle:#x} is on device {into.device.id}, the stream on "
                                    f"device {stream.device.id}")
        into.pending = False
        graph = into
    else:
        graph = Graph(stream.device, stream.context)
    cap = Capture(stream, mode, graph)
    stream.capture = cap
    stream.device.touch(stream)  # a capturing stream is not drained (Device.drained)
    with _lock:
        _active.append(cap)
    THREAD.capturing = mode
    if HOOKS.active:
        HOOKS.emit("capture_begin", capture=cap, stream=stream)


def capture_info(stream) -> tuple:
    """(status, graph or None) of a stream (aclmdlRICaptureGetInfo)."""
    cap = stream.capture
    if type(cap) is not Capture:  # none, or a stream bound to a built model / recording an update
        return STATUS_NONE, None
    return (STATUS_INVALIDATED if cap.invalid else STATUS_ACTIVE), cap.graph


def capture_end(stream) -> Graph:
    cap = stream.capture
    if type(cap) is not Capture:
        raise CaptureError(f"capture_end: stream {stream.stream_id} is not being captured",
                           C.ACL_ERROR_RT_STREAM_NOT_CAPTURED)
    if cap.origin is not stream:
        raise CaptureError(f"capture_end: the capture was not begun on stream {stream.stream_id} (it joined "
                           f"the capture of stream {cap.origin.stream_id}); end it there",
                           C.ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED)
    if cap.mode != RELAXED and cap.thread != threading.get_ident():
        cap.leave()
        _discard(cap.graph)
        raise CaptureError("capture_end was called from another thread than capture_begin "
                           f"({MODE_NAMES[cap.mode]} mode)", C.ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD)
    cap.leave()
    graph = cap.graph
    if cap.invalid is not None:
        _discard(graph)
        raise CaptureError(f"the capture of stream {stream.stream_id} is invalid: {cap.invalid}. It began "
                           f"at:\n{cap.where}", C.ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED)
    unjoined = cap.unjoined()
    if unjoined:
        _discard(graph)
        ids = ", ".join(str(s.stream_id) for s in unjoined)
        raise CaptureError(f"capture_end: stream(s) {ids} joined the capture of stream {stream.stream_id} but "
                           "did not rejoin it: record an event on each after its last work and make the "
                           "capturing stream wait for it", C.ACL_ERROR_RT_STREAM_UNJOINED)
    if cap.groups:
        _discard(graph)
        raise CaptureError("capture_end: a task group is still open on the capture "
                           "(capture_task_group_end first)", C.ACL_ERROR_RT_PARAM_INVALID)
    if graph.parent is not None:
        odd = sorted({kind for _, kind, _ in graph.nodes if kind in ("extwait", "extrecord", "reset")})
        if odd:
            graph.pending = True  # the parent's conditional task keeps an empty body
            graph.nodes.clear()
            raise FeatureNotSupportedError(
                f"capture_end: a conditional body with event tasks ({', '.join(odd)}) is not supported by "
                "npurt (a body runs inside its conditional task); record and wait outside it")
    graph.lanes = len(cap.lanes)
    graph.steps = _plan(graph.nodes)
    try:
        for _ in range(graph.lanes - 1):
            lane = graph.device.new_stream(graph.context)
            lane.held_by = graph.handle
            graph.lane_streams.append(lane)
    except BaseException:  # out of streams: the lanes made so far go back, the graph is gone
        for lane in graph.lane_streams:
            graph.device.release_stream(lane)
        graph.lane_streams = []
        _discard(graph)
        raise
    return graph


def _discard(graph: Graph) -> None:
    graph.destroyed = True
    graph.hold.completed_seq = 1   # its memory returns to the pool once replays are done with it
    GRAPHS.remove(graph.handle)
    for body in graph.bodies:
        if not body.destroyed:
            _discard(body)
    for obj in (*graph.cond_handles, *graph.groups_made, *graph.model_tasks.values()):
        obj.release()  # their handles (and a condition's word) go with the graph
    graph.cond_handles, graph.bodies = [], []


# ---------------------------------------------------------------- replay
def _plan(nodes: list) -> list:
    """The nodes with each run of consecutive batchable tasks of a lane fused into one
    ("batch", tasks, holders) step: a replay then costs one enqueue per run, not per task."""
    steps: list = []
    open_batch: dict = {}   # lane -> index in steps of its batch still open
    for i, (lane, kind, payload) in enumerate(nodes):
        if kind == "task" and payload[0].batchable:
            at = open_batch.get(lane)
            if at is None:
                open_batch[lane] = len(steps)
                steps.append((lane, "batch", ([payload[0]], list(payload[1])), i))
            else:
                steps[at][2][0].append(payload[0])
                steps[at][2][1].extend(payload[1])
            continue
        open_batch.pop(lane, None)
        steps.append((lane, kind, payload, i))
    return steps


class BatchTask(Task):
    """Consecutive captured tasks of one lane, run as one task of the replay."""

    __slots__ = ("tasks",)
    kind = "graph_replay"

    def __init__(self, tasks: list):
        self.tasks = tasks

    def run(self) -> None:
        for task in self.tasks:
            try:
                task.run()
            except Exception as exc:  # noqa: BLE001 - reported with the inner task's code
                raise TaskError(f"graph replay: {task.describe()} failed: {exc}",
                                getattr(exc, "code", task.error_code)) from exc

    def accesses(self) -> tuple:
        return tuple(a for t in self.tasks for a in t.accesses())

    def describe(self) -> str:
        return f"graph replay of {len(self.tasks)} task(s)"

    def details(self) -> dict:
        return {"name": "graph replay", "tasks": len(self.tasks)}


class JoinTask(Task):
    """A replayed cross-lane dependency: wait until `source` retired task `seq`."""

    __slots__ = ("source", "wait_seq")
    kind = "graph_join"
    may_block = True

    def __init__(self, source, seq: int):
        self.source, self.wait_seq = source, seq

    def blocker(self):
        if self.source.completed_seq >= self.wait_seq:
            return None
        return StreamProgress(self.source, self.wait_seq)

    def run(self) -> None:
        pass


def graph_of(handle) -> Graph:
    graph = handle if isinstance(handle, Graph) else GRAPHS.get(handle)
    if graph.destroyed:
        raise InvalidHandleError(f"graph {graph.handle:#x} was destroyed")
    return graph


def execute_async(graph: Graph, stream) -> int:
    """Enqueue one replay of `graph` on `stream`; returns the sequence number of its last task there."""
    if graph.destroyed:
        raise InvalidHandleError(f"graph {graph.handle:#x} was destroyed")
    if stream.capture is not None:
        raise CaptureError(f"execute_async: stream {stream.stream_id} is being captured",
                           C.ACL_ERROR_RT_STREAM_CAPTURED)
    if stream.device is not graph.device:
        raise ParamInvalidError(f"graph {graph.handle:#x} was captured on device {graph.device.id}, the stream "
                                f"is on device {stream.device.id}")
    return graph.enqueue_replay(stream)


def _replay(graph: Graph, stream) -> int:
    """Graph.enqueue_replay of a captured graph: the recorded tasks, fresh copies, on `stream`
    and the graph's lane streams."""
    if graph.pending or graph.parent is not None and graph.lanes > 1:
        raise ParamInvalidError(f"graph {graph.handle:#x} is a body of a conditional task of graph "
                                f"{graph.parent.handle:#x}" + (" not captured yet" if graph.pending else
                                                               " with several streams: it runs inside it"))
    lanes = [stream, *graph.lane_streams]
    copy_task = copy.copy
    with graph.lock:
        graph.aborted = False
        for cond in graph.cond_handles:  # ACL_MODEL_RI_COND_HANDLE_ASSIGN_DEFAULT: at each launch
            task = cond.launch_task()
            if task is not None:
                stream.enqueue(task, holders=(cond.block,))
        start = stream.enqueued_seq
        for s in graph.lane_streams:  # each lane starts after what the replay stream holds already
            s.enqueue(JoinTask(stream, start))
        done: dict = {}
        watched = HOOKS.active
        if watched:  # tools watch: every task replays as itself (the sanitizer sees each access),
            # between two markers per lane: the profiler shows the replay as one range with its tasks
            plan = [(lane, kind, payload, i) for i, (lane, kind, payload) in enumerate(graph.nodes)]
            for s in lanes:
                s.enqueue(ReplayMarkTask(graph, 0))
        else:
            plan = graph.steps
        for lane, kind, payload, i in plan:
            s = lanes[lane]
            if kind == "batch":
                s.enqueue(BatchTask(payload[0]), holders=payload[1])
            elif kind == "task":
                task, holders = payload
                s.enqueue(copy_task(task), holders=holders)
            elif kind == "record":
                done[(lane, i)] = (s, s.enqueue(NopTask()))
            elif kind == "join":
                src, seq = done[payload]
                s.enqueue(JoinTask(src, seq))
            elif kind == "extwait":
                if payload.semaphore:  # one hardware flag: what the device sees when the wait runs
                    s.enqueue(FlagWaitTask(payload))
                else:
                    payload.wait_on(s)
            elif kind == "extrecord":
                payload.record_on(s)
            elif kind == "reset":
                payload.reset_on(s)
            else:  # a task group (graph_edit.py) or a conditional task (graph_cond.py)
                s.enqueue(payload.replay_task(graph), holders=payload.replay_holders())
        if watched:
            for s in lanes:
                s.enqueue(ReplayMarkTask(graph, 1))
        graph.replays += 1
    return stream.enqueued_seq


class ReplayMarkTask(Task):
    """The begin (0) or end (1) of a replay on one of its streams, for the profiler (a marker
    task: the timeline pairs them into a "graph replay" range). Enqueued only while tools watch."""

    __slots__ = ("graph_handle", "replay", "edge", "tasks")
    kind = "profiler_marker"

    def __init__(self, graph: Graph, edge: int):
        self.graph_handle, self.replay, self.edge = graph.handle, graph.replays + 1, edge
        self.tasks = graph.task_count()

    def run(self) -> None:
        pass

    def describe(self) -> str:
        return f"{'end' if self.edge else 'begin'} of replay {self.replay} of graph {self.graph_handle:#x}"

    def details(self) -> dict:
        return {"name": self.describe(), "graph replay": (self.graph_handle, self.replay, self.edge, self.tasks)}


Graph.enqueue_replay = _replay


def destroy_graph(graph: Graph) -> None:
    """aclmdlRIDestroy: the graph, its bodies and condition words go; replays already queued
    finish first. The destroy callbacks run after, on the calling thread."""
    if graph.destroyed:
        raise InvalidHandleError(f"graph {graph.handle:#x} was destroyed")
    if graph.parent is not None and not graph.parent.destroyed:
        raise ParamInvalidError(f"graph {graph.handle:#x} is a body of a conditional task of graph "
                                f"{graph.parent.handle:#x}; destroying that graph destroys it")
    graph.release()
    _discard(graph)
    own = [graph.exec_stream] if graph.exec_stream is not None else []
    for s in graph.lane_streams + own:  # queued replays finish first: they drain as force-destroyed streams do
        if not s.destroyed:
            s.device.release_stream(s)
            if s.completed_seq < s.enqueued_seq:
                s.device.finishing.add(s)
    graph.lane_streams, graph.exec_stream = [], None
    for fn, user_data in list(graph.destroy_callbacks):
        fn(user_data)


def execute(graph: Graph, timeout_ms: int = -1) -> None:
    """aclmdlRIExecute: replay on a stream the graph owns and wait for it (timeout in ms, -1
    for none)."""
    if graph.destroyed:
        raise InvalidHandleError(f"graph {graph.handle:#x} was destroyed")
    if type(timeout_ms) is not int or timeout_ms < -1:
        raise ParamInvalidError(f"timeout {timeout_ms!r} must be -1 (no limit) or a number of milliseconds")
    with graph.lock:
        own = graph.exec_stream
        if own is None:
            own = graph.exec_stream = graph.device.new_stream(graph.context)
            own.held_by = graph.handle
    execute_async(graph, own)
    own.synchronize(timeout_ms=timeout_ms)


def abort_graph(graph: Graph) -> None:
    """aclmdlRIAbort: replays of the graph in flight stop at their next task (each fails with
    ACL_ERROR_RT_MODEL_ABORT_NORMAL, 507023, reported by the stream's synchronize), a WHILE
    body stops looping; the graph stays usable: the next replay runs in full."""
    if graph.destroyed:
        raise InvalidHandleError(f"graph {graph.handle:#x} was destroyed")
    graph.aborted = True


def _check_aborted(graph: Graph) -> None:
    if graph.aborted:
        raise TaskError(f"graph {graph.handle:#x} was aborted (abort_graph)", C.ACL_ERROR_RT_MODEL_ABORT_NORMAL)


class FlagWaitTask(Task):
    """A replayed wait on an event with one hardware flag (ACL_EVENT_SYNC / EXTERNAL, not _ex_):
    it waits until the flag is set as the device sees it when the wait runs (a record ran and no
    reset ran since), which is what lets a graph wait, replay after replay, for a record the host
    makes later (the captured wait, then reset, of model_ri/1_model_update)."""

    __slots__ = ("event",)
    kind = "stream_wait_event"
    may_block = True

    def __init__(self, event):
        self.event = event

    def blocker(self):
        event = self.event
        if event.device_flag:
            return None
        rec = event.record
        if rec is not None and not rec.ran:  # a record is queued: its run sets the flag
            return StreamProgress(rec.stream, rec.seq)
        if event.destroyed:
            raise event._destroyed_unrecorded()
        return EventNextRecord(event, rec)

    def run(self) -> None:
        pass

    def describe(self) -> str:
        return f"stream_wait_event {self.event.event_id} (graph replay, the event's flag)"

    def details(self) -> dict:
        return {"event": self.event.event_id}

def _capture_of(stream, what: str) -> Capture:
    cap = stream.capture
    if type(cap) is not Capture:
        raise CaptureError(f"{what}: stream {stream.stream_id} is not being captured",
                           C.ACL_ERROR_RT_STREAM_NOT_CAPTURED)
    cap._check_valid()
    return cap



def _run_tasks(tasks, runner: Task) -> None:
    """Run recorded tasks inside the task `runner` (a group, a conditional, a model run): each
    as a copy that runs on the runner's stream (kernels need one)."""
    for recorded in tasks:
        task = copy.copy(recorded)
        task.stream, task.seq = runner.stream, runner.seq
        try:
            task.run()
        except Exception as exc:  # noqa: BLE001 - reported with the inner task's code
            raise TaskError(f"graph replay: {task.describe()} failed: {exc}",
                            getattr(exc, "code", task.error_code)) from exc


# ---------------------------------------------------------------- names, ids, callbacks
def set_name(graph: Graph, name: str) -> None:
    graph_of(graph).name = name


def register_destroy_callback(graph: Graph, fn, user_data=None) -> None:
    graph_of(graph).destroy_callbacks.append((fn, user_data))


def unregister_destroy_callback(graph: Graph, fn) -> None:
    graph = graph_of(graph)
    kept = [(f, d) for f, d in graph.destroy_callbacks if f != fn]
    if len(kept) == len(graph.destroy_callbacks):
        raise ParamInvalidError(f"graph {graph.handle:#x} has no such destroy callback registered")
    graph.destroy_callbacks = kept
