"""Callbacks and report threads, host functions, op timeouts, last errors and exception info
(acl_rt.h), over the runtime's control operations.

A C function pointer given to aclrtLaunchCallback runs on the C thread that subscribed the
stream (aclrtSubscribeReport with its pthread id, which is what `threading.get_ident()` is for
that thread), inside its aclrtProcessReport. A host function (aclrtLaunchHostFunc) runs on the
C interface's host-function thread, as CANN runs it on a runtime thread: never inline on a
thread that synchronizes (the runtime may run ready work there; C code holding a lock across a
synchronize would deadlock with a host function that takes it).
"""
from __future__ import annotations

import queue
import threading

from ... import runtime as rt
from .. import cdata
from ..registry import c_function
from ._common import null, stream_of


@c_function("aclrtSubscribeReport")
def aclrtSubscribeReport(threadId, stream):
    rt.subscribe_report(threadId, stream_of(stream))
    return 0


@c_function("aclrtUnSubscribeReport")
def aclrtUnSubscribeReport(threadId, stream):
    rt.unsubscribe_report(threadId, stream_of(stream))
    return 0


@c_function("aclrtLaunchCallback")
def aclrtLaunchCallback(fn, userData, blockType, stream):
    if not fn:
        raise null("fn")
    call = cdata.ffi.cast("aclrtCallback", fn)
    rt.launch_callback(lambda data: call(cdata.ffi.cast("void *", data)), userData, blockType, stream_of(stream))
    return 0


@c_function("aclrtProcessReport")
def aclrtProcessReport(timeout):
    rt.process_report(timeout)
    return 0


class _HostFunctionThread:
    """The one thread host functions run on (started at the first aclrtLaunchHostFunc)."""

    def __init__(self):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()

    def _serve(self):
        while True:
            fn, args, done, box = self._jobs.get()
            try:
                fn(cdata.ffi.cast("void *", args))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting task
                box.append(exc)
            finally:
                done.set()

    def run(self, fn, args):
        """Run fn(args) on the host-function thread and wait for it (inside the task)."""
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._serve, name="npurt-host-func", daemon=True)
                    self._thread.start()
        if threading.current_thread() is self._thread:
            fn(cdata.ffi.cast("void *", args))
            return
        done, box = threading.Event(), []
        self._jobs.put((fn, args, done, box))
        done.wait()
        if box:
            raise box[0]


HOST_FUNCTIONS = _HostFunctionThread()


@c_function("aclrtLaunchHostFunc")
def aclrtLaunchHostFunc(stream, fn, args):
    if not fn:
        raise null("fn")
    call = cdata.ffi.cast("aclrtHostFunc", fn)
    rt.launch_host_func(stream_of(stream), HOST_FUNCTIONS.run, call, args, name="aclrtLaunchHostFunc")
    return 0


# ---------------------------------------------------------------- op timeouts
@c_function("aclrtSetOpExecuteTimeOut")
def aclrtSetOpExecuteTimeOut(timeout):
    """Seconds (0: the default)."""
    rt.set_op_execute_timeout_us(timeout * 1_000_000)
    return 0


@c_function("aclrtSetOpExecuteTimeOutV2")
def aclrtSetOpExecuteTimeOutV2(timeout, actualTimeout):
    """Microseconds, rounded up to the device's timeout interval; the value in effect is written
    to actualTimeout."""
    rt.set_op_execute_timeout_us(timeout)
    if actualTimeout:
        actualTimeout[0] = rt.effective_op_execute_timeout_us()
    return 0


@c_function("aclrtGetOpExecuteTimeout")
def aclrtGetOpExecuteTimeout(timeoutMs):
    """The op execute timeout in effect, in milliseconds."""
    if not timeoutMs:
        raise null("timeoutMs")
    timeoutMs[0] = rt.effective_op_execute_timeout_us() // 1000
    return 0


@c_function("aclrtGetOpTimeOutInterval")
def aclrtGetOpTimeOutInterval(interval):
    if not interval:
        raise null("interval")
    interval[0] = rt.get_op_timeout_interval()
    return 0


# ---------------------------------------------------------------- errors and exception info
@c_function("aclrtGetLastError")
def aclrtGetLastError(level):
    return rt.get_last_error(clear=True)


@c_function("aclrtPeekAtLastError")
def aclrtPeekAtLastError(level):
    return rt.get_last_error(clear=False)


@c_function("aclrtSetExceptionInfoCallback")
def aclrtSetExceptionInfoCallback(callback):
    if not callback:
        rt.set_exception_info_callback(None)
        return 0
    call = cdata.ffi.cast("aclrtExceptionInfoCallback", callback)
    rt.set_exception_info_callback(lambda handle: call(cdata.ffi.cast("aclrtExceptionInfo *", handle)))
    return 0


def _info(info, field):
    got = rt.exception_info(info) if info else None
    return 0xFFFFFFFF if got is None else getattr(got, field) & 0xFFFFFFFF


@c_function("aclrtGetTaskIdFromExceptionInfo")
def aclrtGetTaskIdFromExceptionInfo(info):
    return _info(info, "task_id")


@c_function("aclrtGetStreamIdFromExceptionInfo")
def aclrtGetStreamIdFromExceptionInfo(info):
    return _info(info, "stream_id")


@c_function("aclrtGetThreadIdFromExceptionInfo")
def aclrtGetThreadIdFromExceptionInfo(info):
    return _info(info, "thread_id")


@c_function("aclrtGetDeviceIdFromExceptionInfo")
def aclrtGetDeviceIdFromExceptionInfo(info):
    return _info(info, "device_id")


@c_function("aclrtGetErrorCodeFromExceptionInfo")
def aclrtGetErrorCodeFromExceptionInfo(info):
    return _info(info, "error_code")
