"""ACL graphs for the Pythonic API: capture a stream's work once, replay it cheaply.

    g = npurt.Graph()
    with npurt.graph(g):             # a side stream is captured (and current in the block)
        y[:] = x * 2 + 1             # recorded, not run
    for batch in batches:
        x.copy_from(batch)           # new input into the captured buffer
        g.replay()                   # runs the recorded work on the current stream

`npurt.graph(g, stream=s, mode="global")` captures `s` instead (not the default stream: the
runtime refuses it). `mode` is "global", "thread_local" or "relaxed" (aclmdlRICaptureMode;
what each forbids is in docs/graphs.md). Work of other streams that wait on an event recorded
in the block joins the capture and must rejoin it before the block ends. A call the capture
forbids raises npurt.CaptureError (code 107030 or 107027) and does nothing; the capture goes
on, as CANN's does, and a block that ends with an exception leaves `g` without a graph. A replay reads and writes the
addresses captured, at replay time; replays of one graph run in order.

Work captured inside `with g.task_group() as grp:` can be replaced after the capture:

    with npurt.graph(g):
        with g.task_group() as grp:
            y[:] = x * 2                 # the group's tasks
    with grp.update():                   # on the current stream (or update(stream=s))
        y[:] = x * 3                     # the new tasks: as many, of the same kinds
    g.replay()                           # replays after the update run the new tasks

The update is itself stream-ordered: it takes effect when the updating stream reaches it.
`g.abort()` stops replays in flight (aclmdlRIAbort).
"""
from __future__ import annotations

from . import runtime as rt
from .runtime import CaptureError, InvalidValueError
from .streams import Stream, current_stream, stream as _stream_scope

MODES = {"global": rt.graph.GLOBAL, "thread_local": rt.graph.THREAD_LOCAL, "relaxed": rt.graph.RELAXED}
__all__ = ["CaptureError", "Graph", "TaskGroup", "graph", "is_capturing"]


def _mode(mode) -> int:
    if mode in MODES:
        return MODES[mode]
    if mode in MODES.values() and type(mode) is int:
        return mode
    raise InvalidValueError(f"capture mode {mode!r} is not one of {', '.join(MODES)}")


class Graph:
    """A captured graph (an aclmdlRI). Empty until a capture ends into it."""

    def __init__(self):
        self._graph = None
        self._stream: Stream | None = None

    def __repr__(self) -> str:
        return f"<npurt.Graph {'empty' if self._graph is None else self._graph!r}>"

    @property
    def captured(self) -> bool:
        return self._graph is not None

    def capture_begin(self, stream: Stream, mode="global") -> None:
        if self._graph is not None:
            raise CaptureError("this Graph holds a capture already; reset() it first",
                               rt.constants.ACL_ERROR_RT_MODEL_CAPTURED)
        if not isinstance(stream, Stream):
            raise InvalidValueError(f"capture_begin expects an npurt.Stream, got {type(stream).__name__}")
        rt.capture_begin(stream._s, _mode(mode))
        self._stream = stream

    def capture_end(self) -> None:
        if self._stream is None:
            raise CaptureError("capture_end without capture_begin", rt.constants.ACL_ERROR_RT_STREAM_NOT_CAPTURED)
        s, self._stream = self._stream, None
        self._graph = rt.capture_end(s._s)

    def replay(self, stream: Stream | None = None) -> None:
        """Enqueue one run of the captured work on `stream` (default: the current stream)."""
        if self._graph is None:
            raise CaptureError("replay of a Graph that holds no capture", rt.constants.ACL_ERROR_RT_INVALID_HANDLE)
        s = stream if stream is not None else current_stream()
        rt.execute_async(self._graph, s._s)

    def reset(self) -> None:
        """Destroy the captured graph (queued replays still run)."""
        if self._graph is not None:
            g, self._graph = self._graph, None
            rt.destroy_graph(g)

    def task_group(self) -> "TaskGroup":
        """`with g.task_group() as grp:` inside the capture: the block's work is one updatable group."""
        if self._stream is None:
            raise CaptureError("task_group() outside this Graph's capture", rt.constants.ACL_ERROR_RT_STREAM_NOT_CAPTURED)
        return TaskGroup(self._stream)

    def abort(self) -> None:
        """Stop the replays in flight (each fails at its stream's synchronize with 507023); the
        next replay runs in full (aclmdlRIAbort)."""
        if self._graph is None:
            raise CaptureError("abort of a Graph that holds no capture", rt.constants.ACL_ERROR_RT_INVALID_HANDLE)
        rt.graph.abort_graph(self._graph)

    def debug_text(self) -> str:
        """The captured nodes as text (aclmdlRIDebugPrint)."""
        return "(empty)" if self._graph is None else self._graph.describe()

    def __del__(self) -> None:
        try:
            self.reset()
        except Exception:  # noqa: BLE001 - interpreter teardown, device reset
            pass


class TaskGroup:
    """Captured tasks that can be replaced after the capture (aclmdlRICaptureTaskGrpBegin/End,
    aclmdlRICaptureTaskUpdateBegin/End). Made by `Graph.task_group()`."""

    def __init__(self, stream: Stream):
        self._stream = stream
        self._group = None

    def __enter__(self) -> "TaskGroup":
        rt.graph_edit.capture_task_group_begin(self._stream._s)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        group = rt.graph_edit.capture_task_group_end(self._stream._s)
        self._group = group

    def update(self, stream: Stream | None = None) -> "_Update":
        """`with grp.update(stream=None):` the block's work on `stream` (default: the current
        stream) replaces the group's tasks: as many, of the same kinds (else InvalidValueError
        107000 at the block's end, the group unchanged)."""
        if self._group is None:
            raise CaptureError("update() of a task group whose capture block has not ended",
                               rt.constants.ACL_ERROR_RT_PARAM_INVALID)
        return _Update(self._group, stream if stream is not None else current_stream())


class _Update:
    def __init__(self, group, stream: Stream):
        self._group, self._stream = group, stream

    def __enter__(self) -> None:
        rt.graph_edit.capture_task_update_begin(self._stream._s, self._group)
        self._scope = _stream_scope(self._stream)
        self._scope.__enter__()

    def __exit__(self, exc_type, exc, tb) -> None:
        self._scope.__exit__(exc_type, exc, tb)
        if exc_type is None:
            rt.graph_edit.capture_task_update_end(self._stream._s)
        else:  # the block failed: leave update mode, the group stays as it was
            rt.graph_edit.capture_task_update_cancel(self._stream._s)


class graph:
    """`with npurt.graph(g, stream=None, mode="global"):` captures the block's work on `stream`
    (default: a new side stream) into `g`; the stream is current in the block."""

    def __init__(self, g: Graph, stream: Stream | None = None, mode="global"):
        if not isinstance(g, Graph):
            raise InvalidValueError(f"npurt.graph() expects an npurt.Graph, got {type(g).__name__}")
        self.g, self.stream, self.mode = g, stream if stream is not None else Stream(), mode
        self._scope = None

    def __enter__(self) -> Graph:
        self.g.capture_begin(self.stream, self.mode)
        self._scope = _stream_scope(self.stream)
        self._scope.__enter__()
        return self.g

    def __exit__(self, exc_type, exc, tb) -> None:
        self._scope.__exit__(exc_type, exc, tb)
        try:
            self.g.capture_end()
        except CaptureError:
            if exc_type is None:
                raise  # the capture's own failure (invalidated, unjoined)
            return
        if exc_type is not None:
            self.g.reset()  # a block that failed leaves no graph (its capture went on, as CANN's does)


def is_capturing(stream: Stream | None = None) -> bool:
    """True while `stream` (default: the current stream) is being captured."""
    s = stream if stream is not None else current_stream()
    return rt.capture_info(s._s)[0] != rt.graph.STATUS_NONE
