"""What every group of implementations needs: handles to runtime objects, checked outputs.

A C handle (aclrtStream, aclrtEvent, aclrtContext) is the same integer the pyACL facade
hands out (the runtime's handle tables), so a handle made in C names the same object in
Python and back. A NULL stream is the current context's default stream.
"""
from __future__ import annotations

import threading

from ...runtime import RUNTIME, InvalidValueError, NpuError, constants as C

_streams, _events, _contexts = RUNTIME.streams, RUNTIME.events, RUNTIME.contexts
stream_lookup = RUNTIME.streams.lookup


def stream_of(handle: int):
    """The Stream behind a C stream handle; None (default stream) for NULL."""
    if not handle:
        return None
    return stream_lookup(handle) or _streams.get(handle)


def event_of(handle: int):
    if not handle:
        raise InvalidValueError("event is NULL")
    return _events.get(handle)


def context_of(handle: int):
    if not handle:
        raise InvalidValueError("context is NULL")
    return _contexts.get(handle)


_thread = threading.local()


def note_task(task_id) -> None:
    """Remember the id (stream sequence number) of the task the calling C thread enqueued
    last, for aclrtGetThreadLastTaskId; every C function that enqueues a task calls it."""
    if type(task_id) is int:
        _thread.last_task = task_id


def last_task() -> int:
    return getattr(_thread, "last_task", 0)


def null(name: str) -> NpuError:
    """The error for a NULL pointer argument the function needs."""
    return NpuError(f"{name} is NULL", C.ACL_ERROR_INVALID_PARAM)
