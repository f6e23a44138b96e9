"""The exceptions the Pythonic API raises: the runtime's hierarchy plus a few array errors.

Every one is an `NpuError` with an aclError `code`. The array-only classes below subclass
`InvalidValueError` (ACL_ERROR_INVALID_PARAM, 100000) — the user passed something the call
cannot take — and also the matching Python built-in, so `except TypeError` / `except
IndexError` code keeps working.
"""
from __future__ import annotations

from .runtime import (AddressUnalignedError, ContextError, DeadlockError, EventError, FeatureNotSupportedError,
                      HangWarning, InvalidDeviceError, InvalidHandleError, InvalidValueError, LeakWarning,
                      MemcpyKindWarning, NotInitializedError, NpuError, OutOfMemoryError, ParamInvalidError,
                      ResourceExhaustedError, StreamAbortedError, SubscriptionError, SyncTimeoutError, TaskError,
                      error_name)


class HostConversionError(InvalidValueError, TypeError):
    """A DeviceArray was used where a host value is needed (np.asarray, float(), if x:,
    iteration, mixing with a numpy array). Device memory is not host memory: copy explicitly
    with `.to_host()` (or `npurt.to_device(host_array)` for the other direction)."""


class ArrayIndexError(InvalidValueError, IndexError):
    """An index out of range, or an indexing form DeviceArray does not support."""


__all__ = [
    "NpuError", "InvalidValueError", "ParamInvalidError", "InvalidDeviceError", "InvalidHandleError",
    "AddressUnalignedError", "NotInitializedError", "ContextError", "OutOfMemoryError", "ResourceExhaustedError",
    "FeatureNotSupportedError", "SyncTimeoutError", "StreamAbortedError", "EventError",
    "SubscriptionError", "TaskError", "DeadlockError", "HostConversionError", "ArrayIndexError", "error_name",
    "MemcpyKindWarning", "LeakWarning", "HangWarning",
]
