"""acl.rt execution control (callbacks and report threads, op timeouts) and exception
handling (last error, exception-info callback); argument formats from
python/pyACL/rt/rt_synchronize.cpp."""
from __future__ import annotations

from .. import runtime as api  # the runtime's operations: its published surface
from ..runtime import constants as C
from ._wrap import Group, Raise, not_supported, stream_of

rt = Group("acl.rt")


# ---------------------------------------------------------------- callbacks
@rt.ret(args="Kk")
def subscribe_report(thread_id, stream):
    """Make host thread `thread_id` (e.g. from acl.util.start_thread) run the callbacks of
    `stream` inside its process_report calls."""
    api.subscribe_report(thread_id, stream_of(stream))


@rt.ret(args="OOik")
def launch_callback(fn, user_data_list, block_type, stream):
    """Enqueue fn(user_data_list) to run on the stream's report thread when the stream
    reaches it; ACL_CALLBACK_BLOCK (1) makes later tasks wait for it."""
    if not callable(fn):
        raise Raise(TypeError("parameter must be callable"))
    api.launch_callback(fn, user_data_list, block_type, stream_of(stream, same_context=True))


@rt.ret(args="i")
def process_report(timeout):
    """Run the callbacks posted to this thread, waiting up to `timeout` ms (-1: forever);
    ACL_ERROR_RT_REPORT_TIMEOUT (507012) when none came."""
    api.process_report(timeout)


@rt.ret(args="Kk")
def unsubscribe_report(thread_id, stream):
    api.unsubscribe_report(thread_id, stream_of(stream))


@rt.ret(args="kkkiikk")
def reduce_async(dst, src, count, kind, type, stream, reserve):  # noqa: A002 - pyACL's name
    """Stream-ordered dst op= src over `count` bytes; kind ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM
    (10) / MAX (11) / MIN (12), type an aclDataType, reserve 0."""
    api.reduce_async(dst, src, count, kind, type, stream_of(stream, True), reserve)


# ---------------------------------------------------------------- op timeouts
@rt.ret(args="I", message="acl.rt.set_op_execute_timeout args parse failed!")
def set_op_execute_time_out(timeout):
    """Seconds (0: the maximum) a kernel may run; one that runs longer fails with
    ACL_ERROR_RT_AICORE_TIMEOUT when it finishes (kernels are not preempted)."""
    api.set_op_execute_timeout_us(timeout * 1_000_000)


@rt.one(0, args="K", message="acl.rt.set_op_execute_timeout_v2 args parse failed!")
def set_op_execute_timeout_v2(timeout):
    """Microseconds (0: the maximum); returns the timeout in effect after rounding."""
    api.set_op_execute_timeout_us(timeout)
    return api.effective_op_execute_timeout_us()


@rt.one(0, args=None)
def get_op_execute_timeout():
    """The op execute timeout in effect, in milliseconds."""
    return api.effective_op_execute_timeout_us() // 1000


@rt.one(0, args=None)
def get_op_timeout_interval():
    """Microseconds: op timeouts are whole multiples of this (at most 254 of them)."""
    return api.get_op_timeout_interval()


get_thread_last_task_id = not_supported(
    "acl.rt.get_thread_last_task_id", "task ids per issuing thread are not tracked", "one", 0, args=None)


# ---------------------------------------------------------------- exception handling
@rt.value(0, args="i", message="acl.rt.get_last_error args parse failed!")
def get_last_error(level):
    """The calling thread's latest error code, which this call clears (0 if none)."""
    if level != C.ACL_RT_THREAD_LEVEL:
        return C.ACL_ERROR_INVALID_PARAM
    return api.get_last_error(clear=True)


@rt.value(0, args="i", message="acl.rt.peek_at_last_error args parse failed!")
def peek_at_last_error(level):
    """The calling thread's latest error code, left in place."""
    if level != C.ACL_RT_THREAD_LEVEL:
        return C.ACL_ERROR_INVALID_PARAM
    return api.get_last_error(clear=False)


@rt.ret(args="|O")
def set_exception_info_callback(fn=None):
    """fn(exception_info) runs when a device task fails; None (or no argument) clears it.
    Inside it, read the info with acl.rt.get_*_from_exception_info; do not synchronize or
    launch."""
    if fn is not None and not callable(fn):
        raise Raise(TypeError("acl.rt.set_exception_info_callback args parse failed"))
    api.set_exception_info_callback(fn)


@rt.value(0xFFFFFFFF, args="k")
def get_task_id_from_exception_info(info):
    return api.exception_info(info).task_id


@rt.value(0xFFFFFFFF, args="k")
def get_stream_id_from_exception_info(info):
    return api.exception_info(info).stream_id


@rt.value(0xFFFFFFFF, args="k")
def get_thread_id_from_exception_info(info):
    return api.exception_info(info).thread_id


@rt.value(0xFFFFFFFF, args="k")
def get_device_id_from_exception_info(info):
    return api.exception_info(info).device_id


@rt.value(0xFFFFFFFF, args="k")
def get_error_code_from_exception_info(info):
    return api.exception_info(info).error_code


device_task_abort = not_supported(
    "acl.rt.device_task_abort", "device_task_abort is documented as reserved (not supported) by CANN", args="iI")

NOT_SUPPORTED = ["get_thread_last_task_id", "device_task_abort"]
__all__ = [*rt.names, *NOT_SUPPORTED]
