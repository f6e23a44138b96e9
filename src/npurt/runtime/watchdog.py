"""The watchdog: one daemon thread for everything that must happen at a deadline.

* timers (`call_at`): op wait timeouts, the scheduler's check for workers that all hang;
* kernel deadlines (`watch` / `unwatch`): a kernel still running at its execute timeout is
  aborted there (ACL_ERROR_RT_AICORE_TIMEOUT), as the AI core's timeout does on hardware,
  instead of wedging its stream (see KernelTask.expire).

It starts on first use and sleeps until the earliest deadline; a kernel launch costs one
dict store and one delete (kernels run for a while, and almost all finish in time).

Aborting Python code that will not return: the thread running a kernel body is sent an
asynchronous exception (`KernelAborted`, with PyThreadState_SetAsyncExc). Python raises it at
the thread's next bytecode boundary; code stuck inside one C call (a sleep, a huge numpy
operation) sees it only when that call returns. The exception is only ever sent to a thread
while it is inside that kernel's body (`enter_body` / `leave_body`), never to whatever it
runs next.
"""
from __future__ import annotations

import ctypes
import heapq
import logging
import threading
import time

from .interrupts import held

log = logging.getLogger("npurt")

_set_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi))
_clear_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi))
INF = float("inf")

class KernelAborted(Exception):
    """Raised inside a kernel body that the runtime aborted (its execute timeout passed, or
    its device is being reset). Its task has already been failed and retired."""


def enter_body(task) -> int:
    """The calling thread starts running `task`'s code (a kernel body). `task` has a list
    `threads` and a flag `aborted`."""
    ident = threading.get_ident()
    task.threads.append(ident)
    if task.aborted:
        task.threads.remove(ident)
        raise KernelAborted("the kernel was aborted before this block started")
    return ident


def leave_body(task, ident: int) -> None:
    task.threads.remove(ident)  # from here on abort_bodies() cannot target this thread
    if task.aborted:
        _clear_async_exc(ident, None)  # one sent but not yet raised must not hit later code


def abort_bodies(task) -> None:
    """Raise KernelAborted in every thread running `task`'s code (a thread inside one long C
    call sees it when the call returns)."""
    task.aborted = True
    threads = task.threads
    for ident in list(threads):
        # the membership test and the send with no bytecode boundary in between: the thread
        # cannot leave_body() in the middle (the C call holds the GIL)
        if ident in threads:
            _set_async_exc(ident, KernelAborted)


class Watchdog:
    """Timers and kernel deadlines on one daemon thread."""

    def __init__(self) -> None:
        self._heap: list = []                # [deadline, id, fn]
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._ids = 0
        self.kernels: dict = {}              # running task -> monotonic deadline
        self.wake_at = float("inf")          # when the thread wakes next (inf: only when told)

    def call_at(self, deadline: float, fn) -> None:
        """Call fn() (on the watchdog thread) at time.monotonic() `deadline`."""
        with held(self._cond):
            self._ids += 1
            heapq.heappush(self._heap, (deadline, self._ids, fn))
            self._start_or_poke(deadline)

    def watch(self, task, deadline: float) -> None:
        """Call task.expire() at `deadline` unless unwatch(task) comes first."""
        self.kernels[task] = deadline
        if deadline < self.wake_at:  # rare: the first kernel, or a shorter timeout
            with held(self._cond):
                self._start_or_poke(deadline)

    def unwatch(self, task) -> None:
        self.kernels.pop(task, None)

    def _start_or_poke(self, deadline: float) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, daemon=True, name="npurt-watchdog")
            self._thread.start()
        elif deadline < self.wake_at:
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            try:
                self._turn()
            except BaseException:  # noqa: BLE001 - the watchdog never dies
                log.exception("npurt: the watchdog hit an unexpected error; it goes on")

    def _turn(self) -> None:
        due, expired = [], []
        with held(self._cond):
            while True:
                now = time.monotonic()
                while self._heap and self._heap[0][0] <= now:
                    due.append(heapq.heappop(self._heap)[2])
                expired = [t for t, d in list(self.kernels.items()) if d <= now]
                if due or expired:
                    self.wake_at = 0.0  # awake: new deadlines are seen before the next sleep
                    break
                nxt = min(self._heap[0][0] if self._heap else INF, min(self.kernels.values(), default=INF))
                self.wake_at = nxt
                if min(self.kernels.values(), default=INF) < nxt:
                    continue  # a kernel came in meanwhile; watch() saw us awake and did not poke
                self._cond.wait(None if nxt == INF else nxt - now)
        for task in expired:
            if self.kernels.get(task, INF) <= now:
                self.kernels.pop(task, None)
                try:
                    task.expire()
                except Exception:  # noqa: BLE001
                    log.exception("npurt: aborting an overdue kernel failed")
        for fn in due:
            try:
                fn()
            except Exception:  # noqa: BLE001
                log.exception("npurt: a watchdog timer failed")

WATCHDOG = Watchdog()
