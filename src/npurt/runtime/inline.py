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
(scheduler.py's test and set), and runs the task through `Scheduler.run_stream` before the
call returns. Everything the runtime promises stays as it is, because it is the same code
path a worker or a synchronizing thread runs: the sequence number is taken, uses are
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

MAX_BYTES = 128 << 10   # bytes a task may touch (read + written) and still run inline
STREAK = 4              # tasks a stream runs inline in a row before the host waits for it


def cheap_bytes(nbytes: int) -> bool:
    """A copy, set or kernel touching `nbytes` bytes in all is cheap enough to run inline."""
    return nbytes <= MAX_BYTES
