"""Deadlines of model executions: one daemon thread that stops the ONNX Runtime runs which
pass their deadline (the op execute timeout, or an execute_v2 config's stream timeout).

A model execution runs inside one ONNX Runtime call that Python cannot interrupt; ORT stops
a run whose RunOptions has `terminate` set at its next node (a Loop checks it every
iteration), so the thread here sets it on the run's task (`task.expire()`) at the deadline.
`watch(task, deadline)` costs a heap push and, when the new deadline is the earliest, a
notify; `unwatch` marks the entry done. Done entries are dropped when they come due, or when
they outnumber the live ones (the heap is rebuilt then), so a program running many short
executions under a long timeout (the default is 1091 s) keeps a heap of its running ones,
not of every execution of the last 18 minutes.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time

log = logging.getLogger("npurt.ge")


class Deadlines:
    def __init__(self) -> None:
        self._heap: list = []           # (deadline, tie, task)
        self._live: dict = {}           # task -> deadline, while watched
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._ties = itertools.count()

    def watch(self, task, deadline: float) -> None:
        """Call task.expire() at time.monotonic() `deadline` unless unwatch(task) comes first."""
        with self._cond:
            self._live[task] = deadline
            if len(self._heap) > 2 * len(self._live) + 64:  # mostly done entries: keep the live ones
                live = self._live
                self._heap = [e for e in self._heap if live.get(e[2]) == e[0]]
                heapq.heapify(self._heap)
            heapq.heappush(self._heap, (deadline, next(self._ties), task))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, daemon=True, name="npurt-model-deadlines")
                self._thread.start()
            elif self._heap[0][2] is task:
                self._cond.notify()

    def unwatch(self, task) -> None:
        self._live.pop(task, None)

    def _loop(self) -> None:
        while True:
            due = []
            with self._cond:
                while not due:
                    now = time.monotonic()
                    while self._heap and self._heap[0][0] <= now:
                        _, _, task = heapq.heappop(self._heap)
                        if self._live.get(task, -1.0) <= now and self._live.pop(task, None) is not None:
                            due.append(task)
                    if not due:
                        self._cond.wait(self._heap[0][0] - now if self._heap else None)
            for task in due:
                try:
                    task.expire()
                except Exception:  # noqa: BLE001 - the thread never dies
                    log.exception("npurt: stopping an overdue model execution failed")

    def _after_fork(self) -> None:
        self.__init__()  # the parent's thread does not exist in the child; its lock may be held


DEADLINES = Deadlines()
os.register_at_fork(after_in_child=DEADLINES._after_fork)
