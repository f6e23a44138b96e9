"""`torch.npu.Stream`, `torch.npu.Event` and the current-stream functions, over npurt's streams.

`Stream` is a `torch.Stream` (device type PrivateUse1, `stream_id` = npurt's stream id), so
`tensor.record_stream(s)` type-checks and reaches our kernel. The current stream is npurt's
Pythonic one: `with torch.npu.stream(s):` and `with npurt.stream(...)` are the same thing, and
ops on npu tensors are queued on the current stream of their device.

Torch's device-agnostic `torch.Stream(device="npu")` / `torch.accelerator` stream functions go
through PrivateUse1's Python device guard, whose stream functions are fixed no-ops in torch:
they do not reach npurt (use `torch.npu.*`).
"""
from __future__ import annotations

import weakref

import torch

from .. import streams as _np_streams
from ..streams import Event as _NpEvent
from ..streams import Stream as _NpStream
from .device import index_of

PRIVATEUSE1 = 20  # c10::DeviceType::PrivateUse1
_RT: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()  # (device, stream id) -> runtime stream


def runtime_stream(s) -> object:
    """The npurt runtime stream behind a torch.Stream of device type npu."""
    if isinstance(s, Stream):
        return s._npurt.runtime_stream
    rt = _RT.get((s.device_index, s.stream_id))
    if rt is None or rt.destroyed:
        raise RuntimeError(f"stream {s.stream_id} of npu:{s.device_index} is not an npurt stream this process "
                           "made (create streams with torch.npu.Stream())")
    return rt


class Stream(torch.Stream):
    """An npu stream: `torch.npu.Stream(device=None, priority=0)`.

    Work queued while it is current (`with torch.npu.stream(s):`) runs in order on it;
    different streams run concurrently. `priority`: 0 is the highest, as in ACL (negative
    values, torch's "high priority", are 0)."""

    def __new__(cls, device=None, priority: int = 0, **kwargs):
        if "stream_id" in kwargs:  # rebuilt from (stream_id, device_index, device_type), as torch_npu allows
            return cls._rebuild(kwargs.get("stream_id"), kwargs.get("device_index"), kwargs.get("device_type"))
        inner = _NpStream(device=index_of(device), priority=max(0, min(int(priority), 7)))
        return cls._wrap(inner)

    def __init__(self, *args, **kwargs):
        pass

    @classmethod
    def _rebuild(cls, stream_id, device_index, device_type) -> "Stream":
        """The stream `stream_id` of npu:`device_index` that this process made (fails at once,
        as torch_npu's does, for a stream or device that does not exist)."""
        if device_type is not None and device_type != PRIVATEUSE1:
            raise RuntimeError(f"device_type {device_type} is not npu's ({PRIVATEUSE1})")
        if type(stream_id) is not int or type(device_index) is not int:
            raise RuntimeError("stream_id and device_index must be ints")
        if stream_id < 0 or device_index < 0:
            raise RuntimeError(f"stream_id {stream_id} / device_index {device_index} must not be negative")
        if device_index >= torch.npu.device_count():
            raise RuntimeError(f"device_index {device_index} is out of range: {torch.npu.device_count()} npu(s)")
        rt = _RT.get((device_index, stream_id))
        if rt is None:
            default = _np_streams.default_stream(device_index)
            if default.runtime_stream.stream_id == stream_id:
                rt = default.runtime_stream
        if rt is None or rt.destroyed:
            raise RuntimeError(f"stream {stream_id} of npu:{device_index} is not a live stream of this process")
        return cls._wrap(_NpStream._wrap(rt))

    @classmethod
    def _wrap(cls, inner: _NpStream) -> "Stream":
        rt = inner.runtime_stream
        self = torch.Stream.__new__(cls, stream_id=rt.stream_id, device_index=inner.device,
                                    device_type=PRIVATEUSE1)
        self._npurt = inner
        _RT[(inner.device, rt.stream_id)] = rt
        return self

    @property
    def npurt_stream(self) -> _NpStream:
        """The npurt.Stream this wraps (for npurt's own API)."""
        return self._npurt

    @property
    def priority(self) -> int:
        return self._npurt.priority

    def query(self) -> bool:
        """True if all work queued on the stream so far has finished."""
        return self._npurt.query()

    def synchronize(self) -> None:
        """Wait for all work queued on the stream so far (raises a failure it reported)."""
        self._npurt.synchronize()

    def wait_event(self, event: "Event") -> None:
        """Make future work on this stream wait for `event`'s latest record."""
        self._npurt.wait_event(_event_of(event))

    def wait_stream(self, stream: "Stream") -> None:
        """Make future work on this stream wait for the work queued on `stream` so far."""
        self._npurt.wait_stream(_stream_of(stream))

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
        return self.native_handle

    def __enter__(self) -> "Stream":
        self._ctx = stream(self)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._ctx.__exit__(*exc)

    def __eq__(self, other) -> bool:
        return isinstance(other, torch.Stream) and other.stream_id == self.stream_id \
            and other.device_index == self.device_index and other.device_type == self.device_type

    def __hash__(self) -> int:
        return hash((self.stream_id, self.device_index, self.device_type))

    def __repr__(self) -> str:
        return f"<torch.npu.Stream device=npu:{self.device_index} stream_id={self.stream_id}>"


def _stream_of(s) -> _NpStream:
    if isinstance(s, Stream):
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
        if interprocess:
            raise RuntimeError("interprocess npu events are not supported by npurt")
        self._npurt = _NpEvent(enable_timing=enable_timing, blocking=blocking)
        self.enable_timing, self.blocking = bool(enable_timing), bool(blocking)

    @property
    def device(self) -> torch.device:
        return torch.device("npu", self._npurt.device)

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on `stream` (default: the current stream)."""
        self._npurt.record(None if stream is None else _stream_of(stream))

    def wait(self, stream: Stream | None = None) -> None:
        """Make future work on `stream` (default: the current stream) wait for this event."""
        self._npurt.wait(None if stream is None else _stream_of(stream))

    def query(self) -> bool:
        return self._npurt.query()

    def synchronize(self) -> None:
        self._npurt.synchronize()

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event's record and `end_event`'s (timing events)."""
        return self._npurt.elapsed_time(_event_of(end_event))

    def __repr__(self) -> str:
        return f"<torch.npu.Event {self._npurt!r}>"


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
