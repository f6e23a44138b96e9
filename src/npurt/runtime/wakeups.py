"""Deferred wake-ups: a launch that a synchronize will take wakes no worker.

Waking a sleeping worker costs the waker a futex wake (on a VM an inter-processor interrupt:
40-50 µs of a launch on the VMs npurt is measured on), and when the host thread that launched
the work synchronizes at once it runs the work itself (a *taker*, scheduler.py), so the woken
worker only contests the GIL with it. A stream remembers that this happened
(`stream.sync_follows`: a host thread claimed a ticket before a worker did, `taken`). Its next
launch onto it idle from a host thread rings the C accelerator's doorbell (`defer`, from
`Scheduler.wake_for`): a store instead of a system call. The deferral lasts until

* the stream's own synchronize (directly or through an event recorded after the launch),
  which takes the work (`taken`);
* the host's next enqueue, query, or wait on another stream, or a timed wait: the host moved
  on, so `flush_deferred` wakes a worker then and clears `sync_follows` (the guess was wrong);
* otherwise the *poller* answers it: one idle worker per device sleeps in `Doorbell.wait`
  with short timeouts, without the GIL, for DOORBELL_WINDOW_US (20 ms) after a launch last
  tried to defer, and takes a deferral that is DOORBELL_GRACE_US (0.1 ms) old at its next look
  (every DOORBELL_POLL_US, 0.5 ms): the work starts at most about 0.6 ms late, and
  `sync_follows` is cleared. A program whose launches are not followed by waits (a
  pipeline) tries no deferral, so no thread polls.

Never for host functions, while a tool listens, under a controlled schedule, with
NPURT_INLINE=0 (the caller passes defer only where inline execution is on), or without the
accelerator (`Scheduler.doorbell` is None: every launch wakes a worker, as before).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .accel import SPEEDUPS
from .observers import HOOKS

if TYPE_CHECKING:
    from .scheduler import Scheduler, Worker
    from .stream import Stream

_Doorbell = getattr(SPEEDUPS, "Doorbell", None)
# a worker's wake lock: the accelerator's Lock where the doorbell's poll waits on it
WakeLock = SPEEDUPS.Lock if _Doorbell is not None else threading.Lock
WOKEN, ANSWERED = 1, 2  # Doorbell.wait's results besides 0 (timed out)


def new_doorbell():
    """A scheduler's doorbell, or None without the accelerator."""
    return _Doorbell() if _Doorbell is not None else None


def defer(sched: "Scheduler", s: "Stream", launch: bool) -> bool:
    """From Scheduler.wake_for, for READY `s`: first wake a worker for a deferral pending on
    another stream (the host moved on); then, for a host thread's `launch` onto idle `s`
    whose last launch its host took, ring instead of waking a worker. False: the caller
    wakes one (no poller, one deferral pending already, no doorbell, a tool listening)."""
    if sched.deferred is not None:
        flush_deferred(sched, s)
    bell = sched.doorbell
    if not launch or not s.sync_follows or bell is None or sched.controlled is not None or HOOKS.active:
        return False
    stamp = bell.defer()
    if stamp:
        sched.deferred = (s, stamp)
    return bool(stamp)


def flush_deferred(sched: "Scheduler", s: "Stream | None" = None) -> None:
    """Scheduler.flush_deferred: the host moved on from its deferred launch (to a stream other
    than `s`): wake a worker for it now, unless the poller already has."""
    pending = sched.deferred
    if pending is not None and pending[0] is not s:
        sched.deferred = None
        pending[0].sync_follows = False  # the guess was wrong: its next launch wakes a worker
        if sched.doorbell.take(pending[1]):
            sched._wake()


def taken(sched: "Scheduler", s: "Stream") -> None:
    """Scheduler.taken: a host thread claimed `s`'s ticket; a deferral for it is not needed."""
    if not s.sync_follows:
        s.sync_follows = True  # (a wake-up for this ticket, had there been one, was wasted)
    pending = sched.deferred
    if pending is not None and pending[0] is s:
        sched.deferred = None
        sched.doorbell.take(pending[1])


def sleep_on(sched: "Scheduler", me: "Worker", timeout: float) -> None:
    """A listed idle worker's sleep: on its wake lock, polling the doorbell if it is the
    poller; it returns to look for work when woken, timed out or having answered."""
    bell = sched.doorbell
    woke = me.wake.acquire(timeout=timeout) if bell is None else bell.wait(me.wake, timeout)
    if woke == WOKEN:
        if bell is not None and bell.take():  # we polled for a deferral nobody answered yet
            sched.deferred = None
            sched._wake()
        return
    if woke == ANSWERED:  # its launch was not followed by a wait
        pending = sched.deferred
        if pending is not None:
            sched.deferred = None
            pending[0].sync_follows = False
    try:
        sched.idle.remove(me)
    except ValueError:  # a waker took us meanwhile: consume its release
        me.wake.acquire(timeout=timeout)


def forget(sched: "Scheduler") -> None:
    """The scheduler shuts down: nothing runs any more, so a pending deferral is moot."""
    if sched.doorbell is not None:
        sched.deferred = None
        sched.doorbell.take()
