"""Inline execution: a cheap task enqueued on an idle stream runs in the enqueuing thread.

Handing a task to a scheduler worker costs more than small work itself: the worker has to be
woken (a futex wake of a thread on another core) and then competes with the caller for the
GIL, about 20 µs of wall time one way on the project's VM, while a 64-byte copy or a
16-element add takes one or two. So when a host thread enqueues a task that is

* cheap: a copy or set of at most `MAX_BYTES`, an event record, a built-in kernel or a torch
  op of one block touching at most `MAX_BYTES` (the task says so: `task.cheap`, set where
  it is made, never for host functions, callbacks, waits or user kernels, which may wait
  for the host or run long), and
* enqueued onto an IDLE stream (nothing queued, no owner), by a thread that is not a
  scheduler worker,

the thread takes the stream as its owner, exactly as a synchronizing host thread does
(scheduler.py's test and set), and runs the task before the call returns: `run` below, the
steps of `Scheduler.run_stream` for one task (what a worker or a synchronizing thread runs),
without its loop, and run_stream itself for anything unusual. Everything the runtime
promises stays as it is: the sequence number is taken, uses are
recorded and `task_enqueued` is emitted under the enqueue lock first; the task retires in
stream order; a failure becomes the stream's error, reported at the next synchronize or
query (the enqueue call still returns success, as an asynchronous launch does), and the
exception callback is called as for any failed task. Work enqueued by other threads
meanwhile goes to the workers when the inline run ends.

The streak rule keeps bursts asynchronous: a stream runs at most `STREAK` tasks inline in a
row without the host waiting for it (synchronize, an event synchronize, a query); after
that its enqueues go to the workers again, so a loop of many tiny asynchronous copies keeps
the host enqueueing while a worker copies (`enqueue_us` does not regress). Waiting resets
the streak.

Inline execution is off, and everything goes to the workers as before, when:

* `NPURT_INLINE=0`, or launch-blocking mode is on (NPURT_LAUNCH_BLOCKING: every task is
  then waited for at its call anyway), read when the runtime initializes;
* a tool listens (`HOOKS.active`: the sanitizer, the profiler, a test's observer), fault
  injection has task faults armed (`FAULTS.tasks`), or a controlled schedule is in force
  (schedule.py runs every task on its device thread): those tools see the runtime exactly as
  without inline execution;
* the stream is being captured into a graph (graph.py records the task instead; nothing runs).

The cost when none of this applies is a handful of attribute tests in `Stream.enqueue`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .faults import FAULTS
from .observers import HOOKS
from .scheduler import IDLE, task_error

if TYPE_CHECKING:
    from .scheduler import Scheduler
    from .stream import Stream
    from .tasks import Task

MAX_BYTES = 128 << 10   # bytes a task may touch (read + written) and still run inline
STREAK = 4              # tasks a stream runs inline in a row before the host waits for it


def cheap_bytes(nbytes: int) -> bool:
    """A copy, set or kernel touching `nbytes` bytes in all is cheap enough to run inline."""
    return nbytes <= MAX_BYTES


def run(scheduler: "Scheduler", s: "Stream", me, task: "Task") -> None:
    """Scheduler.run_stream for the enqueue that took the IDLE stream `s` to run `task`,
    which it has just queued: that one task, without the loop's bookkeeping, then
    IDLE, or READY for the workers if other threads queued work meanwhile. Anything
    unusual (the task is not at the head, dropped, may block, a tool listens) takes
    run_stream. On return, and when it raises, `me` no longer owns `s`."""
    queue = s.queue
    seq = task.seq
    if queue[0] is not task or seq <= s.dropped_upto or task.may_block or HOOKS.active:
        scheduler.run_stream(s, me, until=seq)
        return
    started = task
    try:
        s.current = task
        try:
            if FAULTS.tasks:
                FAULTS.on_task(task)
            task.run()
        except Exception as exc:  # noqa: BLE001 - becomes the stream's error (a BaseException
            error = task_error(task, exc)  # of this host thread: recover fails the task)
        else:
            error = None
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
        if s.waiters or s.watchers:
            s.notify_retired()
        if not queue:
            s.runner = None  # IDLE: the emptiness test and these stores are one atomic step
            s.state = IDLE
            return
        scheduler.submit(s)  # work other threads queued meanwhile goes to the workers
    except BaseException as exc:
        scheduler.recover(s, me, started, None, exc)
        raise
