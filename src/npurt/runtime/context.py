"""Contexts: per-device owners of streams, current per host thread.

As in ACL: `set_device` creates (once) the device's default context and makes it current
for the calling thread; `create_context` makes an explicit one. Each context has a default
stream. Which context is current is thread-local.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .accel import invalidate as _forget_cached_pools
from .errors import ContextError

if TYPE_CHECKING:
    from .device import Device
    from .stream import Stream


class Context:
    """A device context: its default stream, the streams created in it, its options."""

    def __init__(self, device: "Device", is_default: bool):
        self.device = device
        self.memory = device.memory   # the malloc fast path's shortcut
        self.is_default = is_default
        self.alive = True
        self.closing = False  # being destroyed: no new stream (set under the device lock)
        self.handle = 0
        self.streams: set[Stream] = set()
        self.stop_on_failure = False
        self.sys_params: dict[int, int] = {}
        device.open_memory()
        self.default_stream: Stream = device.new_stream(self, is_default=True)

    def __repr__(self) -> str:
        kind = "default" if self.is_default else "explicit"
        return f"<npurt {kind} context of device {self.device.id}{'' if self.alive else ' (destroyed)'}>"


class ThreadState(threading.local):
    """What belongs to the calling thread: `context`, its current context (or None), and
    `streams`, its current stream per device id (work without a stream goes there; a device
    missing from it means the device's default stream)."""
    context: Context | None = None

    def __init__(self):
        self.streams: dict[int, Stream] = {}


# Published: the facade's generated wrappers read `PER_THREAD.context` inline (one attribute load)
PER_THREAD = ThreadState()
_thread = PER_THREAD


def _no_fallback(ctx: Context | None) -> Context | None:
    return None


# What a thread without a live context gets before the error: installed by the operations
# (api/devices.py: the runtime starts, and acl.init's default device is set for the thread).
# A hook, so that this module needs nothing above it.
_fallback = _no_fallback


def set_fallback(fn) -> None:
    """Install fn(ctx) -> Context | None, asked when the thread has no live context (ctx: the
    dead one, or None); None from it means the error below."""
    global _fallback
    _fallback = fn


def current_context() -> Context:
    """The calling thread's current context; a clear error if there is none."""
    ctx = _thread.context
    if ctx is not None and ctx.alive:
        return ctx
    made = _fallback(ctx)
    if made is not None:
        return made
    if ctx is None:
        raise ContextError("this thread has no current context: call set_device(device_id) or "
                           "set_context(context) first (every new thread starts without one)")
    raise ContextError(f"the current context of this thread belonged to device {ctx.device.id}, "
                       "which was reset or whose context was destroyed; call set_device again")


def peek_context() -> Context | None:
    ctx = _thread.context
    return ctx if ctx is not None and ctx.alive else None


def bind(ctx: Context | None) -> None:
    _thread.context = ctx
    _forget_cached_pools()  # the C entries cache each thread's context pool


def retire(ctx: Context) -> None:
    """Mark a context dead (destroyed, its device reset or released, the process forked):
    every later use is refused; the C entries forget its pool."""
    ctx.alive = False
    _forget_cached_pools()


# ---------------------------------------------------------------- the current stream
# One home for "the current stream" (as CuPy keeps it at the bottom): per thread and device.
# The Pythonic API (`npurt.stream`, `Stream.use`) and torch (`torch.npu.set_stream`) both
# write it here and read it here.
def current_stream_on(device_id: int) -> Stream | None:
    """The calling thread's current stream on `device_id`; None when it made none current
    there (or it was destroyed since: a reset, a finalize), i.e. the default stream."""
    streams = _thread.streams
    s = streams.get(device_id)
    if s is not None and s.destroyed:
        del streams[device_id]
        return None
    return s


def set_current_stream(device_id: int, stream: Stream | None) -> None:
    """Make `stream` the calling thread's current stream on `device_id` (None: the default)."""
    if stream is None:
        _thread.streams.pop(device_id, None)
    else:
        _thread.streams[device_id] = stream


def current_streams() -> dict[int, Stream]:
    """device id -> the calling thread's current stream, for every device it set one on."""
    return {dev: s for dev, s in list(_thread.streams.items()) if not s.destroyed}
