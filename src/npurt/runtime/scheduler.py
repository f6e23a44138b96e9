"""The per-device task scheduler: a few worker threads running many streams.

A stream is in exactly one place at a time:

    IDLE     nothing queued; not known to the scheduler
    READY    has work; a *ticket* for it sits in a ready queue
    RUNNING  one thread (its owner) runs its tasks in order
    PARKED   its head task waits on a blocker (an event, a callback); the blocker submits
             a new ticket when it is satisfied

Ownership rules (no lock on the hot path; each step is one atomic CPython operation):

* `stream.token` (a Lock used as a flag) is held while the stream is READY, RUNNING or
  PARKED. An enqueuer that appends to an idle stream takes it with a non-blocking acquire
  and submits a ticket; an enqueuer that fails to take it knows someone owns the stream.
* A ticket is a one-element list `[stream]`. Whoever pops the element (a worker taking it
  from the ready queue, or a host thread that synchronizes and prefers running the work
  itself to sleeping) is the owner. `list.pop()` is atomic, so there is exactly one.
* Only the owner runs and retires tasks, which keeps per-stream order. An owner that finds
  the queue empty releases the token and re-checks the queue, so an append that raced with
  the release is never stranded.

Workers sleep on a private lock each and are woken only when a ticket is submitted while
they are idle, so a busy device pays no wake-ups. There is no thread per stream.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from .errors import NpuError, TaskError
from .observers import HOOKS

if TYPE_CHECKING:
    from .device import Device
    from .stream import Stream
    from .tasks import Task

log = logging.getLogger("npurt")

IDLE, READY, RUNNING, PARKED = "idle", "ready", "running", "parked"
PRIORITIES = 8          # 0 highest .. 7 lowest, as ACL stream priorities
WORKER_BUDGET = 64      # tasks a worker runs on one stream before letting others go first


class Blocker:
    """What a parked stream waits for. Subclasses implement `register() -> bool` (False:
    already satisfied), `describe()` and `waits_for()`; whoever satisfies a blocker calls
    `fire()`."""

    __slots__ = ("waiter",)

    def waits_for(self):
        """What must happen first, for diagnostics (hang detection): ("stream", stream, seq),
        ("event", event) for a record of it, ("report_thread", thread id) for a thread to run
        process_report, or None when not known."""
        return None

    def fire(self) -> None:
        """The blocker is satisfied: the stream parked on it becomes READY again."""
        self.waiter.scheduler.unpark(self)


class Callback:
    """A watcher that calls `fn()` instead of unparking a stream (Stream.on_retired,
    Event.on_completed): the Pythonic API's awaitables and done-callbacks."""

    __slots__ = ("fn", "fired")

    def __init__(self, fn) -> None:
        self.fn, self.fired = fn, False

    def fire(self) -> None:
        if not self.fired:
            self.fired = True
            try:
                self.fn()
            except Exception:  # noqa: BLE001 - a user callback must not wedge the stream
                log.exception("npurt: a done-callback (%r) raised; ignored", self.fn)


class Worker:
    __slots__ = ("wake", "thread")

    def __init__(self) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()  # held = asleep; submit() releases it to wake the worker


class Scheduler:
    """Runs the streams of one device."""

    def __init__(self, device: "Device", workers: int):
        self.device = device
        self.nworkers = workers
        self.ready = [deque() for _ in range(PRIORITIES)]
        self.idle: list[Worker] = []
        self.workers: list[Worker] = []
        self.stopping = False
        self._start_lock = threading.Lock()

    # ------------------------------------------------------------ tickets
    def submit(self, stream: "Stream") -> None:
        """Make an owned stream READY: queue a ticket and wake an idle worker if any. The
        caller gives up ownership."""
        ticket = [stream]
        stream.ticket = ticket
        stream.state = READY
        self.ready[stream.priority].append(ticket)
        if stream.waiters:  # a synchronizing host thread may prefer to run it inline
            cond = stream._cond
            with cond:
                cond.notify_all()
        idle = self.idle
        if idle:
            try:
                worker = idle.pop()
            except IndexError:
                return
            worker.wake.release()
        elif len(self.workers) < self.nworkers:
            self._start_worker()

    def _take_ready(self) -> "Stream | None":
        for q in self.ready:
            while q:
                try:
                    return q.popleft().pop()
                except IndexError:  # empty queue, or a ticket a host thread already used
                    continue
        return None

    # ------------------------------------------------------------ workers
    def _start_worker(self) -> None:
        with self._start_lock:
            if len(self.workers) >= self.nworkers or self.stopping:
                return
            worker = Worker()
            worker.thread = threading.Thread(
                target=self._worker_loop, args=(worker,), daemon=True,
                name=f"npurt-dev{self.device.id}-worker{len(self.workers)}")
            self.workers.append(worker)
            worker.thread.start()

    def _worker_loop(self, me: Worker) -> None:
        while not self.stopping:
            try:
                self._work(me)
            except Exception:  # noqa: BLE001 - a worker must never die
                log.exception("npurt: a scheduler worker hit an unexpected error; it goes on")

    def _work(self, me: Worker) -> None:
        """One turn of the worker loop: run a ready stream, or sleep until woken."""
        stream = self._take_ready()
        if stream is not None:
            self.run_stream(stream, budget=WORKER_BUDGET)
            return
        self.idle.append(me)
        stream = self._take_ready()  # re-check: a submit may have missed us
        if stream is not None:
            try:
                self.idle.remove(me)
            except ValueError:
                me.wake.acquire()  # a submitter popped us and releases (or released) the lock
            self.run_stream(stream, budget=WORKER_BUDGET)
            return
        me.wake.acquire()

    def shutdown(self) -> None:
        self.stopping = True
        for worker in self.workers:
            try:
                worker.wake.release()
            except RuntimeError:
                pass
        for worker in self.workers:
            if worker.thread is not threading.current_thread():
                worker.thread.join(timeout=5)
        self.workers.clear()
        self.idle.clear()

    # ------------------------------------------------------------ running a stream
    def run_stream(self, s: "Stream", budget: int = 1 << 62, until: int = 0) -> None:
        """Run tasks of `s`, which the caller owns, until its queue is empty, its head task
        is blocked (the stream parks), `budget` tasks ran, or (for a host thread) task
        `until` has finished. On return the caller no longer owns `s`."""
        s.state = RUNNING
        queue = s.queue
        while True:
            if not queue:
                s.state = IDLE
                s.token.release()
                if queue and s.token.acquire(False):  # an append raced with the release
                    s.state = RUNNING
                    continue
                return
            if until and s.completed_seq >= until:  # a host thread got what it waited for
                self.submit(s)
                return
            if budget <= 0:  # let other ready streams go first, if there are any
                if not any(self.ready):
                    budget = WORKER_BUDGET
                else:
                    self.submit(s)
                    return
            budget -= 1
            task = queue[0]
            if task.seq <= s.dropped_upto:  # dropped by an abort or a stop-on-failure
                queue.popleft()
                s.retire(task)
                continue
            if task.may_block:
                try:
                    blocker = task.blocker()
                except BaseException as exc:  # noqa: BLE001 - fails the task like run() would
                    s.fail(task, task_error(task, exc))
                    queue.popleft()
                    s.retire(task)
                    continue
                if blocker is not None:
                    if HOOKS.active:  # before parking: once parked, another thread may run the task
                        HOOKS.emit("task_blocked", task=task, blocker=blocker)
                    if self._park(s, blocker):
                        return
                    continue  # satisfied while registering: ask the task again
            self._execute(s, task)
            queue.popleft()
            s.retire(task)

    def _execute(self, s: "Stream", task: "Task") -> None:
        if HOOKS.active:
            HOOKS.emit("task_started", task=task)
        try:
            task.run()
        except BaseException as exc:  # noqa: BLE001 - becomes the stream's error
            error = task_error(task, exc)
            if HOOKS.active:
                HOOKS.emit("task_finished", task=task, error=error)
            s.fail(task, error)
            return
        if HOOKS.active:
            HOOKS.emit("task_finished", task=task, error=None)

    # ------------------------------------------------------------ parking
    def _park(self, s: "Stream", blocker) -> bool:
        """Park `s` on `blocker`. False if the blocker was already satisfied (the caller
        still owns `s` and goes on running it)."""
        blocker.waiter = s
        with s.lock:
            s.parked_on = blocker
            s.state = PARKED
        if blocker.register():
            return True
        with s.lock:
            if s.parked_on is blocker:
                s.parked_on = None
                s.state = RUNNING
                return False
        return True  # an unpark or an abort already handed the stream on

    def unpark(self, blocker) -> None:
        """`blocker` is satisfied: the stream parked on it becomes READY again."""
        s = blocker.waiter
        with s.lock:
            if s.parked_on is not blocker:
                return  # stale: aborted, or parked on something else by now
            s.parked_on = None
        self.submit(s)


class Watchdog:
    """One daemon thread that calls functions at deadlines (op wait timeouts). Started on
    first use; costs nothing when no timeout is set."""

    def __init__(self) -> None:
        self._heap: list = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._ids = 0

    def call_at(self, deadline: float, fn) -> None:
        import heapq
        with self._cond:
            self._ids += 1
            heapq.heappush(self._heap, (deadline, self._ids, fn))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True, name="npurt-watchdog")
                self._thread.start()
            self._cond.notify()

    def _loop(self) -> None:
        import heapq
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    timeout = None if not self._heap else self._heap[0][0] - time.monotonic()
                    self._cond.wait(timeout)
                _, _, fn = heapq.heappop(self._heap)
            try:
                fn()
            except Exception:  # noqa: BLE001 - keep the watchdog alive
                log.exception("npurt: watchdog callback failed")


WATCHDOG = Watchdog()


def task_error(task: "Task", exc: BaseException) -> TaskError:
    """Turn whatever a task raised into the TaskError its stream reports."""
    stream = task.stream
    where = f"stream {stream.stream_id} (device {stream.device.id}) task #{task.seq} {task.describe()}"
    if isinstance(exc, NpuError):
        err = TaskError(f"{where} failed: {exc.message}", exc.code, where)
    else:
        err = TaskError(f"{where} failed: {type(exc).__name__}: {exc}", task.error_code, where)
    err.__cause__ = exc
    if task.stack:
        err.message += "\nThe task was enqueued at:\n" + task.stack
    return err


def wait_until(cond: threading.Condition, done, timeout_s: float | None, what) -> bool:
    """Wait on `cond` (held by the caller) until done() is true or the timeout passes.

    Logs a warning naming what the wait is stuck on once it has lasted NPURT_HANG_WARNING_S
    seconds (a real NPU would just hang there). Returns done()."""
    from .runtime import RUNTIME  # late: the runtime module imports this one
    warn_after = RUNTIME.settings.hang_warning_s if RUNTIME.settings else 0
    start = time.monotonic()
    warned = False
    while not done():
        now = time.monotonic()
        remaining = None if timeout_s is None else timeout_s - (now - start)
        if remaining is not None and remaining <= 0:
            return done()
        step = remaining
        if warn_after and not warned:
            to_warning = warn_after - (now - start)
            if to_warning <= 0:
                log.warning("npurt: a host thread has waited %.0f s for %s", now - start, what())
                warned = True
            else:
                step = to_warning if step is None else min(step, to_warning)
        cond.wait(step)
    return True
