"""The one way an exception becomes a return code, for every C-style API of npurt.

C-style APIs (pyACL's `acl.*`, HCCL's `hccl.*`, the C interface) never raise for a failed
operation: they return a code, and the failure is recorded as the calling thread's last
error so that `get_last_error` / `get_recent_err_msg` describe it. The runtime below raises
`NpuError`s. Everything between the two is here:

* `CodeSpace` names the codes of one API: success, "invalid parameter" (a TypeError,
  ValueError or OverflowError from a malformed argument value deeper down: the caller's
  mistake), "internal error" (anything else: a bug in npurt, reported with its traceback),
  which exception class already carries a code of this space, how a runtime `NpuError` of
  another space is spelled here, and which exception class the failure is recorded as.
* `fail(exc, where, space)` records `exc` and returns its code; `record(code, message,
  space)` records a failure the API found itself, with no exception.
* `returning(*fail_values, space=...)` turns an implementation that returns its outputs
  into the C shape `(*outputs, ret)` (or `ret` alone), for APIs whose wrappers need no
  argument parsing of their own (acl's generator, `npurt.acl._wrap`, builds on `fail`).
* An implementation that must raise as the real extension does raises `Raise(exc)` (the
  wrapped exception propagates), or `ArgTypeError` / `ArgValueError` for an argument that
  the C wrapper refuses after parsing; `fail` lets those through.

Use (a C-style API of a client)::

    HCCL = CodeSpace("hccl", success=0, invalid_param=HCCL_E_PARA, internal=HCCL_E_INTERNAL,
                     native=HcclError, record_as=HcclError,
                     foreign=lambda e: (HCCL_E_RUNTIME, f"{e.message} [runtime error {e.code}]"))

    @returning(0, space=HCCL)          # hccl.get_rank_size(comm) -> (size, ret)
    def get_rank_size(comm): ...
"""
from __future__ import annotations

import functools
import traceback
from dataclasses import dataclass
from typing import Callable

from ..runtime import NpuError, constants as C, set_last_error

__all__ = ["ACL", "ArgTypeError", "ArgValueError", "CodeSpace", "Raise", "fail", "record", "returning"]

# Exceptions that a malformed argument (wrong type, absurd value) produces on its way
# through the runtime: these are the caller's mistake, not npurt's.
ARGUMENT_ERRORS = (TypeError, ValueError, OverflowError)


@dataclass(frozen=True)
class CodeSpace:
    """The return codes of one C-style API and how its failures are recorded."""
    name: str
    success: int
    invalid_param: int
    internal: int
    native: type = NpuError            # an exception of this class keeps its own `.code`
    record_as: type = NpuError         # the class the thread's last error is recorded as
    # (code, message) for an NpuError that is not `native` (None: it keeps its code)
    foreign: Callable[[NpuError], tuple[int, str]] | None = None


ACL = CodeSpace("acl", success=C.ACL_SUCCESS, invalid_param=C.ACL_ERROR_INVALID_PARAM,
                internal=C.ACL_ERROR_INTERNAL_ERROR)
"""pyACL's aclError codes (acl.h): NpuErrors keep their codes."""


class ArgTypeError(TypeError):
    """Raised by an implementation for an argument the C wrapper rejects after parsing (a
    tuple where a list is required, ...): it propagates, as the real TypeError does."""


class ArgValueError(ValueError):
    """The ValueError counterpart (list values out of range, ...)."""


class Raise(Exception):
    """Carries an exception the real extension raises itself after parsing (a ValueError
    from `acl.util.bytes_to_ptr` for a non-bytes argument, a TypeError for a dict argument
    that is not a dict): `fail` re-raises it instead of returning a code."""

    def __init__(self, exc: BaseException):
        super().__init__(str(exc))
        self.exc = exc


def fail(exc: BaseException, where: str, space: CodeSpace = ACL) -> int:
    """Record `exc` as the calling thread's last error and return its code in `space`."""
    if type(exc) is Raise:
        raise exc.exc from None
    if isinstance(exc, (ArgTypeError, ArgValueError)):
        raise exc
    if isinstance(exc, space.native):
        code, message = exc.code, exc.message
    elif isinstance(exc, NpuError):
        code, message = space.foreign(exc) if space.foreign else (exc.code, exc.message)
    elif isinstance(exc, ARGUMENT_ERRORS):
        code = space.invalid_param
        frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        at = f" (raised at {frame[0].filename}:{frame[0].lineno})" if frame else ""
        message = f"invalid argument: {type(exc).__name__}: {exc}{at}"
    else:
        code = space.internal
        message = ("internal error in npurt; please report it with this traceback:\n"
                   + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    set_last_error(space.record_as(f"{where}: {message}", code))
    return code


def record(code: int, message: str, space: CodeSpace = ACL) -> int:
    """Record a failure found by the API itself (no exception involved); returns `code`."""
    set_last_error(space.record_as(message, code))
    return code


def returning(*fail_values, space: CodeSpace = ACL, prefix: str | None = None):
    """Decorator: `impl(*args)` returns its outputs (a tuple for several, None for none); the
    wrapper returns `(*outputs, ret)`, or `ret` alone when there are no `fail_values` (the
    values that stand in for the outputs on failure). Nothing escapes but `Raise`,
    `ArgTypeError` and `ArgValueError`. `prefix` names the API in messages (default:
    `space.name`), as in "hccl.get_rank_size: ..."."""
    def wrap(impl):
        where = f"{prefix or space.name}.{impl.__name__}"
        success = space.success

        @functools.wraps(impl)
        def fn(*args):
            try:
                out = impl(*args)
            except Exception as exc:  # noqa: BLE001 - C style: never raise
                code = fail(exc, where, space)
                return code if not fail_values else (*fail_values, code)
            if not fail_values:
                return success
            return (*(out if isinstance(out, tuple) else (out,)), success)
        return fn
    return wrap
