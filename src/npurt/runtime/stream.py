"""Streams: in-order queues of tasks with per-stream sequence numbers.

Enqueue never blocks on the device: it appends the task and, if the stream was idle, hands
the stream to its device's scheduler (see scheduler.py for who owns a stream when).
`completed_seq` counts retired tasks (run, or dropped by an abort or a stop-on-failure), so
"has task n finished?" is one comparison, and synchronize waits for the sequence number that
was enqueued when it was called. Only the stream's owner writes `completed_seq`.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from .accel import SPEEDUPS
from .forking import fork_safe_lock
from . import constants as C
from .errors import (FeatureNotSupportedError, InvalidHandleError, InvalidValueError, StreamAbortedError,
                     SyncTimeoutError, TaskError, set_last_error)
from .memory import note_use
from .observers import HOOKS
from .faults import FAULTS
from .inline import STREAK
from .interrupts import held
from .host_waits import wait_until
from .scheduler import C_FINISH, IDLE, PARKED, READY, RUNNING, TLS, Callback, thread_token
from .task_failures import deadlock_error
from .tasks import CopyTask, Task
from . import address
from .inline import MAX_BYTES as INLINE_BYTES

if TYPE_CHECKING:
    from .context import Context

log = logging.getLogger("npurt")

LOWEST_PRIORITY, HIGHEST_PRIORITY = 7, 0  # ACL: 0 is the highest priority
_COND_LOCK = fork_safe_lock()
# Stream.lock guards a few assignments (watchers, parked_on) and is never held while another
# is taken, so streams share a small set of locks instead of making one each (issue 28: a
# stream made is what it needs, nothing more)
_STREAM_LOCKS = tuple(fork_safe_lock() for _ in range(64))
# a stream's enqueue lock: the C accelerator's Lock is threading.Lock without the garbage
# collector's tracking (it refers to nothing), one object fewer per stream for every
# collection to walk (issue 28: 10,000 live streams)
_new_lock = SPEEDUPS.Lock if SPEEDUPS is not None else threading.Lock


class Stream:
    """An in-order queue of device work. Create with `runtime.create_stream()`."""

    # slots: ten thousand streams are ten thousand of these, made and read on hot paths. The
    # fields few streams ever change are class-level defaults instead (below): a stream gets
    # an instance dict only when one of them is set, so making a stream stores what every
    # stream needs and nothing more (issue 28)
    __slots__ = ("device", "context", "scheduler", "priority", "stream_id", "handle",
                 "queue", "enq_lock", "ticket", "state", "runner", "current", "enqueued_seq", "completed_seq",
                 "dropped_upto", "_cond", "waiters", "takers", "wake_at", "lock", "watchers", "parked_on", "error", "stopped",
                 "abort_epoch", "destroyed", "closing", "_task_stacks", "_launch_blocking", "_inline", "streak",
                 "touched", "capture", "__weakref__", "__dict__")
    # rarely set (created on demand in the instance dict)
    sync_follows = False           # a host thread took work the workers were told of (scheduler.py)
    is_default = False
    flags = 0
    stop_seen = False              # a synchronize or query has reported the stop to the host
    failure_mode_set = False
    _failure_mode = C.ACL_CONTINUE_ON_FAILURE
    res_limits: dict | None = None  # the stream's own core limits (set_stream_res_limit)
    _attributes = None             # set_stream_attribute values, made on first use
    subscriber = None              # report thread id for launch_callback
    held_by = None                 # the graph that made and holds this stream (its lanes)

    def __init__(self, context: "Context", priority: int = 0, flags: int = 0, is_default: bool = False):
        device = context.device
        self.device = device
        self.context = context
        self.scheduler = device.scheduler
        if is_default:
            self.is_default = True
        if flags:
            self.flags = flags
        self.priority = priority if priority.__class__ is int and 0 <= priority <= LOWEST_PRIORITY else \
            min(max(int(priority), HIGHEST_PRIORITY), LOWEST_PRIORITY)
        self.stream_id = next(device.stream_ids)
        self.handle = 0
        self.queue: deque[Task] = deque()
        self.enq_lock = _new_lock()          # orders (sequence number, append) among enqueuers
        self.ticket: list | None = None      # the current ready-queue ticket
        self.state = IDLE                    # IDLE, READY, RUNNING or PARKED (see scheduler.py)
        self.runner = None                   # the owner's token while RUNNING
        self.current = None                  # the task whose run() is in progress
        self.enqueued_seq = 0
        self.completed_seq = 0
        self.dropped_upto = 0                # tasks up to here are dropped (abort / stop)
        self._cond: threading.Condition | None = None  # host threads waiting (made on first wait)
        self.waiters = 0                     # host threads waiting on the condition
        self.takers = 0                      # those of them that will claim a ticket and run the work
        self.wake_at = 0                     # the lowest sequence number a waiter waits for
        self.lock = _STREAM_LOCKS[self.stream_id & 63]  # guards watchers and parked_on (never nested)
        self.watchers: list | tuple = ()     # (seq, blocker) of streams parked on our progress (a list once one is)
        self.parked_on = None
        self.error: TaskError | None = None  # first failure not yet reported
        self.stopped: TaskError | None = None
        self.abort_epoch = 0
        self.destroyed = False
        self.closing = False                 # destroy_stream in progress (one destroyer wins)
        self.capture = None                  # the graph capture (graph.Capture) recording our work
        settings = device.runtime.settings
        self._task_stacks = settings.task_stacks
        self._launch_blocking = settings.launch_blocking
        # cheap tasks may run in the enqueuing thread (inline.py); launch blocking waits anyway
        self._inline = settings.inline and not settings.launch_blocking
        self.streak = 0                      # tasks run inline since the host last waited (inline.py)
        self.touched = False                 # on device.touched: given work since found drained

    @property
    def attributes(self) -> dict:
        """overflowSwitch and userCustomTag (set_stream_attribute)."""
        attrs = self._attributes
        if attrs is None:
            attrs = self._attributes = {"overflowSwitch": 0, "userCustomTag": 0}
        return attrs

    def __repr__(self) -> str:
        kind = "default " if self.is_default else ""
        return (f"<npurt {kind}stream {self.stream_id} on device {self.device.id}: "
                f"{self.completed_seq}/{self.enqueued_seq} done, {self.state}>")

    # ------------------------------------------------------------ failure mode
    @property
    def failure_mode(self) -> int:
        if self.context.stop_on_failure:
            return C.ACL_STOP_ON_FAILURE
        return self._failure_mode

    def set_failure_mode(self, mode: int) -> None:
        """As ApiImpl::StreamSetMode: only bit 0 counts; setting the current mode again is a
        no-op; stop -> continue is not supported (ACL_ERROR_RT_FEATURE_NOT_SUPPORT)."""
        if type(mode) is not int or mode < 0:
            raise InvalidValueError(f"failure mode must be ACL_CONTINUE_ON_FAILURE (0) or "
                                    f"ACL_STOP_ON_FAILURE (1), got {mode!r}")
        mode &= 1
        if mode == self._failure_mode:
            return
        if mode == C.ACL_CONTINUE_ON_FAILURE:
            raise FeatureNotSupportedError(f"stream {self.stream_id} is in stop-on-failure mode; changing it "
                                           "back to continue-on-failure is not supported")
        self.failure_mode_set = True
        self._failure_mode = mode
        if mode == C.ACL_STOP_ON_FAILURE:
            # as on A2/A3 parts: stop-on-failure then holds for every stream of the context
            self.context.stop_on_failure = True

    # ------------------------------------------------------------ enqueue
    def enqueue(self, task: "Task", on_seq=None, inline: bool = False, holders=()) -> int:
        """Append a task; returns its sequence number. Never waits for the device (unless
        launch-blocking mode is on). `holders`: what the task uses of memory (device Blocks,
        pinned host ranges; None entries, pageable host memory, are skipped): the stream
        records the use under its sequence number before any thread can run the task, so
        freeing one waits for the task (stream-ordered free; the one way uses are recorded).
        `on_seq(seq)` runs once the sequence number is known and before any thread can run
        the task. `inline`: for a caller that will wait for the task anyway (a synchronous
        call): if the stream was idle, run it now in this thread instead of handing it to a
        worker (the hand-off costs more than small work). A cheap task (`task.cheap`) on an
        idle stream runs the same way unless a rule of inline.py sends it to the workers.
        While the stream is being captured (graph.py) the task is recorded into the graph
        instead, and nothing runs."""
        if self.capture is not None:
            return self.capture.take(self, task, on_seq, holders)
        task.stream = self
        if self._task_stacks:
            task.capture_stack()
        if self.scheduler.deferred is not None:  # the host moved on from a launch elsewhere (wakeups.py)
            self.scheduler.flush_deferred(self)
        with self.enq_lock:
            stopped = self.stopped  # checked under the lock: a failure may stop the stream concurrently
            if self.destroyed or (stopped is not None and self.stop_seen):
                raise self._refusal()
            seq = task.seq = self.enqueued_seq + 1
            if stopped is not None:  # a failure the host has not seen yet: accepted, as by an NPU,
                self.dropped_upto = seq  # whose stopped stream drops it; the synchronize reports it
            for holder in holders:  # the memory the task uses is not reused before it retires
                note_use(holder, self, seq)
            if on_seq is not None:
                on_seq(seq)
            if HOOKS.active:  # under the lock, so observers see the enqueue before the task runs
                HOOKS.emit("task_enqueued", task=task)
            self.enqueued_seq = seq
            self.queue.append(task)  # no call between the store and the append: both or neither
            self.device.work_epoch += 1  # the device is no longer drained (Device.drained)
            if not self.touched:
                self.touched = True
                self.device.touched[self] = None
        if self.state is IDLE:  # test and set (see scheduler.py); an owner empties the queue
            scheduler = self.scheduler
            if inline:
                token = thread_token() if scheduler.controlled is None else None
            elif task.cheap and self._inline and self.streak < STREAK and not HOOKS.active \
                    and not FAULTS.tasks and scheduler.controlled is None:  # inline.py's rules
                token = TLS.token
                if token is None:
                    token = thread_token()
                elif token.worker:
                    token = None  # a worker's enqueue (a host function's) never runs inline
                if token is not None:
                    self.streak += 1
            else:
                token = None
            if self.state is IDLE:  # (read again: the rules above made calls)
                if token is not None:  # before it sets IDLE, so this task is never stranded
                    self.runner = token
                    self.state = RUNNING
                    try:
                        scheduler.run_stream(self, token, until=seq)
                    except BaseException:
                        scheduler.release(self, token)  # interrupted on the way in
                        raise
                else:
                    self.state = READY
                    t = self.ticket = [self]
                    scheduler.ready[self.priority].append(t)
                    scheduler.wake_for(self, self._inline and (TLS.token is None or not TLS.token.worker))
        if self._launch_blocking:
            self.synchronize(seq)
        return seq

    def _refusal(self) -> Exception:
        if self.destroyed:
            return InvalidHandleError(f"stream {self.stream_id} was destroyed; create a new stream")
        stop = self.stopped
        # Context::CheckTaskSend: once the host knows of the failure, a launch returns it
        return StreamAbortedError(
            f"stream {self.stream_id} stopped on failure and accepts no new work "
            f"(ACL_STOP_ON_FAILURE); the failure was: {stop.message}. "
            "Destroy it and create a new stream.", stop.code)

    @property
    def cond(self) -> threading.Condition:
        """The condition host threads wait on; created on first use (a Condition costs more
        than the rest of a stream, and most streams are never waited on)."""
        cond = self._cond
        if cond is None:
            with _COND_LOCK:
                cond = self._cond
                if cond is None:
                    cond = self._cond = threading.Condition()
        return cond

    # ------------------------------------------------------------ owner side
    def notify_retired(self) -> None:
        """The owner advanced `completed_seq`: wake waiting host threads and fire the watchers
        it satisfies. Idempotent (a blocker fires at most once in effect), so an owner that
        was interrupted here can simply do it again."""
        # waiters > 0 implies the condition exists; a retire short of what every waiter waits
        # for wakes nobody (a wake-up per task would make the waiter contest the GIL for nothing)
        if self.waiters and self.completed_seq >= self.wake_at:
            with held(self._cond):
                self._cond.notify_all()
        if self.watchers:
            done = self.completed_seq
            with self.lock:
                ready = [w for w in self.watchers if w[0] <= done]
            failure = None
            for w in ready:  # fire first, forget after: an interrupt here loses no watcher
                try:
                    w[1].fire()
                except BaseException as exc:  # noqa: BLE001 - the others still fire
                    failure = failure or exc
            if ready:
                fired = set(map(id, ready))
                with self.lock:
                    self.watchers = [w for w in self.watchers if id(w) not in fired]
            if failure is not None:
                raise failure

    def on_retired(self, seq: int, fn) -> None:
        """Call fn() once task `seq` has retired (run, or dropped by an abort or a stop): at
        once if it has, else in the thread that retires it. fn must be quick and not block."""
        callback = Callback(fn)
        if not self.watch(seq, callback):
            callback.fire()

    def watch(self, seq: int, blocker) -> bool:
        """Fire `blocker` once we retire `seq`; False (and no firing) if already done."""
        if self.completed_seq >= seq:
            return False
        with self.lock:
            if self.watchers:
                self.watchers.append((seq, blocker))
            else:
                self.watchers = [(seq, blocker)]
        if self.completed_seq >= seq:  # a retire may have missed our entry: take it back
            with self.lock:
                try:
                    self.watchers.remove((seq, blocker))
                except ValueError:
                    return True  # the retire took it and unparks us
            return False
        return True

    def fail(self, task: "Task", error: TaskError) -> None:
        """Record a failed task; with stop-on-failure, drop everything queued after it."""
        if self.error is None:
            self.error = error
        if self.failure_mode == C.ACL_STOP_ON_FAILURE:
            with self.enq_lock:
                self.stopped = error
                self.dropped_upto = self.enqueued_seq
        self.device.runtime.report_exception(self, task, error)

    # ------------------------------------------------------------ host side
    def synchronize(self, until: int | None = None, timeout_ms: int = -1, report_errors: bool = True) -> None:
        """Block until task `until` (default: everything enqueued so far) has finished,
        running READY work inline; then raise the stream's pending failure, if any. A
        capturing stream runs nothing: waiting for it is refused (graph.py, 107027)."""
        if self.capture is not None:
            self.capture.refuse_wait(self)
        self.streak = 0  # the host waits: the next cheap task may run inline again (inline.py)
        timed = timeout_ms is not None and timeout_ms >= 0
        pending = self.scheduler.deferred
        if pending is not None and (timed or pending[0] is not self):
            # a wait that will not take the deferred work wakes a worker (this stream's own
            # untimed wait takes it: no call)
            self.scheduler.flush_deferred(None if timed else self)
        if until is None:
            until = self.enqueued_seq
        if self.completed_seq >= until and not HOOKS.active:  # done already: nothing to wait for
            if report_errors and self.error is not None:
                self.raise_error()
            return
        deadline = time.monotonic() + timeout_ms / 1000 if timed else None
        epoch = self.abort_epoch
        if HOOKS.active:
            HOOKS.emit("host_wait", stream=self, seq=until)
        token = TLS.token or thread_token()
        claimed = False  # set with the claim: the handler below gives back only what we took
        try:
            # a timed wait never runs work inline: it could not time out; under a controlled
            # schedule the device thread runs it (wait_until)
            inline = deadline is None and self.scheduler.controlled is None
            while self.completed_seq < until:
                if inline:
                    t = self.ticket
                    if t:  # claim the ticket: the test and the stores are one atomic step
                        del t[0]
                        self.runner = token
                        self.state = RUNNING
                        claimed = True
                        self.scheduler.taken(self)
                    elif self.state is IDLE and self.queue:  # work an interrupted enqueue left behind
                        self.runner = token
                        self.state = RUNNING
                        claimed = True
                    if claimed:  # we own the stream now: run its work instead of sleeping
                        self.scheduler.run_stream(self, token, until=until)
                        claimed = False
                        continue
                if epoch != self.abort_epoch:
                    break
                why = self.scheduler.deadlock(self, until, token)
                if why:
                    err = deadlock_error(f"synchronizing stream {self.stream_id} up to task #{until}", why)
                    if HOOKS.active:
                        HOOKS.emit("wait_refused", stream=self, seq=until, message=err.message)
                    raise err
                if not inline:
                    self.scheduler.kick(self)  # work an interrupted enqueue left behind
                remaining = None if deadline is None else deadline - time.monotonic()
                progressed = False
                if remaining is None or remaining > 0:
                    cond = self.cond
                    with held(cond):
                        if not self.waiters or until < self.wake_at:
                            self.wake_at = until
                        self.waiters += 1
                        if inline:  # we claim the next ticket: Scheduler.wake_for wakes no worker for it
                            self.takers += 1
                        try:
                            progressed = wait_until(
                                cond,
                                lambda: (self.completed_seq >= until or (inline and bool(self.ticket))
                                         or epoch != self.abort_epoch),
                                remaining, lambda: self.stuck_on(until))
                        finally:
                            self.waiters -= 1
                            if inline:
                                self.takers -= 1
                if not progressed:
                    raise SyncTimeoutError(f"synchronize timed out after {timeout_ms} ms: {self.stuck_on(until)}")
            if self.ticket:  # a ticket queued for us as a taker, which we leave: a worker takes it
                self.scheduler.wake_any()
            if epoch != self.abort_epoch:
                raise StreamAbortedError(f"stream {self.stream_id} was aborted while this thread waited for it")
        except BaseException:
            if claimed:  # interrupted on the way into run_stream
                self.scheduler.release(self, token)
            elif self.ticket:  # as above: a ticket left for this thread goes to a worker
                self.scheduler.wake_any()
            raise
        finally:  # costs nothing unless an exception passes (Python 3.11)
            if HOOKS.active:
                HOOKS.emit("host_wait_done", stream=self, seq=until,
                           ok=self.completed_seq >= until and epoch == self.abort_epoch)
        if report_errors:
            self.raise_error()

    def raise_error(self) -> None:
        """Raise (once) the failure this stream holds, recording it as the calling thread's
        last error, as a synchronize or query that reports it does."""
        err = self.error
        if err is not None:
            self.error = None
            if self.stopped is not None:
                self.stop_seen = True  # from now on a launch is refused with the failure
            set_last_error(err)
            raise err

    def query(self) -> bool:
        """True if every task enqueued so far has finished (then raises a pending failure)."""
        until = self.enqueued_seq
        self.streak = 0  # the host polls: as a wait (inline.py)
        if self.scheduler.deferred is not None:
            self.scheduler.flush_deferred()  # a host that polls will not take the work
        if self.completed_seq < until and self.scheduler.controlled is not None:
            self.scheduler.controlled.poll()  # a controlled device progresses one step per query
        done = self.completed_seq >= until
        if done:
            if HOOKS.active:
                HOOKS.emit("host_synced", stream=self, seq=until)
            self.raise_error()
        return done

    def stuck_on(self, until: int) -> str:
        """What keeps task `until` from finishing (for timeouts and hang warnings)."""
        try:
            head = self.queue[0]
        except IndexError:
            return f"stream {self.stream_id} (device {self.device.id}) has nothing queued"
        text = (f"stream {self.stream_id} (device {self.device.id}) is at task #{head.seq} "
                f"{head.describe()} ({self.state}); waiting for #{until}")
        blocker = self.parked_on
        if self.state is PARKED and blocker is not None:
            text += "; that task waits for " + blocker.describe()
        elif self.state is RUNNING:
            text += "; that task is running"
        return text

    # ------------------------------------------------------------ teardown
    def abort(self) -> None:
        """Drop queued work (a running task finishes); waiting host threads get
        StreamAbortedError. The stream stays usable for new work."""
        with self.enq_lock:
            self.abort_epoch += 1
            self.dropped_upto = self.enqueued_seq
        self.scheduler.unpark_any(self)  # let an owner drain the dropped tasks
        self.scheduler.kick(self)        # and make sure one will
        cond = self.cond
        with held(cond):
            cond.notify_all()


def _enqueue_slow(stream: Stream, task: "Task", *holders) -> int:
    """Where _speedups.enqueue_copy and enqueue_task take the Python path (a tool listening,
    a capture, ...)."""
    return stream.enqueue(task, holders=holders)


if SPEEDUPS is not None:  # Stream.enqueue's and run_stream's common case in C (_speedups.c: streams)
    SPEEDUPS.configure_streams(Stream, Task, CopyTask, HOOKS, FAULTS, TLS, address.backends, _enqueue_slow,
                               (IDLE, READY, RUNNING), INLINE_BYTES, STREAK, address.VA_BASE, thread_token,
                               C_FINISH)
enqueue_copy = SPEEDUPS.enqueue_copy if SPEEDUPS is not None else None
"""enqueue_copy(stream, dst, src, n, direction, keep, holder, other) -> seq: Stream.enqueue of
CopyTask(dst, src, n, direction, keep) with the two holders, in C; None without the extension."""
enqueue_task = SPEEDUPS.enqueue_task if SPEEDUPS is not None else None
"""enqueue_task(stream, task, *holders) -> seq: Stream.enqueue(task, holders=holders) of a task
just made (1 to 4 holders), in C; None without the extension. The Pythonic ops' tasks, event
records (Event.record_on) and kernel launches (kernel.operations.enqueue_launch) take it."""


def compute_in_c(task_type, names: tuple, ufuncs: tuple, dtypes: tuple) -> bool:
    """Let the C run loop compute the elementwise tasks of `task_type` (npurt.array.fused's
    ElementwiseTask) whose op and dtype it knows (_speedups.c: elementwise): `names` and
    `ufuncs` of add, sub, mul, div, `dtypes` float32, float64, int8, int16, int32, int64,
    uint8, in those orders. The `binary` C entry (entries.fast_entry) needs it. False, doing
    nothing, without the extension."""
    if SPEEDUPS is None:
        return False
    SPEEDUPS.configure_elementwise(task_type, names, ufuncs, dtypes)
    return True


enqueue_array_copy = SPEEDUPS.enqueue_array_copy if SPEEDUPS is not None else None
"""enqueue_array_copy(stream, dev, arr, n, direction, block, host_ranges) -> seq, or
NotImplemented (nothing done): memops.copy_array_async as enqueue_copy's CopyTask holding the
array, its address read in C; None without the extension."""
copy_d2d = SPEEDUPS.copy_d2d if SPEEDUPS is not None else None
"""copy_d2d(rt, dst, dest_max, src, count, kind, stream, require_aligned, keep) -> seq, or
NotImplemented (nothing done): memops.memcpy_async's fast path for a copy between the starts of
two live blocks of one device, in C; None without the extension."""
