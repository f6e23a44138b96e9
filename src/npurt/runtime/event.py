"""Events: points in a stream that other streams and the host can wait for.

Capture model (ACL's): `record(event, stream)` captures the tasks already enqueued on the
stream at call time; the event completes when its record task runs, which is when every one
of those tasks has finished. A wait enqueued on another stream waits for the capture that
was current when the wait was enqueued. A wait on an event that was never recorded behaves
like the hardware semaphore it is: the waiting stream stays blocked until a record of that
event completes.
"""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from . import constants as C
from .errors import EventError, InvalidValueError, SyncTimeoutError, TaskError
from .scheduler import Blocker, Callback, wait_until
from .watchdog import WATCHDOG
from .tasks import NopTask, StreamProgress, Task

if TYPE_CHECKING:
    from .device import Device
    from .stream import Stream


class Record:
    """One capture of an event: stream and sequence number, and when it completed."""

    __slots__ = ("stream", "seq", "ran", "t_ns")

    def __init__(self, stream: "Stream"):
        self.stream = stream
        self.seq = 0
        self.ran = False
        self.t_ns = 0


class Event:
    """A device event. Flags say what it may be used for (see runtime.create_event*)."""

    def __init__(self, device: "Device", flags: int, *, timing: bool, sync: bool,
                 resettable: bool, ex: bool = False, counted: bool = True):
        self.device = device
        self.flags = flags
        self.timing = timing          # usable with elapsed_time / get_timestamp
        self.sync = sync              # usable with stream_wait_event
        self.resettable = resettable  # usable with reset_event / query_event_wait_status
        self.ex = ex                  # create_event_ex_with_flag semantics
        self.counted = counted        # takes one of the device's event slots
        self.event_id = next(device.event_ids)
        self.handle = 0
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.record: Record | None = None
        self.watchers: list = []   # blockers of streams parked until a record completes
        self.last_wait: tuple[Stream, int] | None = None
        self.destroyed = False

    def __repr__(self) -> str:
        rec = self.record
        state = "never recorded" if rec is None else (
            f"recorded on stream {rec.stream.stream_id} at #{rec.seq}, " + ("complete" if rec.ran else "pending"))
        return f"<npurt event {self.event_id} on device {self.device.id}: {state}>"

    # ------------------------------------------------------------ stream side
    def record_on(self, stream: "Stream") -> int:
        rec = Record(stream)

        def publish(seq: int) -> None:  # under the stream lock, before the task can run
            rec.seq = seq
            with self.lock:
                self.record = rec
                self.cond.notify_all()  # a host waiting for "a record" moves on to this one

        return stream.enqueue(RecordTask(self, rec), on_seq=publish)

    def wait_on(self, stream: "Stream") -> int:
        if not self.sync:
            raise InvalidValueError(
                f"event {self.event_id} was created without ACL_EVENT_SYNC and cannot be used with "
                "stream_wait_event; create it with create_event() or create_event_with_flag(ACL_EVENT_SYNC)")
        rec = self.record
        if rec is None and self.ex:
            # an _ex_ event that was never recorded counts as complete: nothing to wait for
            seq = stream.enqueue(NopTask())
        else:
            seq = stream.enqueue(WaitTask(self, rec, self.device.runtime.op_wait_timeout_s))
        self.last_wait = (stream, seq)
        return seq

    def reset_on(self, stream: "Stream") -> int:
        if not self.resettable:
            raise InvalidValueError(
                f"event {self.event_id} cannot be reset: reset_event needs an event from "
                "create_event_with_flag(ACL_EVENT_SYNC)")
        return stream.enqueue(ResetEventTask(self, self.record))

    def completed(self, rec: Record) -> None:
        """Called by the record task when it runs."""
        rec.t_ns = time.perf_counter_ns()
        rec.ran = True
        self.fire_watchers()

    def fire_watchers(self) -> None:
        """Wake host threads and fire the watchers of a record completing (or of the event
        being destroyed). Fire first, forget after: an interrupt here loses no watcher."""
        with self.lock:
            watchers = list(self.watchers)
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
    def is_complete(self) -> bool:
        rec = self.record
        if rec is None:
            return self.ex  # an _ex_ event that was never recorded counts as complete
        return rec.ran

    def wait_status_complete(self) -> bool:
        last = self.last_wait
        return last is None or last[0].completed_seq >= last[1]

    def synchronize(self, timeout_ms: int = -1) -> None:
        """Block until the latest capture has completed (or, never recorded, until a record
        of this event completes)."""
        deadline = None if timeout_ms is None or timeout_ms < 0 else time.monotonic() + timeout_ms / 1000
        rec = self.record
        if rec is None:
            if self.ex:
                return
            with self.lock:
                ok = wait_until(self.cond, lambda: self.record is not None, _remaining(deadline),
                                lambda: f"event {self.event_id}, which has never been recorded")
            if not ok:
                raise SyncTimeoutError(
                    f"synchronize_event timed out after {timeout_ms} ms: event {self.event_id} "
                    "has never been recorded", C.ACL_ERROR_RT_EVENT_SYNC_TIMEOUT)
            rec = self.record
        remaining_ms = -1 if deadline is None else max(0, int(_remaining(deadline) * 1000))
        try:
            rec.stream.synchronize(until=rec.seq, timeout_ms=remaining_ms, report_errors=False)
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

    def timestamp_ns(self) -> int:
        rec = self._timed_record("get a timestamp from")
        return rec.t_ns

    def elapsed_ms(self, end: "Event") -> float:
        start_rec = self._timed_record("measure elapsed time from")
        end_rec = end._timed_record("measure elapsed time to")
        if end_rec.t_ns < start_rec.t_ns:
            raise EventError(
                f"event {end.event_id} completed before event {self.event_id}; pass the earlier "
                "event as start", C.ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL)
        return (end_rec.t_ns - start_rec.t_ns) / 1e6

    def _timed_record(self, verb: str) -> Record:
        if not self.timing:
            raise EventError(
                f"cannot {verb} event {self.event_id}: it was created without timing "
                "(use create_event(), or ACL_EVENT_TIME_LINE, or Event(enable_timing=True))")
        rec = self.record
        if rec is None:
            raise EventError(f"cannot {verb} event {self.event_id}: it has not been recorded")
        if not rec.ran:
            raise EventError(
                f"cannot {verb} event {self.event_id}: it has not completed yet; synchronize "
                "the event or its stream first", C.ACL_ERROR_RT_EVENT_NOT_COMPLETE)
        return rec


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class EventNextRecord(Blocker):
    """Blocker: a record of `event` (which had none when the wait began) completes."""

    __slots__ = ("event",)

    def __init__(self, event: Event):
        self.event = event

    def register(self) -> bool:
        event = self.event
        with event.lock:
            if event.record is not None:
                return False
            event.watchers.append(self)
            return True

    def waits_for(self):
        return ("event", self.event)

    def describe(self) -> str:
        rec = self.event.record
        if rec is None:
            return f"event {self.event.event_id}, which has never been recorded"
        return (f"event {self.event.event_id}, recorded on stream {rec.stream.stream_id} as task "
                f"#{rec.seq}, which has not completed (that stream has finished #{rec.stream.completed_seq})")


class RecordTask(Task):
    __slots__ = ("event", "rec")
    kind = "record_event"

    def __init__(self, event: Event, rec: Record):
        self.event, self.rec = event, rec

    def run(self) -> None:
        self.event.completed(self.rec)

    def describe(self) -> str:
        return f"record_event {self.event.event_id}"

    def details(self) -> dict:
        return {"event": self.event.event_id}


class WaitTask(Task):
    __slots__ = ("event", "rec", "timeout_s", "timed_out")
    kind = "stream_wait_event"
    may_block = True

    def __init__(self, event: Event, rec: Record | None, timeout_s: float = 0):
        self.event, self.rec = event, rec
        self.timeout_s = timeout_s  # set_op_wait_timeout; 0 = wait forever
        self.timed_out = False

    def blocker(self):
        if self.timed_out:
            return None
        rec = self.rec
        if rec is None:
            rec = self.event.record
            if rec is None:
                return self._armed(EventNextRecord(self.event))
            self.rec = rec
        if rec.stream.completed_seq >= rec.seq:
            return None
        return self._armed(StreamProgress(rec.stream, rec.seq))

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
    __slots__ = ("event", "rec")
    kind = "reset_event"

    def __init__(self, event: Event, rec: Record | None):
        self.event, self.rec = event, rec

    def run(self) -> None:
        event = self.event
        with event.lock:
            if event.record is self.rec:  # a newer record (enqueued later) stays
                event.record = None

    def describe(self) -> str:
        return f"reset_event {self.event.event_id}"

    def details(self) -> dict:
        return {"event": self.event.event_id}
