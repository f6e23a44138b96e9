"""Events: create, record, wait, reset, query, synchronize, timing."""
from __future__ import annotations

from .. import constants as C
from ..context import current_context
from ..errors import InvalidHandleError, InvalidValueError, ResourceExhaustedError
from ..event import Event
from ..observers import HOOKS
from ..runtime import RUNTIME
from ..stream import Stream
from .streams import _check_timeout, stream_of

rt = RUNTIME


# ================================================================ events
def create_event(flags: int | None = None, ex: bool = False) -> Event:
    """A new event on the current device. `flags=None` is create_event(): usable for
    waits and timing but not reset_event. With flags (ACL_EVENT_*): SYNC allows waits and
    reset, TIME_LINE allows timing. `ex` gives create_event_ex_with_flag semantics."""
    device = current_context().device
    if flags is None:
        timing = sync = True
        resettable = False
        counted = True
    else:
        known = (C.ACL_EVENT_SYNC | C.ACL_EVENT_CAPTURE_STREAM_PROGRESS | C.ACL_EVENT_TIME_LINE
                 | C.ACL_EVENT_DEVICE_USE_ONLY | C.ACL_EVENT_EXTERNAL | C.ACL_EVENT_IPC)
        if type(flags) is not int or flags <= 0 or flags & ~known:
            raise InvalidValueError(f"event flags {flags!r} are not a non-empty combination of ACL_EVENT_SYNC "
                                    "(0x1), ACL_EVENT_CAPTURE_STREAM_PROGRESS (0x2), ACL_EVENT_TIME_LINE (0x8)")
        sync = bool(flags & C.ACL_EVENT_SYNC)
        timing = bool(flags & C.ACL_EVENT_TIME_LINE)
        resettable = sync and not ex
        counted = sync and not ex
    with device.lock:
        if counted:
            if device.event_count >= device.max_events:
                raise ResourceExhaustedError(
                    f"device {device.id} has no event left ({device.max_events} in use); destroy events "
                    "you no longer need", C.ACL_ERROR_RT_NO_EVENT_RESOURCE)
            device.event_count += 1
    event = Event(device, flags or 0, timing=timing, sync=sync, resettable=resettable, ex=ex, counted=counted)
    event.handle = rt.events.add(event)
    device.events.add(event)
    return event


def destroy_event(event: Event) -> None:
    """Destroy an event; never blocks (queued records of it still complete)."""
    _live(event)
    event.destroyed = True
    device = event.device
    with device.lock:
        if event.counted:
            device.event_count -= 1
        device.events.discard(event)
    rt.events.remove(event.handle)


def _live(event: Event) -> Event:
    if type(event) is not Event:
        raise InvalidHandleError(f"expected an event, got {type(event).__name__}")
    if event.destroyed:
        raise InvalidHandleError(f"event {event.event_id} was destroyed")
    return event


def record_event(event: Event, stream: Stream | None) -> int:
    s = stream_of(stream)
    seq = _live(event).record_on(s)
    if HOOKS.active:
        HOOKS.emit("event_record", event=event, stream=s, seq=seq)
    return seq


def stream_wait_event(stream: Stream | None, event: Event) -> int:
    s = stream_of(stream)
    seq = _live(event).wait_on(s)
    if HOOKS.active:
        HOOKS.emit("event_wait", event=event, stream=s, seq=seq)
    return seq


def reset_event(event: Event, stream: Stream | None) -> int:
    return _live(event).reset_on(stream_of(stream))


def query_event_status(event: Event) -> int:
    """ACL_EVENT_RECORDED_STATUS_COMPLETE (1) or _NOT_READY (0)."""
    done = _live(event).is_complete()
    if done and HOOKS.active:
        _synced(event)
    return C.ACL_EVENT_RECORDED_STATUS_COMPLETE if done else C.ACL_EVENT_RECORDED_STATUS_NOT_READY


def _synced(event: Event) -> None:
    rec = event.record
    if rec is not None:
        HOOKS.emit("host_synced", stream=rec.stream, seq=rec.seq)


def query_event(event: Event) -> int:
    """Deprecated query: ACL_EVENT_STATUS_COMPLETE (0) or _NOT_READY (1)."""
    if _live(event).ex:
        raise InvalidValueError("query_event cannot be used with create_event_ex_with_flag events; "
                                "use query_event_status")
    done = event.is_complete()
    if done and HOOKS.active:
        _synced(event)
    return C.ACL_EVENT_STATUS_COMPLETE if done else C.ACL_EVENT_STATUS_NOT_READY


def query_event_wait_status(event: Event) -> int:
    """ACL_EVENT_WAIT_STATUS_COMPLETE (0) once the latest stream_wait_event on it finished."""
    if not _live(event).resettable:
        raise InvalidValueError("query_event_wait_status needs an event from "
                                "create_event_with_flag(ACL_EVENT_SYNC)")
    return C.ACL_EVENT_WAIT_STATUS_COMPLETE if event.wait_status_complete() else C.ACL_EVENT_WAIT_STATUS_NOT_READY


def synchronize_event(event: Event, timeout_ms: int = -1) -> None:
    _check_timeout(timeout_ms)
    if HOOKS.active:
        HOOKS.emit("host_sync", what="event", obj=event)
    _live(event).synchronize(timeout_ms)


def event_elapsed_time(start: Event, end: Event) -> float:
    """Milliseconds between two completed events' records."""
    return _live(start).elapsed_ms(_live(end))


def event_get_timestamp(event: Event) -> int:
    """Completion time of the event's record in microseconds since its device started."""
    ev = _live(event)
    return (ev.timestamp_ns() - ev.device.boot_ns) // 1000


def get_event_avail_num() -> int:
    device = current_context().device
    return device.max_events - device.event_count
