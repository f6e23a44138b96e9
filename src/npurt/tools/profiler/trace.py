"""The timeline as a Chrome trace-event JSON file (what Perfetto and chrome://tracing open).

Layout (msprof's timeline has the same parts):

| process (pid) | threads (tid) | events |
| --- | --- | --- |
| "Host" (pid 0) | one per host thread, named as the thread | API calls ("X", cat "acl" / "npurt"), synchronous copies (cat "host_copy"), user ranges (cat "msproftx"), instant marks, enqueue points |
| "NPU <id>" (pid 1 + device id) | one per stream, "Stream <id>" | tasks ("X", cat = task kind, name = kernel name, copy direction, ...), waits ("X", cat "wait"), steps (cat "step"), graph replays (cat "graph_replay": one per replay per stream, over its tasks), marker tasks; a counter of allocated device memory |

Flow arrows ("s" / "f" pairs): cat "enqueue" from the host call that enqueued a task to the
task; cat "event" from an event's record task to each wait it released. Timestamps are
microseconds since the profile started, with nanosecond digits (`ts` 12.345 is 12345 ns).
"""
from __future__ import annotations

import bisect
import json
import os

from .timeline import MARKER_KIND, Timeline

HOST_PID = 0
EVENT_FLOW_BASE = 1 << 32  # event flows' ids: the wait's flow id plus this


def device_pid(device: int) -> int:
    return 1 + device


def _us(ns: int) -> float:
    return round(ns / 1000, 3)


def task_args(t) -> dict:
    args = {"stream": t.stream, "task id": t.seq, "kind": t.kind, "task type": t.task_type,
            "enqueued (us)": _us(t.enqueued)}
    if t.blocked is not None:
        args["waited (us)"] = _us(t.start - t.blocked)
        args["waiting on"] = t.waiting_on
    for key, value in t.details.items():
        if key not in ("name",) and isinstance(value, (int, float, str, bool)):
            args[key] = value
    bw = t.bandwidth
    if bw is not None:
        args["bandwidth (GB/s)"] = round(bw, 3)
    if t.error is not None:
        args["error"] = t.error
    return args


def events(tl: Timeline) -> list[dict]:
    """The trace events of a timeline (metadata first)."""
    out: list[dict] = []
    tid_of = {tid: i for i, tid in enumerate(sorted(tl.threads), 1)}  # small stable thread numbers

    def host_tid(tid):
        if tid not in tid_of:
            tid_of[tid] = len(tid_of) + 1
        return tid_of[tid]

    # ---- metadata: names and order of processes and threads
    out.append({"ph": "M", "name": "process_name", "pid": HOST_PID, "args": {"name": f"Host (pid {tl.pid})"}})
    out.append({"ph": "M", "name": "process_sort_index", "pid": HOST_PID, "args": {"sort_index": 0}})
    for dev in tl.devices:
        pid = device_pid(dev)
        out.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"NPU {dev} ({tl.soc}, simulated)"}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}})
    for (dev, sid), default in sorted(tl.streams.items()):
        label = f"Stream {sid}" + (" (default)" if default else "")
        out.append({"ph": "M", "name": "thread_name", "pid": device_pid(dev), "tid": sid, "args": {"name": label}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": device_pid(dev), "tid": sid,
                    "args": {"sort_index": sid}})
    # ---- host: API calls, synchronous copies, ranges, marks
    for c in tl.calls:
        out.append({"ph": "X", "cat": c.level, "name": c.name, "pid": HOST_PID, "tid": host_tid(c.thread),
                    "ts": _us(c.start), "dur": _us(c.end - c.start)})
    for h in tl.host_copies:
        args = {"bytes": h.nbytes}
        if h.bandwidth is not None:
            args["bandwidth (GB/s)"] = round(h.bandwidth, 3)
        out.append({"ph": "X", "cat": "host_copy", "name": h.name, "pid": HOST_PID, "tid": host_tid(h.thread),
                    "ts": _us(h.start), "dur": _us(h.end - h.start), "args": args})
    for r in tl.ranges:
        if r.kind == "step":
            out.append({"ph": "X", "cat": "step", "name": r.name, "pid": device_pid(r.device), "tid": r.stream,
                        "ts": _us(r.start), "dur": _us(r.end - r.start), "args": {"step info": r.mark_id}})
        elif r.kind == "graph":  # one replay of an ACL graph on this stream, over its tasks
            inside = [t for t in tl.tasks if t.device == r.device and t.stream == r.stream
                      and t.kind != MARKER_KIND and r.start <= t.start and t.end <= r.end]
            out.append({"ph": "X", "cat": "graph_replay", "name": r.name, "pid": device_pid(r.device),
                        "tid": r.stream, "ts": _us(r.start), "dur": _us(r.end - r.start),
                        "args": {"graph": f"{r.mark_id:#x}", "tasks": len(inside)}})
        else:
            out.append({"ph": "X", "cat": "msproftx", "name": r.name, "pid": HOST_PID, "tid": host_tid(r.thread),
                        "ts": _us(r.start), "dur": _us(r.end - r.start),
                        "args": {"event type": r.kind, "mark id": r.mark_id}})
    for m in tl.marks:
        out.append({"ph": "i", "s": "t", "cat": "msproftx", "name": m.name, "pid": HOST_PID,
                    "tid": host_tid(m.thread), "ts": _us(m.ts), "args": {"mark id": m.mark_id}})
    # ---- devices: tasks, waits, flows
    inside_call = _call_index(tl)
    by_record = {(t.device, t.stream, t.seq): t for t in tl.tasks if t.kind == "record_event"}
    for t in tl.tasks:
        pid = device_pid(t.device)
        if t.blocked is not None and t.start > t.blocked:
            out.append({"ph": "X", "cat": "wait", "name": f"wait: {t.name}", "pid": pid, "tid": t.stream,
                        "ts": _us(t.blocked), "dur": _us(t.start - t.blocked),
                        "args": {"waiting on": t.waiting_on, "task id": t.seq}})
        if t.kind == MARKER_KIND:
            if "graph replay" in t.details:  # drawn as the replay's range (above), not as a mark
                continue
            out.append({"ph": "i", "s": "t", "cat": "msproftx", "name": t.name, "pid": pid, "tid": t.stream,
                        "ts": _us(t.start), "args": task_args(t)})
        out.append({"ph": "X", "cat": t.kind, "name": t.name, "pid": pid, "tid": t.stream, "ts": _us(t.start),
                    "dur": _us(t.duration), "args": task_args(t)})
        # enqueue -> execution; a flow binds to a slice, so an enqueue outside any recorded
        # host call gets a tiny slice of its own
        htid = host_tid(t.thread)
        if not inside_call(t.thread, t.enqueued):
            out.append({"ph": "X", "cat": "enqueue", "name": f"enqueue {t.name}", "pid": HOST_PID, "tid": htid,
                        "ts": _us(t.enqueued), "dur": 0.001})
        out.append({"ph": "s", "cat": "enqueue", "name": "enqueue", "id": t.flow, "pid": HOST_PID, "tid": htid,
                    "ts": _us(t.enqueued)})
        out.append({"ph": "f", "bp": "e", "cat": "enqueue", "name": "enqueue", "id": t.flow, "pid": pid,
                    "tid": t.stream, "ts": _us(t.start)})
        record = t.details.get("record") if t.kind == "stream_wait_event" else None
        source = by_record.get(tuple(record)) if record is not None else None
        if source is not None:
            fid = EVENT_FLOW_BASE + t.flow
            out.append({"ph": "s", "cat": "event", "name": "event", "id": fid, "pid": device_pid(source.device),
                        "tid": source.stream, "ts": _us(source.start)})
            out.append({"ph": "f", "bp": "e", "cat": "event", "name": "event", "id": fid, "pid": pid,
                        "tid": t.stream, "ts": _us(t.start)})
    for dev, samples in tl.memory.items():
        for ts, level in samples:
            out.append({"ph": "C", "name": "device memory", "pid": device_pid(dev), "ts": _us(ts),
                        "args": {"allocated (MiB)": round(level / 2**20, 3)}})
    for tid, i in tid_of.items():
        out.append({"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": i,
                    "args": {"name": tl.threads.get(tid, f"thread {tid}")}})
    return out



def _call_index(tl: Timeline):
    """inside(thread, ts): whether a recorded host call on that thread spans ts."""
    spans: dict = {}
    for c in tl.calls:
        spans.setdefault(c.thread, []).append((c.start, c.end))
    starts = {tid: [s for s, _ in v] for tid, v in spans.items()}

    def inside(tid, ts) -> bool:
        v = spans.get(tid)
        if not v:
            return False
        i = bisect.bisect_right(starts[tid], ts) - 1
        return i >= 0 and v[i][0] <= ts <= v[i][1]
    return inside


def write(tl: Timeline, path: str) -> str:
    """Write the trace JSON to `path`; returns the path."""
    doc = {"traceEvents": events(tl), "displayTimeUnit": "ms",
           "otherData": {"producer": "npurt profiler", "soc": tl.soc, "pid": tl.pid,
                         "clock": "time.perf_counter_ns", "start_ns": tl.t0, "duration_us": _us(tl.duration)}}
    tmp = path + ".tmp"
    text = json.dumps(doc, separators=(",", ":"))  # dumps uses the C encoder; dump(f) the Python one
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return path
