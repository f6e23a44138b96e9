"""Runtime layer: devices, contexts, memory, streams, events, the scheduler, kernels.

Its operations (`npurt.runtime.malloc`, `create_stream`, `memcpy_async`, ...) are plain
functions that raise `NpuError`s carrying the real aclError codes; see `api/`.
"""
import sys as _sys

if not getattr(_sys, "_is_gil_enabled", lambda: True)():
    raise ImportError("npurt's lock-free fast paths (memory pool, scheduler) rely on the GIL; "
                      "run it on a CPython build with the GIL enabled (not a free-threaded build)")

from . import constants  # noqa: E402
from .api import *  # noqa: F401,F403 - the runtime's operations
from .context import Context, current_context
from .device import Device
from .errors import (AddressUnalignedError, ContextError, DeadlockError, EventError, FeatureNotSupportedError,
                     InvalidDeviceError, InvalidHandleError, InvalidValueError, NotInitializedError,
                     NpuError, OutOfMemoryError, ResourceExhaustedError, StreamAbortedError,
                     SubscriptionError, SyncTimeoutError, TaskError, error_name, get_last_error,
                     get_recent_err_msg, set_last_error)
from .event import Event
from .observers import HOOKS
from .runtime import RUNTIME
from .stream import Stream
