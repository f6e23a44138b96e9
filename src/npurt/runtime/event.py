"""Events: points in a stream that other streams and the host can wait for.

The runtime's model (event.cc): `record(event, stream)` captures the tasks already enqueued
on the stream; the event completes when its record task runs. The latest record is what
later waits, synchronizes and queries use; `reset_event` does not forget it (event.cc's
Reset only sets hasReset_, which the next record clears), so synchronize and query after a
reset still answer for the last record.

Waits, by kind of event (Event::WaitSendCheck / Event::Wait):
- `_ex_` events (create_event_ex_with_flag, "new mode"): a wait before any record adds
  nothing; otherwise it waits for the latest record.
- events created with ACL_EVENT_SYNC or ACL_EVENT_EXTERNAL hold one hardware event id for
  life, a semaphore: a wait before any record blocks until a record completes.
- other events (create_event()'s RT_EVENT_DEFAULT takes a fresh id per record): a wait before
  any record is refused (ACL_ERROR_RT_PARAM_INVALID: record it first).
- after `reset_event`, a wait on an event whose record already ran waits for the next record
  (the reset cleared the hardware flag that record set).
Events without a wait flag (ACL_EVENT_SYNC, RT_EVENT_DDSYNC, EXTERNAL, IPC) cannot be waited
on or reset (ACL_ERROR_RT_FEATURE_NOT_SUPPORT).
"""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from . import constants as C
from .errors import (EventError, FeatureNotSupportedError, InvalidHandleError, ParamInvalidError,
                     SyncTimeoutError, TaskError)
from .observers import HOOKS
from .scheduler import Blocker, Callback, Scheduler
from .stream import enqueue_task
from .watchdog import WATCHDOG
from .tasks import NopTask, StreamProgress, Task

if TYPE_CHECKING:
    from .device import Device
    from .stream import Stream

RT_EVENT_DDSYNC = 0x4     # no ACL name; part of what create_event() gets
RT_EVENT_DEFAULT = C.ACL_EVENT_CAPTURE_STREAM_PROGRESS | RT_EVENT_DDSYNC | C.ACL_EVENT_TIME_LINE  # 0x0E
WAIT_FLAGS = C.ACL_EVENT_SYNC | RT_EVENT_DDSYNC | C.ACL_EVENT_EXTERNAL | C.ACL_EVENT_IPC


class Record:
    """One capture of an event: stream and sequence number, and when it completed."""

    __slots__ = ("stream", "seq", "ran", "t_ns")

    def __init__(self, stream: "Stream"):
        self.stream = stream
        self.seq = 0
        self.ran = False
        self.t_ns = 0


class Event:
    """A device event. `flags` (RT_EVENT_* / ACL_EVENT_*) say what it may be used for."""

    def __init__(self, device: "Device", flags: int, *, ex: bool = False, counted: bool = True):
        self.device = device
        self.flags = flags
        self.ex = ex                  # create_event_ex_with_flag semantics ("new mode")
        self.counted = counted        # takes one of the device's event slots
        self.waitable = bool(flags & WAIT_FLAGS)  # usable with stream_wait_event / reset_event
        # one hardware id for life: a wait before any record blocks until one completes
        self.semaphore = not ex and bool(flags & (C.ACL_EVENT_SYNC | C.ACL_EVENT_EXTERNAL))
        self.timing = bool(flags & C.ACL_EVENT_TIME_LINE)  # the record writes a timestamp
        self.event_id = next(device.event_ids)
        self.handle = 0
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.record: Record | None = None
        self.has_reset = False        # reset_event called since the latest record was enqueued
        self.device_flag = False      # the hardware flag as the device sees it: set by a record as it
        #                               runs, cleared by a reset as it runs (graph replays wait on it)
        self.watchers: list = []      # blockers of streams parked until a record completes
        self.waits: list[tuple[Stream, int]] = []  # stream_wait_event tasks not known to be done
        self.destroyed = False

    def __repr__(self) -> str:
        rec = self.record
        state = "never recorded" if rec is None else (
            f"recorded on stream {rec.stream.stream_id} at #{rec.seq}, " + ("complete" if rec.ran else "pending"))
        return f"<npurt event {self.event_id} on device {self.device.id}: {state}>"

    # ------------------------------------------------------------ stream side
    def record_on(self, stream: "Stream") -> int:
        rec = Record(stream)
        task = RecordTask(self, rec)
        if enqueue_task is not None and stream.capture is None and not HOOKS.active:
            # Stream.enqueue's common case in C, which has no on_seq: the record is published
            # once its sequence number is back. A captured record keeps Capture.take's path,
            # and a listening tool sees every record task with its sequence number already set
            seq = enqueue_task(stream, task, None)
            self._published(rec, seq)
            return seq
        return stream.enqueue(task, on_seq=lambda seq: self._published(rec, seq))

    def _published(self, rec: Record, seq: int) -> None:
        """The record enqueued as task `seq` becomes the event's latest: from Stream.enqueue
        under the stream's lock, before the task can run, or after the C enqueue returned,
        when it may have run already (inline, or on a worker). Then a blocker that registered
        meanwhile saw the record before it and waits, so it is fired here; and of two records
        on one stream published out of their order (two host threads), the later task stays
        the latest."""
        rec.seq = seq
        with self.lock:
            latest = self.record
            if latest is not None and latest.stream is rec.stream and latest.seq > seq:
                return
            self.record = rec
            self.has_reset = False
            if self.cond._waiters:  # notify_all is Python code: half a microsecond for nobody
                self.cond.notify_all()
        if rec.ran and self.watchers:
            self.fire_watchers()

    def wait_on(self, stream: "Stream") -> int:
        if not self.waitable:
            raise FeatureNotSupportedError(
                f"event {self.event_id} (flags {self.flags:#x}) cannot be waited on: create it with "
                "create_event(), or with the ACL_EVENT_SYNC flag")
        rec = self.record
        if rec is None:
            if self.ex:  # nothing recorded yet: nothing to wait for
                return stream.enqueue(NopTask())
            if not self.semaphore:
                raise ParamInvalidError(
                    f"event {self.event_id} has never been recorded: record it first (record_event) "
                    "before a stream waits on it")
            task = WaitTask(self, None, self.device.runtime.op_wait_timeout_s)
        elif self.has_reset and rec.ran:  # the reset cleared what that record set: wait for the next
            task = WaitTask(self, None, self.device.runtime.op_wait_timeout_s, stale=rec)
        else:
            task = WaitTask(self, rec, self.device.runtime.op_wait_timeout_s)
        seq = stream.enqueue(task)
        waits = self.waits
        if len(waits) > 8:
            waits[:] = [(s, n) for s, n in waits if s.completed_seq < n]
        waits.append((stream, seq))
        return seq

    def reset_on(self, stream: "Stream") -> int:
        if stream.capture is None:  # a captured reset takes effect at each replay (graph.py)
            self.has_reset = True
        return stream.enqueue(ResetEventTask(self))

    def completed(self, rec: Record) -> None:
        """Called by the record task when it runs."""
        rec.t_ns = time.perf_counter_ns()
        rec.ran = True
        self.device_flag = True
        if self.watchers or self.cond._waiters:
            # (nobody to fire, the usual case: no lock. A blocker registers under the lock; one
            # that registers too late to be seen here found this record, which `_published` set
            # under the lock before the task could run, and did not wait; or, on the C enqueue
            # path, found none yet and is fired by `_published`)
            self.fire_watchers()

    def fire_watchers(self) -> None:
        """Wake host threads and fire the watchers of a record completing (or of the event
        being destroyed). Fire first, forget after: an interrupt here loses no watcher."""
        with self.lock:
            watchers = list(self.watchers) if self.watchers else ()
            if self.cond._waiters:  # (CPython's Condition keeps its waiters there)
                self.cond.notify_all()
        failure = None
        for blocker in watchers:
            try:
                blocker.fire()
            except BaseException as exc:  # noqa: BLE001 - the others still fire
                failure = failure or exc
        if watchers:
            fired = set(map(id, watchers))
            with self.lock:
                self.watchers = [w for w in self.watchers if id(w) not in fired]
        if failure is not None:
            raise failure

    def on_completed(self, fn, rec: Record | None = None) -> None:
        """Call fn() once the capture `rec` (default: the latest) has retired, or, if the
        event was never recorded, once a record of it completes. fn must be quick."""
        rec = rec or self.record
        if rec is None:
            with self.lock:
                rec = self.record
                if rec is None:
                    self.watchers.append(Callback(fn))
                    return
        rec.stream.on_retired(rec.seq, fn)

    # ------------------------------------------------------------ host side
    def status_complete(self) -> bool:
        """query_event_status: the latest record ran; before any, only _ex_ events count as done."""
        rec = self.record
        if rec is not None and not rec.ran and Scheduler.controlled is not None:
            Scheduler.controlled.poll()  # a controlled device progresses one step per query
        return self.ex if rec is None else rec.ran

    def query_complete(self) -> bool:
        """query_event (Event::Query): not done only while the latest record is pending."""
        rec = self.record
        if rec is not None and not rec.ran and Scheduler.controlled is not None:
            Scheduler.controlled.poll()
        return rec is None or rec.ran

    def is_complete(self) -> bool:
        return self.status_complete()

    def wait_status_complete(self) -> bool:
        """query_event_wait_status: every stream_wait_event on this event has finished."""
        return all(s.completed_seq >= n for s, n in self.waits)

    def synchronize(self, timeout_ms: int = -1) -> None:
        """Block until the latest record has completed; at once if there is none."""
        rec = self.record
        if rec is None:
            return
        try:
            rec.stream.synchronize(until=rec.seq, timeout_ms=timeout_ms, report_errors=False)
        except SyncTimeoutError as exc:
            raise SyncTimeoutError(
                f"synchronize_event timed out after {timeout_ms} ms waiting for event "
                f"{self.event_id}: {exc.message}", C.ACL_ERROR_RT_EVENT_SYNC_TIMEOUT) from None
        if not rec.ran:
            stop = rec.stream.stopped
            raise EventError(
                f"event {self.event_id} will not complete: its record on stream "
                f"{rec.stream.stream_id} was dropped"
                + (f" because the stream stopped on failure ({stop.message})" if stop else " by an abort"),
                C.ACL_ERROR_RT_EVENT_NOT_COMPLETE)

    def _destroyed_unrecorded(self) -> InvalidHandleError:
        return InvalidHandleError(f"event {self.event_id} was destroyed before the record this wait needs; "
                                  "a wait for it can never end")

    def timestamp_ns(self) -> int:
        return self._timed_record("get a timestamp from").t_ns

    def elapsed_ms(self, end: "Event") -> float:
        """end's record minus this one's, in ms; negative when end completed first (the
        runtime subtracts without a check: Event::ElapsedTime)."""
        if self.record is None or end.record is None:
            who = self if self.record is None else end
            raise EventError(f"cannot measure elapsed time: event {who.event_id} has not been recorded",
                             C.ACL_ERROR_RT_INTERNAL_ERROR)
        start_rec = self._timed_record("measure elapsed time from")
        end_rec = end._timed_record("measure elapsed time to")
        return (end_rec.t_ns - start_rec.t_ns) / 1e6

    def _timed_record(self, verb: str) -> Record:
        rec = self.record
        if rec is None:  # RT_ERROR_EVENT_RECORDER_NULL, which errcode_manage.cc maps to 507000
            raise EventError(f"cannot {verb} event {self.event_id}: it has not been recorded",
                             C.ACL_ERROR_RT_INTERNAL_ERROR)
        if not self.timing:
            raise EventError(
                f"cannot {verb} event {self.event_id}: it was created without ACL_EVENT_TIME_LINE, so "
                "its record writes no timestamp (use create_event(), or add ACL_EVENT_TIME_LINE)")
        if not rec.ran:  # the timestamp is only written when the record runs
            raise EventError(
                f"cannot {verb} event {self.event_id}: its record has not completed yet; synchronize "
                "the event or its stream first")
        return rec


class EventNextRecord(Blocker):
    """Blocker: a record of `event` other than `stale` (None: any) completes."""

    __slots__ = ("event", "stale")

    def __init__(self, event: Event, stale: Record | None = None):
        self.event, self.stale = event, stale

    def register(self) -> bool:
        event = self.event
        with event.lock:
            rec = event.record
            if rec is not None and rec is not self.stale:
                return False
            event.watchers.append(self)
            return True

    def waits_for(self):
        return ("event", self.event)

    def describe(self) -> str:
        rec = self.event.record
        if rec is None:
            return f"event {self.event.event_id}, which has never been recorded"
        if rec is self.stale:
            return (f"event {self.event.event_id}, which was reset after its last record: waiting for "
                    "a new record of it")
        return (f"event {self.event.event_id}, recorded on stream {rec.stream.stream_id} as task "
                f"#{rec.seq}, which has not completed (that stream has finished #{rec.stream.completed_seq})")


class RecordTask(Task):
    __slots__ = ("event", "rec")
    kind = "record_event"
    cheap = True  # a timestamp and the watchers it fires (inline.py)
    trivial = True

    def __init__(self, event: Event, rec: Record):
        self.event, self.rec = event, rec

    def run(self) -> None:
        self.event.completed(self.rec)

    def describe(self) -> str:
        return f"record_event {self.event.event_id}"

    def details(self) -> dict:
        return {"event": self.event.event_id}


class WaitTask(Task):
    __slots__ = ("event", "rec", "stale", "timeout_s", "timed_out")
    kind = "stream_wait_event"
    may_block = True
    trivial = True  # by the time it runs, what it waited for has happened

    def __init__(self, event: Event, rec: Record | None, timeout_s: float = 0, stale: Record | None = None):
        self.event, self.rec, self.stale = event, rec, stale  # rec None: the next record (not `stale`)
        self.timeout_s = timeout_s  # set_op_wait_timeout; 0 = wait forever
        self.timed_out = False

    def blocker(self):
        if self.timed_out:
            return None
        rec = self._target()
        if rec is None:
            if self.event.destroyed:  # nothing can record it any more
                raise self.event._destroyed_unrecorded()
            return self._armed(EventNextRecord(self.event, self.stale))
        self.rec = rec
        if rec.stream.completed_seq >= rec.seq:
            return None
        return self._armed(StreamProgress(rec.stream, rec.seq))

    def gated(self) -> bool:
        # until the record it waits for has run (the event is not recorded before that)
        if self.timed_out:
            return False
        rec = self._target()
        return rec is None or rec.stream.completed_seq < rec.seq

    def _target(self) -> Record | None:
        """The record this wait is for; None while it has not been made."""
        rec = self.rec
        if rec is None:
            rec = self.event.record
            if rec is None or rec is self.stale:
                return None
        return rec

    def _armed(self, blocker):
        """Arm the op wait timeout: if the stream is still parked on `blocker` when it
        expires, the wait fails (reported at the next synchronize of the stream)."""
        if self.timeout_s > 0:
            def expire():  # as a firing: exactly one of us and the real firing wins
                self.stream.scheduler.unpark(blocker, expired=self)
            blocker.waiter = self.stream
            WATCHDOG.call_at(time.monotonic() + self.timeout_s, expire)
        return blocker

    def run(self) -> None:
        if self.timed_out:
            raise TaskError(
                f"stream_wait_event on event {self.event.event_id} timed out after {self.timeout_s:g} s "
                f"(set_op_wait_timeout); it was waiting for "
                + ("a record of the event" if self.rec is None else
                   f"stream {self.rec.stream.stream_id} to finish task #{self.rec.seq}"),
                C.ACL_ERROR_RT_WAIT_TIMEOUT)
        rec = self.rec
        if rec is not None and not rec.ran:
            raise TaskError(
                f"waited for event {self.event.event_id}, whose record on stream "
                f"{rec.stream.stream_id} (#{rec.seq}) was dropped (abort or stop-on-failure)",
                C.ACL_ERROR_RT_EVENT_NOT_COMPLETE)

    def describe(self) -> str:
        return f"stream_wait_event {self.event.event_id}"

    def details(self) -> dict:
        """"record": (device id, stream id, sequence number) of the record task this wait
        waited for, once known."""
        rec = self.rec
        if rec is None:
            return {"event": self.event.event_id}
        s = rec.stream
        return {"event": self.event.event_id, "record": (s.device.id, s.stream_id, rec.seq)}


class ResetEventTask(Task):
    """The device side of reset_event: it clears the hardware flag the last record set. The
    host side (Event.has_reset) already decided what later waits wait for, and the latest
    record stays what synchronize and query answer for, so running it changes nothing here."""

    __slots__ = ("event",)
    kind = "reset_event"
    trivial = True

    def __init__(self, event: Event):
        self.event = event

    def run(self) -> None:
        self.event.device_flag = False

    def describe(self) -> str:
        return f"reset_event {self.event.event_id}"

    def details(self) -> dict:
        return {"event": self.event.event_id}
