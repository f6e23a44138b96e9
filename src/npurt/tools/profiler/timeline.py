"""The timeline of one profile: what ran where and when, built from the collector's records.

Times are nanoseconds since the profile started (`Timeline.t0`, a perf_counter_ns value),
the clock the runtime stamps events with, so a task's span and an event's timestamp of the
same run compare directly. A task is known generically: its kind (the task class's `kind`)
and `details()` ("name", "bytes", "blocks", ...), so any kind of task shows up, by name.

Task categories (what the summaries and pictures group by):

| category | tasks |
| --- | --- |
| copy | copies and sets (memcpy_async, memcpy2d_async, strided_copy, memset_async) and any task whose details name a copy direction |
| sync | record_event, stream_wait_event, reset_event, nop |
| marker | the profiler's own markers on streams (acl.prof.mark_ex, step timestamps) |
| communication | collectives (HCCL: kinds "hccl_*", or details naming a "communicator") |
| compute | everything else: kernels, host functions, callbacks, reductions, model and operator executions, media (DVPP) |
"""
from __future__ import annotations

from dataclasses import dataclass, field

COPY_KINDS = frozenset({"memcpy_async", "memcpy2d_async", "strided_copy", "memset_async"})
SYNC_KINDS = frozenset({"record_event", "stream_wait_event", "reset_event", "nop"})
MARKER_KIND = "profiler_marker"
# msprof's task type names for the kinds that have one; other kinds are shown upper-cased
TASK_TYPES = {"kernel": "AI_CORE", "memcpy_async": "MEMCPY_ASYNC", "memcpy2d_async": "MEMCPY_ASYNC",
              "strided_copy": "MEMCPY_ASYNC", "memset_async": "MEMSET_ASYNC", "record_event": "EVENT_RECORD",
              "stream_wait_event": "STREAM_WAIT_EVENT", "reset_event": "EVENT_RESET", "nop": "NOP",
              "host_func": "HOST_FUNC", "launch_callback": "HOST_FUNC", MARKER_KIND: "PROFILER_TRACE"}


@dataclass(slots=True)
class TaskSpan:
    """One task that ran on a stream: [start, end), and what came before."""

    device: int
    stream: int
    seq: int
    kind: str
    name: str
    start: int
    end: int
    enqueued: int            # when the host enqueued it
    thread: int              # the host thread that enqueued it
    blocked: int | None      # when its stream parked on it (it had to wait), else None
    waiting_on: str | None   # what it waited for (the blocker's description)
    details: dict
    error: int | None        # the aclError code if it failed
    flow: int = 0            # id linking enqueue, execution and the waits it releases

    @property
    def duration(self) -> int:
        return self.end - self.start

    @property
    def nbytes(self) -> int | None:
        return self.details.get("bytes")

    @property
    def blocks(self) -> int | None:
        return self.details.get("blocks")

    @property
    def op_type(self) -> str:
        return self.details.get("type", self.name)

    @property
    def task_type(self) -> str:
        return TASK_TYPES.get(self.kind, self.kind.upper())

    @property
    def category(self) -> str:
        kind = self.kind
        if kind == MARKER_KIND:
            return "marker"
        if kind in SYNC_KINDS:
            return "sync"
        if kind in COPY_KINDS or "direction" in self.details:
            return "copy"
        if kind.startswith("hccl") or "communicator" in self.details:
            return "communication"
        return "compute"

    @property
    def bandwidth(self) -> float | None:
        """GB/s (10^9 bytes per second) for tasks that move bytes."""
        n = self.nbytes
        if not n or self.end <= self.start:
            return None
        return n / (self.end - self.start)


@dataclass(slots=True)
class HostCall:
    """An API call on a host thread (level "acl": the pyACL facade, "npurt": the Pythonic API)."""

    thread: int
    level: str
    name: str
    start: int
    end: int


@dataclass(slots=True)
class HostCopy:
    """A synchronous copy or set that ran in a host thread (acl.rt.memcpy, memset, ...)."""

    thread: int
    op: str
    direction: str
    nbytes: int
    start: int
    end: int

    @property
    def name(self) -> str:
        return f"{self.op} {self.direction}" if self.op != "memset" else "memset"

    @property
    def bandwidth(self) -> float | None:
        return self.nbytes / (self.end - self.start) if self.end > self.start and self.nbytes else None


@dataclass(slots=True)
class Range:
    """A user range (npurt.profiler.range, acl.prof push/pop or range_start/stop) on the host,
    a step between two step timestamps on a stream, or one replay of an ACL graph on one of its
    streams (device and stream set; mark_id: the graph's handle)."""

    name: str
    start: int
    end: int
    thread: int | None
    kind: str                 # "push/pop", "start/end" (msproftx event types), "step" or "graph"
    mark_id: int = 0
    device: int | None = None
    stream: int | None = None


@dataclass(slots=True)
class Mark:
    """An instant marker: on a host thread (acl.prof.mark, npurt.profiler.mark) or, for
    acl.prof.mark_ex, also where its marker task ran on the stream."""

    name: str
    ts: int
    thread: int
    mark_id: int = 0


@dataclass
class Timeline:
    t0: int                                   # perf_counter_ns at the start of the profile
    duration: int                             # ns from start to stop
    soc: str
    pid: int
    devices: list[int] = field(default_factory=list)
    streams: dict = field(default_factory=dict)   # (device, stream) -> True if default stream
    threads: dict = field(default_factory=dict)   # host thread id -> name
    tasks: list[TaskSpan] = field(default_factory=list)
    calls: list[HostCall] = field(default_factory=list)
    host_copies: list[HostCopy] = field(default_factory=list)
    ranges: list[Range] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    memory: dict = field(default_factory=dict)    # device -> [(t, bytes allocated)]

    def tasks_on(self, device: int, stream: int | None = None) -> list[TaskSpan]:
        return [t for t in self.tasks if t.device == device and (stream is None or t.stream == stream)]

    def by_flow(self) -> dict:
        return {t.flow: t for t in self.tasks}

    def find(self, device: int, stream: int, seq: int) -> TaskSpan | None:
        for t in self.tasks:
            if t.seq == seq and t.stream == stream and t.device == device:
                return t
        return None


def build(collector, *, soc: str, pid: int, baseline: dict) -> Timeline:
    """The Timeline of a stopped collector. `baseline`: device id -> bytes allocated at start."""
    t0 = collector.t0
    tl = Timeline(t0=t0, duration=collector.stopped_at - t0, soc=soc, pid=pid, threads=dict(collector.threads))
    tasks = []
    for (dev, sid, default, seq, kind, details, t_enq, tid, blocked, t_start, t_end, err) in list(collector.tasks):
        name = details.get("name") or kind
        tasks.append(TaskSpan(dev, sid, seq, kind, str(name), t_start - t0, t_end - t0, t_enq - t0, tid,
                              None if blocked is None else blocked[0] - t0, None if blocked is None else blocked[1],
                              details, err))
        tl.streams[(dev, sid)] = default
    tasks.sort(key=lambda t: (t.start, t.device, t.stream, t.seq))
    for i, t in enumerate(tasks, 1):
        t.flow = i
    tl.tasks = tasks
    tl.calls = [HostCall(tid, level, name, a - t0, b - t0) for tid, level, name, a, b in list(collector.calls)]
    tl.calls.sort(key=lambda c: c.start)
    tl.host_copies = [HostCopy(tid, op, d, n, a - t0, b - t0) for tid, op, d, n, a, b in list(collector.host_copies)]
    for kind, tid, name, a, b, extra in list(collector.marks):
        if kind == "mark":
            tl.marks.append(Mark(name, a - t0, tid, extra))
        else:
            tl.ranges.append(Range(name, a - t0, b - t0, tid, kind, extra))
    tl.ranges.extend(_steps(tasks))
    tl.ranges.extend(_graph_replays(tasks))
    tl.ranges.sort(key=lambda r: r.start)
    memory: dict = {}
    level = dict(baseline)
    for t, dev, delta in sorted(list(collector.memory)):
        level[dev] = level.get(dev, 0) + delta
        memory.setdefault(dev, [(0, baseline.get(dev, 0))]).append((t - t0, level[dev]))
    tl.memory = memory
    tl.devices = sorted({t.device for t in tasks} | set(memory))
    return tl


def _steps(tasks: list[TaskSpan]) -> list[Range]:
    """Steps between the marker tasks of acl.prof.get_step_timestamp (START, then END, per
    step info), timed where the markers ran on the device."""
    open_steps: dict = {}
    steps = []
    for t in tasks:
        step = t.details.get("step") if t.kind == MARKER_KIND else None
        if step is None:
            continue
        info, index, tag = step
        if tag == 0:
            open_steps[info] = t
        else:
            begin = open_steps.pop(info, None)
            if begin is not None:
                steps.append(Range(f"step {index}", begin.start, t.end, None, "step", info, t.device, t.stream))
    return steps


def _graph_replays(tasks: list[TaskSpan]) -> list[Range]:
    """One range per replay of an ACL graph per stream it ran on, between the replay's marker
    tasks (runtime/graph.py ReplayMarkTask): its tasks are the stream's tasks inside it."""
    open_replays: dict = {}
    out = []
    for t in sorted(tasks, key=lambda t: (t.device, t.stream, t.seq)):
        info = t.details.get("graph replay") if t.kind == MARKER_KIND else None
        if info is None:
            continue
        handle, replay, edge, _count = info
        key = (t.device, t.stream, handle, replay)
        if edge == 0:
            open_replays[key] = t
        else:
            begin = open_replays.pop(key, None)
            if begin is not None:
                out.append(Range(f"graph {handle:#x} replay {replay}", begin.start, t.end, None, "graph", handle,
                                 t.device, t.stream))
    return out
