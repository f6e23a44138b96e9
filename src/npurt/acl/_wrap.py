"""How a runtime operation becomes a pyACL call: argument parsing, return codes, int
handles, recorded errors.

pyACL never raises for a failed operation: every call returns its outputs followed by an
aclError code (`ret`), or just the code when there is no output. The runtime layer
(`npurt.runtime.api`) raises `NpuError`s instead. This module holds the one conversion
between the two:

* Arguments are parsed as the real extension parses them (`_parse.py`): each wrapper
  declares the `PyArg_ParseTuple` format of the real one (`args="ki"` for
  `acl.rt.malloc(size, policy)`); a wrong type or count raises TypeError with the real
  message ("acl.rt.malloc args parse failed"); `args=None` declares a function that takes no
  parameters, whose surplus positional arguments are ignored. This is the one place where
  the facade raises, as the real module does.
* `fail(exc, where)` (`npurt._cstyle.retcode`, shared with every C-style API) turns any
  other exception into its code and records it as the calling thread's last error, so `acl.rt.get_last_error()` and `acl.get_recent_err_msg()` describe
  it. An `NpuError` keeps its code; a TypeError/ValueError/OverflowError from a malformed
  argument value deeper down is ACL_ERROR_INVALID_PARAM; anything else is a bug in npurt
  and becomes ACL_ERROR_INTERNAL_ERROR (500000) with the traceback in the message. An
  implementation that must raise as the extension does (a ValueError from a util helper, a
  TypeError for a dict argument that is not a dict) raises `Raise(exc)`.
* `Group` generates the wrappers. An implementation function is written with pyACL's
  exact parameters and returns what the C function writes to its output pointers; the
  decorator produces (with `exec`, once, at import) a function with the same parameters
  whose body checks the argument types inline (a few `type(x) is int` tests; anything
  unusual goes through `parse`) and is a `try:` around that call, returning the pyACL
  shape. The hot functions (malloc, memcpy_async, ...) are written out by hand in the same
  shape and call the runtime directly.
* `stream_of` / `event_of` / `context_of` turn int handles into runtime objects through
  the runtime's handle tables; a stale, foreign or malformed handle raises
  InvalidHandleError (ACL_ERROR_RT_INVALID_HANDLE, 107017) with a message naming what the
  handle really is.
"""
from __future__ import annotations

import inspect
from copy import deepcopy

from ..runtime import PER_THREAD as _thread, RUNTIME, ContextError, NpuError, constants as C, current_context
from .._cstyle.parse import MISSING, Format, field, parse, struct  # noqa: F401 - re-exported
from .._cstyle.retcode import ArgTypeError, ArgValueError, Raise, fail, record  # noqa: F401 - re-exported

_streams = RUNTIME.streams
_events = RUNTIME.events
_contexts = RUNTIME.contexts

# Hot paths look handles up in the tables' dicts directly (one dict.get, no method call)
# and fall back to `table.get`, which raises the descriptive InvalidHandleError. The dicts
# live as long as the runtime singleton (finalize clears them in place).
stream_lookup = RUNTIME.streams.lookup
event_lookup = RUNTIME.events.lookup


# ---------------------------------------------------------------- handles
def stream_of(handle, same_context: bool = False):
    """The Stream behind a pyACL stream handle; None (the current context's default
    stream) for 0 / None. As every stream call of the runtime, it needs a current context
    (api_impl.cc: CHECK_CONTEXT_VALID_WITH_RETURN, ACL_ERROR_RT_CONTEXT_NULL); with
    `same_context` (calls that enqueue work on the stream) the stream must belong to it
    (COND_RETURN_AND_MSG_INVALID_CONTEXT_STREAM: ACL_ERROR_RT_STREAM_CONTEXT)."""
    if not handle:
        return None
    stream = _streams.get(handle)
    if stream.context is not _thread.context:
        in_context(stream, same_context)
    return stream


def in_context(stream, same: bool):
    """`stream` once the calling thread has a current context (and, with `same`, the
    stream belongs to it); the runtime's own errors otherwise."""
    cur = _thread.context
    if cur is None or not cur.alive:
        cur = current_context()  # ACL_ERROR_RT_CONTEXT_NULL, or the defaultDevice's context
    if same and stream is not None and stream.context is not cur:
        raise ContextError(
            f"stream {stream.stream_id} belongs to a context of device {stream.device.id}, not to this "
            f"thread's current context (device {cur.device.id}): make its context current (set_context, "
            "or set_device) before queueing work on it", C.ACL_ERROR_RT_STREAM_CONTEXT)
    return stream


def event_of(handle):
    return _events.get(handle)


def context_of(handle):
    return _contexts.get(handle)


# ---------------------------------------------------------------- wrapper generation
_TEMPLATES = {
    # no outputs: a bare int
    "ret": ("{call}\n        return 0", "return _fail(_exc, _where)"),
    # one output: (value, ret)
    "one": ("return {call}, 0", "return {fv}, _fail(_exc, _where)"),
    # several outputs (the implementation returns a tuple): (*values, ret)
    "many": ("return (*{call}, 0)", "return {fv} + (_fail(_exc, _where),)"),
    # no ret at all (acl.get_soc_name, acl.util.*, get_*_from_exception_info): the value
    "value": ("return {call}", "_fail(_exc, _where)\n        return {fv}"),
    # None whatever happens (acl.destroy_tensor_desc & co.); failures only recorded
    "none": ("{call}\n        return None", "_fail(_exc, _where)\n        return None"),
    # (first argument as parsed, ret): the quirk of add_dataset_buffer & co.
    "echo": ("{call}\n        return {first}, 0", "return {first}, _fail(_exc, _where)"),
}


class computed:
    """A failure placeholder that depends on the arguments (get_stream_attribute's zeroed
    dict has the shape of the attribute asked for): `fn` is called with the parsed
    arguments."""

    def __init__(self, fn):
        self.fn = fn


def _fail_value(value, params=()) -> str:
    """How the wrapper spells its failure placeholder: a dict or list (the real wrappers
    build one from a zeroed C struct) is copied, so a caller may keep and change it."""
    if isinstance(value, computed):
        return f"_fv.fn({', '.join(params)})"
    mutable = isinstance(value, (dict, list)) or (
        isinstance(value, tuple) and any(isinstance(v, (dict, list)) for v in value))
    return "_copy(_fv)" if mutable else "_fv"

# Inline tests that let an exact, in-range value through without calling `parse` (one
# `type(x) is int` and a shift or a chained comparison); anything else takes `parse`. The
# builtins go by private names: pyACL parameters are called `type` and `flag`.
_I64 = "-9223372036854775808 <= {p} <= 9223372036854775807"
_STR = "_ty({p}) is not _str or not {p}.isascii() or '\\x00' in {p}"
_FAST = {
    "k": "_ty({p}) is not _int or {p} >> 64", "K": "_ty({p}) is not _int or {p} >> 64",
    "I": "_ty({p}) is not _int or {p} >> 32", "H": "_ty({p}) is not _int or {p} >> 16",
    "B": "_ty({p}) is not _int or {p} >> 8", "b": "_ty({p}) is not _int or not 0 <= {p} <= 127",
    "i": "_ty({p}) is not _int or not -2147483648 <= {p} <= 2147483647",
    "h": "_ty({p}) is not _int or not -32768 <= {p} <= 32767",
    "l": "_ty({p}) is not _int or not " + _I64, "L": "_ty({p}) is not _int or not " + _I64,
    "n": "_ty({p}) is not _int or not " + _I64,
    "O": "{p} is _M", "s": _STR, "z": "{p} is not None and (" + _STR + ")",
    "f": "True", "d": "True", "p": "True",
}

# npurt's handle units, looked up inside the wrapper's `try` (0 is the default stream)
# a stream found in the table is checked against the thread's current context unless it is
# in it (the common case: one identity test)
_CONVERT = {"S": "(_sl({p}) if _ty({p}) is _int else _nonint({p})) or (_st.get({p}) if {p} else None)",
            "T": "(_sl({p}) if _ty({p}) is _int else _nonint({p})) or (_st.get({p}) if {p} else None)",
            "E": "(_el({p}) if _ty({p}) is _int else _nonint({p})) or _et.get({p})",
            "C": "_ct.get({p}) if _ty({p}) is _int else _nonint({p})"}
_FAST.update(S=_FAST["k"], T=_FAST["k"], E=_FAST["k"], C=_FAST["k"])
_CONTEXT_CHECK = "if _h{i} is not None and _h{i}.context is not _tl.context: _ic(_h{i}, {same})\n        "

LEGACY = object()
"""`args` left out: the wrapper keeps the implementation's Python signature (for groups
not yet ported to the real formats)."""

CPYTHON_MESSAGE = object()
"""`message` for the real wrappers that keep PyArg_ParseTuple's own TypeError text."""


class Group:
    """Decorators that turn implementation functions into pyACL functions of one namespace
    (e.g. Group("acl.rt")).

    Each takes `args`, the PyArg_ParseTuple format of the real wrapper ("ki"; None for one
    that takes no parameters and ignores surplus ones), optionally `message`, the TypeError
    text of the real wrapper when it is not "<where> args parse failed", `names`, pyACL's
    parameter names when the implementation's differ (a runtime operation used directly),
    and `hot` for the few functions whose every call counts (see `generate`)::

        @rt.one(0, args="ki")
        def malloc_align32(size, policy): ...
    """

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.names: list[str] = []

    def ret(self, impl=None, *, args=LEGACY, message=None, names=None, hot=False):
        """pyACL returns `ret` only (`@rt.ret` or `@rt.ret(args="i")`)."""
        if impl is not None:
            return self._make(impl, "ret", None, args, message, names, hot)
        return lambda fn: self._make(fn, "ret", None, args, message, names, hot)

    def one(self, fail_value=0, *, args=LEGACY, message=None, names=None, hot=False):
        """pyACL returns `value, ret`; `fail_value` stands in for the value on failure."""
        return lambda impl: self._make(impl, "one", fail_value, args, message, names, hot)

    def many(self, *fail_values, args=LEGACY, message=None, names=None, hot=False):
        """pyACL returns `v1, v2, ..., ret`; the implementation returns (v1, v2, ...)."""
        return lambda impl: self._make(impl, "many", tuple(fail_values), args, message, names, hot)

    def value(self, fail_value=None, *, args=LEGACY, message=None, names=None, hot=False):
        """pyACL returns the value alone (no ret); failures are only recorded."""
        return lambda impl: self._make(impl, "value", fail_value, args, message, names, hot)

    def _make(self, impl, shape: str, fail_value, args, message, names, hot):
        fn = generate(impl, shape, fail_value, f"{self.prefix}.{impl.__name__}", args, message,
                      names.split() if isinstance(names, str) else names, hot)
        self.names.append(impl.__name__)
        return fn


def generate(impl, shape: str, fail_value, where: str, args=LEGACY, message=None, names=None, hot=False):
    """Build `def name(<parameters>): <argument checks>; try: <call impl> except: <fail>`
    by exec. `names` overrides the parameter names taken from `impl`.

    Handle units of `args` ("S" stream, "E" event, "C" context; parsed as "k") are turned
    into runtime objects inside the `try`, so a hot function can be the runtime operation
    itself (`rt.ret(args="S", hot=True)(api.synchronize_stream)`): one call, no extra layer.

    A wrapper's parameters are positional-only with a `*_more` catch-all, so a wrong count
    reaches `parse` and gets the real message, and every argument is checked inline before
    the call. `hot` (the few functions whose every call counts: malloc, memcpy_async, ...)
    changes two things, measured at about 0.1 µs a call each on this project's VMs:
    * exactly the parameters, no defaults and no catch-all, since CPython 3.11 specialises
      calls only to such functions; a wrong count then raises CPython's own TypeError;
    * arguments are checked after a failure instead of before the call: the runtime takes
      exact ints only (`errors.as_int`), so whatever the extension would convert or refuse
      fails in the runtime first; `parse` then raises the real TypeError, or converts (a
      bool, a numpy integer for an int unit, a negative pointer masked to 64 bits) and the
      call is made again with the converted values. Handles are always checked first (a
      numpy integer would find its stream in the handle table), and so are the parameters
      named in `hot` when it is a string (where the runtime compares without a type check).
    """
    if args is LEGACY:
        return _generate_legacy(impl, shape, fail_value, where)
    ok, bad = _TEMPLATES[shape]
    name = impl.__name__
    namespace = {"_impl": impl, "_fail": fail, "_where": where, "_fv": fail_value, "_M": MISSING,
                 "_copy": deepcopy, "_ty": type, "_int": int, "_str": str, "_parse": parse,
                 "_differs": _differs, "_nonint": _nonint, "_sl": stream_lookup, "_st": _streams,
                 "_el": event_lookup, "_et": _events, "_ct": _contexts, "_tl": _thread, "_ic": in_context}
    fmt = None if args is None else Format(args)
    if fmt is None:  # the real wrapper never parses: any positional arguments are ignored
        source = (f"def {name}(*_ignored):\n    try:\n        {ok.format(call='_impl()')}\n"
                  f"    except Exception as _exc:\n        {bad.format(fv=_fail_value(fail_value))}\n")
        return _compile(source, namespace, name, impl, [], None, where)
    if names is None:
        sig = inspect.signature(impl).parameters.values()
        names = [p.name for p in sig if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if any(p.kind is p.VAR_POSITIONAL for p in sig):  # impl(*args): name the rest arg<i>
            names += [f"arg{i}" for i in range(len(names), len(fmt.units))]
    if len(names) < len(fmt.units):
        raise TypeError(f"{where}: format {args!r} has {len(fmt.units)} units but the implementation "
                        f"takes {len(names)} parameters")
    params = list(names[:len(fmt.units)])
    optional = fmt.required < len(fmt.units)
    handles = [u in _CONVERT for u in fmt.units]
    if optional and (hot or any(handles) or isinstance(fail_value, computed)):
        raise TypeError(f"{where}: optional units cannot go with hot, handle units or computed placeholders")
    namespace["_fmt"] = fmt
    namespace["_msg"] = (f"{where} args parse failed" if message is None
                         else None if message is CPYTHON_MESSAGE else message)
    if shape == "echo":
        ok, bad = ok.replace("{first}", params[0]), bad.replace("{first}", params[0])
    bad = bad.format(fv=_fail_value(fail_value, params))
    plist = "".join(p + ", " for p in params)
    # the values handed to the implementation: handles looked up into fresh names (the
    # parameters stay as passed, for the retry after a failure)
    values = [f"_h{i}" if h else p for i, (p, h) in enumerate(zip(params, handles))]
    convert = "".join(f"_h{i} = {_CONVERT[u].format(p=p)}\n        "
                      + (_CONTEXT_CHECK.format(i=i, same=u == "T") if u in "ST" else "")
                      for i, (u, p, h) in enumerate(zip(fmt.units, params, handles)) if h)
    call = f"_impl({', '.join(values)})"
    if hot:
        checked = set(hot.split()) if isinstance(hot, str) else set()
        tests = [f"({_FAST[u].format(p=p)})" for u, p in zip(fmt.units, params) if p in checked]
        source = f"def {name}({plist}{'/' if params else ''}):\n"
        if tests:
            source += f"    if {' or '.join(tests)}:\n        {plist} = _parse(_fmt, ({plist}), _where, _msg)\n"
        source += (f"    try:\n        {convert}{ok.format(call=call)}\n"
                   f"    except Exception as _exc:\n"
                   f"        _n = _parse(_fmt, ({plist}), _where, _msg)\n"
                   f"        if _differs(_n, ({plist})):\n            return {name}(*_n)\n"
                   f"        {bad}\n")
        return _compile(source, namespace, name, impl, params, fmt, where)
    tests = ["_more", *(f"({_FAST[u].format(p=p)})" for u, p in zip(fmt.units, params))]
    head = "".join(f"{p}=_M, " for p in params) + ("/, " if params else "") + "*_more"
    if not optional:  # the parsed values replace the parameters
        source = (f"def {name}({head}):\n    if {' or '.join(tests)}:\n"
                  f"        {plist or '_'} = _parse(_fmt, ({plist}) + _more, _where, _msg)\n"
                  f"    try:\n        {convert}{ok.format(call=call)}\n"
                  f"    except Exception as _exc:\n        {bad}\n")
    else:  # optional units: call with however many were given
        source = (f"def {name}({head}):\n    if {' or '.join(tests)}:\n"
                  f"        return _slow(({plist}) + _more)\n"
                  f"    try:\n        {ok.format(call=call)}\n"
                  f"    except Exception as _exc:\n        {bad}\n"
                  f"def _slow(_a):\n    _a = _parse(_fmt, _a, _where, _msg)\n"
                  f"    try:\n        {ok.format(call='_impl(*_a)')}\n"
                  f"    except Exception as _exc:\n        {bad}\n")
    return _compile(source, namespace, name, impl, params, fmt, where)


def _compile(source: str, namespace: dict, name: str, impl, params: list, fmt, where: str):
    exec(compile(source, f"<npurt.acl wrapper {where}>", "exec"), namespace)  # noqa: S102
    fn = namespace[name]
    fn.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY) for p in params])
    fn.parse_format = None if fmt is None else fmt.text
    fn.pyacl_parsing = True  # raises TypeError/ValueError where the real extension does
    return _finish(fn, impl)


def _differs(parsed: tuple, given: tuple) -> bool:
    """Whether parsing changed any argument (its value or its type: True -> 1)."""
    return any(p is not g and (type(p) is not type(g) or p != g) for p, g in zip(parsed, given))


def _nonint(value):
    """A handle that is not an int: refused here so that the wrapper parses it (a numpy
    integer would otherwise find its object in the handle table)."""
    raise TypeError(f"a handle must be an int, got {type(value).__name__}")


def _finish(fn, impl):
    fn.__doc__ = impl.__doc__
    fn.__module__ = impl.__module__
    fn.__qualname__ = impl.__qualname__
    return fn


def _generate_legacy(impl, shape: str, fail_value, where: str):
    """The wrapper of a function whose real format is not declared: the implementation's
    own signature (Python raises TypeError for a wrong count)."""
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
    bad = bad.format(fv=_fail_value(fail_value))
    namespace["_copy"] = deepcopy
    call = f"_impl({', '.join(args)})"
    source = (f"def {impl.__name__}({', '.join(params)}):\n"
              f"    try:\n        {ok.format(call=call)}\n"
              f"    except Exception as _exc:\n        {bad}\n")
    namespace.update(_impl=impl, _fail=fail, _where=where, _fv=fail_value)
    exec(compile(source, f"<npurt.acl wrapper {where}>", "exec"), namespace)  # noqa: S102
    fn = namespace[impl.__name__]
    fn.parse_format = LEGACY
    return _finish(fn, impl)


def not_supported(where: str, what: str, shape: str = "ret", fail_value=None, args=LEGACY, message=None):
    """A pyACL function of a feature the simulated NPU does not have: it parses its
    arguments as the real one does (`args`, its PyArg_ParseTuple format), then records and
    returns ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000) in the function's return shape."""
    code = C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT
    name = where.rsplit(".", 1)[-1]

    def stub(*_args):
        raise NpuError(what, code)

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = (f"Not supported by npurt: returns ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000).\n\n"
                    f"{where}: {what} [ACL_ERROR_RT_FEATURE_NOT_SUPPORT {code}]")
    if args is LEGACY:
        fn = _generate_legacy(stub, shape, fail_value, where)
    else:
        units = 0 if args is None else len(Format(args).units)
        fn = generate(stub, shape, fail_value, where, args, message, names=[f"arg{i}" for i in range(units)])
    fn.not_supported = True
    return fn
