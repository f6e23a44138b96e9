"""A single-operator model: what `npurt atc --singleop` compiles from one op description of
its JSON, and what acl.op matches calls against.

An op model holds the op type, its input and output tensor descs and its attributes. A call
(op type, input descs, output descs, attributes) runs it when (GE's CheckModelAndAttrMatch):
the op type is the same; as many inputs and outputs; each desc has the same data type,
format, storage format, const-ness (and const value) and placement, and the same dims and
shape ranges, or, for a desc with dynamic dims (-1, or [-2] unknown rank), dims that fit its
shape ranges; and the attributes are the same set of names, types and values. An absent
optional input (JSON type "UNDEFINED" / format "RESERVED") matches a desc of
ACL_DT_UNDEFINED with an empty buffer.
"""
from __future__ import annotations

import base64

from ...runtime import InvalidValueError
from .. import constants as G
from ..dtypes import FORMATS, JSON_TYPES
from ..tensor import TensorDesc
from .attrs import OpAttr


def absent(desc: TensorDesc) -> bool:
    return desc.data_type == -1 or desc.format == G.FORMAT_RESERVED


def desc_from_json(d: dict, where: str) -> TensorDesc:
    """A tensor desc of the single-op JSON (type, format, shape, ...)."""
    if not isinstance(d, dict):
        raise InvalidValueError(f"{where}: a tensor desc must be an object, got {d!r}")
    type_name = str(d.get("type", "")).lower()
    if type_name not in JSON_TYPES:
        raise InvalidValueError(f"{where}: type {d.get('type')!r} is not a data type of the single-op JSON "
                                f"({', '.join(sorted(JSON_TYPES))})")
    fmt_name = str(d.get("format", "ND")).upper()
    if fmt_name not in FORMATS:
        raise InvalidValueError(f"{where}: format {d.get('format')!r} is not a format ({', '.join(FORMATS)})")
    shape = d.get("shape", [])
    if not isinstance(shape, list) or not all(isinstance(v, int) and v >= -2 for v in shape):
        raise InvalidValueError(f"{where}: shape must be a list of ints >= -2 (-1 dynamic, [-2] unknown rank)")
    fmt = FORMATS[fmt_name]
    desc = TensorDesc(JSON_TYPES[type_name], shape, fmt, str(d.get("name", "")))
    if "origin_format" in d:
        origin = str(d["origin_format"]).upper()
        if origin not in FORMATS:
            raise InvalidValueError(f"{where}: origin_format {d['origin_format']!r} is not a format")
        desc.format, desc.storage_format = FORMATS[origin], fmt
    if "origin_shape" in d:
        desc.storage_dims = list(shape)
        desc.dims = [int(v) for v in d["origin_shape"]]
    ranges = d.get("shape_range")
    if ranges is not None:
        if not isinstance(ranges, list) or not all(isinstance(r, list) and len(r) == 2 for r in ranges):
            raise InvalidValueError(f"{where}: shape_range must be [[min, max], ...]")
        desc.shape_range = [(int(a), int(b)) for a, b in ranges]
    elif any(v < 0 for v in desc.dims) and desc.dims != [-2]:
        desc.shape_range = [(v, v) if v >= 0 else (1, -1) for v in desc.dims]
    desc.dynamic_input = str(d.get("dynamic_input", ""))
    if d.get("is_const"):
        value = d.get("const_value")
        if value is None:
            raise InvalidValueError(f"{where}: is_const needs const_value")
        import numpy as np
        desc.const_data = np.asarray(value, desc.numpy_dtype()).tobytes()
    return desc


def desc_to_json(desc: TensorDesc) -> dict:
    return {"data_type": desc.data_type, "dims": desc.dims, "format": desc.format,
            "storage_format": desc.storage_format, "shape_range": [list(r) for r in desc.shape_range],
            "name": desc.name, "const": base64.b64encode(desc.const_data).decode() if desc.const_data else None,
            "memtype": desc.memtype, "dynamic_input": desc.dynamic_input}


def desc_from_model(d: dict) -> TensorDesc:
    desc = TensorDesc(d["data_type"], d["dims"], d["format"], d.get("name", ""))
    desc.storage_format = d.get("storage_format", G.ACL_FORMAT_UNDEFINED)
    desc.shape_range = [tuple(r) for r in d.get("shape_range", [])]
    desc.const_data = base64.b64decode(d["const"]) if d.get("const") else None
    desc.memtype = d.get("memtype", G.ACL_MEMTYPE_DEVICE)
    desc.dynamic_input = d.get("dynamic_input", "")
    return desc


def _fits(model: TensorDesc, call: TensorDesc) -> bool:
    if absent(model) or absent(call):
        return absent(model) and absent(call)
    if model.data_type != call.data_type or model.format != call.format:
        return False
    if model.storage_format != call.storage_format:
        return False
    if (model.const_data is None) != (call.const_data is None) or model.memtype != call.memtype:
        return False
    if model.const_data is not None and model.const_data != call.const_data:
        return False
    if model.is_dynamic:
        if model.unknown_rank:
            return True
        if len(model.dims) != len(call.dims):
            return False
        ranges = model.shape_range or [(d, d) if d >= 0 else (1, -1) for d in model.dims]
        for d, m, (lo, hi) in zip(call.dims, model.dims, ranges):
            if m >= 0:
                if d != m:
                    return False
            elif d == -1:
                continue  # an output whose dims the execution decides
            elif d < 0 or d < lo or (hi >= 0 and d > hi):
                return False
        return True
    return model.dims == call.dims


class OpModel:
    """One compiled operator."""

    def __init__(self, op_type: str, inputs: list[TensorDesc], outputs: list[TensorDesc], attr: OpAttr,
                 name: str = ""):
        self.op_type, self.inputs, self.outputs, self.attr, self.name = op_type, inputs, outputs, attr, name
        self.dynamic = any(d.is_dynamic for d in inputs + outputs if not absent(d))

    def __repr__(self) -> str:
        return f"<op model {self.op_type} {self.name!r}>"

    def matches(self, op_type: str, inputs, outputs, attr_key: tuple) -> bool:
        if op_type != self.op_type or len(inputs) != len(self.inputs) or len(outputs) != len(self.outputs):
            return False
        if attr_key != self.attr.key():
            return False
        return all(_fits(m, c) for m, c in zip(self.inputs, inputs)) and \
            all(_fits(m, c) for m, c in zip(self.outputs, outputs))

    def to_json(self) -> dict:
        return {"kind": "singleop", "op": self.op_type, "name": self.name,
                "inputs": [desc_to_json(d) for d in self.inputs], "outputs": [desc_to_json(d) for d in self.outputs],
                "attrs": self.attr.to_json()}

    @classmethod
    def from_json(cls, meta: dict) -> "OpModel":
        return cls(meta["op"], [desc_from_model(d) for d in meta["inputs"]],
                   [desc_from_model(d) for d in meta["outputs"]], OpAttr.from_json(meta["attrs"]), meta.get("name", ""))
