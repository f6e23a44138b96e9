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
from ...runtime import NpuError, constants as C
from .. import cdata
from ..registry import c_function
from ._common import last_task, note_task, null, stream_of


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
    note_task(rt.launch_callback(lambda data: call(cdata.ffi.cast("void *", data)), userData, blockType,
                                 stream_of(stream)))
    return 0


@c_function("aclrtProcessReport")
def aclrtProcessReport(timeout):
    rt.process_report(timeout)
    return 0


class HostFunctions:
    """Where host functions run: on the thread that subscribed their stream with
    aclrtSubscribeHostFunc (inside its aclrtProcessHostFunc), else on the C interface's own
    host-function thread. The stream's task waits until the function has run, so stream order
    holds; the function never runs on the thread that enqueued or synchronizes."""

    def __init__(self):
        self.queues: dict[int, queue.SimpleQueue] = {}     # thread id -> its jobs
        self.subscribers: dict[int, int] = {}               # stream handle -> subscribed thread id
        self._own = None
        self._lock = threading.Lock()

    def _queue(self, thread_id: int) -> queue.SimpleQueue:
        with self._lock:
            return self.queues.setdefault(thread_id, queue.SimpleQueue())

    def _own_thread(self) -> int:
        if self._own is None:
            with self._lock:
                if self._own is None:
                    t = threading.Thread(target=self._serve, name="npurt-host-func", daemon=True)
                    t.start()
                    self._own = t
        return self._own.ident

    def _serve(self):
        jobs = self._queue(threading.get_ident())
        while True:
            self.run_one(jobs.get())

    @staticmethod
    def run_one(job) -> None:
        fn, args, done, box = job
        try:
            fn(cdata.ffi.cast("void *", args))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting task
            box.append(exc)
        finally:
            done.set()

    def call(self, stream_handle: int, fn, args) -> None:
        """The task's body: hand fn(args) to its thread and wait for it."""
        target = self.subscribers.get(stream_handle) or self._own_thread()
        if target == threading.get_ident():
            fn(cdata.ffi.cast("void *", args))
            return
        done, box = threading.Event(), []
        self._queue(target).put((fn, args, done, box))
        done.wait()
        if box:
            raise box[0]

    def process(self, timeout_ms: int) -> None:
        """aclrtProcessHostFunc: run the host functions posted to the calling thread, waiting
        up to timeout_ms (-1: forever) for the first."""
        if timeout_ms == 0 or timeout_ms < -1:
            raise rt.InvalidValueError(f"timeout must be -1 or a positive number of ms, got {timeout_ms}")
        jobs = self._queue(threading.get_ident())
        try:
            job = jobs.get(timeout=None if timeout_ms < 0 else timeout_ms / 1000)
        except queue.Empty:
            raise NpuError(f"no host function arrived within {timeout_ms} ms", C.ACL_ERROR_RT_REPORT_TIMEOUT) from None
        self.run_one(job)
        while True:
            try:
                job = jobs.get_nowait()
            except queue.Empty:
                return
            self.run_one(job)


HOST_FUNCTIONS = HostFunctions()


@c_function("aclrtLaunchHostFunc")
def aclrtLaunchHostFunc(stream, fn, args):
    if not fn:
        raise null("fn")
    call = cdata.ffi.cast("aclrtHostFunc", fn)
    s = rt.stream_of(stream_of(stream))
    note_task(rt.launch_host_func(s, HOST_FUNCTIONS.call, s.handle, call, args, name="aclrtLaunchHostFunc"))
    return 0


@c_function("aclrtGetThreadLastTaskId")
def aclrtGetThreadLastTaskId(taskId):
    """The id (stream sequence number) of the last task this C thread enqueued (0: none yet)."""
    if not taskId:
        raise null("taskId")
    taskId[0] = last_task() & 0xFFFFFFFF
    return 0


@c_function("aclrtReduceAsync")
def aclrtReduceAsync(dst, src, count, kind, type, stream, reserve):  # noqa: A002 - the C parameter's name
    """Stream-ordered dst op= src over `count` bytes (ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM / MAX / MIN)."""
    note_task(rt.reduce_async(dst, src, count, kind, type, stream_of(stream), reserve or None))
    return 0


@c_function("aclrtSubscribeHostFunc")
def aclrtSubscribeHostFunc(hostFuncThreadId, exeStream):
    s = rt.stream_of(stream_of(exeStream))
    if HOST_FUNCTIONS.subscribers.get(s.handle) not in (None, hostFuncThreadId):
        raise NpuError(f"stream {s.stream_id} is already subscribed to host-function thread "
                       f"{HOST_FUNCTIONS.subscribers[s.handle]}", C.ACL_ERROR_REPEAT_SUBSCRIBE)
    HOST_FUNCTIONS.subscribers[s.handle] = hostFuncThreadId
    return 0


@c_function("aclrtUnSubscribeHostFunc")
def aclrtUnSubscribeHostFunc(hostFuncThreadId, exeStream):
    s = rt.stream_of(stream_of(exeStream))
    if HOST_FUNCTIONS.subscribers.get(s.handle) != hostFuncThreadId:
        raise NpuError(f"stream {s.stream_id} is not subscribed to host-function thread {hostFuncThreadId}",
                       C.ACL_ERROR_RT_STREAM_SUBSCRIBE)
    del HOST_FUNCTIONS.subscribers[s.handle]
    return 0


@c_function("aclrtProcessHostFunc")
def aclrtProcessHostFunc(timeout):
    HOST_FUNCTIONS.process(timeout)
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
    to actualTimeout (required, as hicann/runtime's acl checks it first)."""
    if not actualTimeout:
        raise null("actualTimeout")
    rt.set_op_execute_timeout_us(timeout)
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


# the exception-info callbacks: the one of aclrtSetExceptionInfoCallback (deprecated) and those
# registered with aclrtExceptionInfoCallbackRegister, all called for every exception
_exception_callbacks: dict[str, object] = {}
_registered: list[int] = []


# aclrtBinarySetExceptionCallback: binary handle -> (callback, userData), called (after the
# callbacks above) for an exception of a kernel of that binary, as CANN's op task-fail notify
_binary_callbacks: dict[int, tuple] = {}


def _dispatch_exception(handle: int) -> None:
    info = cdata.ffi.cast("aclrtExceptionInfo *", handle)
    for call in list(_exception_callbacks.values()):
        call(info)
    got = rt.exception_info(handle)
    binary = getattr(got.func, "binary", None) if got is not None else None
    entry = _binary_callbacks.get(binary.handle) if binary is not None and binary.handle else None
    if entry is not None:
        entry[0](info, cdata.ffi.cast("void *", entry[1]))


def _update_exception_callback() -> None:
    wanted = _exception_callbacks or _binary_callbacks
    rt.set_exception_info_callback(_dispatch_exception if wanted else None)


@c_function("aclrtSetExceptionInfoCallback")
def aclrtSetExceptionInfoCallback(callback):
    if callback:
        _exception_callbacks["set"] = cdata.ffi.cast("aclrtExceptionInfoCallback", callback)
    else:
        _exception_callbacks.pop("set", None)
    _update_exception_callback()
    return 0


@c_function("aclrtExceptionInfoCallbackRegister")
def aclrtExceptionInfoCallbackRegister(callback):
    if not callback:
        raise null("callback")
    key = f"registered:{callback:x}"
    if key in _exception_callbacks:
        raise NpuError(f"callback 0x{callback:x} is already registered", C.ACL_ERROR_INVALID_PARAM)
    _exception_callbacks[key] = cdata.ffi.cast("aclrtExceptionInfoCallback", callback)
    _update_exception_callback()
    return 0


@c_function("aclrtExceptionInfoCallbackUnregister")
def aclrtExceptionInfoCallbackUnregister(callback):
    if not callback:
        raise null("callback")
    if _exception_callbacks.pop(f"registered:{callback:x}", None) is None:
        raise NpuError(f"callback 0x{callback:x} is not registered", C.ACL_ERROR_INVALID_PARAM)
    _update_exception_callback()
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


# ACL_ERROR_INVALID_EXCEPTION_INFO of CANN's acl (0xFFFFFFFF as an aclError): what the getters
# answer for a NULL info, and the args getter for an exception that is not a kernel's
_INVALID_EXCEPTION_INFO = -1


def _exception(info, what: str):
    got = rt.exception_info(info) if info else None
    if got is None:
        raise NpuError("info is NULL" if not info else f"info 0x{info:x} is not an exception info of this process",
                       _INVALID_EXCEPTION_INFO)
    return got


@c_function("aclrtGetArgsFromExceptionInfo")
def aclrtGetArgsFromExceptionInfo(info, devArgsPtr, devArgsLen):
    """The failed launch's packed arguments in device memory (read them with aclrtMemcpy)."""
    got = _exception(info, "args")
    if not devArgsPtr:
        raise null("devArgsPtr")
    if not devArgsLen:
        raise null("devArgsLen")
    if got.func is None or got.args is None:
        raise NpuError(f"the exception (task {got.task_id} of stream {got.stream_id}, error {got.error_code}) is "
                       "not an AI core kernel's: it has no kernel arguments", _INVALID_EXCEPTION_INFO)
    devArgsPtr[0], devArgsLen[0] = got.args[0], got.args[1]
    return 0


@c_function("aclrtGetFuncHandleFromExceptionInfo")
def aclrtGetFuncHandleFromExceptionInfo(info, func):
    """The failed kernel's function handle (aclrtGetFunctionName and the launch functions take
    it; a kernel met only through <<<>>> gets a handle here)."""
    got = _exception(info, "func")
    if not func:
        raise null("func")
    if got.func is None:
        raise rt.InvalidValueError(f"the exception (task {got.task_id} of stream {got.stream_id}, error "
                                   f"{got.error_code}) is not a kernel's: it has no function handle")
    func[0] = rt.function_handle(got.func)
    return 0


@c_function("aclrtBinarySetExceptionCallback")
def aclrtBinarySetExceptionCallback(binHandle, callback, userData):
    if not binHandle:
        raise null("binHandle")
    if not callback:
        raise null("callback")
    rt.binary_of(binHandle)
    _binary_callbacks[binHandle] = (cdata.ffi.cast("aclrtOpExceptionCallback", callback), userData)
    _update_exception_callback()
    return 0
