"""The one exception hierarchy of npurt.

Every error carries the real aclError number of the situation (`err.code`) and a message
that says what was wrong and what to do. The pyACL facade turns these into return codes;
the Pythonic API raises them. Subclasses group situations by what the user did wrong, so
that `except npurt.OutOfMemoryError` reads naturally, while `code` keeps the exact number.

The per-thread "last error" (acl.rt.get_last_error / peek_at_last_error /
acl.get_recent_err_msg) also lives here, because both the facade and asynchronous error
reporting write it.
"""
from __future__ import annotations

import threading

from . import constants as C

_CODE_NAMES: dict[int, str] = {}
for _name, _value in vars(C).items():
    if _name.startswith(("ACL_ERROR_", "ACL_RT_SUCCESS", "ACL_SUCCESS")) and isinstance(_value, int):
        _CODE_NAMES.setdefault(_value, _name)
_CODE_NAMES[0] = "ACL_SUCCESS"


def register_code_names(names: dict[int, str]) -> None:
    """Name the codes a client of the runtime reports through it (HCCL's HcclResult values,
    which do not overlap the aclError numbers), so messages show `HCCL_E_TIMEOUT 9`."""
    for code, name in names.items():
        _CODE_NAMES.setdefault(code, name)


def error_name(code: int) -> str:
    """The symbolic name of an aclError code, e.g. 107001 -> 'ACL_ERROR_RT_INVALID_DEVICEID'."""
    return _CODE_NAMES.get(code, f"aclError {code}")


class NpuError(Exception):
    """Base of every npurt error. `code` is the aclError number the real runtime returns."""

    code: int = C.ACL_ERROR_RT_INTERNAL_ERROR

    def __init__(self, message: str, code: int | None = None):
        if code is not None:
            self.code = code
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:
        return f"{self.message} [{error_name(self.code)} {self.code}]"


class InvalidValueError(NpuError, ValueError):
    """An argument is out of range, of the wrong kind, or names the wrong kind of memory."""

    code = C.ACL_ERROR_INVALID_PARAM


class MemcpyKindWarning(UserWarning):
    """A memcpy kind contradicts the addresses; the copy went by address, as on the hardware
    (once per call site; NPURT_MEMCPY_KIND=strict makes it an error)."""


class ParamInvalidError(InvalidValueError):
    """A value the runtime layer itself refuses (ACL_ERROR_RT_PARAM_INVALID, 107000): where
    CANN checks an argument in the runtime (count > dest_max, timeout < -1, a wait on an
    event never recorded), not in the ACL layer (ACL_ERROR_INVALID_PARAM, 100000)."""

    code = C.ACL_ERROR_RT_PARAM_INVALID


class NotInitializedError(NpuError, RuntimeError):
    """The runtime is not initialized (acl.init missing, or called after finalize)."""

    code = C.ACL_ERROR_UNINITIALIZE

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message + fork_hint(), code)


class InvalidDeviceError(InvalidValueError):
    """A device id that is not in [0, device_count)."""

    code = C.ACL_ERROR_RT_INVALID_DEVICEID


class ContextError(NpuError, RuntimeError):
    """No current context in this thread, or an object used from the wrong context."""

    code = C.ACL_ERROR_RT_CONTEXT_NULL

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message + fork_hint(), code)


class InvalidHandleError(InvalidValueError):
    """A stream, event, context, binary or function handle that is destroyed or foreign."""

    code = C.ACL_ERROR_RT_INVALID_HANDLE

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message + fork_hint(), code)


FORKED_FROM: int | None = None  # in a child of os.fork() of a process that used npurt: the parent


def fork_hint() -> str:
    """In a forked child: what happened to the parent's runtime, for error messages."""
    if FORKED_FROM is None:
        return ""
    return (f" (this process is a child of process {FORKED_FROM}, made by os.fork(): streams, events, "
            "memory and handles from before the fork do not exist here, and the runtime starts fresh, so "
            "call acl.init() and set_device again; to start worker processes that share nothing by "
            "accident, use multiprocessing's 'spawn' start method: multiprocessing.get_context('spawn'))")


class AddressUnalignedError(InvalidValueError):
    """An address that breaks an alignment rule (e.g. 64 bytes for memcpy_async)."""

    code = C.ACL_ERROR_RT_ADDR_UNALIGNED


class OutOfMemoryError(NpuError):
    """Device memory is exhausted, even after the caching pool gave back its cache."""

    code = C.ACL_ERROR_RT_MEMORY_ALLOCATION


class ResourceExhaustedError(NpuError):
    """A per-device limit is reached (streams, events)."""

    code = C.ACL_ERROR_RT_NO_STREAM_RESOURCE


class FeatureNotSupportedError(NpuError, NotImplementedError):
    """The simulated SoC does not have this feature."""

    code = C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT


class SyncTimeoutError(NpuError, TimeoutError):
    """A host-side wait ran out of time. The message names what it was stuck behind."""

    code = C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT


class StreamAbortedError(NpuError, RuntimeError):
    """The stream was aborted (stream_abort, destroy_stream_force) or refuses work after a
    stop-on-failure."""

    code = C.ACL_ERROR_RT_STREAM_ABORT


class EventError(NpuError, RuntimeError):
    """An event query that cannot be answered (not recorded, not complete, no timing)."""

    code = C.ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID


class DeadlockError(NpuError, RuntimeError):
    """A wait that could never end because the calling thread is what it waits for (a task
    or callback synchronizing its own stream). Real hardware would hang; npurt refuses."""

    code = C.ACL_ERROR_RT_PARAM_INVALID


class SubscriptionError(NpuError, RuntimeError):
    """Callback report subscription misuse (launch_callback without subscribe_report, ...)."""

    code = C.ACL_ERROR_RT_STREAM_NO_CB_REG


class TaskError(NpuError, RuntimeError):
    """A task failed while it ran on the device. Raised at the next synchronize/query of the
    stream it ran on. `task` describes it (stream, sequence number, kind, enqueue stack)."""

    code = C.ACL_ERROR_RT_AICORE_EXCEPTION

    def __init__(self, message: str, code: int | None = None, task_info: str = ""):
        super().__init__(message, code)
        self.task_info = task_info


def as_int(value, what: str) -> int:
    """`value` if it is a Python int. The runtime takes exact ints only (no bool, no numpy
    integer): the Pythonic API normalizes its sizes, and the pyACL facade converts what the
    real extension converts (and refuses the rest) when a call fails here."""
    if type(value) is int:
        return value
    raise InvalidValueError(f"{what} must be an int, got {type(value).__name__}")


# ---------------------------------------------------------------- per-thread last error

class _LastError(threading.local):
    code: int = 0
    message: str = ""


_last = _LastError()


def set_last_error(err: NpuError) -> None:
    """Record `err` as the calling thread's latest runtime error."""
    _last.code = err.code
    _last.message = str(err)


def get_last_error(clear: bool = True) -> int:
    """The calling thread's latest error code (0 if none); `clear` resets it to success."""
    code = _last.code
    if clear:
        _last.code = 0
    return code


def get_recent_err_msg() -> str:
    """The text of the calling thread's latest failure; reading it clears it."""
    msg = _last.message
    _last.message = ""
    return msg
