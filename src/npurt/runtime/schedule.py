"""Controlled schedules: the simulated device runs one task at a time, in an order a seed chooses.

`NPURT_SCHEDULE=random:SEED` (or `npurt run --schedule SEED`, `SCHEDULE.start(seed)`) replaces
the scheduler's workers by one device thread that runs a single task per step, across every
stream of every device (host functions included: they are tasks too), choosing the stream
among the ready ones with a `random.Random(SEED)`. The device advances only while a host thread
waits for it (a synchronize of any kind, which every blocking call goes through) or asks about
it (a stream or event query runs one step first, so a polling loop progresses), so with one
host thread the order of every task, and so the program's result, is a function of the seed:
the same seed gives the same interleaving, byte for byte, on any machine. Host-visible
completion follows that order: a query reports complete only what the steps so far ran, an
event's status flips when its record task's step runs, a host function runs on the device
thread at its step.

`choices:I,J,...` (used by `npurt run --schedules all`) follows a list of choice indices
instead of a seed (index i of the candidates sorted by device and stream id at step i; past the
list, the stream that ran last goes on if it can, else the first one), and records at each step
how many candidates there were, so that a runner can enumerate the interleavings of the first K
steps depth-first. `NPURT_SCHEDULE_TRACE=FILE` writes that record at exit: a line per step, "candidates chosen".

Candidates at a step are the streams with a claimable ticket (READY); a stream whose head task
must wait (an event, a collective, a blocking callback) parks as usual and is no candidate until
what it waits for happens. With nothing runnable while a host thread waits, the device waits for
the other threads of the program (a report thread, a collective peer) as the real one would.

What is not controlled: several host threads enqueueing at once (their own order is the OS's),
and programs that wait for the device by sleeping instead of synchronizing.
"""
from __future__ import annotations

import atexit
import logging
import os
import random
import re
import threading
import time

from .forking import on_fork_child
from .runtime import RUNTIME
from .scheduler import READY, RUNNING, TLS, Scheduler, Worker
from .warn import HangWarning, warn_user


class ScheduleSpecError(ValueError):
    """An NPURT_SCHEDULE value that is not `random:SEED` (an integer) or `choices:I,J,...`."""


def parse(text: str) -> tuple[str, object]:
    """("random", seed) or ("choices", [indices]); raises ScheduleSpecError."""
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return "random", int(text)
    kind, _, value = text.partition(":")
    if kind == "random":
        if not re.fullmatch(r"-?\d+", value.strip()):
            raise ScheduleSpecError(f"a schedule random:SEED needs an integer seed, got {value!r}")
        return "random", int(value)
    if kind == "choices":
        if value.strip() and not re.fullmatch(r"\d+(,\d+)*", value.strip()):
            raise ScheduleSpecError(f"a schedule choices:I,J,... needs integers, got {value!r}")
        return "choices", [int(v) for v in value.split(",") if v.strip()]
    raise ScheduleSpecError(f"a schedule is a seed (an integer), random:SEED or choices:I,J,...; got {text!r}")


class Controlled:
    """The device thread of a controlled schedule (installed as `Scheduler.controlled`)."""

    def __init__(self, kind: str, value) -> None:
        self.kind = kind
        self.seed = value if kind == "random" else None
        self.rng = random.Random(value if kind == "random" else 0)
        self.choices = list(value) if kind == "choices" else []
        self.counts: list[int] = []       # candidates at each step (the trace)
        self.taken: list[int] = []        # the index chosen at each step
        self.order: list[tuple] = []      # (device id, stream id) run at each step
        self.steps = 0
        self.last = None                  # the stream of the previous step
        self.cv = threading.Condition()
        self.serial = threading.Lock()    # one host request at a time
        self.request = None               # (done, max steps) for the device thread
        self.busy = False
        self.result = False
        self.token = None                 # the device thread's owner token
        self.closed = False               # the schedule ended: the device thread leaves
        self.thread = threading.Thread(target=self._loop, name="npurt-schedule", daemon=True)
        self.thread.start()

    # ------------------------------------------------------------ host side
    def wait(self, cond, done, timeout_s, what) -> bool:
        """wait_until's controlled form: the caller holds `cond`; run steps until done()
        (or the timeout passes); when nothing can run, wait for the program's other threads."""
        start = time.monotonic()
        deadline = None if timeout_s is None else start + timeout_s
        warn_after = RUNTIME.settings.hang_warning_s if RUNTIME.settings else 0
        while not done():
            now = time.monotonic()
            remaining = None if deadline is None else deadline - now
            if remaining is not None and remaining <= 0:
                return done()
            if warn_after and now - start >= warn_after:  # as wait_until: a real NPU would hang here
                warn_user(f"npurt: this host thread has waited {now - start:.0f} s for {what()} (a real NPU "
                          "would hang here; set NPURT_HANG_WARNING_S to change when this shows)", HangWarning)
                warn_after = 0
            cond.release()  # the device thread notifies on this condition as tasks retire
            try:
                progressed = self.advance(done, None, remaining)
            finally:
                cond.acquire()
            if done():
                return True
            if not progressed:
                cond.wait(0.02 if remaining is None else min(0.02, max(remaining, 0)))
        return True

    def poll(self) -> None:
        """A query: run one step first, so that a polling loop sees the device progress."""
        self.advance(lambda: False, 1, None)

    def advance(self, done, max_steps, timeout_s) -> bool:
        """Run steps on the device thread until done(), max_steps, or nothing can run. True if
        any step ran. On the device thread itself (a host function that synchronizes), inline."""
        if threading.current_thread() is self.thread:
            return self._run(done, max_steps)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        if not self.serial.acquire(timeout=-1 if deadline is None else max(0.0, deadline - time.monotonic())):
            return False
        try:
            with self.cv:
                self.request, self.result, self.busy = (done, max_steps), None, True
                self.cv.notify_all()
                while self.busy:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return True  # the device is stuck in a task (a hang): the caller times out
                    self.cv.wait(left)
                return bool(self.result)
        finally:
            self.serial.release()

    # ------------------------------------------------------------ device side
    def _loop(self) -> None:
        TLS.token = self.token = Worker()
        while True:
            with self.cv:
                while self.request is None and not self.closed:
                    self.cv.wait()
                if self.request is None:
                    return
                done, max_steps = self.request
                self.request = None
            result = False
            try:
                result = self._run(done, max_steps)
            except BaseException:  # noqa: BLE001 - the device thread never dies
                logging.getLogger("npurt").exception("npurt: the controlled schedule's device thread hit an error")
            with self.cv:
                self.result, self.busy = result, False
                self.cv.notify_all()

    def _run(self, done, max_steps) -> bool:
        ran = 0
        while not done() and (max_steps is None or ran < max_steps):
            if not self.step():
                break
            ran += 1
        return ran > 0

    def close(self) -> None:
        with self.cv:
            self.closed = True
            self.cv.notify_all()

    def candidates(self) -> list:
        found, seen = [], set()
        for sch in sorted(Scheduler.instances, key=lambda s: s.device.id):
            for q in sch.ready:
                if q and not all(q):  # forget the tickets used already
                    live = [t for t in q if t]
                    q.clear()
                    q.extend(live)
                for t in q:
                    s = t[0] if t else None
                    if s is not None and id(s) not in seen and s.state is READY:
                        seen.add(id(s))
                        found.append((t, s))
        found.sort(key=lambda c: (c[1].device.id, c[1].stream_id))
        return found

    def choose(self, found: list) -> int:
        self.counts.append(len(found))
        self.taken.append(index := self._index(found))
        return index

    def _index(self, found: list) -> int:
        step = self.steps
        if self.kind == "random":
            return self.rng.randrange(len(found))
        if step < len(self.choices):
            return min(self.choices[step], len(found) - 1)
        for i, (_, s) in enumerate(found):  # past the list: no preemption
            if s is self.last:
                return i
        return 0

    def step(self) -> bool:
        """Run one task (or park one stream on what its head task waits for)."""
        found = self.candidates()
        if not found:
            return False
        t, s = found[self.choose(found)]
        if not t:
            return True
        del t[0]  # claim the ticket (see scheduler.py)
        s.runner = self.token
        s.state = RUNNING
        self.steps += 1
        self.last = s
        self.order.append((s.device.id, s.stream_id))
        s.scheduler.run_stream(s, self.token, until=s.completed_seq + 1)
        return True


class Schedule:
    """The process's controlled schedule, if any (one instance, SCHEDULE)."""

    def __init__(self) -> None:
        self.controlled: Controlled | None = None
        self.spec = ""

    @property
    def active(self) -> bool:
        return self.controlled is not None

    def start(self, spec) -> Controlled:
        """Run every device under a controlled schedule from now on: `spec` is a seed (int),
        "random:SEED" or "choices:I,J,...". Work queued so far finishes first, as before."""
        kind, value = parse(str(spec))
        self.stop()
        for sch in list(Scheduler.instances):  # quiesce: nothing left for the workers to run
            for s in sch.device.all_streams():
                if s.completed_seq < s.enqueued_seq and not s.destroyed:
                    try:
                        s.synchronize(report_errors=False)
                    except Exception:  # noqa: BLE001 - its failure stays the stream's
                        pass
        ctl = self.controlled = Controlled(kind, value)
        self.spec = str(spec)
        Scheduler.controlled = ctl
        trace = os.environ.get("NPURT_SCHEDULE_TRACE")
        if trace:
            def write_trace():
                with open(trace, "w") as fh:
                    fh.write("".join(f"{n} {i}\n" for n, i in zip(ctl.counts, ctl.taken)))
            atexit.register(write_trace)
        return ctl

    def stop(self) -> None:
        """Back to the workers (queued work is handed to them)."""
        ctl = self.controlled
        if ctl is None:
            return
        Scheduler.controlled = None
        self.controlled = None
        ctl.close()
        for sch in list(Scheduler.instances):
            if any(sch.ready):
                sch.wake_any()

    def start_from_environment(self) -> None:
        text = os.environ.get("NPURT_SCHEDULE", "").strip()
        if not text:
            return
        self.start(text)


SCHEDULE = Schedule()


def _after_fork_in_child() -> None:
    """A child of fork() has no device thread and none of the parent's devices (forking.py):
    it forgets the parent's schedulers and gets a device thread of its own, under the same
    schedule."""
    Scheduler.instances.clear()
    ctl = SCHEDULE.controlled
    if ctl is not None:
        fresh = SCHEDULE.controlled = Controlled(ctl.kind, ctl.seed if ctl.kind == "random" else ctl.choices)
        Scheduler.controlled = fresh


on_fork_child(_after_fork_in_child)
