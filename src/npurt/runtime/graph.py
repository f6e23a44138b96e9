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
one, are ACL_ERROR_RT_STREAM_CAPTURED (107027). Each refusal invalidates the capture(s) it
concerns: capture_end then fails with ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED (507903) and a
message naming the call and where the capture began; the streams leave capture either way.
"""
from __future__ import annotations

import copy
import threading
import traceback

from .forking import fork_safe_lock
from . import constants as C
from .errors import InvalidHandleError, NpuError, ParamInvalidError, TaskError
from .handles import table
from .memory import note_uses
from .observers import HOOKS
from .tasks import NopTask, StreamProgress, Task

GLOBAL, THREAD_LOCAL, RELAXED = 0, 1, 2          # aclmdlRICaptureMode
STATUS_NONE, STATUS_ACTIVE, STATUS_INVALIDATED = 0, 1, 2   # aclmdlRICaptureStatus
MODE_NAMES = {GLOBAL: "GLOBAL", THREAD_LOCAL: "THREAD_LOCAL", RELAXED: "RELAXED"}
GRAPHS = table("model ri")


class CaptureError(NpuError):
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
        self.lanes = 1
        self.lane_streams: list = []   # streams for lanes 1.., made at capture end
        self.lock = threading.Lock()
        self.destroyed = False
        self.replays = 0
        self.exec_stream = None        # the stream execute() replays on, made on first use
        self.steps: list = []          # the replay plan: nodes with runs of batchable tasks fused
        self.handle = GRAPHS.add(self)
        self.hold = GraphHold(self.handle)

    def __repr__(self) -> str:
        return f"<npurt graph {self.handle:#x}: {self.task_count()} tasks on {self.lanes} lane(s)>"

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
            elif kind == "extwait":
                node.update(event=payload.event_id)
            nodes.append(node)
        return {"graph": self.handle, "device": self.device.id, "lanes": self.lanes, "replays": self.replays,
                "nodes": nodes}

    def describe(self) -> str:
        """The graph as text (aclmdlRIDebugPrint)."""
        lines = [f"graph {self.handle:#x}: {len(self.nodes)} nodes, {self.lanes} lane(s)"]
        for i, (lane, kind, payload) in enumerate(self.nodes):
            what = payload[0].describe() if kind == "task" else (
                f"wait for node {payload[1]} of lane {payload[0]}" if kind == "join" else
                f"wait for event {payload.event_id}" if kind == "extwait" else "record")
            lines.append(f"  #{i} lane {lane} {kind}: {what}")
        return "\n".join(lines)


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

    # ------------------------------------------------------------ recording
    def take(self, stream, task: Task, on_seq, holders) -> int:
        """Stream.enqueue of a capturing stream: record the task instead of queueing it."""
        if self.invalid is not None:
            raise CaptureError(f"the capture of stream {self.origin.stream_id} was invalidated: "
                               f"{self.invalid}", C.ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED)
        lane = self.lanes[stream]
        event = getattr(task, "event", None)
        if task.kind == "record_event":
            self._add(lane, "record", None)
            self.records[event] = (lane, self.last[lane])
            event.captured = self
        else:
            held = tuple(h for h in holders if h is not None)
            if held:
                note_uses(held, self.graph.hold, 1)
            self._add(lane, "task", (task, held))
        return stream.enqueued_seq

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
        if THREAD.capturing is not None and self.thread == threading.get_ident():
            THREAD.capturing = None

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
    """Refuse (107030) and invalidate, as CheckCaptureModeSupport does, a call that a capture
    in progress forbids in this thread."""
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
    for cap in culprits:
        cap.invalidate(f"{what} was called during the capture")
    cap = culprits[0]
    raise CaptureError(
        f"{what} is not allowed while stream {cap.origin.stream_id} is being captured in "
        f"{MODE_NAMES[cap.mode]} mode (this thread's mode is {MODE_NAMES[exchange]}); the capture is "
        f"invalidated. Use the asynchronous form on the capturing stream, or capture in RELAXED mode, or "
        f"call aclmdlRICaptureThreadExchangeMode. The capture began at:\n{cap.where}",
        C.ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT)


def refuse_if_capturing(stream, what: str) -> None:
    """Synchronize / query / destroy of a capturing stream: 107027 (and the capture is invalidated)."""
    cap = stream.capture
    if cap is None:
        return
    cap.invalidate(f"{what} of capturing stream {stream.stream_id} was called")
    raise CaptureError(f"{what}: stream {stream.stream_id} is being captured (its work is recorded, not "
                       f"run); end the capture first. The capture is invalidated. It began at:\n{cap.where}",
                       C.ACL_ERROR_RT_STREAM_CAPTURED)


def exchange_mode(mode: int) -> int:
    """aclmdlRICaptureThreadExchangeMode: set this thread's mode, return the previous one."""
    if mode not in MODE_NAMES:
        raise ParamInvalidError(f"capture mode {mode!r} is not GLOBAL (0), THREAD_LOCAL (1) or RELAXED (2)")
    old, THREAD.exchange = THREAD.exchange, mode
    return old


# ---------------------------------------------------------------- capture
def capture_begin(stream, mode: int = GLOBAL) -> None:
    if stream is None or stream.is_default:
        raise ParamInvalidError("capture_begin: the default stream cannot be captured; capture a stream you "
                                "created (create_stream)")
    if stream.destroyed:
        raise InvalidHandleError(f"stream {stream.stream_id} was destroyed")
    if type(mode) is not int or mode not in MODE_NAMES:
        raise ParamInvalidError(f"capture mode {mode!r} is not GLOBAL (0), THREAD_LOCAL (1) or RELAXED (2)")
    if stream.capture is not None:
        raise CaptureError(f"stream {stream.stream_id} is already being captured", C.ACL_ERROR_RT_STREAM_CAPTURED)
    cap = Capture(stream, mode, Graph(stream.device, stream.context))
    stream.capture = cap
    with _lock:
        _active.append(cap)
    THREAD.capturing = mode


def capture_info(stream) -> tuple:
    """(status, graph or None) of a stream (aclmdlRICaptureGetInfo)."""
    cap = stream.capture
    if cap is None:
        return STATUS_NONE, None
    return (STATUS_INVALIDATED if cap.invalid else STATUS_ACTIVE), cap.graph


def capture_end(stream) -> Graph:
    cap = stream.capture
    if cap is None:
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
    graph.lanes = len(cap.lanes)
    graph.steps = _plan(graph.nodes)
    try:
        graph.lane_streams = [graph.device.new_stream(graph.context) for _ in range(graph.lanes - 1)]
    except BaseException:
        _discard(graph)
        raise
    return graph


def _discard(graph: Graph) -> None:
    graph.destroyed = True
    graph.hold.completed_seq = 1   # its memory returns to the pool once replays are done with it
    GRAPHS.remove(graph.handle)


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
    graph = handle if type(handle) is Graph else GRAPHS.get(handle)
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
    lanes = [stream, *graph.lane_streams]
    copy_task = copy.copy
    with graph.lock:
        start = stream.enqueued_seq
        for s in graph.lane_streams:  # each lane starts after what the replay stream holds already
            s.enqueue(JoinTask(stream, start))
        done: dict = {}
        if HOOKS.active:  # tools watch: every task replays as itself (the sanitizer sees each access)
            plan = [(lane, kind, payload, i) for i, (lane, kind, payload) in enumerate(graph.nodes)]
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
            else:  # extwait
                payload.wait_on(s)
        graph.replays += 1
    return stream.enqueued_seq


def destroy_graph(graph: Graph) -> None:
    if graph.destroyed:
        raise InvalidHandleError(f"graph {graph.handle:#x} was destroyed")
    _discard(graph)
    own = [graph.exec_stream] if graph.exec_stream is not None else []
    for s in graph.lane_streams + own:  # queued replays finish first: they drain as force-destroyed streams do
        if not s.destroyed:
            s.device.release_stream(s)
            if s.completed_seq < s.enqueued_seq:
                s.device.finishing.add(s)
    graph.lane_streams, graph.exec_stream = [], None


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
    execute_async(graph, own)
    own.synchronize(timeout_ms=timeout_ms)
