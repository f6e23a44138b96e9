"""Events: create, record, wait, reset, query, synchronize, timing."""
from __future__ import annotations

from .. import constants as C
from .. import graph
from ..context import current_context
from ..errors import (FeatureNotSupportedError, InvalidHandleError, ParamInvalidError,
                      ResourceExhaustedError)
from ..event import RT_EVENT_DEFAULT, WAIT_FLAGS, Event
from ..observers import HOOKS
from ..runtime import RUNTIME
from ..stream import Stream
from .streams import stream_of

rt = RUNTIME


# ================================================================ events
MC2 = C.ACL_EVENT_DEVICE_USE_ONLY    # RT_EVENT_MC2
FLAG_MAX = 0x3F                      # RT_EVENT_FLAG_MAX: DDSYNC_NS | STREAM_MARK | DDSYNC | TIME_LINE | MC2 | EXTERNAL
FLAG_MAX_EX = 0x4F                   # EventCreateEx: DDSYNC_NS | STREAM_MARK | DDSYNC | TIME_LINE | IPC


def create_event(flags: int | None = None, ex: bool = False) -> Event:
    """A new event on the current device. `flags=None` is create_event() (RT_EVENT_DEFAULT:
    waits, reset and timing). With flags (ACL_EVENT_*): SYNC allows waits (before any record
    too) and reset, TIME_LINE allows timing. `ex` gives create_event_ex_with_flag semantics.
    Flag checks as ApiErrorDecorator::EventCreate / EventCreateEx (ACL_ERROR_RT_PARAM_INVALID)."""
    device = current_context().device
    if flags is None:
        flags = RT_EVENT_DEFAULT
    else:
        _check_flags(flags, ex)
    # an event with a wait flag holds a hardware event id (ApiImpl::EventCreate -> GenEventId)
    counted = not ex and bool(flags & WAIT_FLAGS)
    with device.lock:
        if counted:
            if device.event_count >= device.max_events:
                raise ResourceExhaustedError(
                    f"device {device.id} has no event left ({device.max_events} in use); destroy events "
                    "you no longer need", C.ACL_ERROR_RT_NO_EVENT_RESOURCE)
            device.event_count += 1
    event = Event(device, flags, ex=ex, counted=counted)
    event.handle = rt.events.add(event)
    device.events.add(event)
    return event


def _check_flags(flags, ex: bool) -> None:
    if type(flags) is not int:
        raise ParamInvalidError(f"event flags must be an int, got {type(flags).__name__}")
    top = FLAG_MAX_EX if ex else FLAG_MAX
    if not flags & top or flags > top:
        raise ParamInvalidError(
            f"event flag {flags:#x} is invalid: expected an OR combination of ACL_EVENT_SYNC (0x1), "
            "ACL_EVENT_CAPTURE_STREAM_PROGRESS (0x2) and ACL_EVENT_TIME_LINE (0x8)"
            + ("; or ACL_EVENT_IPC (0x40) alone" if ex else
               "; or ACL_EVENT_DEVICE_USE_ONLY (0x10) or ACL_EVENT_EXTERNAL (0x20) alone"))
    for alone in (MC2, C.ACL_EVENT_EXTERNAL, C.ACL_EVENT_IPC):
        if flags & alone and flags & ~alone:
            raise ParamInvalidError(f"event flag {flags:#x} is invalid: {alone:#x} cannot be combined with "
                                    "other flags")


def destroy_event(event: Event) -> None:
    """Destroy an event; never blocks (queued records of it still complete). Waits that
    need a record it will now never get fail instead of waiting forever."""
    _live(event)
    device = event.device
    with device.lock:  # one destroyer wins
        if event.destroyed:
            raise InvalidHandleError(f"event {event.event_id} was destroyed")
        event.destroyed = True
        if event.counted:
            device.event_count -= 1
        device.events.discard(event)
    rt.events.remove(event.handle)
    event.fire_watchers()  # host threads and streams waiting for a first record of it


def _live(event: Event) -> Event:
    if type(event) is not Event and not isinstance(event, Event):  # (IPC events are a subclass)
        raise InvalidHandleError(f"expected an event, got {type(event).__name__}")
    if event.destroyed:
        raise InvalidHandleError(f"event {event.event_id} was destroyed")
    return event


def _host_usable(event: Event, what: str) -> Event:
    """Device-only (MC2) events are refused by every host operation on them."""
    if _live(event).flags == MC2:
        raise ParamInvalidError(f"{what}: event {event.event_id} is a device-only event "
                                "(ACL_EVENT_DEVICE_USE_ONLY); it can be used only on the device")
    return event


def _unsupported(event: Event, what: str, *flags: int) -> None:
    """ACL_ERROR_RT_FEATURE_NOT_SUPPORT where ApiErrorDecorator refuses the event's flag."""
    if event.flags in flags:
        names = {C.ACL_EVENT_EXTERNAL: "external (ACL_EVENT_EXTERNAL)", C.ACL_EVENT_IPC: "IPC (ACL_EVENT_IPC)"}
        raise FeatureNotSupportedError(f"{what} is not supported for {names[event.flags]} events")


def record_event(event: Event, stream: Stream | None) -> int:
    s = stream_of(stream)
    seq = _host_usable(event, "record_event").record_on(s)
    if HOOKS.active:
        HOOKS.emit("event_record", event=event, stream=s, seq=seq)
    return seq


def stream_wait_event(stream: Stream | None, event: Event) -> int:
    s = stream_of(stream)
    capture = s.capture or getattr(event, "captured", None)
    if capture is not None:  # a wait inside a capture, or a stream joining one (graph.py)
        _host_usable(event, "stream_wait_event")
        return capture.wait(s, event)
    seq = _host_usable(event, "stream_wait_event").wait_on(s)
    if HOOKS.active:
        HOOKS.emit("event_wait", event=event, stream=s, seq=seq)
    return seq


def reset_event(event: Event, stream: Stream | None) -> int:
    """Queue a reset (ApiErrorDecorator::EventReset, ApiImpl::EventReset): refused for _ex_,
    IPC and wait-less events (ACL_ERROR_RT_FEATURE_NOT_SUPPORT)."""
    _host_usable(event, "reset_event")
    _unsupported(event, "reset_event", C.ACL_EVENT_IPC)
    if not event.waitable:
        raise FeatureNotSupportedError(
            f"event {event.event_id} (flags {event.flags:#x}) has no wait capability, so there is nothing "
            "to reset: reset_event needs an event from create_event() or with ACL_EVENT_SYNC")
    s = stream_of(stream)
    if event.ex:
        raise FeatureNotSupportedError(
            "reset_event is not supported for create_event_ex_with_flag events (they are reused by "
            "recording them again)")
    return event.reset_on(s)


def query_event_status(event: Event) -> int:
    """ACL_EVENT_RECORDED_STATUS_COMPLETE (1) or _NOT_READY (0)."""
    _unsupported(_live(event), "query_event_status", C.ACL_EVENT_EXTERNAL)
    done = event.status_complete()
    if done and HOOKS.active:
        _synced(event)
    return C.ACL_EVENT_RECORDED_STATUS_COMPLETE if done else C.ACL_EVENT_RECORDED_STATUS_NOT_READY


def _synced(event: Event) -> None:
    rec = event.record
    if rec is not None and rec.ran:
        HOOKS.emit("host_synced", stream=rec.stream, seq=rec.seq)


def query_event(event: Event) -> int:
    """Deprecated query: ACL_EVENT_STATUS_COMPLETE (0) or _NOT_READY (1); complete when never
    recorded (Event::Query); refused for _ex_ events (ApiErrorDecorator::EventQuery)."""
    if _live(event).ex:
        raise FeatureNotSupportedError("query_event is not supported for create_event_ex_with_flag events; "
                                       "use query_event_status")
    _unsupported(event, "query_event", C.ACL_EVENT_EXTERNAL, C.ACL_EVENT_IPC)
    done = event.query_complete()
    if done and HOOKS.active:
        _synced(event)
    return C.ACL_EVENT_STATUS_COMPLETE if done else C.ACL_EVENT_STATUS_NOT_READY


def query_event_wait_status(event: Event) -> int:
    """ACL_EVENT_WAIT_STATUS_COMPLETE (0) once every stream_wait_event on it finished (at once
    for wait-less events); refused for _ex_ events (ApiErrorDecorator::EventQueryWaitStatus)."""
    if _live(event).ex:
        raise FeatureNotSupportedError("query_event_wait_status is not supported for "
                                       "create_event_ex_with_flag events")
    _unsupported(event, "query_event_wait_status", C.ACL_EVENT_EXTERNAL, C.ACL_EVENT_IPC)
    done = not event.waitable or event.wait_status_complete()
    return C.ACL_EVENT_WAIT_STATUS_COMPLETE if done else C.ACL_EVENT_WAIT_STATUS_NOT_READY


def synchronize_event(event: Event, timeout_ms: int = -1) -> None:
    """Block until the latest record ran (at once if never recorded). timeout_ms: -1 forever or
    > 0; 0 and < -1 are ACL_ERROR_RT_PARAM_INVALID (ApiErrorDecorator::EventSynchronize)."""
    if timeout_ms != -1 and (type(timeout_ms) is not int or timeout_ms < -1 or timeout_ms == 0):
        raise ParamInvalidError(f"event synchronize timeout must be -1 (wait forever) or a positive number "
                                f"of milliseconds, got {timeout_ms!r}")
    if _live(event).flags == C.ACL_EVENT_EXTERNAL:  # (the test inline: this is a hot path)
        _unsupported(event, "synchronize_event", C.ACL_EVENT_EXTERNAL)
    if HOOKS.active:
        HOOKS.emit("host_sync", what="event", obj=event)
    event.synchronize(timeout_ms)


def event_elapsed_time(start: Event, end: Event) -> float:
    """Milliseconds between two completed events' records (negative if end ran first)."""
    for ev in (_live(start), _live(end)):
        _unsupported(ev, "event_elapsed_time", C.ACL_EVENT_EXTERNAL, C.ACL_EVENT_IPC)
    return start.elapsed_ms(end)


def event_get_timestamp(event: Event) -> int:
    """Completion time of the event's record in microseconds since its device started."""
    ev = _live(event)
    _unsupported(ev, "event_get_timestamp", C.ACL_EVENT_EXTERNAL, C.ACL_EVENT_IPC)
    return (ev.timestamp_ns() - ev.device.boot_ns) // 1000


def get_event_avail_num() -> int:
    device = current_context().device
    return device.max_events - device.event_count
