"""The AI cores of a device, played by host threads: runs the blocks of one kernel in parallel."""
from __future__ import annotations

import os
import queue
import threading
from typing import Callable


class _Job:
    """One lane handed to the core pool. Whoever sets `taken` first (a pool thread, or the
    launching thread that would rather run it itself) runs it; `done` is released after."""

    __slots__ = ("args", "taken", "done", "result")

    def __init__(self, args):
        self.args, self.taken, self.result = args, False, None
        self.done = threading.Lock()
        self.done.acquire()


class CorePool:
    """Host threads that play the AI cores: runs the blocks of one kernel in parallel.

    The calling thread runs a share of the blocks itself, so a one-block launch never hands
    work to another thread. numpy releases the GIL, so blocks doing array work overlap. A lane
    that no pool thread has taken by the time the caller finished its own share (the pool is
    busy, e.g. with a kernel that does not return) runs in the caller too, so one stuck kernel
    never blocks another. Pool threads are daemons: a stuck one never delays interpreter exit.
    """

    def __init__(self, threads: int | None = None):
        self.threads = threads or max(1, os.cpu_count() or 1)
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._pool: list[threading.Thread] = []
        self._lock = threading.Lock()

    def lanes(self, n: int, cap: int | None = None) -> int:
        """How many lanes (cores) `run` uses for n blocks under an optional cap on cores."""
        return max(1, min(n, self.threads, cap or n))

    def run(self, n: int, body: Callable[[int], None], lane_hooks=None, lanes: int | None = None) -> None:
        """Run body(i) for i in range(n); returns when all have finished. Lane k runs blocks
        k, k + lanes, ... (`lanes`: at most that many; default: one per thread). The first
        exception (lowest block index) is re-raised after every lane has stopped. `lane_hooks` is an
        optional (enter, leave, stop): enter() -> state runs before each lane in its thread,
        leave(state) after it; stop() when the caller is interrupted (KeyboardInterrupt)
        while other lanes run, which are then waited for (a second interrupt ends the wait)."""
        lanes = self.lanes(n, lanes)
        if lanes <= 1:
            self._lane(body, 0, 1, n, lane_hooks, True)
            return
        if len(self._pool) < lanes - 1:
            self._start(lanes - 1)
        jobs = []
        for lane in range(1, lanes):
            job = _Job((body, lane, lanes, n, lane_hooks, False))
            jobs.append(job)
            self._jobs.put(job)
        try:
            errors = [self._lane(body, 0, lanes, n, lane_hooks, True)]
            for job in jobs:
                if not job.taken:  # test and set: no pool thread has started it, run it here
                    job.taken = True
                    try:
                        errors.append(self._lane(*job.args[:5], True))
                    finally:
                        job.done.release()
            for job in jobs:
                job.done.acquire()
                errors.append(job.result)
        except KeyboardInterrupt:  # the caller is a host thread: stop the other lanes, wait for them
            for job in jobs:
                if not job.taken:
                    job.taken = True
                    job.done.release()
            if lane_hooks is not None:
                lane_hooks[2]()
            for job in jobs:
                job.done.acquire()  # a second Ctrl-C ends this wait
            raise
        errors = [e for e in errors if e is not None]
        if errors:
            raise min(errors, key=lambda e: getattr(e, "block_idx", 0))

    @staticmethod
    def _lane(body, lane, lanes, n, hooks, caller):
        """Run one lane; an exception is returned (pool threads) or, for the calling thread,
        returned unless it is an interrupt of that thread (raised)."""
        state = hooks[0]() if hooks is not None else None
        try:
            for i in range(lane, n, lanes):
                body(i)
        except KeyboardInterrupt:
            if caller:
                raise
            return KeyboardInterrupt()
        except BaseException as exc:  # noqa: BLE001 - handed to the launching thread
            return exc
        finally:
            if hooks is not None:
                hooks[1](state)
        return None

    def _thread_loop(self) -> None:
        jobs = self._jobs
        while True:
            job = jobs.get()
            if job is None:
                return
            if job.taken:  # the launching thread ran it already
                continue
            job.taken = True  # test and set (no call since the test)
            try:
                job.result = self._lane(*job.args)
            finally:
                job.done.release()

    def _start(self, count: int) -> None:
        with self._lock:
            while len(self._pool) < count:
                t = threading.Thread(target=self._thread_loop, daemon=True,
                                     name=f"npurt-aicore{len(self._pool) + 1}")
                self._pool.append(t)
                t.start()

    def shutdown(self) -> None:
        with self._lock:
            for _ in self._pool:
                self._jobs.put(None)
            self._pool = []
