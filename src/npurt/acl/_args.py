"""The `Api(group).fn(fmt, shape)` spelling of the facade's wrapper generator, and the list
readers of the pyACL extension.

`Api("acl.mdl", bang=True).fn("kk", "one", 0)` is `Group("acl.mdl").one(0, args="kk",
message="acl.mdl.<name> args parse failed!")`: the same generator (`_wrap.generate`), the
same PyArg_ParseTuple rules (`_parse.py`), two more shapes ("none": the value None;
"echo": the first argument as parsed, then ret). Implementations raise `ArgTypeError` /
`ArgValueError` where the C wrapper raises after parsing (a tuple where a list is
required, ...); those propagate, as the real exceptions do.
"""
from __future__ import annotations

from .._cstyle.parse import CODES, _Mismatch, convert
from ._wrap import ArgTypeError, ArgValueError, generate as _generate

__all__ = ["Api", "ArgTypeError", "ArgValueError", "CONVERTERS", "int64_list", "handle_list", "pair_list",
           "M8", "M16", "M32", "M64"]

M8, M16, M32, M64 = 0xFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF


def _converter(unit: str):
    def conv(value, message: str):
        try:
            return convert(unit, value)
        except _Mismatch:
            raise TypeError(message) from None
    return conv


CONVERTERS = {unit: _converter(unit) for unit in CODES}
"""unit -> conv(value, message): one argument converted as PyArg_ParseTuple converts it, or
TypeError(message) (for wrappers written by hand that parse in steps)."""


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
            wrapper = _generate(impl, shape, fail_value, where, args=fmt,
                                message=f"{where} args parse failed{'!' if b else ''}")
            if name is None:
                self.names.append(fname)
            return wrapper
        return decorate


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
