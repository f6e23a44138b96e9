"""From a Python exception to a C function's aclError return, in C terms.

`fail(exc, cname, cparams)` is the one conversion the C interface uses (the runtime's own
rules: an `NpuError` keeps its code; a TypeError/ValueError/OverflowError from a malformed
argument is ACL_ERROR_INVALID_PARAM; anything else is a bug in npurt, ACL_ERROR_INTERNAL_ERROR
with the traceback). The failure is recorded as the calling thread's last error through the
runtime's `set_last_error`, so aclGetRecentErrMsg and aclrtGetLastError describe it, and the
message names the C function and its C parameters: the runtime words its messages with
Python's names (`dest_max`), which are rewritten to the C function's own (`destMax`).

TODO(issue 23): when `npurt._cstyle.retcode` lands, this module becomes a thin use of it.
"""
from __future__ import annotations

import re
import traceback

from ..runtime import NpuError, constants as C, set_last_error

_ARGUMENT_ERRORS = (TypeError, ValueError, OverflowError)
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def snake(name: str) -> str:
    """`destMax` -> `dest_max`, the runtime's spelling of a C parameter name."""
    return _SNAKE.sub("_", name).lower()


def c_terms(message: str, cparams: tuple[str, ...]) -> str:
    for p in cparams:
        s = snake(p)
        if s != p:
            message = re.sub(rf"\b{s}\b", p, message)
    return message


def describe(exc: BaseException) -> tuple[int, str]:
    """(aclError code, message) for an exception raised by an implementation."""
    if isinstance(exc, NpuError):
        return exc.code, exc.message
    if isinstance(exc, _ARGUMENT_ERRORS):
        frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        at = f" (raised at {frame[0].filename}:{frame[0].lineno})" if frame else ""
        return C.ACL_ERROR_INVALID_PARAM, f"invalid argument: {type(exc).__name__}: {exc}{at}"
    return C.ACL_ERROR_INTERNAL_ERROR, ("internal error in npurt; please report it with this traceback:\n"
                                        + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


def fail(exc: BaseException, cname: str, cparams: tuple[str, ...] = ()) -> int:
    """Record `exc` for the calling C thread as a failure of `cname`; its aclError code."""
    code, message = describe(exc)
    set_last_error(NpuError(f"{cname}: {c_terms(message, cparams)}", code))
    return code


def record(code: int, cname: str, message: str) -> int:
    """Record a failure found by the C interface itself (no exception involved)."""
    set_last_error(NpuError(f"{cname}: {message}", code))
    return code
