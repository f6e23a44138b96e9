"""From a Python exception to a C function's aclError return, in C terms.

The conversion is the project's one mechanism, `npurt._cstyle.retcode.fail`: an `NpuError`
keeps its code; a TypeError/ValueError/OverflowError from a malformed argument is
ACL_ERROR_INVALID_PARAM; anything else is a bug in npurt, ACL_ERROR_INTERNAL_ERROR with the
traceback; the failure is recorded as the calling thread's last error, so aclGetRecentErrMsg
and aclrtGetLastError describe it. What the C interface adds is a `CodeSpace` per C function
whose messages name that function and its C parameters: the runtime words its messages with
Python's names (`dest_max`), which are rewritten to the C function's own (`destMax`).
"""
from __future__ import annotations

import re

from .._cstyle.retcode import CodeSpace, fail as _fail, record as _record
from ..runtime import NpuError, constants as C
from .spec import load

_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


class _Unused(NpuError):
    """No exception is of this class: every NpuError goes through the space's `foreign`."""


def snake(name: str) -> str:
    """`destMax` -> `dest_max`, the runtime's spelling of a C parameter name."""
    return _SNAKE.sub("_", name).lower()


# runtime operations whose C function is not aclrt + their name in CamelCase
_C_NAMES = {"set_context": "aclrtSetCurrentContext", "get_context": "aclrtGetCurrentContext",
            "init": "aclInit", "finalize": "aclFinalize", "unsubscribe_report": "aclrtUnSubscribeReport"}
_CALL = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)*)\(([a-z0-9_, ]*)\)")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _c_call(m: re.Match) -> str:
    """`set_device(device_id)` -> `aclrtSetDevice(deviceId)` when that C function exists."""
    name, args = m.group(1), m.group(2)
    cname = _C_NAMES.get(name) or "aclrt" + "".join(w[:1].upper() + w[1:] for w in name.split("_"))
    if cname not in load().functions:
        return m.group(0)
    return f"{cname}({', '.join(_camel(a.strip()) for a in args.split(',')) if args.strip() else ''})"


def c_terms(message: str, cparams: tuple[str, ...]) -> str:
    """The runtime's message with the C names: the C function's parameters, and runtime
    operations written as calls (`set_device(device_id)`) as their C functions."""
    for p in cparams:
        s = snake(p)
        if s != p:
            message = re.sub(rf"\b{s}\b", p, message)
    return _CALL.sub(_c_call, message)


def code_space(cname: str, cparams: tuple[str, ...]) -> CodeSpace:
    """The ACL codes, with messages in the C terms of function `cname`."""
    return CodeSpace(cname, success=C.ACL_SUCCESS, invalid_param=C.ACL_ERROR_INVALID_PARAM,
                     internal=C.ACL_ERROR_INTERNAL_ERROR, native=_Unused,
                     foreign=lambda e: (e.code, c_terms(e.message, cparams)))


def fail(exc: BaseException, cname: str, space: CodeSpace) -> int:
    """Record `exc` for the calling C thread as a failure of `cname`; its aclError code."""
    return _fail(exc, cname, space)


def record(code: int, cname: str, message: str) -> int:
    """Record a failure found by the C interface itself (no exception involved)."""
    return _record(code, f"{cname}: {message}")
