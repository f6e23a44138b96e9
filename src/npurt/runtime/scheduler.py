"""The per-device task scheduler: a few worker threads running many streams.

A stream is in exactly one place at a time (`stream.state`):

    IDLE     nothing queued; not known to the scheduler
    READY    has work; a *ticket* for it sits in a ready queue
    RUNNING  one thread, its owner (`stream.runner`), runs its tasks in order
    PARKED   its head task waits on a blocker (an event, a callback); the blocker makes it
             READY again when it is satisfied

Ownership moves without a lock. The rules rely on the GIL of CPython 3.11: it switches
threads, and raises asynchronous exceptions (KeyboardInterrupt, an exception another thread
sends), only at calls, backward jumps and function entries. A run of attribute loads,
stores and comparisons with no call in between is therefore atomic, and is how every
ownership change below is made (a "test and set"):

* IDLE -> READY: an enqueuer that finds the stream IDLE sets it READY and queues a ticket.
* A ticket is a one-element list [stream]. READY -> RUNNING: whoever empties it
  (`if t: s = t[0]; del t[0]`) and records itself as `s.runner` owns the stream: a worker
  that takes the ticket from a ready queue, or a host thread that synchronizes and prefers
  running the work itself to sleeping.
* Only the owner runs and retires tasks, which keeps per-stream order. It gives the stream
  up as IDLE (queue empty: checked and set at once, so an enqueue is never stranded), READY
  (a new ticket: its budget is used up, or a host thread got what it waited for) or PARKED.

Exception safety: an exception can reach `run_stream` at any call (a KeyboardInterrupt in a
host thread running work inline, SystemExit from a task's own code, the kernel watchdog's
abort). Every step is ordered so that the handler knows what happened: a task whose run()
began is failed and retired exactly once, never run twice; a stream the thread still owns
is handed to the workers; a half-parked stream is taken back. Host threads then re-raise;
workers log and go on (a worker never dies). `retired` ("completed_seq") is a single store,
the commit point of a task; notifications after it are idempotent and redone on recovery.

Workers sleep on a private lock each and are woken when a ticket is queued while they are
idle (and look for work once a second anyway, which heals a wake-up lost to an exception).
When every worker has been busy on the same tasks for STALL_S while work waits (kernels that
do not return), a spare worker starts; spares leave when they find nothing to do.
A launch that a synchronize will take may wake nobody: deferred wake-ups (wakeups.py).
"""
from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import deque
from typing import TYPE_CHECKING

from .accel import SPEEDUPS
from .faults import FAULTS
from .interrupts import held
from .observers import HOOKS
from .task_failures import interrupted_error, task_error
from .tokens import TLS, HostToken, on_worker, thread_token  # noqa: F401 - re-exported (the owner tokens)
from .watchdog import WATCHDOG
from . import wakeups

if TYPE_CHECKING:
    from .device import Device
    from .stream import Stream

log = logging.getLogger("npurt")

IDLE, READY, RUNNING, PARKED = "idle", "ready", "running", "parked"
PRIORITIES = 8          # 0 highest .. 7 lowest, as ACL stream priorities
WORKER_BUDGET = 64      # tasks a worker runs on one stream before letting others go first
IDLE_POLL_S = 1.0       # a sleeping worker looks for work at least this often
STALL_S = 0.25          # every worker stuck this long while work waits: start a spare
MAX_SPARES = 32         # spare workers per device, beyond NPURT_WORKERS
# the C accelerator's loop over plain tasks (run_stream); None: the Python loop does it all
_run_tasks = SPEEDUPS.run_tasks if SPEEDUPS is not None else None
C_LET_GO = -1           # run_tasks: the thread no longer owns the stream
C_FINISH = type("C_FINISH", (), {"__repr__": lambda self: "C_FINISH"})()  # s.current ran; retire it here


class Blocker:
    """What a parked stream waits for. Subclasses implement `register() -> bool` (False:
    already satisfied), `describe()` and `waits_for()`; whoever satisfies a blocker calls
    `fire()` (firing twice is harmless)."""

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
        if self.fired:
            return
        self.fired = True
        try:
            self.fn()
        except KeyboardInterrupt:
            if on_worker():
                log.exception("npurt: a done-callback (%r) was interrupted; ignored", self.fn)
            else:
                raise  # Ctrl-C in a host thread that retired the task: the caller re-raises it
        except BaseException:  # noqa: BLE001 - a user callback must not wedge the stream
            log.exception("npurt: a done-callback (%r) raised; ignored", self.fn)


class Worker:
    __slots__ = ("wake", "thread", "ran", "retired", "spare", "owed")
    worker = True

    def __init__(self, spare: bool = False) -> None:
        self.wake = wakeups.WakeLock()
        self.wake.acquire()  # held = asleep; _wake() releases it to wake the worker
        self.ran = 0         # streams taken: progress, for the stall check
        self.retired = False  # stuck in an aborted task: leaves the pool when it returns
        self.spare = spare
        # streams this worker unparked and has not yet announced (wake_for): a hand-off folded
        # into the retirement that caused it. None: the worker is not running a stream now
        self.owed: list | None = None


class Scheduler:
    """Runs the streams of one device."""

    # a controlled schedule (schedule.py) in force: its device thread runs every task and the
    # workers stand aside; None otherwise (the one check it costs a hand-off)
    controlled = None
    instances: "weakref.WeakSet[Scheduler]" = weakref.WeakSet()
    # NPURT_HANG_WARNING_S, handed down by the runtime when it starts (0: never warn)
    hang_warning_s = 0.0

    def __init__(self, device: "Device", workers: int):
        Scheduler.instances.add(self)
        self.device = device
        self.nworkers = workers
        self.ready = [deque() for _ in range(PRIORITIES)]
        self.idle: list[Worker] = []
        self.workers: list[Worker] = []
        self.stopping = False
        self.stall_armed = False
        self._start_lock = threading.Lock()
        self.doorbell = wakeups.new_doorbell()
        self.deferred: tuple | None = None  # (stream, stamp) of the pending deferred wake-up

    # ------------------------------------------------------------ tickets
    def submit(self, s: "Stream") -> None:
        """Make `s`, which the caller owns, READY (a new ticket) and wake a worker. The
        caller gives up ownership."""
        t = [s]  # allocated first: an allocation may run the GC, and so other threads
        s.ticket = t
        s.runner = None
        s.state = READY
        self.ready[s.priority].append(t)  # the only call: the hand-over is complete after it
        self.wake_for(s)

    def release(self, s: "Stream", me) -> None:
        """After an exception: if `me` still owns `s`, hand it to the workers."""
        if s.runner is me:
            self.submit(s)

    def kick(self, s: "Stream") -> None:
        """Make sure queued work of `s` will run: a stream left IDLE with tasks queued (an
        enqueue interrupted before it handed the stream in) becomes READY; a READY stream's
        ticket is queued again (only one thread can claim a ticket, so a duplicate is
        harmless)."""
        if s.state is IDLE and s.queue:
            s.state = READY  # test and set
            t = s.ticket = [s]
        elif s.state is READY and s.ticket:
            t = s.ticket
        else:
            return
        self.ready[s.priority].append(t)
        self.wake_for(s)

    def wake_for(self, s: "Stream", defer: bool = False) -> None:
        """`s` became READY: tell host threads waiting for it (they may run it inline) and,
        unless one of them will take the stream (a *taker*: an untimed synchronize, which
        claims the ticket and runs the work itself), wake a worker. Waking one for a ticket a
        taker claims first costs a thread switch and a GIL contest for nothing; a taker that
        leaves without claiming wakes a worker itself (Stream.synchronize). `defer`: a host
        thread's enqueue onto idle `s`, which may defer the wake-up (wakeups.py)."""
        if s.waiters:
            taken = s.takers and not _host_code_next(s)
            cond = s._cond
            with held(cond):
                cond.notify_all()
            if taken:
                return
        if (defer or self.deferred is not None) and wakeups.defer(self, s, defer and not _host_code_next(s)):
            return
        self._wake()

    flush_deferred, taken = wakeups.flush_deferred, wakeups.taken  # deferred wake-ups (wakeups.py)

    def _wake(self) -> None:
        if self.controlled is not None:
            return  # the controlled schedule's device thread runs the work when the host waits
        idle = self.idle
        if idle:
            try:
                worker = idle.pop()
            except IndexError:
                return
            try:
                worker.wake.release()
            except RuntimeError:  # it woke by itself (its poll) and consumed nothing
                pass
        elif len(self.workers) < self.nworkers:
            self._start_worker()
        elif not self.stall_armed:
            self._arm_stall_check()

    # ------------------------------------------------------------ workers
    def _start_worker(self, spare: bool = False) -> None:
        with self._start_lock:
            limit = self.nworkers + (MAX_SPARES if spare else 0)
            if len(self.workers) >= limit or self.stopping:
                return
            worker = Worker(spare)
            worker.thread = threading.Thread(
                target=self._worker_loop, args=(worker,), daemon=True,
                name=f"npurt-dev{self.device.id}-{'spare' if spare else 'worker'}{len(self.workers)}")
            self.workers.append(worker)
            worker.thread.start()

    def retire_worker(self, worker: Worker) -> None:
        """`worker` is stuck in a task the runtime gave up on: it leaves the pool (and ends
        when the task returns, if ever); a new worker takes its place."""
        with self._start_lock:
            worker.retired = True
            if worker in self.workers:
                self.workers.remove(worker)
        try:
            self.idle.remove(worker)
        except ValueError:
            pass
        if any(self.ready):
            self._wake()

    def _worker_loop(self, me: Worker) -> None:
        TLS.token = me
        while not self.stopping and not me.retired:
            s = None
            if self.controlled is not None:  # a controlled schedule runs the tasks now
                me.wake.acquire(timeout=IDLE_POLL_S)
                continue
            try:
                for q in self.ready:
                    while q:
                        t = q[0]
                        if t:  # claim: no call until popleft, which therefore removes t
                            s = t[0]
                            del t[0]
                            s.runner = me
                            s.state = RUNNING
                            q.popleft()
                            break
                        q.popleft()  # a ticket a host thread already used
                    if s is not None:
                        break
                if s is not None:
                    while s is not None:  # (a stream this worker unparked: it takes it over directly)
                        me.ran += 1
                        s = self._run_owned(s, me)
                elif me.spare and len(self.workers) > self.nworkers:
                    self.retire_worker(me)  # nothing left to do for a spare
                else:
                    self._sleep(me)
            except BaseException:  # noqa: BLE001 - a worker never dies
                if s is not None:
                    self.release(s, me)
                log.exception("npurt: a scheduler worker hit an unexpected error; it goes on")

    def _run_owned(self, s: "Stream", me: Worker):
        """Run `s`, which `me` owns, for a while; then settle the wake-ups it owes. Returns a
        stream it unparked and has just claimed, to run next (no thread switch), or None."""
        me.owed = []
        try:
            self.run_stream(s, me, budget=WORKER_BUDGET)
        except BaseException:
            self._pay(me)
            me.owed = None
            raise
        return self._settle(me)

    def _pay(self, me: Worker) -> None:
        """Announce the streams `me` unparked and kept quiet about (see unpark): it is about to
        run real work, so they must not wait for it."""
        owed = me.owed
        if owed:
            me.owed = []
            for s in owed:
                s.scheduler.wake_for(s)  # (a stream of another device: its own scheduler)

    def _settle(self, me: Worker):
        """`me` has let go of its stream. Of the streams it unparked meanwhile, claim the first
        of this device that is still READY (its ticket unused) and announce the others.
        Returns the claimed stream or None."""
        owed, me.owed = me.owed, None
        take = None
        for s in owed or ():
            if take is None and s.scheduler is self:  # (another device's stream: its own workers)
                t = s.ticket
                if t:  # claim: the test and the stores are one atomic step (see the module doc)
                    del t[0]
                    s.runner = me
                    s.state = RUNNING
                    take = s
                    continue
            s.scheduler.wake_for(s)
        return take

    def _sleep(self, me: Worker) -> None:
        idle = self.idle
        idle.append(me)
        if any(self.ready):  # re-check: a ticket queued before we were listed found nobody
            try:
                idle.remove(me)
            except ValueError:  # a waker took us: consume its release
                me.wake.acquire(timeout=IDLE_POLL_S)
            return
        wakeups.sleep_on(self, me, IDLE_POLL_S)

    def _arm_stall_check(self) -> None:
        self.stall_armed = True
        before = sum(w.ran for w in self.workers)
        WATCHDOG.call_at(time.monotonic() + STALL_S, lambda: self._stall_check(before))

    def _stall_check(self, before: int) -> None:
        """Work waits and no worker has taken a stream for STALL_S: they are all stuck in
        long tasks (a kernel that does not return). Start a spare so other streams go on."""
        self.stall_armed = False
        if self.stopping or self.idle or not any(self.ready):
            return
        if sum(w.ran for w in self.workers) == before:
            log.info("npurt: every worker of device %d is busy with a long task while work waits; "
                     "starting a spare worker", self.device.id)
            self._start_worker(spare=True)
        if not self.idle and any(self.ready):
            self._arm_stall_check()

    def wake_any(self) -> None:
        """Wake a worker for the queued work (the controlled schedule ended)."""
        self._wake()

    def shutdown(self) -> None:
        # under the start lock: a worker another thread is starting (listed before its
        # thread.start() returns) is started before we list it, and none starts after;
        # joining one not yet started raised RuntimeError (aclFinalize gave 500000)
        with self._start_lock:
            self.stopping = True
            workers = list(self.workers)
        wakeups.forget(self)
        for worker in workers:
            try:
                worker.wake.release()
            except RuntimeError:
                pass
        deadline = time.monotonic() + 5
        for worker in workers:
            if worker.thread is not threading.current_thread():
                worker.thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self.workers.clear()
        self.idle.clear()

    # ------------------------------------------------------------ running a stream
    def run_stream(self, s: "Stream", me, budget: int = 1 << 62, until: int = 0, raised=None) -> None:
        """Run tasks of `s`, which `me` owns (s.runner is me), until its queue is empty, its
        head task is blocked (the stream parks), `budget` tasks ran, or (for a host thread)
        task `until` has retired. On return, and when it raises, `me` no longer owns `s`.
        With the C accelerator the loop over plain tasks runs in C (`_speedups.run_tasks`, the
        same steps) and this loop takes every other case; `raised`: what the C loop left
        unfinished when it was entered from C (C_FINISH: `s.current` ran; an exception: its
        run() raised it, or, with no `s.current`, something after the last retirement did)."""
        queue = s.queue
        started = parking = None  # a task whose run() began and is not retired; a blocker being parked on
        # a worker's own run (not one nested in a task it runs) folds the hand-offs it causes
        # into its retirements (see unpark); never while real work runs
        defer = me.owed is not None
        try:
            while True:
                if raised is None and _run_tasks is not None:
                    try:
                        budget = _run_tasks(s, me, budget, until, defer)
                    except BaseException as exc:  # noqa: BLE001 - sorted out below
                        raised = exc
                    else:
                        if budget < 0:
                            if budget == C_LET_GO:
                                return
                            raised, budget = C_FINISH, 0
                if raised is not None:  # the C loop began s.current (or failed after a retirement)
                    task = started = s.current
                    exc, raised = raised, None
                    if task is None:
                        raise exc
                    seq = task.seq
                    if exc is C_FINISH:
                        error = None
                    elif isinstance(exc, Exception) or me.worker:
                        error = task_error(task, exc)
                    else:
                        raise exc  # an interrupt of this host thread: _recover fails the task
                else:
                    if not queue:
                        s.runner = None  # IDLE: the emptiness test and these stores are one atomic step
                        s.state = IDLE
                        return
                    if until and s.completed_seq >= until:  # a host thread got what it waited for
                        self.submit(s)
                        return
                    if budget <= 0:  # let other ready streams go first, if there are any
                        if any(self.ready):
                            self.submit(s)
                            return
                        budget = WORKER_BUDGET
                    budget -= 1
                    task = queue[0]
                    seq = task.seq
                    if seq <= s.completed_seq:  # retired already (by the watchdog, or before an interrupt)
                        queue.popleft()
                        continue
                    if seq <= s.dropped_upto:  # dropped by an abort or a stop-on-failure
                        s.completed_seq = seq
                        queue.popleft()
                        s.notify_retired()
                        continue
                    if task.may_block:
                        try:
                            blocker = task.blocker()
                        except Exception as exc:  # noqa: BLE001 - fails the task like run() would
                            s.fail(task, task_error(task, exc))
                            s.completed_seq = seq
                            queue.popleft()
                            s.notify_retired()
                            continue
                        if blocker is not None:
                            if HOOKS.active:  # before parking: once parked, another thread may run the task
                                HOOKS.emit("task_blocked", task=task, blocker=blocker)
                            parking = blocker
                            if self._park(s, me, blocker):
                                return
                            parking = None
                            continue  # satisfied while registering: ask the task again
                    if defer and not task.trivial:  # real work next: announce the streams we unparked,
                        if me.owed:                    # and defer nothing while it runs
                            self._pay(me)
                        me.owed = None
                    started = task
                    s.current = task
                    if HOOKS.active:
                        HOOKS.emit("task_started", task=task)
                    try:
                        if FAULTS.tasks:  # the one check fault injection costs a task
                            FAULTS.on_task(task)
                        task.run()
                    except Exception as exc:  # noqa: BLE001 - becomes the stream's error
                        error = task_error(task, exc)
                    except BaseException as exc:
                        if not me.worker:
                            raise  # an interrupt of this host thread: _recover fails the task
                        error = task_error(task, exc)  # SystemExit & co. from task code: a worker goes on
                    else:
                        error = None
                if defer:
                    me.owed = me.owed or []
                s.current = None
                if s.runner is not me:  # aborted while it ran: the watchdog retired it and handed s on
                    return
                if HOOKS.active:
                    HOOKS.emit("task_finished", task=task, error=error)
                if error is not None:
                    s.fail(task, error)
                s.completed_seq = seq  # the commit: the task is retired
                started = None
                queue.popleft()
                if s.waiters or s.watchers:  # (the tests notify_retired makes first: a call less)
                    s.notify_retired()
        except BaseException as exc:
            self._recover(s, me, started, parking, exc)
            raise

    def _recover(self, s: "Stream", me, started, parking, exc: BaseException) -> None:
        """run_stream was left by an exception: make `s` consistent and, if `me` still owns
        it, hand it to the workers."""
        if parking is not None:
            with s.lock:
                if s.parked_on is parking:  # parked, perhaps with nobody to wake it: take it back
                    s.parked_on = None
                    s.runner = me
                    s.state = RUNNING
        if s.runner is not me:
            return
        s.current = None
        if started is not None and s.completed_seq < started.seq:  # it began: it never runs twice
            if HOOKS.active:
                HOOKS.emit("task_finished", task=started, error=None)
            s.fail(started, interrupted_error(started, exc))
            s.completed_seq = started.seq
        try:
            s.notify_retired()
        finally:
            self.submit(s)

    # ------------------------------------------------------------ parking
    def _park(self, s: "Stream", me, blocker) -> bool:
        """Park `s` on `blocker`. False if the blocker was already satisfied (`me` still owns
        `s` and goes on running it)."""
        blocker.waiter = s
        with s.lock:
            s.parked_on = blocker
            s.runner = None
            s.state = PARKED
        if blocker.register():
            return True
        with s.lock:
            if s.parked_on is blocker:
                s.parked_on = None
                s.runner = me
                s.state = RUNNING
                return False
        return True  # an unpark or an abort already handed the stream on

    def unpark(self, blocker, expired=None) -> bool:
        """`blocker` is satisfied: the stream parked on it becomes READY again. False if it
        was not parked on it (any more). `expired` (a wait task whose timeout passed) is
        marked timed out in the same step."""
        s = blocker.waiter
        t = [s]
        with s.lock:
            if s.parked_on is not blocker:
                return False  # stale: aborted, or parked on something else by now
            s.parked_on = None
            if expired is not None:
                expired.timed_out = True
            s.ticket = t
            s.state = READY
            self.ready[s.priority].append(t)
        token = TLS.token
        owed = token.owed if token is not None else None
        if owed is not None:
            # a worker retiring a task (an event record, a stream's progress) unparked `s`: it
            # tells nobody yet. If its own stream parks or empties next, it takes `s` over
            # itself (_settle), the hand-off without a thread switch; before it runs real work
            # it announces `s` as usual (_pay)
            owed.append(s)
        else:
            self.wake_for(s)
        return True

    def unpark_any(self, s: "Stream") -> None:
        """Take `s` from whatever it is parked on (abort: its dropped tasks must retire)."""
        blocker = s.parked_on
        if blocker is not None:
            self.unpark(blocker)

    # ------------------------------------------------------------ deadlocks
    def deadlock(self, s: "Stream", until: int, token) -> str | None:
        """Why a wait by the thread holding `token` for task `until` of `s` can never end
        (it waits for itself), or None. Follows what parked streams wait for."""
        for _ in range(16):
            if s.completed_seq >= until:
                return None
            if s.runner is token:
                return (f"this thread is running a task of stream {s.stream_id} (device {s.device.id}), "
                        f"so task #{until} of that stream cannot finish while it waits")
            blocker = s.parked_on
            wf = blocker.waits_for() if blocker is not None else None
            if not wf:
                return None
            if wf[0] == "stream":
                s, until = wf[1], wf[2]
            elif wf[0] == "report_thread":
                mine = wf[1] in (threading.get_ident(), threading.get_native_id())
                return ("this thread is the report thread that must run the callback the stream waits "
                        "for, and it is running a callback now") if mine and TLS.reporting else None
            else:
                return None
        return None


def _host_code_next(s: "Stream") -> bool:
    """Whether the next task of READY `s` is a host function: that is for a runtime thread
    to run (aclrtLaunchHostFunc), so a taker's claim of it is not counted on."""
    try:
        return s.queue[0].kind == "host_func"
    except IndexError:  # claimed and run meanwhile
        return False
