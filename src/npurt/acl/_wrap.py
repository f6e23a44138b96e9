"""How a runtime operation becomes a pyACL call: return codes, int handles, recorded errors.

pyACL never raises: every call returns its outputs followed by an aclError code (`ret`),
or just the code when there is no output. The runtime layer (`npurt.runtime.api`) raises
`NpuError`s instead. This module holds the one conversion between the two:

* `fail(exc, where)` turns any exception into its code and records it as the calling
  thread's last error, so `acl.rt.get_last_error()` and `acl.get_recent_err_msg()` describe
  it. An `NpuError` keeps its code; a TypeError/ValueError/OverflowError from a malformed
  argument is ACL_ERROR_INVALID_PARAM; anything else is a bug in npurt and becomes
  ACL_ERROR_INTERNAL_ERROR (500000) with the traceback in the message.
* `Group` generates the wrappers. An implementation function is written with pyACL's
  exact parameters and returns what the C function writes to its output pointers; the
  decorator produces (with `exec`, once, at import) a function with the same signature
  whose body is a `try:` around that call, returning the pyACL shape. A `try` costs
  nothing in Python 3.11 when nothing is raised, so the wrapper costs one call. The hot
  functions (malloc, memcpy_async, ...) are written out by hand in the same shape and call
  the runtime directly.
* `stream_of` / `event_of` / `context_of` turn int handles into runtime objects through
  the runtime's handle tables; a stale, foreign or malformed handle raises
  InvalidHandleError (ACL_ERROR_RT_INVALID_HANDLE, 107017) with a message naming what the
  handle really is.
"""
from __future__ import annotations

import inspect
import traceback

from ..runtime import constants as C
from ..runtime.errors import NpuError, set_last_error
from ..runtime.runtime import RUNTIME

# Exceptions that a malformed argument (wrong type, absurd value) produces on its way
# through the runtime: these are the caller's mistake, not npurt's.
_ARGUMENT_ERRORS = (TypeError, ValueError, OverflowError)

_streams = RUNTIME.streams
_events = RUNTIME.events
_contexts = RUNTIME.contexts

# Hot paths look handles up in the tables' dicts directly (one dict.get, no method call)
# and fall back to `table.get`, which raises the descriptive InvalidHandleError. The dicts
# live as long as the runtime singleton (finalize clears them in place).
stream_lookup = RUNTIME.streams._objects.get
event_lookup = RUNTIME.events._objects.get


def fail(exc: BaseException, where: str) -> int:
    """Record `exc` as the calling thread's last error and return its aclError code."""
    if isinstance(exc, NpuError):
        code, message = exc.code, exc.message
    elif isinstance(exc, _ARGUMENT_ERRORS):
        code = C.ACL_ERROR_INVALID_PARAM
        frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        at = f" (raised at {frame[0].filename}:{frame[0].lineno})" if frame else ""
        message = f"invalid argument: {type(exc).__name__}: {exc}{at}"
    else:
        code = C.ACL_ERROR_INTERNAL_ERROR
        message = ("internal error in npurt; please report it with this traceback:\n"
                   + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    set_last_error(NpuError(f"{where}: {message}", code))
    return code


def record(code: int, message: str) -> int:
    """Record a failure found by the facade itself (no exception involved)."""
    set_last_error(NpuError(message, code))
    return code


# ---------------------------------------------------------------- handles
def stream_of(handle):
    """The Stream behind a pyACL stream handle; None (the current context's default
    stream) for 0 / None."""
    if not handle:
        return None
    return _streams.get(handle)


def event_of(handle):
    return _events.get(handle)


def context_of(handle):
    return _contexts.get(handle)


# ---------------------------------------------------------------- wrapper generation
_TEMPLATES = {
    # no outputs: a bare int
    "ret": ("{call}\n        return 0", "return _fail(_exc, _where)"),
    # one output: (value, ret)
    "one": ("return {call}, 0", "return _fv, _fail(_exc, _where)"),
    # several outputs (the implementation returns a tuple): (*values, ret)
    "many": ("return (*{call}, 0)", "return _fv + (_fail(_exc, _where),)"),
    # no ret at all (acl.get_soc_name, acl.util.*, get_*_from_exception_info): the value
    "value": ("return {call}", "_fail(_exc, _where)\n        return _fv"),
}


class Group:
    """Decorators that turn implementation functions into pyACL functions of one namespace
    (e.g. Group("acl.rt")). Each decorated function keeps its exact signature."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.names: list[str] = []

    def ret(self, impl):
        """pyACL returns `ret` only."""
        return self._make(impl, "ret", None)

    def one(self, fail_value=0):
        """pyACL returns `value, ret`; `fail_value` stands in for the value on failure."""
        return lambda impl: self._make(impl, "one", fail_value)

    def many(self, *fail_values):
        """pyACL returns `v1, v2, ..., ret`; the implementation returns (v1, v2, ...)."""
        return lambda impl: self._make(impl, "many", tuple(fail_values))

    def value(self, fail_value=None):
        """pyACL returns the value alone (no ret); failures are only recorded."""
        return lambda impl: self._make(impl, "value", fail_value)

    def _make(self, impl, shape: str, fail_value):
        fn = generate(impl, shape, fail_value, f"{self.prefix}.{impl.__name__}")
        self.names.append(impl.__name__)
        return fn


def generate(impl, shape: str, fail_value, where: str):
    """Build `def name(<impl's parameters>): try: <call impl> except: <fail>` by exec."""
    params, args, namespace = [], [], {}
    for i, p in enumerate(inspect.signature(impl).parameters.values()):
        if p.kind is p.VAR_POSITIONAL:
            params.append(f"*{p.name}")
            args.append(f"*{p.name}")
            continue
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError(f"{where}: facade functions take positional parameters only")
        if p.default is p.empty:
            params.append(p.name)
        else:
            namespace[f"_d{i}"] = p.default
            params.append(f"{p.name}=_d{i}")
        args.append(p.name)
    ok, bad = _TEMPLATES[shape]
    call = f"_impl({', '.join(args)})"
    source = (f"def {impl.__name__}({', '.join(params)}):\n"
              f"    try:\n        {ok.format(call=call)}\n"
              f"    except Exception as _exc:\n        {bad}\n")
    namespace.update(_impl=impl, _fail=fail, _where=where, _fv=fail_value)
    exec(compile(source, f"<npurt.acl wrapper {where}>", "exec"), namespace)  # noqa: S102
    fn = namespace[impl.__name__]
    fn.__doc__ = impl.__doc__
    fn.__module__ = impl.__module__
    fn.__qualname__ = impl.__qualname__
    return fn


def not_supported(where: str, what: str, shape: str = "ret", fail_value=None):
    """A pyACL function of a feature the simulated NPU does not have: it records and
    returns ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000) in the function's return shape."""
    code = C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT
    message = f"{where}: {what} [ACL_ERROR_RT_FEATURE_NOT_SUPPORT {code}]"
    name = where.rsplit(".", 1)[-1]

    def stub(*args):
        set_last_error(NpuError(f"{where}: {what}", code))
        if shape == "ret":
            return code
        if shape == "one":
            return fail_value, code
        if shape == "many":
            return (*fail_value, code)
        return fail_value

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = f"Not supported by npurt: returns ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000).\n\n{message}"
    stub.not_supported = True
    return stub
