"""User markers (msproftx): ranges and marks on host threads, marker tasks on streams.

Host ranges nest per thread (push/pop) or pair by id across threads (start/stop); both end
up as `Range`s in the timeline and rows of msprof_tx.csv. A marker on a stream
(acl.prof.mark_ex, acl.prof.get_step_timestamp) is a task of its own, `MarkerTask`, that
does nothing when it runs: the timeline shows where in the stream's work it ran. It is an
ordinary task to the runtime (the profiler is a tool; the runtime knows nothing of it).
"""
from __future__ import annotations

import itertools
import threading
from time import perf_counter_ns

from ...runtime import Task
from . import session

_ident = threading.get_ident
_ids = itertools.count(1)
_open: dict = {}   # range id -> (session, thread, name, t0, kind)


class _Stack(threading.local):
    def __init__(self):
        self.items: list = []


_stack = _Stack()


class MarkerTask(Task):
    """A no-op task marking a point in a stream for the profiler."""

    __slots__ = ("label", "step")
    kind = "profiler_marker"

    def __init__(self, label: str, step: tuple | None = None):
        self.label, self.step = label, step

    def run(self) -> None:
        pass

    def describe(self) -> str:
        return f"profiler marker {self.label!r}"

    def details(self) -> dict:
        d = {"name": self.label}
        if self.step is not None:
            d["step"] = self.step
        return d


def _collector():
    s = session.ACTIVE
    return None if s is None or not s.markers else s.collector


def start(name: str, kind: str = "start/end") -> int:
    """Open a range; returns its id (unique in the process). It is recorded when it stops,
    if a profile collecting markers ran all along."""
    rid = next(_ids)
    _open[rid] = (session.ACTIVE if _collector() is not None else None, _ident(), name, perf_counter_ns(), kind)
    return rid


def stop(rid: int) -> bool:
    """Close range `rid` (from any thread). False if no such range is open."""
    entry = _open.pop(rid, None)
    if entry is None:
        return False
    owner, tid, name, t0, kind = entry
    if owner is not None and owner is session.ACTIVE:
        owner.collector.thread_name(tid)
        owner.collector.marks.append((kind, tid, name, t0, perf_counter_ns(), rid))
    return True


def push(name: str) -> int:
    """Open a range on this thread's stack (closed by pop on the same thread)."""
    rid = start(name, "push/pop")
    _stack.items.append(rid)
    return rid


def pop() -> bool:
    """Close the innermost range this thread pushed. False if it pushed none."""
    items = _stack.items
    if not items:
        return False
    stop(items.pop())
    return True


def mark(name: str) -> int:
    """An instant marker on this thread; returns its id (0 when nothing collects it)."""
    c = _collector()
    if c is None:
        return 0
    mid = next(_ids)
    tid = _ident()
    c.thread_name(tid)
    now = perf_counter_ns()
    c.marks.append(("mark", tid, name, now, now, mid))
    return mid
