"""Execution control: host callbacks and report threads, op timeouts, exception info."""
from __future__ import annotations

import threading

from .. import constants as C
from ..device import Device
from ..errors import InvalidDeviceError, InvalidValueError, NpuError, SubscriptionError
from ..interrupts import held
from ..observers import HOOKS
from ..runtime import RUNTIME
from ..scheduler import TLS, Blocker, task_error
from ..stream import Stream
from ..tasks import Task
from .streams import stream_of

rt = RUNTIME


# ================================================================ host callbacks
class _CallbackItem(Blocker):
    """A posted launch_callback; for ACL_CALLBACK_BLOCK also what its stream parks on."""

    __slots__ = ("fn", "user_data", "done", "error", "lock", "stream", "task", "parked")

    def __init__(self, fn, user_data, stream):
        self.fn, self.user_data, self.stream = fn, user_data, stream
        self.done = False
        self.error = None
        self.waiter = None
        self.parked = False
        self.lock = threading.Lock()
        self.task = None

    def register(self) -> bool:  # blocker protocol (see Task.blocker)
        with self.lock:
            if self.done:
                return False
            self.parked = True
            return True

    def describe(self) -> str:
        return (f"host callback {getattr(self.fn, '__qualname__', self.fn)!s} to be run by the thread "
                "that calls process_report")

    def waits_for(self):
        return ("report_thread", self.stream.subscriber)

    def finish(self, error) -> None:
        if error is not None and not isinstance(error, Exception):  # never re-raise an interrupt later
            error = NpuError(f"the callback raised {type(error).__name__}: {error}", C.ACL_ERROR_RT_AICPU_EXCEPTION)
        with self.lock:
            self.done = True
            self.error = error
            parked = self.parked
        if parked:
            self.fire()


class CallbackTask(Task):
    """launch_callback: posts fn(user_data) to the stream's subscribed report thread; with
    ACL_CALLBACK_BLOCK the stream waits until that thread has run it."""

    __slots__ = ("item", "block", "queue", "posted")
    kind = "launch_callback"
    may_block = True
    error_code = C.ACL_ERROR_RT_AICPU_EXCEPTION

    def __init__(self, item: _CallbackItem, block: bool, queue):
        self.item, self.block, self.queue, self.posted = item, block, queue, False
        item.task = self

    def blocker(self):
        if not self.posted:
            self.posted = True
            queue = self.queue
            with held(queue.cond):
                queue.items.append(self.item)
                queue.cond.notify()
        if self.block and not self.item.done:
            return self.item
        return None

    def run(self) -> None:
        if self.block and self.item.error is not None:
            raise self.item.error

    def __copy__(self):
        """A graph replay's copy: the same callback posted afresh (the recorded post ran)."""
        new = type(self).__new__(type(self))
        for klass in type(self).__mro__:
            for name in getattr(klass, "__slots__", ()):
                if hasattr(self, name):
                    setattr(new, name, getattr(self, name))
        new.item = _CallbackItem(self.item.fn, self.item.user_data, self.item.stream)
        new.item.task, new.posted = new, False
        return new

    def describe(self) -> str:
        return f"launch_callback {getattr(self.item.fn, '__qualname__', self.item.fn)!s}"

    def details(self) -> dict:
        return {"name": f"launch_callback {getattr(self.item.fn, '__qualname__', self.item.fn)!s}",
                "blocking": self.block}


def subscribe_report(thread_id: int, stream: Stream | None) -> None:
    s = stream_of(stream)
    if type(thread_id) is not int:
        raise InvalidValueError(f"subscribe_report: thread id must be an int, got {type(thread_id).__name__}")
    if s.subscriber is not None:
        raise SubscriptionError(f"stream {s.stream_id} is already subscribed to thread {s.subscriber}",
                                C.ACL_ERROR_REPEAT_SUBSCRIBE)
    queue = rt.report_queue(thread_id, s.device.id)
    if queue.device_id != s.device.id:
        raise SubscriptionError(f"thread {thread_id} already serves streams of device {queue.device_id}; a "
                                "report thread serves one device", C.ACL_ERROR_RT_THREAD_SUBSCRIBE)
    queue.streams.add(s)
    s.subscriber = thread_id


def unsubscribe_report(thread_id: int, stream: Stream | None) -> None:
    s = stream_of(stream)
    if s.subscriber != thread_id:
        raise SubscriptionError(f"stream {s.stream_id} is not subscribed to thread {thread_id}",
                                C.ACL_ERROR_RT_STREAM_SUBSCRIBE)
    queue = rt.report_queue(thread_id)
    s.subscriber = None
    if queue is not None:
        queue.streams.discard(s)
        if not queue.streams and not queue.items:
            rt.report_queues.pop(thread_id, None)


def launch_callback(fn, user_data, block_type: int, stream: Stream | None) -> int:
    s = stream_of(stream)
    if not callable(fn):
        raise InvalidValueError(f"launch_callback needs a callable, got {type(fn).__name__}")
    if block_type not in (C.ACL_CALLBACK_NO_BLOCK, C.ACL_CALLBACK_BLOCK):
        raise InvalidValueError(f"block type must be ACL_CALLBACK_NO_BLOCK (0) or ACL_CALLBACK_BLOCK (1), "
                                f"got {block_type!r}")
    if s.subscriber is None:
        raise SubscriptionError(f"stream {s.stream_id} has no report thread: call "
                                "subscribe_report(thread_id, stream) before launch_callback")
    queue = rt.report_queue(s.subscriber)
    item = _CallbackItem(fn, user_data, s)
    return s.enqueue(CallbackTask(item, block_type == C.ACL_CALLBACK_BLOCK, queue))


def process_report(timeout_ms: int) -> None:
    """Run the callbacks posted to the calling thread, waiting up to `timeout_ms` (-1:
    forever) for the first. Raises REPORT_TIMEOUT (507012) if none came."""
    rt.check_initialized()
    if type(timeout_ms) is not int or timeout_ms < -1 or timeout_ms == 0:
        raise InvalidValueError(f"process_report timeout must be -1 or a positive number of ms, got {timeout_ms!r}")
    queue = rt.current_report_queue()
    with held(queue.cond):
        if not queue.items:
            queue.cond.wait_for(lambda: bool(queue.items), None if timeout_ms < 0 else timeout_ms / 1000)
        batch = len(queue.items)
    if not batch:
        raise NpuError(f"process_report: no callback arrived within {timeout_ms} ms", C.ACL_ERROR_RT_REPORT_TIMEOUT)
    interrupt = None
    reporting, TLS.reporting = TLS.reporting, True
    try:
        for _ in range(batch):
            item = error = None
            try:
                with held(queue.cond):  # take one at a time: an interrupt leaves the rest queued
                    if not queue.items:
                        break
                    item = queue.items[0]
                    queue.items.popleft()
                if item.done:
                    continue
                task = item.task
                if HOOKS.active:
                    HOOKS.emit("callback_started", stream=item.stream, seq=task.seq, task=task)
                try:
                    item.fn(item.user_data)
                except Exception as exc:  # noqa: BLE001 - becomes the stream's failure
                    error = exc
                except BaseException as exc:  # Ctrl-C or SystemExit in this (the user's) thread:
                    error = interrupt = exc     # settle the callback first, then let it propagate
                if HOOKS.active:
                    HOOKS.emit("callback_finished", stream=item.stream, seq=task.seq, task=task, block=task.block)
            finally:  # whatever happened, the stream must not stay parked on this callback
                if item is not None and not item.done:
                    if error is not None and not item.task.block:
                        item.stream.fail(item.task, task_error(item.task, error))
                    item.finish(error)
            if interrupt is not None:
                break
    finally:
        TLS.reporting = reporting
    if interrupt is not None:
        raise interrupt


# ================================================================ execution control
def set_op_wait_timeout(timeout_s: int) -> None:
    """Seconds after which a stream_wait_event issued from now on gives up (0: never). The
    timeout fails the waiting stream with ACL_ERROR_RT_WAIT_TIMEOUT at its next synchronize."""
    rt.check_initialized()
    if type(timeout_s) is not int or timeout_s < 0:
        raise InvalidValueError(f"op wait timeout must be a non-negative int of seconds, got {timeout_s!r}")
    rt.op_wait_timeout_s = timeout_s


def set_op_execute_timeout_us(timeout_us: int) -> None:
    """Default kernel execution timeout in microseconds for launches that carry none (0: none)."""
    rt.check_initialized()
    if type(timeout_us) is not int or timeout_us < 0:
        raise InvalidValueError(f"op execute timeout must be a non-negative int, got {timeout_us!r}")
    rt.op_execute_timeout_us = timeout_us


# ================================================================ misc
def set_exception_info_callback(fn) -> None:
    if fn is not None and not callable(fn):
        raise InvalidValueError("set_exception_info_callback needs a callable or None")
    rt.check_initialized()
    rt.exception_callback = fn


def exception_info(handle: int):
    return rt.exception_infos.get(handle)


def device_by_id(device_id: int) -> Device:
    return rt.device(device_id)


def check_device_id(device_id) -> None:
    if type(device_id) is not int:
        raise InvalidDeviceError(f"device id must be an int, got {type(device_id).__name__}")
    rt.device(device_id)
