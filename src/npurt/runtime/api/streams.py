"""Streams: create, destroy, synchronize, query, failure mode, attributes, host functions."""
from __future__ import annotations

from .. import constants as C
from .. import graph
from ..context import current_context, peek_context
from ..errors import ContextError, DeadlockError, InvalidHandleError, InvalidValueError, ParamInvalidError
from ..observers import HOOKS
from ..runtime import RUNTIME
from ..stream import Stream
from ..tasks import HostFuncTask, Task

rt = RUNTIME


# ================================================================ streams
def stream_of(stream: Stream | None) -> Stream:
    """`stream`, or the current context's default stream for None."""
    if stream is None:
        return current_context().default_stream
    if type(stream) is not Stream:
        raise InvalidHandleError(f"expected a stream (or None for the default stream), got "
                                 f"{type(stream).__name__}")
    if stream.destroyed:
        raise InvalidHandleError(f"stream {stream.stream_id} was destroyed")
    return stream


def create_stream(priority: int = 0, flags: int = 0) -> Stream:
    """A new stream in the current context."""
    if type(priority) is not int or type(flags) is not int or flags < 0:
        raise InvalidValueError(f"stream priority and flags must be ints (flags >= 0), got {priority!r}, {flags!r}")
    ctx = current_context()
    return ctx.device.new_stream(ctx, priority, flags)


def destroy_stream(stream: Stream, force: bool = False) -> None:
    """Destroy a stream. Without `force` its queued work runs first (errors from it are not
    reported); with `force` (aclrtDestroyStreamForce) the call does not wait: the handle is
    gone at once, and the work already queued still runs to completion, as the tasks an NPU
    already holds do (a reset or finalize still waits for it)."""
    if type(stream) is not Stream:
        raise InvalidHandleError(f"expected a stream, got {type(stream).__name__}")
    if stream.is_default:
        raise InvalidValueError("a default stream cannot be destroyed; it lives as long as its context")
    if stream.capture is not None:
        graph.refuse_if_capturing(stream, "destroy_stream")
    ctx = peek_context()
    if ctx is not stream.context and not stream.destroyed:
        raise ContextError(f"stream {stream.stream_id} belongs to another context; make that context "
                           "current (set_context) before destroying it", C.ACL_ERROR_RT_STREAM_CONTEXT)
    with stream.device.lock:  # one destroyer wins; the others see a destroyed handle
        if stream.destroyed or stream.closing:
            raise InvalidHandleError(f"stream {stream.stream_id} was already destroyed")
        stream.closing = True
    try:
        if force:
            if stream.completed_seq < stream.enqueued_seq:
                stream.device.finishing.add(stream)
        else:
            stream.synchronize(report_errors=False)
    except DeadlockError:  # destroying the stream from its own task: refused, nothing changed
        stream.closing = False
        raise
    finally:
        if stream.closing:
            stream.device.release_stream(stream)


def synchronize_stream(stream: Stream | None, timeout_ms: int = -1) -> None:
    if timeout_ms != -1 or type(timeout_ms) is not int:
        _check_timeout(timeout_ms)
    s = stream if type(stream) is Stream and not stream.destroyed else stream_of(stream)
    if s.capture is not None:
        graph.refuse_if_capturing(s, "synchronize_stream")
    if HOOKS.active:
        HOOKS.emit("host_sync", what="stream", obj=s)
    elif s.completed_seq >= s.enqueued_seq and s.error is None:  # done already: Stream.synchronize's
        s.streak = 0                                                # first exit, a frame fewer
        return
    s.synchronize(timeout_ms=timeout_ms)


def stream_query(stream: Stream | None) -> int:
    """ACL_STREAM_STATUS_COMPLETE (0) or ACL_STREAM_STATUS_NOT_READY (1)."""
    s = stream_of(stream)
    if s.capture is not None:
        graph.refuse_if_capturing(s, "stream_query")
    done = s.query()
    return C.ACL_STREAM_STATUS_COMPLETE if done else C.ACL_STREAM_STATUS_NOT_READY


def stream_abort(stream: Stream | None) -> None:
    stream_of(stream).abort()


def set_stream_failure_mode(stream: Stream | None, mode: int) -> None:
    stream_of(stream).set_failure_mode(mode)


def get_stream_available_num() -> int:
    device = current_context().device
    return device.max_streams - device.stream_count


def set_stream_attribute(stream: Stream | None, attr: int, value: dict) -> None:
    s = stream_of(stream)
    if not isinstance(value, dict):
        raise InvalidValueError("the stream attribute value must be a dict (aclrtStreamAttrValue)")
    if attr == C.ACL_STREAM_ATTR_FAILURE_MODE:
        if s.is_default:
            raise InvalidValueError("the failure mode of a default stream cannot be set through "
                                    "set_stream_attribute; use set_stream_failure_mode")
        s.set_failure_mode(_attr_value(value, "failureMode"))
    elif attr == C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK:
        s.attributes["overflowSwitch"] = int(bool(_attr_value(value, "overflowSwitch")))
    elif attr == C.ACL_STREAM_ATTR_USER_CUSTOM_TAG:
        s.attributes["userCustomTag"] = _attr_value(value, "userCustomTag") & 0xFFFFFFFF
    elif attr == C.ACL_STREAM_ATTR_PRIORITY:
        prio = _attr_value(value, "streamPriority")
        s.priority = min(max(prio, 0), 7)
    else:
        raise InvalidValueError(f"unknown or read-only stream attribute {attr!r}")


def get_stream_attribute(stream: Stream | None, attr: int) -> dict:
    s = stream_of(stream)
    if attr == C.ACL_STREAM_ATTR_FAILURE_MODE:
        return {"failureMode": s.failure_mode}
    if attr == C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK:
        return {"overflowSwitch": s.attributes["overflowSwitch"]}
    if attr == C.ACL_STREAM_ATTR_USER_CUSTOM_TAG:
        return {"userCustomTag": s.attributes["userCustomTag"]}
    if attr == C.ACL_STREAM_ATTR_PRIORITY:
        return {"streamPriority": s.priority}
    raise InvalidValueError(f"unknown stream attribute {attr!r}")


def _attr_value(value: dict, key: str) -> int:
    v = value.get(key)
    if type(v) is not int:
        raise InvalidValueError(f"stream attribute value needs an int under {key!r}, got {value!r}")
    return v


def _check_timeout(timeout_ms) -> None:
    """-1 (wait forever) or a positive number of ms. The ACL layer refuses < -1 and the
    runtime refuses 0, both with ACL_ERROR_RT_PARAM_INVALID (aclrt_stream.cpp:141,
    aclrt_device.cpp:173; api_error.cc:1443, 3480)."""
    if timeout_ms != -1 and (type(timeout_ms) is not int or timeout_ms < -1 or timeout_ms == 0):
        raise ParamInvalidError(f"timeout must be -1 (wait forever) or a positive number of milliseconds, "
                                f"got {timeout_ms!r}")


def launch_host_func(stream: Stream | None, fn, *args, name: str | None = None) -> int:
    """Run fn(*args) on a device worker in stream order (the generic host-function task)."""
    if not callable(fn):
        raise InvalidValueError(f"launch_host_func needs a callable, got {type(fn).__name__}")
    return stream_of(stream).enqueue(HostFuncTask(fn, args, name))


def enqueue(stream: Stream | None, task: Task, holders=()) -> int:
    """Append a prepared task to a stream (used by kernels and built-in ops); `holders`: the
    allocations it uses (Stream.enqueue records them: stream-ordered free)."""
    return stream_of(stream).enqueue(task, holders=holders)
