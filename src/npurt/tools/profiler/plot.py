"""The timeline as a picture: `npurt plot OUT_DIR -o timeline.png` (matplotlib, `npurt[plot]`).

Reads the trace (msprof.json) a profile wrote and draws one row per stream of each device
(tasks as bars coloured by what they are: each kernel op its own colour, copies by
direction, event records and waits grey; the time a stream sat parked on a wait hatched;
names written on bars long enough to hold them; steps bracketed above their stream) and,
above them, one row per host thread with its API calls and user ranges. Thin grey lines
join an event's record to the waits it released. The time axis is milliseconds since the
profile started; `window` (ms) or a range's name zooms in.
"""
from __future__ import annotations

import glob
import json
import os

from ...progress import progress
from .session import TRACE_FILE
from .timeline import MARKER_KIND
from .trace import HOST_PID

_COPY_COLOURS = {"H2D": "#1f77b4", "D2H": "#2ca02c", "D2D": "#17becf", "H2H": "#7f7f7f"}
_OP_COLOURS = ["#ff7f0e", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#ff9896", "#c5b0d5",
               "#c49c94", "#f7b6d2", "#dbdb8d", "#ffbb78"]
_SYNC = {"record_event", "stream_wait_event", "reset_event", "nop"}


class PlotError(Exception):
    """The trace cannot be found or read, or matplotlib is missing."""


def find_trace(path: str) -> str:
    """The trace file for `path`: the file itself, DIR/msprof.json, or the newest one under
    DIR/PROF_*/mindstudio_profiler_output/ (what acl.prof writes)."""
    if os.path.isfile(path):
        return path
    if not os.path.isdir(path):
        raise PlotError(f"{path} does not exist; pass a profile directory (npurt run --profile DIR, "
                        "npurt demo --profile DIR, npurt.profiler.profile(DIR)) or its msprof.json")
    direct = os.path.join(path, TRACE_FILE)
    if os.path.isfile(direct):
        return direct
    found = sorted(glob.glob(os.path.join(path, "PROF_*", "mindstudio_profiler_output", TRACE_FILE)),
                   key=os.path.getmtime)
    if found:
        return found[-1]
    raise PlotError(f"no {TRACE_FILE} in {path} (nor in {path}/PROF_*/mindstudio_profiler_output/)")


def _load(path: str) -> list[dict]:
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        raise PlotError(f"cannot read the trace {path}: {exc}") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise PlotError(f"{path} is not a Chrome trace (no traceEvents list)")
    return events


def _colour_of(e: dict, ops: dict) -> tuple[str, str]:
    """(legend label, colour) of a device event."""
    cat, name = e.get("cat", ""), e.get("name", "")
    if cat == "wait":
        return "waiting on an event", "#f2f2f2"
    if cat in _SYNC:
        return "event record / wait", "#a0a0a0"
    direction = (e.get("args") or {}).get("direction")
    if direction in _COPY_COLOURS:
        return f"copy {direction}", _COPY_COLOURS[direction]
    if cat == "memset_async":
        return "memset", "#aec7e8"
    label = name if cat == "kernel" else cat
    if label not in ops:
        ops[label] = _OP_COLOURS[len(ops) % len(_OP_COLOURS)]
    return label, ops[label]


def _window(events, window, range_name):
    if range_name is not None:
        spans = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("msproftx", "step")
                 and e.get("name") == range_name]
        if not spans:
            names = sorted({e.get("name") for e in events if e.get("cat") in ("msproftx", "step") and e.get("ph") == "X"})
            raise PlotError(f"no range named {range_name!r} in the trace; ranges: {', '.join(names) or 'none'}")
        e = spans[-1]
        return e["ts"] / 1000, (e["ts"] + e["dur"]) / 1000
    if window is not None:
        return window
    xs = [e for e in events if e.get("ph") == "X"]
    if not xs:
        raise PlotError("the trace has no spans to draw (did the profile collect any work?)")
    # the idle time at both ends (start-up before the first task, a wait after the last) is
    # trimmed: the window is the device's work (everything, when no task ran), padded 2 %
    work = [e for e in xs if e["pid"] != HOST_PID and e.get("cat") not in ("wait", "msproftx", "step")] or xs
    lo, hi = min(e["ts"] for e in work) / 1000, max(e["ts"] + e["dur"] for e in work) / 1000
    pad = (hi - lo) * 0.02 or 0.01
    return lo - pad, hi + pad


FORMATS = (".png", ".svg", ".pdf")


def picture_path(out: str) -> str:
    """The file `npurt plot` writes for `-o out`: out itself for .png, .svg or .pdf, out.png for
    a name without an extension; PlotError for another extension (one line, before any work)."""
    ext = os.path.splitext(out)[1].lower()
    if not ext:
        return out + ".png"
    if ext not in FORMATS:
        raise PlotError(f"cannot draw {out!r}: {ext} is not a picture format npurt plot writes "
                        f"({', '.join(FORMATS)})")
    return out


def plot(path: str, out: str, *, window: tuple[float, float] | None = None, range_name: str | None = None,
         host: bool = True, title: str | None = None) -> str:
    """Draw the trace at `path` (a profile directory or msprof.json) into the picture `out`
    (.png, .svg, .pdf; no extension: .png); returns the path written. The whole profile is
    drawn with the idle time at both ends trimmed; event flows (record -> released wait) are
    drawn as arrows only in a zoomed view (`window` or `range_name`), where they can be told
    apart."""
    out = picture_path(out)
    with progress("npurt plot: reading the trace", total=3) as shown:
        return _plot(shown, path, out, window, range_name, host, title)


def _plot(shown, path, out, window, range_name, host, title) -> str:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        raise PlotError("npurt plot needs matplotlib: pip install 'npurt[plot]'") from None
    trace_path = find_trace(path)
    events = _load(trace_path)
    shown.advance(description=f"npurt plot: drawing {len(events)} events")
    lo, hi = _window(events, window, range_name)
    if hi <= lo:
        raise PlotError(f"the time window {lo:g}..{hi:g} ms is empty")
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") in ("thread_name",)}
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}

    def visible(e):
        return e.get("ph") == "X" and e["ts"] / 1000 < hi and (e["ts"] + e["dur"]) / 1000 > lo

    spans = [e for e in events if visible(e)]
    level = _levels([e for e in spans if e.get("cat") in ("msproftx", "step", "graph_replay")])

    def row_of(e):
        if e.get("cat") in ("msproftx", "step", "graph_replay"):  # ranges, steps, replays: a row per level
            lv = level[id(e)]
            return (e["pid"], e["tid"], ("ranges" if e["pid"] == HOST_PID else "steps") + (f" {lv + 1}" if lv else ""))
        return (e["pid"], e["tid"], "")

    order = lambda r: (r[0], r[1], r[2] == "", r[2])  # noqa: E731 - ranges above their thread or stream
    device_rows = sorted({row_of(e) for e in spans if e["pid"] != HOST_PID}, key=order)
    host_rows = sorted({row_of(e) for e in spans if e["pid"] == HOST_PID and e.get("cat") != "enqueue"},
                       key=order) if host else []
    rows = host_rows + device_rows
    if not rows:
        raise PlotError("nothing ran in the chosen window")
    y_of = {r: len(rows) - 1 - i for i, r in enumerate(rows)}
    fig_h = 1.9 + 0.42 * len(rows)
    fig, ax = plt.subplots(figsize=(14, fig_h), dpi=110)
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_autoscale_on(False)  # the limits are known: autoscaling after each bar made big traces quadratic
    width_ms = hi - lo
    ops: dict = {}
    legend: dict = {}
    bars: dict = {}  # (y range, style) -> x ranges: one collection per row and style, not one per span

    def bar(x0, w, yrange, **style):
        bars.setdefault((yrange, tuple(style.items())), []).append((x0, w))
    for e in spans:
        row = row_of(e)
        if row not in y_of:
            continue
        y = y_of[row]
        x0, w = e["ts"] / 1000, max(e["dur"] / 1000, width_ms / 4000)
        if row[2]:  # user ranges, steps: brackets with their names
            bar(x0, w, (y - 0.12, 0.24), facecolors="#4d4d4d")
            _label(ax, e["name"], x0, w, y + 0.15, lo, hi, width_ms, size=7, colour="#222222", above=True)
            continue
        if e["pid"] == HOST_PID:
            if e.get("cat") == "host_copy":  # a strip at the bottom of the call that made it
                direction = e["name"].rsplit(" ", 1)[-1]
                bar(x0, w, (y - 0.3, 0.18), facecolors=_COPY_COLOURS.get(direction, "#aec7e8"))
                legend.setdefault("synchronous copy (host thread)", _COPY_COLOURS.get(direction, "#aec7e8"))
                continue
            bar(x0, w, (y - 0.3, 0.6), facecolors="#d0d0d0", edgecolor="#8c8c8c", linewidth=0.3)
            _label(ax, e["name"].rsplit(".", 1)[-1], x0, w, y + 0.05, lo, hi, width_ms, size=6)
            continue
        if e.get("cat") == MARKER_KIND:
            ax.plot([x0], [y + 0.42], marker="v", color="#333333", markersize=5)
            _label(ax, e["name"], x0 - width_ms / 30, width_ms / 15, y + 0.45, lo, hi, width_ms, size=6,
                   colour="#333333", above=True)
            legend.setdefault("marker (mark_ex, step)", "#333333")
            continue
        label, colour = _colour_of(e, ops)
        legend.setdefault(label, colour)
        if e.get("cat") == "wait":
            bar(x0, w, (y - 0.35, 0.7), facecolors=colour, edgecolor="#909090", hatch="////",
                           linewidth=0.4)
            continue
        bar(x0, w, (y - 0.35, 0.7), facecolors=colour, edgecolor="white", linewidth=0.3)
        _label(ax, _short(e), x0, w, y, lo, hi, width_ms, size=7)
    for (yrange, style), xranges in bars.items():
        ax.broken_barh(xranges, yrange, **dict(style))
    for e in events:  # host marks (acl.prof.mark, npurt.profiler.mark): triangles over their thread's row
        if e.get("ph") == "i" and e["pid"] == HOST_PID and lo <= e["ts"] / 1000 <= hi:
            row = (e["pid"], e["tid"], "")
            if row in y_of:
                x = e["ts"] / 1000
                ax.plot([x], [y_of[row] + 0.42], marker="v", color="#333333", markersize=5)
                _label(ax, e["name"], x - width_ms / 30, width_ms / 15, y_of[row] + 0.45, lo, hi, width_ms, size=6,
                       colour="#333333", above=True)
    # event record -> released wait: only when zoomed (over a whole profile they are a grey fog)
    flows: dict = {}
    for e in events if (window is not None or range_name is not None) else ():
        if e.get("cat") == "event" and e.get("ph") in ("s", "f"):
            flows.setdefault(e["id"], {})[e["ph"]] = e
    for pair in flows.values():
        s, f = pair.get("s"), pair.get("f")
        src, dst = (s["pid"], s["tid"], ""), (f["pid"], f["tid"], "") if s and f else (None, None)
        if s and f and src in y_of and dst in y_of:
            xs, xf = s["ts"] / 1000, f["ts"] / 1000
            if lo <= xf <= hi or lo <= xs <= hi:
                ax.annotate("", xy=(xf, y_of[dst]), xytext=(xs, y_of[src]),
                            arrowprops={"arrowstyle": "->", "color": "#7f7f7f", "linewidth": 0.6, "alpha": 0.7})
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([_row_label(rows[len(rows) - 1 - i], names, procs) for i in range(len(rows))], fontsize=8)
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("ms since the profile started")
    ax.grid(axis="x", color="#e5e5e5", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if host_rows and device_rows:
        ax.axhline(len(device_rows) - 0.5, color="#bbbbbb", linewidth=0.8)
    handles = [Patch(facecolor=c, edgecolor="#909090", hatch="////" if l == "waiting on an event" else None, label=l)
               for l, c in legend.items()]
    legend_h = 0.35 * (1 + (len(handles) - 1) // 7) if handles else 0
    if handles:
        fig.legend(handles=handles, loc="lower center", ncol=min(7, len(handles)), fontsize=8, frameon=False)
    ax.set_title(title or f"npurt profile: {os.path.dirname(os.path.abspath(trace_path))}", fontsize=10, loc="left")
    fig.tight_layout(rect=(0, legend_h / fig_h, 1, 1))
    shown.advance(description=f"npurt plot: writing {os.path.basename(out)}")
    try:
        fig.savefig(out)
    except OSError as exc:
        raise PlotError(f"cannot write {out}: {exc.strerror}") from None
    finally:
        plt.close(fig)
    return out


def _levels(spans: list[dict]) -> dict:
    """id(span) -> nesting level, so that ranges of one thread (or steps of one stream) that
    overlap are drawn on separate lines."""
    out, ends = {}, {}
    for e in sorted(spans, key=lambda e: (e["ts"], -e["dur"])):
        row = ends.setdefault((e["pid"], e["tid"], e.get("cat")), [])
        for lv, end in enumerate(row):
            if end <= e["ts"]:
                row[lv] = e["ts"] + e["dur"]
                out[id(e)] = lv
                break
        else:
            out[id(e)] = len(row)
            row.append(e["ts"] + e["dur"])
    return out


def _row_label(row, names, procs) -> str:
    pid, tid, part = row
    proc = procs.get(pid, f"process {pid}")
    suffix = f" {part}" if part else ""
    if pid == HOST_PID:
        return f"host {names.get((pid, tid), f'thread {tid}')}{suffix}"
    return f"{proc.split(' (')[0]} {names.get((pid, tid), f'stream {tid}')}{suffix}"


def _short(e: dict) -> str:
    """What to write on a bar: a copy's direction and size, else the task's name."""
    args = e.get("args") or {}
    if "direction" in args and "bytes" in args:
        n = args["bytes"]
        size = f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 1024:.0f} KiB" if n >= 1024 else f"{n} B"
        return f"{args['direction']} {size}"
    return e.get("name", "")


def _label(ax, text, x0, w, y, lo, hi, width_ms, size=7, colour="black", above=False) -> None:
    """Write `text` on a bar when the visible part of the bar is wide enough to hold it."""
    a, b = max(x0, lo), min(x0 + w, hi)
    chars = (b - a) / width_ms * 250  # ~250 characters of size 7 across the axes
    if chars < 4:
        return
    if len(text) > chars:
        text = text[: int(chars) - 1] + "…"
    ax.text((a + b) / 2, y, text, ha="center", va="center" if not above else "bottom", fontsize=size,
            color=colour, clip_on=True)
