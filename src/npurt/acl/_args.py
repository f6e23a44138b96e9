"""Argument parsing as the real pyACL extension does it (PyArg_ParseTuple), and the wrappers
that give each function pyACL's return shape.

The extension declares every function METH_VARARGS and parses with a format string; any
failure (wrong count, wrong type, a value out of a checked range) raises TypeError with the
function's own message, "acl.<group>.<name> args parse failed" (some with a trailing "!").
Keywords are refused. Functions declared without parsing ignore surplus arguments. The
format characters used (CPython's getargs.c rules):

| char | C type | accepts | out of range |
| --- | --- | --- | --- |
| k, K | unsigned long (long) | int only (bools too; no __index__) | wraps (masked) |
| I | unsigned int | anything with __index__, not float | wraps |
| i, h, L | int, short, long long | __index__, not float | TypeError |
| b | unsigned char (stored in an int8_t) | __index__, not float; 0..255 | TypeError |
| B, H | unsigned char / short | __index__, not float | wraps |
| f, d | float / double | int, float, __float__ / __index__ | - (f rounds to float32) |
| s | const char * | str without NUL (not bytes) | - |
| O | object | anything | - |
| \\| | optional from here | | |

`Api(group).fn(fmt, shape)` wraps an implementation written with pyACL's parameters; the
implementation gets the converted values and returns what the C function writes to its
output pointers. Exceptions other than the parse TypeError become return codes through
`_wrap.fail` (recorded as the thread's last error). Shapes: "ret" (a bare int), "one"
(value, ret), "many" (v1, ..., ret), "value" (the value alone; failures only recorded),
"none" (None; failures only recorded), "echo" (the first argument as parsed, ret).
"""
from __future__ import annotations

import inspect
import operator
import struct

from ._wrap import fail

M8, M16, M32, M64 = 0xFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF


class ArgTypeError(TypeError):
    """Raised by an implementation for an argument the C wrapper rejects after parsing (a
    tuple where a list is required, ...): it propagates, as the real TypeError does."""


class ArgValueError(ValueError):
    """The ValueError counterpart (list values out of range, ...)."""


def _index(value, msg):
    if isinstance(value, float):
        raise TypeError(msg)
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(msg) from None


def _conv_k(value, msg):
    if isinstance(value, int):
        return int(value) & M64
    raise TypeError(msg)


def _masked(mask):
    return lambda value, msg: _index(value, msg) & mask


def _ranged(lo, hi, signed_byte=False):
    def conv(value, msg):
        v = _index(value, msg)
        if not lo <= v <= hi:
            raise TypeError(msg)
        if signed_byte and v > 127:
            v -= 256
        return v
    return conv


def _float(single):
    pack = struct.Struct("<f")

    def conv(value, msg):
        if isinstance(value, (str, bytes, bytearray)):  # PyFloat_AsDouble takes numbers only
            raise TypeError(msg)
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise TypeError(msg) from None
        if single:
            try:
                v = pack.unpack(pack.pack(v))[0]
            except OverflowError:
                v = float("inf") if v > 0 else float("-inf")
        return v
    return conv


def _str(value, msg):
    if type(value) is str or isinstance(value, str):
        if "\0" in value:
            raise TypeError(msg)
        return str(value)
    raise TypeError(msg)


CONVERTERS = {
    "k": _conv_k, "K": _conv_k, "I": _masked(M32), "B": _masked(M8), "H": _masked(M16),
    "i": _ranged(-(1 << 31), (1 << 31) - 1), "h": _ranged(-(1 << 15), (1 << 15) - 1),
    "L": _ranged(-(1 << 63), (1 << 63) - 1), "b": _ranged(0, 255, signed_byte=True),
    "f": _float(True), "d": _float(False), "s": _str, "O": lambda value, msg: value,
}
# the test that lets the common case skip the converter call (the value is already right)
_FAST = {"k": "type({a}) is int and 0 <= {a} <= 0xFFFFFFFFFFFFFFFF", "K": None, "I": "type({a}) is int and "
         "0 <= {a} <= 0xFFFFFFFF", "i": "type({a}) is int and -2147483648 <= {a} <= 2147483647",
         "s": "type({a}) is str and '\\0' not in {a}", "O": "True"}
_FAST["K"] = _FAST["k"]

_TEMPLATES = {
    "ret": ("{call}\n        return 0", "return _fail(_exc, _where)"),
    "one": ("return {call}, 0", "return _fv, _fail(_exc, _where)"),
    "many": ("return (*{call}, 0)", "return _fv + (_fail(_exc, _where),)"),
    "value": ("return {call}", "_fail(_exc, _where)\n        return _fv"),
    "none": ("{call}\n        return None", "_fail(_exc, _where)\n        return None"),
    # (first argument echoed back, ret): the wrapper quirk of add_dataset_buffer & co.
    "echo": ("{call}\n        return a0, 0", "return a0, _fail(_exc, _where)"),
}


class Api:
    """Wrapper factory of one namespace, e.g. Api("acl.mdl"); `bang` appends "!" to the parse
    failure message, as most of acl.mdl's functions do."""

    def __init__(self, prefix: str, bang: bool = False):
        self.prefix, self.bang = prefix, bang
        self.names: list[str] = []

    def fn(self, fmt: str | None, shape: str = "ret", fail_value=None, bang: bool | None = None,
           name: str | None = None):
        """Decorator: `fmt` is the PyArg_ParseTuple format (None: the C wrapper parses nothing
        and ignores any argument); `name` overrides the function's name (for an inner step
        of a function that parses in two stages)."""
        def decorate(impl):
            fname = name or impl.__name__
            where = f"{self.prefix}.{fname}"
            b = self.bang if bang is None else bang
            msg = f"{where} args parse failed{'!' if b else ''}"
            wrapper = generate(impl, fmt, shape, fail_value, where, msg)
            if name is None:
                self.names.append(fname)
            return wrapper
        return decorate


def generate(impl, fmt, shape, fail_value, where, msg):
    """Build `def name(*args)`: count check, conversions, `try: impl(...)`, by exec."""
    ns = {"_impl": impl, "_fail": fail, "_where": where, "_fv": fail_value, "_msg": msg,
          "_passthrough": (ArgTypeError, ArgValueError)}
    lines = [f"def {impl.__name__}(*args):"]
    if fmt is None:
        call = "_impl()"
    else:
        required, _, optional = fmt.partition("|")
        chars = required + optional
        n_req, n_all = len(required), len(chars)
        if n_req == n_all:
            lines.append(f"    if len(args) != {n_all}: raise TypeError(_msg)")
            if n_all:
                lines.append(f"    {', '.join(f'a{i}' for i in range(n_all))}, = args")
        else:
            lines.append(f"    if not {n_req} <= len(args) <= {n_all}: raise TypeError(_msg)")
            lines.append(f"    args = args + (None,) * ({n_all} - len(args))")
            lines.append(f"    {', '.join(f'a{i}' for i in range(n_all))}, = args")
        for i, ch in enumerate(chars):
            if ch == "O":
                continue
            ns[f"_c{i}"] = CONVERTERS[ch]
            a = f"a{i}"
            test = _FAST.get(ch)
            guard = f"{a} is not None and " if i >= n_req else ""
            if test:
                lines.append(f"    if {guard}not ({test.format(a=a)}): {a} = _c{i}({a}, _msg)")
            elif guard:
                lines.append(f"    if {guard[:-5]}: {a} = _c{i}({a}, _msg)")
            else:
                lines.append(f"    {a} = _c{i}({a}, _msg)")
        call = f"_impl({', '.join(f'a{i}' for i in range(n_all))})"
    ok, bad = _TEMPLATES[shape]
    lines.append("    try:")
    lines.append(f"        {ok.format(call=call)}")
    lines.append("    except _passthrough:")
    lines.append("        raise")
    lines.append("    except Exception as _exc:")
    lines.append(f"        {bad}")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<npurt.acl wrapper {where}>", "exec"), ns)  # noqa: S102
    fn = ns[impl.__name__]
    fn.__doc__ = impl.__doc__
    fn.__module__ = impl.__module__
    fn.__qualname__ = impl.__qualname__
    fn.__signature__ = inspect.signature(impl)
    fn.pyacl_parsing = True  # raises TypeError/ValueError where the real extension does
    return fn


def int64_list(value, not_list: str = "argument 2 is not list", bad_item: str = "invalid data type") -> list:
    """A real `list` of int64 values, as GetValuesFromPyList reads it: not a list, or an item
    that is not an int -> ArgTypeError; a value beyond int64 -> ArgValueError."""
    if not isinstance(value, list):
        raise ArgTypeError(not_list)
    out = []
    for item in value:
        if not isinstance(item, int):
            raise ArgTypeError(bad_item)
        if not -(1 << 63) <= item < (1 << 63):
            raise ArgValueError("PyLong_AsLongLong failed")
        out.append(int(item))
    return out


def handle_list(value, not_list: str) -> list:
    """A real `list` of int handles (ConvertPyListToPtrArray)."""
    if not isinstance(value, list):
        raise ArgTypeError(not_list)
    for item in value:
        if not isinstance(item, int):
            raise ArgTypeError("the list argument is not list of int")
    return [int(v) & M64 for v in value]


def pair_list(value, not_list: str) -> list[tuple[int, int]]:
    """[[a, b], ...] as ConvertPyListToLongLongArrayV2 reads it (2 columns)."""
    if not isinstance(value, list):
        raise ArgTypeError(not_list)
    out = []
    for row in value:
        if not isinstance(row, list):
            raise ArgTypeError("the list argument is not list")
        if len(row) < 2 or not all(isinstance(v, int) for v in row[:2]):
            raise ArgTypeError("the list argument is not list of int")
        out.append((int(row[0]), int(row[1])))
    return out
