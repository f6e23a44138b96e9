"""Argument parsing as the real pyACL extension does it (`PyArg_ParseTuple`).

The real `acl` module is a C extension: every wrapper is a METH_VARARGS function that
parses its positional arguments with a `PyArg_ParseTuple` format ("ki" for
`acl.rt.malloc(size, policy)`) and, when that fails, raises TypeError with its own message
("acl.rt.malloc args parse failed") instead of returning a code. A wrapper that takes no
parameters never parses, so surplus positional arguments are ignored
(`acl.rt.synchronize_device(device_id)` works). CPython 3.11's rules per format unit:

    k K    an int (or an int subclass such as bool): no numpy integers, no floats; the value
           is masked to 64 bits (-1 becomes 0xFFFFFFFFFFFFFFFF), never an overflow
    I H B  anything with __index__ except floats; masked to 32 / 16 / 8 bits
    i h b  anything with __index__ except floats; out of the C range is an error (b: 0..255,
           read back signed: every wrapper that uses it stores it in an int8_t)
    l L n  the same for 64-bit signed values
    f d    a float, or anything float() takes except str / bytes; f rounds to float32
    s z    a str without NUL characters (z: or None)
    O      any object;  p: any object, as its truth value
    |      the units after it are optional

`parse(fmt, args, where)` returns the converted arguments or raises TypeError. The dict
readers below (`field`, `struct`) follow the extension's helpers for dict arguments
(utils_methods.cpp): a missing key, or a value of the wrong type, leaves the C default (0);
an out-of-range value raises ValueError.
"""
from __future__ import annotations

import math
import operator
import struct as _struct

MISSING = type("Missing", (), {"__repr__": lambda self: "<missing>", "__slots__": ()})()
"""Stands in for an argument the caller did not pass (generated wrappers' defaults)."""

_MASKS = {"B": 0xFF, "H": 0xFFFF, "I": 0xFFFFFFFF, "k": (1 << 64) - 1, "K": (1 << 64) - 1}
_RANGES = {"b": (0, 0xFF), "h": (-(1 << 15), (1 << 15) - 1), "i": (-(1 << 31), (1 << 31) - 1),
           "l": (-(1 << 63), (1 << 63) - 1), "L": (-(1 << 63), (1 << 63) - 1), "n": (-(1 << 63), (1 << 63) - 1)}
CODES = frozenset("bBhHiIlLnkKfdpszO")
_FLT_MAX = 3.4028234663852886e38


HANDLES = {"S": "k", "T": "k", "E": "k", "C": "k"}
"""npurt's own units: a stream / event / context handle, parsed as "k" (what the real
wrappers use for handles) and then looked up by the generated wrapper. "S" is a stream the
call may use from any context, "T" one the call enqueues work on, which must belong to the
calling thread's current context (ACL_ERROR_RT_STREAM_CONTEXT otherwise)."""


class Format:
    """A parsed PyArg_ParseTuple format: its units, how many are required. `text` is the
    real format (handle units written as "k"); `units` keeps npurt's handle units."""

    __slots__ = ("text", "units", "required")

    def __init__(self, text: str):
        units, required = [], None
        for ch in text:
            if ch == "|":
                if required is not None:
                    raise ValueError(f"format {text!r}: '|' twice")
                required = len(units)
            elif ch in CODES or ch in HANDLES:
                units.append(ch)
            else:
                raise ValueError(f"format {text!r}: unit {ch!r} is not supported (supported: "
                                 f"{''.join(sorted(CODES))} and '|')")
        self.units = tuple(units)
        self.required = len(units) if required is None else required
        self.text = "".join(HANDLES.get(ch, ch) for ch in text)


class _Mismatch(Exception):
    """One argument did not convert (the caller turns it into the wrapper's TypeError)."""


def convert(unit: str, value):
    """One argument converted as PyArg_ParseTuple converts it for `unit`."""
    unit = HANDLES.get(unit, unit)
    if unit == "O":
        return value
    if unit in "kK":
        if not isinstance(value, int):
            raise _Mismatch(f"must be int, not {type(value).__name__}")
        return int(value) & _MASKS[unit]
    if unit in "bBhHiIlLn":
        if isinstance(value, float):
            raise _Mismatch("integer argument expected, got float")
        try:
            number = operator.index(value)
        except TypeError:
            raise _Mismatch(f"'{type(value).__name__}' object cannot be interpreted as an integer") from None
        mask = _MASKS.get(unit)
        if mask is not None:
            return number & mask
        low, high = _RANGES[unit]
        if not low <= number <= high:
            raise _Mismatch(f"{number} is out of range for format unit {unit!r}")
        return number - 256 if unit == "b" and number > 127 else number
    if unit in "fd":
        if isinstance(value, (str, bytes, bytearray)):
            raise _Mismatch(f"must be real number, not {type(value).__name__}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise _Mismatch(f"must be real number, not {type(value).__name__}") from None
        if unit == "f":  # a C float: rounds to float32, beyond its range is infinite
            if math.isfinite(number) and abs(number) > _FLT_MAX:
                return math.copysign(math.inf, number)
            return _to_float32(number)
        return number
    if unit == "p":
        return bool(value)
    if unit == "z" and value is None:
        return None
    if unit in "sz":
        if not isinstance(value, str):
            raise _Mismatch(f"must be str, not {type(value).__name__}")
        if "\0" in value:
            raise _Mismatch("embedded null character")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _Mismatch("str is not valid UTF-8") from None
        return value
    raise ValueError(f"unknown format unit {unit!r}")


def _to_float32(number: float) -> float:
    return _struct.unpack("f", _struct.pack("f", number))[0]


def parse(fmt: Format, args: tuple, where: str, message: str | None = None) -> tuple:
    """`args` converted by `fmt`, or TypeError: `message` (the real wrapper's own text), or
    CPython's text when the real wrapper keeps it (`message=None`)."""
    n = len(args)
    while n and args[n - 1] is MISSING:
        n -= 1
    if n < len(args):
        args = args[:n]
    units = fmt.units
    if not fmt.required <= n <= len(units):
        if message is not None:
            raise TypeError(message)
        expected = len(units) if fmt.required == len(units) else f"from {fmt.required} to {len(units)}"
        raise TypeError(f"function takes exactly {expected} arguments ({n} given)")
    out = []
    for i, (unit, value) in enumerate(zip(units, args)):
        try:
            out.append(convert(unit, value))
        except _Mismatch as exc:
            if message is not None:
                raise TypeError(message) from None
            raise TypeError(f"argument {i + 1} {exc}") from None
    return tuple(out)


# ---------------------------------------------------------------- dict arguments
_FIELD_MASKS = {"uint32": 0xFFFFFFFF, "uint16": 0xFFFF, "uint8": 0xFF}


def struct(value, message: str) -> dict | None:
    """A dict argument standing for a C struct: None stays None (the C pointer is null), any
    other non-dict raises TypeError(message) as CHECK_STRUCT_DICT does."""
    if value is None or isinstance(value, dict):
        return value
    raise TypeError(message)


def field(d: dict, key: str, kind: str = "int", default=0):
    """A struct member read from `d[key]` as GetValueFromPyDict reads it: a missing key or a
    value that is not an int (a float for the float kinds) leaves `default`.

    kind: "int" (C int: PyLong_AsLong, then truncated to 32 bits), "uint32"/"uint16"/"uint8"
    (PyLong_AsUnsignedLong, truncated), "u64" (PyLong_AsUnsignedLongLong), "float"/"double"
    (int or float), "ptr" (PyLong_AsVoidPtr; None is null).
    """
    value = d.get(key) if isinstance(d, dict) else None
    if kind == "ptr":
        if value is None:
            return 0
        try:
            number = operator.index(value)
        except TypeError:
            raise ValueError("PyLong_AsVoidPtr failed") from None
        if not -(1 << 63) <= number < (1 << 64):
            raise ValueError("PyLong_AsVoidPtr failed")
        return number & ((1 << 64) - 1)
    if kind in ("float", "double"):
        if not isinstance(value, (int, float)):
            return default
        return _to_float32(float(value)) if kind == "float" else float(value)
    if not isinstance(value, int):
        return default
    if kind == "int":
        if not -(1 << 63) <= value < (1 << 63):
            raise ValueError("PyLong_AsLong failed")
        value &= 0xFFFFFFFF  # static_cast<int>
        return value - (1 << 32) if value >> 31 else value
    if not 0 <= value < (1 << 64):
        raise ValueError("PyLong_AsUnsignedLongLong failed" if kind == "u64" else "PyLong_AsUnsignedLong failed")
    return value & _FIELD_MASKS.get(kind, (1 << 64) - 1)
