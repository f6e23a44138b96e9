"""aclopAttr: an operator's attributes, typed as GE types them.

Values are stored as C would hold them: floats rounded to float32, bools as bool, data
types as GE DataType numbers (aclDataType values, ACL_DT_UNDEFINED becoming DT_UNDEFINED 28,
as aclopSetAttrDataType does). Two attribute sets match when they hold the same names with
the same types and values (GE's OpAttrEquals); that decides which op model runs.
"""
from __future__ import annotations

import struct

from ...runtime import InvalidValueError

TYPES = ("bool", "int", "float", "string", "list_bool", "list_int", "list_float", "list_string",
         "list_list_int", "data_type", "list_data_type")
DT_UNDEFINED = 28
GE_TYPE_NAMES = {"DT_FLOAT": 0, "DT_FLOAT16": 1, "DT_INT8": 2, "DT_INT32": 3, "DT_UINT8": 4, "DT_INT16": 6,
                 "DT_UINT16": 7, "DT_UINT32": 8, "DT_INT64": 9, "DT_UINT64": 10, "DT_DOUBLE": 11, "DT_BOOL": 12,
                 "DT_STRING": 13, "DT_COMPLEX64": 16, "DT_COMPLEX128": 17, "DT_BF16": 27, "DT_UNDEFINED": 28}
_F32 = struct.Struct("<f")


def f32(value) -> float:
    try:
        return _F32.unpack(_F32.pack(float(value)))[0]
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def acl_to_ge_type(data_type: int) -> int:
    return DT_UNDEFINED if data_type == -1 else data_type


def ge_to_acl_type(value: int) -> int:
    return -1 if value == DT_UNDEFINED else value


def normalise(kind: str, value):
    """A value of attribute type `kind` as GE stores it."""
    if kind == "bool":
        return bool(value)
    if kind == "int":
        return int(value)
    if kind == "float":
        return f32(value)
    if kind == "string":
        return str(value)
    if kind == "list_bool":
        return tuple(bool(v) for v in value)
    if kind == "list_int":
        return tuple(int(v) for v in value)
    if kind == "list_float":
        return tuple(f32(v) for v in value)
    if kind == "list_string":
        return tuple(str(v) for v in value)
    if kind == "list_list_int":
        return tuple(tuple(int(v) for v in row) for row in value)
    if kind == "data_type":
        if isinstance(value, str):
            if value.upper() not in GE_TYPE_NAMES:
                raise InvalidValueError(f"data_type value {value!r} is not a GE data type (DT_FLOAT, DT_INT32, ...)")
            return GE_TYPE_NAMES[value.upper()]
        return int(value)
    if kind == "list_data_type":
        return tuple(int(v) for v in value)
    raise InvalidValueError(f"unknown attribute type {kind!r} (one of {', '.join(TYPES)})")


class OpAttr:
    """aclopAttr."""

    __slots__ = ("values", "handle")

    def __init__(self):
        self.values: dict[str, tuple[str, object]] = {}
        self.handle = 0

    def set(self, name: str, kind: str, value) -> None:
        if not name:
            raise InvalidValueError("the attribute name must not be empty")
        self.values[name] = (kind, normalise(kind, value))

    def key(self) -> tuple:
        return tuple(sorted(self.values.items()))

    def plain(self) -> dict:
        """name -> value (lists as lists), for the operator implementations."""
        return {n: (list(v) if isinstance(v, tuple) else v) for n, (_, v) in self.values.items()}

    def to_json(self) -> list:
        return [{"name": n, "type": k, "value": list(v) if isinstance(v, tuple) else v}
                for n, (k, v) in sorted(self.values.items())]

    @classmethod
    def from_json(cls, items) -> "OpAttr":
        attr = cls()
        for item in items or []:
            if not isinstance(item, dict) or not {"name", "type", "value"} <= set(item):
                raise InvalidValueError(f"an attr entry needs name, type and value, got {item!r}")
            attr.set(item["name"], item["type"], item["value"])
        return attr
