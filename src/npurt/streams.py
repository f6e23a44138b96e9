"""Streams and events for the Pythonic API (torch.cuda-style), over the runtime's objects.

* Each host thread has a *current stream* per device; it starts as the device's default
  stream. `with npurt.stream(s):` (or `with s:`) makes `s` current — and its device the
  current device — for the block. Array operations queue on the current stream.
* Streams and events are awaitable: `await stream.wait()` / `await event` suspend a
  coroutine until the work is done without blocking the event loop. Nothing is queued and
  no thread sleeps: the runtime tells us when the stream retires the task we wait for (a
  retired task is run *or dropped*, so a stream that stops on a failure wakes its awaiters,
  who then get the failure raised).
* Events use ACL semantics, which differ from CUDA's in one place: waiting on (or
  synchronizing) an event that was never recorded waits until it is recorded, instead of
  returning at once. `query()` of a never-recorded event is False.
"""
from __future__ import annotations

import asyncio
import threading
import weakref

from . import devices as _devices
from . import runtime as rt
from .runtime import HOOKS, RUNTIME, SCHEDULE, EventError, InvalidValueError, current_stream_on, set_current_stream
from .runtime import Event as _RtEvent
from .runtime import Stream as _RtStream
from .runtime import constants as C


async def _until(register) -> None:
    """Suspend until `register(callback)` calls back (from any thread)."""
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def resolve() -> None:
        if not fut.done():
            fut.set_result(None)

    def wake() -> None:
        try:
            loop.call_soon_threadsafe(resolve)
        except RuntimeError:  # the loop closed meanwhile: nobody is waiting any more
            pass

    register(wake)
    ctl = SCHEDULE.controlled
    while ctl is not None and not fut.done():  # a controlled device runs only when asked: one step a turn
        progressed = ctl.advance(lambda: False, 1, None)
        await asyncio.sleep(0 if progressed else 0.001)
        ctl = SCHEDULE.controlled
    await fut


# ---------------------------------------------------------------- current stream
# Which stream is current, per thread and device, is the runtime's (npurt.runtime.
# current_stream_on / set_current_stream): torch.npu reads the same. This module adds two
# things for the Python objects: one npurt.Stream per runtime stream (so current_stream()
# returns the very object made current), and a reference to the Stream a thread made current,
# so `npurt.set_stream(npurt.Stream())` keeps that stream alive while it is current (as
# CuPy's thread-local keeps its Stream object).
_WRAPPERS: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()   # runtime stream -> Stream


class _Held(threading.local):
    def __init__(self):
        self.streams: dict[int, Stream] = {}   # device id -> the Stream this thread made current


_held = _Held()


def _runtime_stream(device_id: int | None = None) -> _RtStream:
    """The runtime stream work for `device_id` (default: current device) goes to now."""
    if device_id is None:
        device_id = _devices.thread_context().device.id
    s = current_stream_on(device_id)
    return _default_rt_stream(device_id) if s is None else s


runtime_stream_for = _runtime_stream


def _default_rt_stream(device_id: int) -> _RtStream:
    ctx = _devices.thread_context()
    if ctx.device.id == device_id:
        return ctx.default_stream
    with _devices.on_device(device_id):
        return RUNTIME.default_context(RUNTIME.device(device_id)).default_stream


def default_runtime_stream(device_id: int) -> _RtStream:
    """The default stream of `device_id`'s default context (made on first use)."""
    return _default_rt_stream(device_id)


def make_current(s: "Stream | None", device_id: int | None = None) -> None:
    """Make `s` this thread's current stream on its device (None: the default stream of
    `device_id`), leaving the current device as it is (torch.npu.set_stream; npurt.set_stream
    also makes the device current)."""
    if s is None:
        set_current_stream(device_id, None)
        _held.streams.pop(device_id, None)
    else:
        set_current_stream(s.device, s._s)
        _held.streams[s.device] = s


def current_stream(device=None) -> "Stream":
    """The calling thread's current stream on `device` (default: the current device)."""
    device = _devices.thread_context().device.id if device is None else _devices.device_id_of(device)
    s = current_stream_on(device)
    return Stream._wrap(_default_rt_stream(device) if s is None else s)


def default_stream(device=None) -> "Stream":
    """The default stream of `device`'s default context (default: the current device)."""
    device = _devices.thread_context().device.id if device is None else _devices.device_id_of(device)
    return Stream._wrap(_default_rt_stream(device))


def set_stream(s: "Stream") -> None:
    """Make `s` the calling thread's current stream on its device, and that device the current
    device (torch.cuda.set_stream; `with npurt.stream(s):` does the same for a block)."""
    if not isinstance(s, Stream):
        raise InvalidValueError(f"npurt.set_stream() expects an npurt.Stream, got {type(s).__name__}")
    _devices.set_device(s.device)
    make_current(s)


class stream:
    """Context manager: `with npurt.stream(s):` makes `s` the current stream (and its device
    the current device) of this thread for the block. `stream(None)` changes nothing."""

    def __init__(self, s: "Stream | None"):
        if s is not None and not isinstance(s, Stream):
            raise InvalidValueError(f"npurt.stream() expects an npurt.Stream or None, got {type(s).__name__}")
        self.s = s
        self._saved = None

    def __enter__(self) -> "Stream | None":
        s = self.s
        if s is None:
            return None
        dev = s.device
        previous = current_stream_on(dev)
        self._saved = (_devices.device(dev), None if previous is None else Stream._wrap(previous))
        self._saved[0].__enter__()
        make_current(s)
        return s

    def __exit__(self, *exc) -> None:
        if self.s is None:
            return
        ctx_manager, previous = self._saved
        make_current(previous, self.s.device)
        ctx_manager.__exit__(*exc)


# ---------------------------------------------------------------- Stream
class Stream:
    """An in-order queue of device work.

    `Stream(device=None, priority=0)` creates a stream on `device` (default: the current
    one). Priority follows ACL: 0 is the highest, 7 the lowest (values are clamped). The
    stream is destroyed when the object is garbage-collected, after its queued work ran.
    """

    def __init__(self, device=None, priority: int = 0):
        if type(priority) is not int:
            raise InvalidValueError(f"stream priority must be an int (0 highest .. 7 lowest), got {priority!r}")
        dev = _devices.runtime_device(device).id
        with _devices.on_device(dev):
            self._s = rt.create_stream(priority=priority)
        self._owned = True
        self._entered: list = []
        _WRAPPERS[self._s] = self

    @classmethod
    def _wrap(cls, s: _RtStream) -> "Stream":
        """The Stream of runtime stream `s` (the same object while one exists)."""
        obj = _WRAPPERS.get(s)
        if obj is None:
            obj = cls.__new__(cls)
            obj._s, obj._owned, obj._entered = s, False, []
            _WRAPPERS[s] = obj
        return obj

    def __del__(self) -> None:
        # Destroy the runtime stream once its queued work has run (never block here: this
        # may run in any thread, including a device worker).
        s = getattr(self, "_s", None)
        if not getattr(self, "_owned", False) or s is None or s.destroyed:
            return
        try:
            device = s.device

            def release() -> None:
                if not s.destroyed:
                    device.release_stream(s)
            s.on_retired(s.enqueued_seq, release)
        except Exception:  # noqa: BLE001 - interpreter shutdown or a finalized runtime
            pass

    # identity: wrappers of the same runtime stream are equal
    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and other._s is self._s

    def __hash__(self) -> int:
        return hash(self._s)

    def __repr__(self) -> str:
        kind = "default " if self._s.is_default else ""
        return (f"<npurt.Stream {kind}{self._s.stream_id} device={self.device} "
                f"done={self._s.completed_seq}/{self._s.enqueued_seq}>")

    # ---------------------------------------------------------- facts
    @property
    def device(self) -> int:
        return self._s.device.id

    @property
    def priority(self) -> int:
        return self._s.priority

    @property
    def stream_id(self) -> int:
        return self._s.stream_id

    @property
    def runtime_stream(self) -> _RtStream:
        """The runtime-layer stream (for npurt.runtime / kernel launch calls)."""
        return self._s

    # ---------------------------------------------------------- host side
    def synchronize(self) -> None:
        """Block until every task queued so far has finished; raises a failure one of them
        reported."""
        s = self._s
        if HOOKS.active or s.destroyed:  # the API call tells tools, and refuses a destroyed stream
            rt.synchronize_stream(s)
        else:
            s.synchronize()

    def query(self) -> bool:
        """True if every task queued so far has finished (raises a reported failure)."""
        return rt.stream_query(self._s) == C.ACL_STREAM_STATUS_COMPLETE

    async def wait(self) -> None:
        """`await stream.wait()`: suspend until the work queued so far is done, without
        blocking the event loop; then raise a failure the stream reported."""
        s = self._s
        seq = s.enqueued_seq
        if s.completed_seq < seq:
            await _until(lambda wake: s.on_retired(seq, wake))
        if HOOKS.active:
            HOOKS.emit("host_synced", stream=s, seq=seq)
        s.raise_error()

    def __await__(self):
        return self.wait().__await__()

    def add_done_callback(self, fn) -> None:
        """Call fn(stream) once the work queued so far is done (or dropped by a failure or an
        abort). It runs in a device worker thread (or in a host thread that is running this
        stream's work): keep it short, and do not block in it."""
        if not callable(fn):
            raise InvalidValueError(f"add_done_callback needs a callable, got {type(fn).__name__}")
        s = self._s
        seq = s.enqueued_seq

        def call() -> None:
            if not HOOKS.active:
                fn(self)
                return
            HOOKS.emit("callback_started", stream=s, seq=seq, task=None)
            try:
                fn(self)
            finally:
                HOOKS.emit("callback_finished", stream=s, seq=seq, task=None, block=False)
        s.on_retired(seq, call)

    # ---------------------------------------------------------- cross-stream order
    def wait_event(self, event: "Event") -> None:
        """Make future work on this stream wait for `event`'s latest record. A wrapper around
        aclrtStreamWaitEvent (npurt.runtime.stream_wait_event)."""
        if not isinstance(event, Event):
            raise InvalidValueError(f"wait_event expects an npurt.Event, got {type(event).__name__}")
        rt.stream_wait_event(self._s, event._ev)

    def wait_stream(self, other: "Stream") -> None:
        """Make future work on this stream wait for the work queued on `other` so far: a wait
        on an event recorded on `other` now (the event is destroyed once dropped; the queued
        record and wait still complete)."""
        if not isinstance(other, Stream):
            raise InvalidValueError(f"wait_stream expects an npurt.Stream, got {type(other).__name__}")
        if other._s is self._s:
            return
        self.wait_event(other.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        """Record `event` (a new one if None) at the current end of this stream; returns it.
        A wrapper around aclrtRecordEvent (npurt.runtime.record_event)."""
        if event is None:
            with _devices.on_device(self.device):
                event = Event()
        event.record(self)
        return event

    # ---------------------------------------------------------- `with s:` (CuPy-style)
    def __enter__(self) -> "Stream":
        ctx = stream(self)
        ctx.__enter__()
        self._entered.append(ctx)
        return self

    def __exit__(self, *exc) -> None:
        self._entered.pop().__exit__(*exc)


# ---------------------------------------------------------------- Event
class Event:
    """A marker in a stream that streams and the host can wait for.

    `Event(enable_timing=False, blocking=False)` creates it on the current device. Timing
    events can measure `start.elapsed_time(end)` in milliseconds. `blocking` is accepted for
    torch compatibility: host waits always sleep (they never spin) here.

    `Event(interprocess=True)` (an ACL_EVENT_IPC event; not a timing one) can be shared with
    the other processes of the host that use the same simulated device: `ipc_handle()` gives
    its 64-byte handle, `Event.from_ipc_handle(handle)` opens it there (npurt.runtime
    ipc_get_event_handle / ipc_open_event_handle): records in any process, waits, queries and
    synchronizes in any process see them.
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        if interprocess and enable_timing:
            raise InvalidValueError("an interprocess event cannot be a timing event (enable_timing=False)")
        _devices.thread_context()
        # as torch_npu: ACL_EVENT_SYNC (+ TIME_LINE), created with create_event_ex_with_flag, so
        # before its first record a wait adds nothing and query()/synchronize() are done
        flags = C.ACL_EVENT_IPC if interprocess else C.ACL_EVENT_SYNC | (C.ACL_EVENT_TIME_LINE if enable_timing else 0)
        self._ev = rt.create_event(flags=flags, ex=True)
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.interprocess = bool(interprocess)

    def ipc_handle(self) -> bytes:
        """The handle another process opens with Event.from_ipc_handle (interprocess events)."""
        return rt.ipc_get_event_handle(self._ev)

    @classmethod
    def from_ipc_handle(cls, handle: bytes) -> "Event":
        """The interprocess event of another process, on the current device."""
        _devices.thread_context()
        event = cls.__new__(cls)
        event._ev = rt.ipc_open_event_handle(handle)
        event.enable_timing, event.blocking, event.interprocess = False, False, True
        return event

    def __del__(self) -> None:
        ev = getattr(self, "_ev", None)
        if ev is not None and not ev.destroyed:
            try:
                rt.destroy_event(ev)  # never blocks; a queued record still completes
            except Exception:  # noqa: BLE001 - interpreter shutdown or a finalized runtime
                pass

    def __repr__(self) -> str:
        return f"<npurt.Event {self._ev.event_id} device={self.device} timing={self.enable_timing} " \
               f"{'complete' if self._ev.is_complete() else 'not complete'}>"

    @property
    def device(self) -> int:
        return self._ev.device.id

    @property
    def runtime_event(self) -> _RtEvent:
        return self._ev

    def record(self, stream: Stream | None = None) -> None:
        """Capture the work queued so far on `stream` (default: the current stream)."""
        rt.record_event(self._ev, _stream_arg(stream, "record"))

    def wait(self, stream: Stream | None = None) -> None:
        """Make future work on `stream` (default: the current stream) wait for this event."""
        rt.stream_wait_event(_stream_arg(stream, "wait"), self._ev)

    def query(self) -> bool:
        """True once the latest record has completed (True if never recorded)."""
        return rt.query_event_status(self._ev) == C.ACL_EVENT_RECORDED_STATUS_COMPLETE

    def synchronize(self) -> None:
        """Block until the latest record has completed (returns at once if never recorded)."""
        rt.synchronize_event(self._ev)

    def elapsed_time(self, end: "Event") -> float:
        """Milliseconds from this event's record to `end`'s (both timing events, completed)."""
        if not isinstance(end, Event):
            raise InvalidValueError(f"elapsed_time expects an npurt.Event, got {type(end).__name__}")
        if not (self.enable_timing and end.enable_timing):
            raise EventError("both events must be created with enable_timing=True to measure elapsed time",
                             C.ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID)
        if self._ev.record is None or end._ev.record is None:
            raise EventError("both events must be recorded before measuring the elapsed time between them",
                             C.ACL_ERROR_RT_INTERNAL_ERROR)
        return rt.event_elapsed_time(self._ev, end._ev)

    def __await__(self):
        return self._wait().__await__()

    async def _wait(self) -> None:
        ev = self._ev
        rec = ev.record
        if rec is None:  # never recorded: nothing to wait for, as synchronize()
            return
        if not rec.ran:
            await _until(lambda wake: ev.on_completed(wake, rec))
        if HOOKS.active and rec is not None and rec.ran:
            HOOKS.emit("host_synced", stream=rec.stream, seq=rec.seq)
        if rec is not None and not rec.ran:
            stop = rec.stream.stopped
            raise EventError(
                f"event {ev.event_id} will not complete: its record on stream {rec.stream.stream_id} was "
                "dropped" + (f" because the stream stopped on failure ({stop.message})" if stop else " by an abort"),
                C.ACL_ERROR_RT_EVENT_NOT_COMPLETE)


def _stream_arg(s: Stream | None, what: str) -> _RtStream:
    if s is None:
        return _runtime_stream()
    if not isinstance(s, Stream):
        raise InvalidValueError(f"Event.{what} expects an npurt.Stream or None, got {type(s).__name__}")
    return s._s
