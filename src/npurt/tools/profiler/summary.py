"""Summaries of a timeline: the msprof-style CSV tables and the terminal report.

| file | one row per | key columns (msprof's where msprof has the table) |
| --- | --- | --- |
| op_summary.csv | task that did work (not event records/waits, not markers) | Device_id, Task ID, Stream ID, Op Name, OP Type, Task Type, Task Start Time(us), Task Duration(us), Task Wait Time(us), Block Dim, Bytes, Bandwidth(GB/s) |
| op_statistic.csv | op type (kernel op, copy direction, ...) per device; synchronous copies under Device_id "host" | OP Type, Core Type, Count, Total Time(us), Min Time(us), Avg Time(us), Max Time(us), Ratio(%), Bytes, Bandwidth(GB/s) |
| task_time.csv | task, every kind | kernel_name, kernel_type, stream_id, task_id, task_time(us), task_start(us), task_stop(us) |
| api_statistic.csv | host API (acl.* or npurt.*) | Level, API Name, Time(us), Count, Avg(us), Min(us), Max(us), Variance |
| msprof_tx.csv | user range or mark | pid, tid, event_type, Start_time(us), End_time(us), message, mark_id |
| stream_summary.csv | stream (npurt's) | Task Count, Busy Time(us), Busy(%), Wait Time(us), Overlapped(us) |
| overlap.csv | device and step: the whole profile ("all"), each user range, each step (npurt's) | Duration(us), Busy(us), Overlapped(us), Computing(us), Copying(us), Compute/Copy Overlapped(us), Communication(us), Free(us) |
| idle_gaps.csv | the largest gaps in a stream's work: between two of its tasks, or from its first task's enqueue to its start (npurt's) | Start(us), Duration(us), Next Task, Reason |

Definitions: a stream is busy while one of its tasks runs (waits parked on an event are not
busy). Busy(%) is busy time over the device's window, from its first task's start to its
last task's end. Overlapped is the time during which at least two streams of the device
were busy at once (for two streams: the time both were). Computing, Copying and
Communication are the busy time of compute, copy and collective tasks (see timeline.py),
Compute/Copy Overlapped the time compute and copies ran together, Free the window's time
when no stream was busy. Times are microseconds since the
profile started, as in the trace.
"""
from __future__ import annotations

import bisect
import csv
import os
import statistics

from .timeline import MARKER_KIND, SYNC_KINDS, Timeline

GAPS_KEPT = 20


def _us(ns) -> str:
    return f"{ns / 1000:.3f}"


def _gbps(v) -> str:
    return "N/A" if v is None else f"{v:.3f}"


# ---------------------------------------------------------------- interval arithmetic
def union(spans) -> list[tuple[int, int]]:
    """Merged, sorted, non-overlapping intervals covering `spans`."""
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1][1] = b
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def measure(spans) -> int:
    return sum(b - a for a, b in spans)


def intersect(x, y) -> list[tuple[int, int]]:
    """Intersection of two merged interval lists."""
    out, i, j = [], 0, 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if a < b:
            out.append((a, b))
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


def clip(spans, lo: int, hi: int) -> list[tuple[int, int]]:
    """The part of a merged (sorted, disjoint) interval list inside [lo, hi)."""
    i = bisect.bisect_right(spans, (lo, lo)) - 1  # the last interval starting at or before lo
    i = max(i, 0)
    out = []
    for a, b in spans[i:]:
        if a >= hi:
            break
        if b > lo:
            out.append((max(a, lo), min(b, hi)))
    return out


def at_least_two(per_stream: list[list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """The time during which at least two of the (merged) interval lists are busy."""
    edges = sorted([(a, 1) for spans in per_stream for a, _ in spans] + [(b, -1) for spans in per_stream for _, b in spans])
    out, level, since = [], 0, 0
    for t, step in edges:
        before = level
        level += step
        if before < 2 <= level:
            since = t
        elif before >= 2 > level and t > since:
            out.append((since, t))
    return union(out)


# ---------------------------------------------------------------- tables
def _work(t) -> bool:
    return t.kind not in SYNC_KINDS and t.kind != MARKER_KIND


def _wait_times(tl: Timeline) -> dict:
    """Task Wait Time: the gap between a task's start and the end of the previous task of
    its stream (0 for the first), keyed by flow id."""
    last: dict = {}
    out = {}
    for t in tl.tasks:
        key = (t.device, t.stream)
        prev = last.get(key)
        out[t.flow] = max(0, t.start - prev) if prev is not None else 0
        last[key] = max(t.end, prev or 0)
    return out


def op_summary(tl: Timeline):
    head = ["Device_id", "Model Name", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "Task Type",
            "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Dim", "Bytes",
            "Bandwidth(GB/s)", "Error"]
    waits = _wait_times(tl)
    rows = []
    for t in tl.tasks:
        if not _work(t):
            continue
        d = t.details
        rows.append([t.device, d.get("model_name", "N/A"), d.get("model_id", "N/A"), t.seq, t.stream, t.name,
                     t.op_type, t.task_type, _us(t.start), _us(t.duration), _us(waits[t.flow]),
                     t.blocks if t.blocks is not None else "N/A", t.nbytes if t.nbytes is not None else "N/A",
                     _gbps(t.bandwidth), t.error if t.error is not None else ""])
    return head, rows


def task_time(tl: Timeline):
    head = ["Device_id", "kernel_name", "kernel_type", "stream_id", "task_id", "task_time(us)", "task_start(us)",
            "task_stop(us)"]
    rows = [[t.device, t.name, t.task_type, t.stream, t.seq, _us(t.duration), _us(t.start), _us(t.end)]
            for t in tl.tasks]
    return head, rows


def _stat_row(durations: list[int], total_all: int, nbytes: int):
    total = sum(durations)
    return [len(durations), _us(total), _us(min(durations)), _us(total / len(durations)), _us(max(durations)),
            f"{100 * total / total_all:.2f}" if total_all else "0.00", nbytes if nbytes else "N/A",
            _gbps(nbytes / total if nbytes and total else None)]


def op_statistic(tl: Timeline):
    head = ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
            "Max Time(us)", "Ratio(%)", "Bytes", "Bandwidth(GB/s)"]
    groups: dict = {}
    for t in tl.tasks:
        if _work(t):
            g = groups.setdefault((t.device, t.op_type, t.task_type), [[], 0])
            g[0].append(t.duration)
            g[1] += t.nbytes or 0
    for h in tl.host_copies:
        g = groups.setdefault(("host", h.name, "HOST_COPY"), [[], 0])
        g[0].append(h.end - h.start)
        g[1] += h.nbytes
    totals: dict = {}
    for (dev, _, _), (durs, _) in groups.items():
        totals[dev] = totals.get(dev, 0) + sum(durs)
    rows = []
    for (dev, op, core), (durs, nbytes) in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), -sum(kv[1][0]))):
        rows.append([dev, op, core, *_stat_row(durs, totals[dev], nbytes)])
    return head, rows


def api_statistic(tl: Timeline):
    head = ["Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)", "Variance"]
    groups: dict = {}
    for c in tl.calls:
        groups.setdefault((c.level, c.name), []).append(c.end - c.start)
    rows = []
    for (level, name), durs in sorted(groups.items(), key=lambda kv: -sum(kv[1])):
        us = [d / 1000 for d in durs]
        rows.append(["host", level, name, _us(sum(durs)), len(durs), _us(sum(durs) / len(durs)), _us(min(durs)),
                     _us(max(durs)), f"{statistics.pvariance(us):.3f}"])
    return head, rows


def msprof_tx(tl: Timeline):
    head = ["pid", "tid", "category", "event_type", "payload_type", "payload_value", "Start_time(us)",
            "End_time(us)", "message_type", "message", "domain", "mark_id"]
    rows = []
    for r in tl.ranges:
        if r.kind != "step":
            rows.append([tl.pid, r.thread, "N/A", r.kind, "N/A", "N/A", _us(r.start), _us(r.end), "string", r.name,
                         "default", r.mark_id])
    for m in tl.marks:
        rows.append([tl.pid, m.thread, "N/A", "marker", "N/A", "N/A", _us(m.ts), _us(m.ts), "string", m.name,
                     "default", m.mark_id])
    rows.sort(key=lambda r: float(r[6]))
    return head, rows


def _device_window(tasks) -> tuple[int, int]:
    return (min(t.start for t in tasks), max(t.end for t in tasks)) if tasks else (0, 0)


def _busy_by_stream(tasks) -> dict:
    spans: dict = {}
    for t in tasks:
        spans.setdefault(t.stream, []).append((t.start, t.end))
    return {s: union(v) for s, v in spans.items()}


def stream_summary(tl: Timeline):
    head = ["Device_id", "Stream ID", "Task Count", "Busy Time(us)", "Window(us)", "Busy(%)", "Wait Time(us)",
            "Overlapped(us)"]
    rows = []
    for dev in tl.devices:
        tasks = tl.tasks_on(dev)
        if not tasks:
            continue
        lo, hi = _device_window(tasks)
        busy = _busy_by_stream(tasks)
        alone = _alone(busy)
        waited: dict = {}
        count: dict = {}
        for t in tasks:
            count[t.stream] = count.get(t.stream, 0) + 1
            if t.blocked is not None:
                waited[t.stream] = waited.get(t.stream, 0) + t.start - t.blocked
        for sid in sorted(busy):
            mine = measure(busy[sid])
            rows.append([dev, sid, count[sid], _us(mine), _us(hi - lo),
                         f"{100 * mine / (hi - lo):.2f}" if hi > lo else "0.00", _us(waited.get(sid, 0)),
                         _us(mine - alone.get(sid, 0))])
    return head, rows


def _alone(busy: dict) -> dict:
    """stream -> the time it was the only busy stream (its busy time minus that is the time it
    overlapped another), in one sweep over the merged interval lists."""
    edges = sorted([(a, 1, s) for s, v in busy.items() for a, _ in v] + [(b, -1, s) for s, v in busy.items() for _, b in v])
    active: set = set()
    out: dict = {}
    prev = 0
    for t, step, sid in edges:
        if len(active) == 1:
            (only,) = active
            out[only] = out.get(only, 0) + t - prev
        prev = t
        if step > 0:
            active.add(sid)
        else:
            active.discard(sid)
    return out


class _Device:
    """One device's tasks as merged interval lists: per stream, all, compute, copy, and the
    time at least two streams were busy; figures of any window come from these by clipping."""

    def __init__(self, tasks):
        self.busy = _busy_by_stream(tasks)
        self.all = union([s for v in self.busy.values() for s in v])
        self.two = at_least_two(list(self.busy.values()))
        self.computing = union([(t.start, t.end) for t in tasks if t.category == "compute"])
        self.copying = union([(t.start, t.end) for t in tasks if t.category == "copy"])
        self.communication = union([(t.start, t.end) for t in tasks if t.category == "communication"])

    def figures(self, lo: int, hi: int) -> dict:
        """Busy, overlapped, computing, copying, compute/copy overlapped and free time (ns)
        inside [lo, hi)."""
        busy = measure(clip(self.all, lo, hi))
        computing, copying = clip(self.computing, lo, hi), clip(self.copying, lo, hi)
        return {"duration": hi - lo, "busy": busy, "overlapped": measure(clip(self.two, lo, hi)),
                "computing": measure(computing), "copying": measure(copying),
                "communication": measure(clip(self.communication, lo, hi)),
                "compute_copy": measure(intersect(computing, copying)), "free": (hi - lo) - busy}


def overlap_figures(tasks, lo: int, hi: int) -> dict:
    """overlap.csv's figures (ns) of `tasks` (one device) inside [lo, hi)."""
    return _Device(tasks).figures(lo, hi)


def overlap(tl: Timeline):
    head = ["Device_id", "Step", "Start(us)", "Duration(us)", "Busy(us)", "Overlapped(us)", "Computing(us)",
            "Copying(us)", "Compute/Copy Overlapped(us)", "Communication(us)", "Free(us)"]
    rows = []
    for dev in tl.devices:
        tasks = tl.tasks_on(dev)
        if not tasks:
            continue
        d = _Device(tasks)
        windows = [("all", *_device_window(tasks))]
        windows += [(r.name, r.start, r.end) for r in tl.ranges
                    if r.end > r.start and (r.kind != "step" or r.device == dev)]
        for name, lo, hi in windows:
            if not clip(d.all, lo, hi):  # nothing of this device ran in the window
                continue
            f = d.figures(lo, hi)
            rows.append([dev, name, _us(lo), _us(f["duration"]), _us(f["busy"]), _us(f["overlapped"]),
                         _us(f["computing"]), _us(f["copying"]), _us(f["compute_copy"]), _us(f["communication"]),
                         _us(f["free"])])
    return head, rows


def idle_gaps(tl: Timeline, keep: int = GAPS_KEPT):
    head = ["Device_id", "Stream ID", "Start(us)", "Duration(us)", "Next Task ID", "Next Task", "Reason"]
    gaps = []
    last: dict = {}
    for t in tl.tasks:
        key = (t.device, t.stream)
        prev = last.get(key)
        last[key] = t
        begin = t.enqueued if prev is None else prev.end  # a stream's first task: from its enqueue
        if t.start > begin:
            gaps.append((t.start - begin, t, begin))
    gaps.sort(key=lambda g: -g[0])
    busy = {dev: _busy_by_stream(tl.tasks_on(dev)) for dev in {t.device for _, t, _ in gaps[:keep]}}
    rows = []
    for dur, t, start in gaps[:keep]:
        rows.append([t.device, t.stream, _us(start), _us(dur), t.seq, t.name, _gap_reason(t, start, busy[t.device])])
    return head, rows


def _gap_reason(t, start: int, busy: dict) -> str:
    """Why stream t.stream was idle from `start` until task t started."""
    if t.blocked is not None:
        return f"waiting for {t.waiting_on}"
    if t.enqueued > start:
        return f"nothing queued: the host enqueued the next task {(t.enqueued - start) / 1000:.1f} us into the gap"
    others = union([s for sid, v in busy.items() if sid != t.stream for s in v])
    if 2 * measure(intersect([(start, t.start)], others)) >= t.start - start:
        return "queued: the device's workers were running other streams"
    return "queued: scheduling delay (the runtime had not started it yet)"


TABLES = {"op_summary": op_summary, "op_statistic": op_statistic, "task_time": task_time,
          "api_statistic": api_statistic, "msprof_tx": msprof_tx, "stream_summary": stream_summary,
          "overlap": overlap, "idle_gaps": idle_gaps}


def tables(tl: Timeline) -> dict:
    """name -> (header, rows) of every summary table."""
    return {name: fn(tl) for name, fn in TABLES.items()}


def write_csv(tabs: dict, out_dir: str) -> list[str]:
    paths = []
    for name, (head, rows) in tabs.items():
        path = os.path.join(out_dir, f"{name}.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(head)
            w.writerows(rows)
        paths.append(path)
    return paths


# ---------------------------------------------------------------- the terminal report
def human_time_us(value) -> str:
    """Microseconds as a person reads them: 850 us, 12.3 ms, 4.20 s (the CSVs keep msprof's us)."""
    try:
        us = float(value)
    except (TypeError, ValueError):
        return str(value)
    if abs(us) >= 1e6:
        return f"{us / 1e6:.2f} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3g} ms" if abs(us) < 1e5 else f"{us / 1e3:.0f} ms"
    return f"{us:.3g} us" if abs(us) >= 1 or us == 0 else f"{us * 1e3:.3g} ns"


def human_bytes(value) -> str:
    """Bytes as 512 B, 1.5 KiB, 64 MiB."""
    try:
        n = float(value)
    except (TypeError, ValueError):
        return str(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    return str(value)


def _humanised(header: str, value) -> tuple[str, str]:
    """A column of the terminal summary: durations and byte counts in units that read."""
    if header.endswith("(us)"):
        return header[:-4].rstrip(), human_time_us(value)
    if header == "Bytes":
        return header, human_bytes(value)
    return header, str(value)


def _table(head: list, rows: list, cols: list[int]) -> list[str]:
    titles = [_humanised(str(head[c]), "")[0] for c in cols]
    cells = [titles] + [[_humanised(str(head[c]), r[c])[1] for c in cols] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    lines = []
    for k, row in enumerate(cells):
        lines.append("  " + "  ".join(v.rjust(w) if k and _numeric(v.split(" ")[0]) else v.ljust(w)
                                      for v, w in zip(row, widths)).rstrip())
    return lines


def _numeric(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def render(tl: Timeline, tabs: dict, top: int = 10) -> str:
    """A few screens of text: the largest ops, streams, overlap, idle gaps and API calls."""
    n_streams = len(tl.streams)
    lines = [f"npurt profile: {tl.duration / 1e6:.1f} ms, {len(tl.tasks)} tasks on {n_streams} stream"
             f"{'s' if n_streams != 1 else ''} of {len(tl.devices)} device{'s' if len(tl.devices) != 1 else ''} "
             f"(simulated {tl.soc}), {len(tl.calls)} API calls"]
    head, rows = tabs["op_statistic"]
    if rows:
        lines += ["", f"ops by total time (op_statistic, top {top}):"]
        lines += _table(head, sorted(rows, key=lambda r: -float(r[4]))[:top], [0, 1, 2, 3, 4, 6, 8, 10])
    head, rows = tabs["stream_summary"]
    if rows:
        lines += ["", "streams (stream_summary):"]
        lines += _table(head, rows, [0, 1, 2, 3, 5, 6, 7])
    head, rows = tabs["overlap"]
    if rows:
        lines += ["", f"overlap between streams (overlap; the whole profile and up to {top} ranges/steps):"]
        lines += _table(head, rows[:top + 1], [0, 1, 3, 4, 5, 6, 7, 10])
    head, rows = tabs["idle_gaps"]
    if rows:
        lines += ["", "largest idle gaps (idle_gaps):"]
        lines += _table(head, rows[:5], [0, 1, 2, 3, 5, 6])
    head, rows = tabs["api_statistic"]
    if rows:
        lines += ["", f"host API calls (api_statistic, top {top} by time):"]
        lines += _table(head, rows[:top], [1, 2, 4, 3, 5, 7])
    return "\n".join(lines) + "\n"
