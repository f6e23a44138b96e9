"""`torch.npu.Stream`, `torch.npu.Event` and the current-stream functions, over npurt's streams.

`Stream` is a `torch.Stream` (device type PrivateUse1, `stream_id` = npurt's stream id), so
`tensor.record_stream(s)` type-checks and reaches our kernel. The current stream is npurt's
Pythonic one: `with torch.npu.stream(s):` and `with npurt.stream(...)` are the same thing, and
ops on npu tensors are queued on the current stream of their device.

Torch's device-generic classes reach npurt too. PrivateUse1's Python device guard has no stream
or event functions (torch fixes them as no-ops), so `torch.Stream` and `torch.Event` are
replaced by subclasses of torch's own (`GenericStream`, `GenericEvent`; `install_generic()`,
called by npurt.torch.register()): `torch.Stream()` / `torch.Stream(device="npu:1")` make a
torch.npu.Stream, `torch.Event(...)` an npu event with torch's generic checks (ValueError
"Both events must be created with argument 'enable_timing=True'" / "... must be recorded
before calculating elapsed time"), and `isinstance(x, torch.Stream)` still holds for every
stream torch's own C++ returns. Streams and events of other device types are torch's own.

torch_npu's details: `Event.device` is None until the first record (then the recording
stream's device); `elapsed_time` and `recorded_time()` first synchronize the event(s), as
torch_npu's do; `Stream.priority_range()` raises, as torch_npu's does.
"""
from __future__ import annotations

import ctypes
import os

import torch

from .. import streams as _np_streams
from ..streams import Event as _NpEvent
from ..streams import Stream as _NpStream
from .. import devices as _devices
from .. import runtime as _rt
from ..runtime import constants as _C
from ..runtime import event_get_timestamp
from . import stream_ids as _ids
from . import sync_debug
from .device import index_of

PRIVATEUSE1 = 20  # c10::DeviceType::PrivateUse1
_TorchStream = getattr(torch.Stream, "_torch_original", torch.Stream)  # torch's own classes
_TorchEvent = getattr(torch.Event, "_torch_original", torch.Event)


def _is_npu(device) -> bool:
    """True for an npu device spec, and for None (the current accelerator is npu)."""
    if device is None:
        return True
    if isinstance(device, int) and not isinstance(device, bool):
        return True
    return torch.device(device).type == "npu"


class _GenericStreamType(type):
    def __instancecheck__(cls, obj) -> bool:
        # every torch stream is a torch.Stream, also those torch's C++ makes
        return isinstance(obj, _TorchStream) if cls is GenericStream else type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, _TorchStream) if cls is GenericStream else type.__subclasscheck__(cls, sub)


class GenericStream(_TorchStream, metaclass=_GenericStreamType):
    """`torch.Stream(device=None, *, priority=0)` with npurt behind device type npu."""

    _torch_original = _TorchStream

    def __new__(cls, device=None, *, priority: int = 0, **kwargs):
        if cls is GenericStream:
            if "stream_id" in kwargs:
                if kwargs.get("device_type", PRIVATEUSE1) == PRIVATEUSE1:
                    return Stream._rebuild(kwargs.get("stream_id", 0), kwargs.get("device_index", 0),
                                           kwargs.get("device_type", PRIVATEUSE1))
                return _TorchStream(**kwargs)
            if _is_npu(device):
                return Stream(device, priority=priority)
            return _TorchStream(device, priority=priority)
        return super().__new__(cls, device, priority=priority, **kwargs)


class _GenericEventType(type):
    def __instancecheck__(cls, obj) -> bool:
        if cls is GenericEvent:
            return isinstance(obj, (_TorchEvent, Event))
        return type.__instancecheck__(cls, obj)


class GenericEvent(_TorchEvent, metaclass=_GenericEventType):
    """`torch.Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)`."""

    _torch_original = _TorchEvent

    def __new__(cls, device=None, *, enable_timing: bool = False, blocking: bool = False,
                interprocess: bool = False):
        if _is_npu(device):
            return _AcceleratorEvent(device, enable_timing, blocking, interprocess)
        return _TorchEvent(device, enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)


def install_generic() -> None:
    """Make torch.Stream / torch.Event the generic classes above (idempotent)."""
    torch.Stream, torch.Event = GenericStream, GenericEvent
def runtime_stream(s) -> object:
    """The npurt runtime stream behind a torch.Stream of device type npu."""
    if isinstance(s, _StreamBase):
        return s._npurt.runtime_stream
    return _ids.lookup(s.device_index, s.stream_id)


def check_not_external(s, api: str) -> None:
    """torch_npu's checkNotExternalStream: paths its task queue owns refuse external streams."""
    if _ids.is_external(s.device_index, s.stream_id):
        raise RuntimeError(f"External NPU stream is not supported in {api}. "
                           "This path requires a torch_npu-managed stream.")


def _per_stream_queue() -> bool:
    """torch_npu's OptionsManager::GetPerStreamQueue: PER_STREAM_QUEUE, with the task queue on
    (TASK_QUEUE_ENABLE, default 1) and launches not blocking (ASCEND_LAUNCH_BLOCKING)."""
    def number(name: str, default: int) -> int:
        try:
            return int(os.environ.get(name, default))
        except ValueError:
            return default
    if number("ASCEND_LAUNCH_BLOCKING", 0) or not number("TASK_QUEUE_ENABLE", 1):
        return False
    return bool(number("PER_STREAM_QUEUE", 0))


_STREAM_KWARGS = ("priority", "is_sync_launch", "stream_id", "device_index", "device_type", "stream_ptr")


class _StreamBase(GenericStream):
    """torch_npu's `_NPUStreamBase`: what Stream, SyncLaunchStream and ExternalStream share."""

    def __new__(cls, device=None, priority: int = 0, **kwargs):
        for key in kwargs:
            if key not in _STREAM_KWARGS:
                raise TypeError(f"'{key}' is an invalid keyword argument for {cls.__name__}()")
        if "stream_id" in kwargs or "device_index" in kwargs or "device_type" in kwargs:
            # rebuilt from (stream_id, device_index, device_type), as torch_npu's unpack3
            return cls._rebuild(kwargs.get("stream_id", 0), kwargs.get("device_index", 0),
                                kwargs.get("device_type", 0))
        index = index_of(device)
        ptr = kwargs.get("stream_ptr", 0)
        sync_launch = kwargs.get("is_sync_launch", 0)
        if ptr:
            if priority != 0:
                raise RuntimeError("Priority was explicitly set for an external stream")
            if sync_launch:
                raise RuntimeError("is_sync_launch was explicitly set for an external stream")
            rt, sid = _ids.register_external(index, ptr)
        else:
            rt, sid = _ids.from_pool(index, int(priority), sync_launch=bool(sync_launch))
        return cls._wrap(_NpStream._wrap(rt), sid)

    def __init__(self, *args, **kwargs):
        pass

    @classmethod
    def _rebuild(cls, stream_id, device_index, device_type) -> "Stream":
        """The stream `stream_id` of npu:`device_index` that this process made (fails at once,
        as torch_npu's does, for a stream or device that does not exist)."""
        if device_type != PRIVATEUSE1:
            raise RuntimeError(f"device_type {device_type} is not npu's ({PRIVATEUSE1})")
        if type(stream_id) is not int or type(device_index) is not int:
            raise RuntimeError("stream_id and device_index must be ints")
        if stream_id < 0 or device_index < 0:
            raise RuntimeError(f"stream_id {stream_id} / device_index {device_index} must not be negative")
        if device_index >= torch.npu.device_count():
            raise RuntimeError(f"device_index {device_index} is out of range: {torch.npu.device_count()} npu(s)")
        rt = _ids.lookup(device_index, stream_id)
        return cls._wrap(_NpStream._wrap(rt), stream_id)

    @classmethod
    def _wrap(cls, inner: _NpStream, stream_id: int | None = None) -> "Stream":
        rt = inner.runtime_stream
        sid = _ids.id_of(rt) if stream_id is None else stream_id
        self = _TorchStream.__new__(cls, stream_id=sid, device_index=inner.device, device_type=PRIVATEUSE1)
        self._npurt = inner
        return self

    @property
    def _external(self) -> bool:
        return _ids.is_external(self.device_index, self.stream_id)

    @property
    def npurt_stream(self) -> _NpStream:
        """The npurt.Stream this wraps (for npurt's own API)."""
        return self._npurt

    @property
    def priority(self) -> int:
        return self._npurt.priority

    @staticmethod
    def priority_range() -> tuple[int, int]:
        """torch_npu has none: it raises (its message)."""
        raise RuntimeError("NPU does not support Stream.priority_range() currently.")

    def query(self) -> bool:
        """True if all work queued on the stream so far has finished."""
        if self._external:
            raise RuntimeError("Cannot query external NPU stream status. "
                               "The caller must track stream completion externally.")
        return self._npurt.query()

    def synchronize(self) -> None:
        """Wait for all work queued on the stream so far (raises a failure it reported)."""
        if self._external:
            raise RuntimeError("External NPU stream is not supported in NPUStream::synchronize. "
                               "The caller is responsible for synchronization of external streams.")
        if sync_debug._sync_debug_mode:
            sync_debug.on_sync()
        self._npurt.synchronize()

    def wait_event(self, event: "Event") -> None:
        """Make future work on this stream wait for `event`'s latest record."""
        event.wait(self)

    def wait_stream(self, stream: "Stream") -> None:
        """Make future work on this stream wait for the work queued on `stream` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        """Record `event` (a new one if None) on this stream; returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    @property
    def native_handle(self) -> int:
        return self._npurt.runtime_stream.handle

    @property
    def npu_stream(self) -> int:
        """The raw aclrtStream handle, as torch_npu's Stream.npu_stream (torch.cuda's cuda_stream)."""
        if self._external and _per_stream_queue():
            raise RuntimeError("External NPU stream is not supported in NPUStream::stream() with "
                               "per-stream task queue.")
        return self.native_handle

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self.npu_stream)

    def __enter__(self) -> "Stream":
        # a stack, not one slot: `with s, s:` and `with s0: with s1: with s0:` re-enter the
        # same stream, and each exit restores what its own enter found (torch's THPStream_enter)
        ctx = stream(self)
        ctx.__enter__()
        self.__dict__.setdefault("_ctx_stack", []).append(ctx)
        return self

    def __exit__(self, *exc) -> None:
        self._ctx_stack.pop().__exit__(*exc)

    def __eq__(self, other) -> bool:
        return isinstance(other, torch.Stream) and other.stream_id == self.stream_id \
            and other.device_index == self.device_index and other.device_type == self.device_type

    def __hash__(self) -> int:
        return hash((self.stream_id, self.device_index, self.device_type))

    def __repr__(self) -> str:
        # torch_npu's form (torch_npu/npu/streams.py); code and tests look for "torch_npu.npu.Stream"
        return f"<torch_npu.npu.{type(self).__name__} device={self.device} npu_stream={self.npu_stream:#x}>"


class Stream(_StreamBase):
    """An npu stream: `torch.npu.Stream(device=None, priority=0)`, from torch_npu's pool.

    As torch_npu's: the next of the device's 32 pooled streams (round robin) for the priority
    class (0 and positive: normal; negative: high), `stream_id >> 5` 3 or 4 (module
    stream_ids). `is_sync_launch=True` takes a sync-launch stream; `stream_ptr=` wraps an
    external stream (ExternalStream). Work queued while it is current (`with
    torch.npu.stream(s):`) runs in order on it; different streams run concurrently."""


class SyncLaunchStream(_StreamBase):
    """`torch_npu.npu.SyncLaunchStream(device=None, priority=0)`: one of the device's 4 streams
    that bypass torch_npu's task queue (launches go straight to the runtime). npurt has no task
    queue in front of its streams, so it runs like any stream; its id is SYNCLAUNCH's. As in
    torch_npu it is not a `torch.npu.Stream`."""

    def __new__(cls, device=None, priority: int = 0, **kwargs):
        kwargs.setdefault("is_sync_launch", 1)
        return super().__new__(cls, device, priority, **kwargs)


class ExternalStream(Stream):
    """`torch_npu.npu.ExternalStream(stream_ptr, device=None)`: a stream made outside torch
    (`torch_npu.npu.npurt().npuStreamCreate`, acl.rt.create_stream), wrapped so it can be made
    current and ops run on it. torch_npu does not own it: synchronize(), query(), events on it
    and record_stream raise RuntimeError (the caller synchronizes it), as torch_npu's task queue
    does not track it. The same handle wraps to the same stream (equal, same id)."""

    def __new__(cls, stream_ptr, device=None, **kwargs):
        return super().__new__(cls, device, stream_ptr=stream_ptr, **kwargs)


def _stream_of(s) -> _NpStream:
    if isinstance(s, _StreamBase):
        return s._npurt
    if isinstance(s, torch.Stream):
        return _NpStream._wrap(runtime_stream(s))
    raise TypeError(f"expected a torch.npu.Stream, got {type(s).__name__}")


def _event_of(e) -> _NpEvent:
    if isinstance(e, Event):
        return e._npurt
    raise TypeError(f"expected a torch.npu.Event, got {type(e).__name__}")


class Event:
    """A marker in a stream: `torch.npu.Event(enable_timing=False, blocking=False)`.

    As torch_npu's (and CUDA's): before its first record, a wait adds nothing and query() and
    synchronize() are done."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        if interprocess and enable_timing:
            raise RuntimeError("Parameter interprocess cannot be specified together with other parameters.")
        self._npurt = _NpEvent(enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)
        self.enable_timing, self.blocking = bool(enable_timing), bool(blocking)
        self._recorded_on = None  # the device of the first record (torch_npu: None before it)

    def ipc_handle(self) -> bytes:
        """The 64-byte handle of an interprocess event (`Event(interprocess=True)`): another
        process opens it with `torch.npu.Event.from_ipc_handle(device, handle)`; the event is
        also picklable (multiprocessing queues carry it as its handle), as torch_npu's."""
        handle = self._npurt.ipc_handle()
        if self._recorded_on is None:
            self._recorded_on = self._npurt.device
        return handle

    @classmethod
    def from_ipc_handle(cls, device, handle: bytes) -> "Event":
        if not isinstance(handle, (bytes, bytearray)) or len(handle) != IPC_EVENT_HANDLE_SIZE:
            size = len(handle) if isinstance(handle, (bytes, bytearray)) else type(handle).__name__
            raise RuntimeError(f"aclrtIpcEventHandle expects byte-like object of size {IPC_EVENT_HANDLE_SIZE}, "
                               f"but got {size}")
        device = torch.device(device) if not isinstance(device, int) else torch.device("npu", device)
        if device.type != "npu":
            raise RuntimeError(f"Event can only be created on PrivateUse1 devices, but got device type {device.type}")
        index = index_of(device)
        event = cls.__new__(cls)
        with _devices.device(index):
            event._npurt = _NpEvent.from_ipc_handle(bytes(handle))
        event.enable_timing = event.blocking = False
        event._recorded_on = index
        return event

    def __reduce__(self):
        handle = self.ipc_handle()
        return _rebuild_ipc_event, (self.device, handle)

    @property
    def device(self) -> torch.device | None:
        return None if self._recorded_on is None else torch.device("npu", self._recorded_on)

    @property
    def npu_event(self) -> int:
        """The raw aclrtEvent handle."""
        return self._npurt.runtime_event.handle

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on `stream` (default: the current stream)."""
        if stream is None:
            stream = current_stream()
        check_not_external(stream, "NPUEvent::record")
        self._npurt.record(_stream_of(stream))
        self._recorded_on = stream.device_index

    def wait(self, stream: Stream | None = None) -> None:
        """Make future work on `stream` (default: the current stream) wait for this event."""
        if stream is None:
            stream = current_stream()
        check_not_external(stream, "NPUEvent::block")
        self._npurt.wait(_stream_of(stream))

    def query(self) -> bool:
        return self._npurt.query()

    def synchronize(self) -> None:
        self._npurt.synchronize()

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event's record and `end_event`'s (timing events); waits for
        both records first, as torch_npu's does."""
        end = _event_of(end_event)
        if self._recorded_on is None or end_event._recorded_on is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        self._npurt.synchronize()
        end.synchronize()
        return self._npurt.elapsed_time(end)

    def recorded_time(self) -> int:
        """The record's completion time stamp (µs since the device started); waits for it."""
        if self._recorded_on is None:
            raise RuntimeError("Event must be recorded before getting recorded timestamp.")
        self._npurt.synchronize()
        return event_get_timestamp(self._npurt.runtime_event)

    def __repr__(self) -> str:
        if self._recorded_on is None:
            return "<torch_npu.npu.Event uninitialized>"
        return f"<torch_npu.npu.Event {self.npu_event:#x}>"


class ExternalEvent:
    """An event a stream may wait for before anyone records it (torch_npu's
    `torch.npu.ExternalEvent`, an ACL_EVENT_EXTERNAL event): a wait passes once a record ran
    and no reset followed. Reset it (`reset(stream)`) before reusing it. Waited for inside a
    capture and recorded outside it, each replay waits for the record as it stands then: how
    graph updates (`NPUGraph.update`) hold a replay until its ops are updated."""

    def __init__(self):
        self._ev = None   # made on first use, on the device of the stream (as torch_npu)

    def _event(self, stream):
        if self._ev is None:
            with _devices.device(stream.device_index):
                self._ev = _rt.create_event(flags=_C.ACL_EVENT_EXTERNAL)
        return self._ev

    def record(self, stream: Stream | None = None) -> None:
        stream = current_stream() if stream is None else stream
        _rt.record_event(self._event(stream), runtime_stream(stream))

    def wait(self, stream: Stream | None = None) -> None:
        stream = current_stream() if stream is None else stream
        _rt.stream_wait_event(runtime_stream(stream), self._event(stream))

    def reset(self, stream: Stream | None = None) -> None:
        stream = current_stream() if stream is None else stream
        _rt.reset_event(self._event(stream), runtime_stream(stream))

    @property
    def npu_event(self) -> int:
        return 0 if self._ev is None else self._ev.handle

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self.npu_event)

    def __del__(self):
        if self._ev is not None and not self._ev.destroyed:
            try:
                _rt.destroy_event(self._ev)
            except Exception:  # noqa: BLE001 - interpreter teardown or a finalized runtime
                pass

    def __repr__(self) -> str:
        if self._ev is None:
            return "<torch_npu.npu.ExternalEvent uninitialized>"
        return f"<torch_npu.npu.ExternalEvent {self.npu_event:#x}>"


IPC_EVENT_HANDLE_SIZE = 64   # sizeof(aclrtIpcEventHandle)


def _rebuild_ipc_event(device, handle: bytes) -> Event:
    """The other end of pickling an interprocess event (torch_npu's rebuild_npu_event)."""
    return Event.from_ipc_handle(device, handle)


class _AcceleratorEvent(Event):
    """What `torch.Event(device="npu")` makes: an npu event with torch's generic checks."""

    def __init__(self, device=None, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self._device_index = index_of(device)
        with _devices.device(self._device_index):
            super().__init__(enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)

    @property
    def device(self) -> torch.device:
        return torch.device("npu", self._device_index)

    def elapsed_time(self, end_event) -> float:
        if not (self.enable_timing and getattr(end_event, "enable_timing", False)):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._recorded_on is None or getattr(end_event, "_recorded_on", None) is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return super().elapsed_time(end_event)

    def __repr__(self) -> str:
        return f"torch.Event device_type=npu, device_index={self._device_index}, event_id={id(self)}"


class stream:
    """Context manager: `with torch.npu.stream(s):` makes `s` (and its device) current."""

    def __init__(self, s: Stream | None):
        if s is not None and not isinstance(s, torch.Stream):
            raise TypeError(f"torch.npu.stream() expects a torch.npu.Stream or None, got {type(s).__name__}")
        self.s = s
        self._inner = _np_streams.stream(None if s is None else _stream_of(s))

    def __enter__(self) -> Stream | None:
        self._inner.__enter__()
        return self.s

    def __exit__(self, *exc) -> None:
        self._inner.__exit__(*exc)


def current_stream(device=None) -> Stream:
    """The calling thread's current stream on `device` (default: the current device)."""
    return Stream._wrap(_np_streams.current_stream(index_of(device)))


def default_stream(device=None) -> Stream:
    """The default stream of `device` (default: the current device)."""
    return Stream._wrap(_np_streams.default_stream(index_of(device)))


def set_stream(s: Stream) -> None:
    """Make `s` the current stream of its device in this thread (no context manager)."""
    if s is None:
        return
    _np_streams.make_current(_stream_of(s))
