"""Python functions in stream order: torch_npu's `torch.npu._launch_host_func`,
`_launch_host_func_pending`, `_subscribe_report`, `_unsubscribe_report` (torch_npu/csrc/npu/Graph.cpp).

* `_subscribe_report(stream)` starts, once, a report thread (aclrtSubscribeReport /
  aclrtProcessReport) and subscribes `stream` to it; `_launch_host_func(stream, fn, user_data)`
  then queues `fn(user_data)` as a blocking callback (aclrtLaunchCallback, ACL_CALLBACK_BLOCK):
  the stream goes on once the report thread has run it. Without a subscription it is refused,
  as there. `_unsubscribe_report(stream)` waits for the stream, then unsubscribes it; the
  thread ends with its last stream.
* `_launch_host_func_pending(stream, fn, user_data)` queues a host function
  (aclrtLaunchHostFunc): when it runs, each `("host_tensor_ptr", address, nbytes, shape,
  dtype)` spec in the tuple `user_data` (one level of lists too) is read into a
  `("host_tensor_buffer", bytes, shape, dtype)` spec, and `fn(*user_data)` is called. torch_npu
  hands that call to the main thread (Py_AddPendingCall); npurt calls it on the device worker
  that runs the host function, in stream order.

Captured (inside an NPUGraph capture), each runs at every replay.
"""
from __future__ import annotations

import ctypes
import threading

from ..runtime import SubscriptionError, fork_safe_lock, launch_callback, launch_host_func, process_report
from ..runtime import subscribe_report, unsubscribe_report
from ..runtime import constants as C
from .streams import runtime_stream

TENSOR_PTR_SPEC = "host_tensor_ptr"
TENSOR_BUFFER_SPEC = "host_tensor_buffer"


def read_ptr_specs(arg):
    """A ptr spec as a buffer spec holding the bytes as they are now; lists element-wise."""
    if isinstance(arg, tuple) and len(arg) == 5 and arg[0] == TENSOR_PTR_SPEC:
        _, address, nbytes, shape, dtype = arg
        return (TENSOR_BUFFER_SPEC, bytearray(ctypes.string_at(address, nbytes)) if nbytes else bytearray(),
                shape, dtype)
    if isinstance(arg, list):
        return [read_ptr_specs(a) for a in arg]
    return arg


def launch_host_func_pending(stream, fn, user_data, keep=()) -> None:
    """`keep`: objects the call must keep alive (host buffers the specs point into)."""
    args = tuple(user_data)

    def call(_keep=keep):
        fn(*(read_ptr_specs(a) for a in args))
    launch_host_func(runtime_stream(stream), call, name=getattr(fn, "__name__", "host func"))


class _ReportThread:
    """The one thread that runs the callbacks of subscribed streams (torch_npu's process_callback)."""

    def __init__(self):
        self.streams: set = set()
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="npu-report", daemon=True)
        self.thread.start()
        self.ready.wait()

    def _loop(self) -> None:
        self.ident = threading.get_ident()
        self.ready.set()
        while not self.stop.is_set():
            try:
                process_report(100)
            except Exception:  # noqa: BLE001 - report timeout, or not subscribed yet / any more
                self.stop.wait(0.01)


_report: _ReportThread | None = None
_lock = fork_safe_lock()


def _subscribe_report(stream) -> None:
    global _report
    with _lock:
        if _report is None or _report.stop.is_set():
            _report = _ReportThread()
        subscribe_report(_report.ident, runtime_stream(stream))
        _report.streams.add(runtime_stream(stream))


def _unsubscribe_report(stream) -> None:
    global _report
    s = runtime_stream(stream)
    stream.synchronize()
    with _lock:
        if _report is None or s not in _report.streams:
            raise SubscriptionError(f"stream {s.stream_id} is not subscribed (torch.npu._subscribe_report)",
                                    C.ACL_ERROR_RT_STREAM_SUBSCRIBE)
        unsubscribe_report(_report.ident, s)
        _report.streams.discard(s)
        if not _report.streams:
            _report.stop.set()
            _report = None


def _launch_host_func(stream, fn, user_data) -> None:
    launch_callback(fn, user_data, C.ACL_CALLBACK_BLOCK, runtime_stream(stream))


def _launch_host_func_pending(stream, fn, user_data) -> None:
    launch_host_func_pending(stream, fn, user_data)
