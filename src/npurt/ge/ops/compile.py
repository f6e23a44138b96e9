"""`npurt atc --singleop=ops.json --output=dir`: single-operator models from ATC's JSON.

The JSON is an array of op descriptions: {"op": type, "name"?: file name, "input_desc":
[...], "output_desc": [...], "attr"?: [{"name", "type", "value"}]}, tensor descs as in
opmodel.py. Each becomes one .om in the output directory, named as ATC names it
(single_op_parser.cc): the "name" field when it is a valid file name, else
"<index>_<op>_<type>_<format>_<dims...>..." over the inputs then the outputs (data types and
formats as their enum numbers), cut to 128 characters, plus ".om".

Compilation checks what ATC checks: the op type exists in the operator library, its
attributes are the operator's (required ones present, types right), and, for static shapes,
that running the operator on inputs of the declared shapes gives outputs of the declared
data types and shapes. That run is bounded: an op whose declared tensors hold more than
CHECK_BYTES in all is not run here (a 300-byte JSON declaring big shapes made the check
allocate 1.7 GiB; issue 29); its output shapes and types are checked when it executes.
"""
from __future__ import annotations

import json
import os
import re

import numpy as np

from ...runtime import InvalidValueError, NpuError
from .. import om
from ..options import ConversionError, check_soc
from .attrs import OpAttr
from .execute import evaluate
from .library import OPS
from .opmodel import OpModel, absent, desc_from_json

MAX_NAME = 128
CHECK_BYTES = 64 << 20  # declared inputs + outputs above this: no trial run at compile time


def file_name(desc: dict, model: OpModel, index: int) -> str:
    name = str(desc.get("name", ""))[:MAX_NAME]
    if name and name not in (".", "..") and re.fullmatch(r"[a-zA-Z0-9._-]+", name):
        return name + ".om"
    parts = [str(index), model.op_type]
    for d in model.inputs + model.outputs:
        parts += [str(d.data_type if d.data_type != -1 else 28), str(d.storage_format if d.storage_format != -1
                                                                       else d.format)]
        parts += [str(v) for v in (d.storage_dims if d.storage_format != -1 else d.dims)]
    return "_".join(parts)[:MAX_NAME] + ".om"


def build(desc: dict, index: int) -> OpModel:
    where = f"op {index}"
    if not isinstance(desc, dict) or "op" not in desc:
        raise ConversionError(f"{where}: each entry of the single-op JSON needs an \"op\" field")
    op_type = desc["op"]
    where = f"op {index} ({op_type})"
    op = OPS.get(op_type)
    if op is None:
        raise ConversionError(f"{where}: operator type {op_type!r} is not in npurt's operator library "
                              f"({', '.join(sorted(OPS))})")
    try:
        inputs = [desc_from_json(d, f"{where} input {i}") for i, d in enumerate(desc.get("input_desc", []))]
        outputs = [desc_from_json(d, f"{where} output {i}") for i, d in enumerate(desc.get("output_desc", []))]
        attr = OpAttr.from_json(desc.get("attr", []))
    except InvalidValueError as exc:
        raise ConversionError(exc.message) from None
    if not outputs:
        raise ConversionError(f"{where}: output_desc is empty")
    for name, (kind, value) in attr.values.items():
        if name not in op.attrs:
            raise ConversionError(f"{where}: {op_type} has no attribute {name!r} (its attributes: "
                                  f"{', '.join(op.attrs) or 'none'})")
        if op.attrs[name][0] != kind:
            raise ConversionError(f"{where}: attribute {name!r} of {op_type} is a {op.attrs[name][0]}, not a {kind}")
    missing = [n for n, (_, default) in op.attrs.items() if default is None and n not in attr.values]
    if missing:
        raise ConversionError(f"{where}: {op_type} needs the attribute(s) {', '.join(missing)}")
    model = OpModel(op_type, inputs, outputs, attr, str(desc.get("name", "")))
    _check(model, op, where)
    return model


def _check(model: OpModel, op, where: str) -> None:
    """Run the operator on zeros (consts as given) of the declared shapes; compare outputs."""
    if model.dynamic:
        return
    declared = sum(int(np.prod(d.dims, dtype=np.float64)) * d.numpy_dtype().itemsize
                   for d in model.inputs + model.outputs if not absent(d))
    if declared > CHECK_BYTES:
        return  # checked when it runs (see the module docstring), not by allocating it here
    arrays = []
    for i, d in enumerate(model.inputs):
        if absent(d):
            arrays.append(None)
        elif d.const_data is not None:
            arrays.append(d.const_array())
        elif i in op.shape_inputs:
            return  # the output shape depends on data only known at run time
        else:
            arrays.append(np.ones(d.dims, d.numpy_dtype()))
    try:
        with np.errstate(all="ignore"):
            ys = evaluate(model.op_type, arrays, model.inputs, model.attr, len(model.outputs))
    except NpuError as exc:
        raise ConversionError(f"{where}: {exc.message}") from None
    except Exception as exc:  # noqa: BLE001 - the operator rejects these shapes or attributes
        raise ConversionError(f"{where}: the operator rejects these inputs: {type(exc).__name__}: {exc}") from None
    for k, (y, d) in enumerate(zip(ys, model.outputs)):
        # ATC keeps the declared output shape when it holds the same elements (the official
        # vpc_resnet50 sample declares ArgMaxV2's scalar result as [1]); the bytes are the same.
        if list(y.shape) != d.dims and y.size != int(np.prod(d.dims)):
            raise ConversionError(f"{where}: output {k} is declared {d.dims} but the operator produces "
                                  f"{list(y.shape)}")
        if np.dtype(y.dtype) != d.numpy_dtype():
            raise ConversionError(f"{where}: output {k} is declared {d.numpy_dtype()} but the operator produces "
                                  f"{np.dtype(y.dtype)}")


def compile_ops(json_path: str, output: str | None, soc_version: str | None, check_only: bool = False) -> list[str]:
    soc = check_soc(soc_version)
    if not output:
        raise ConversionError("--output is required with --singleop (the directory for the op models)")
    try:
        with open(json_path, encoding="utf-8") as f:
            ops = json.load(f)
    except OSError as exc:
        raise ConversionError(f"--singleop {json_path!r} cannot be read: {exc.strerror}") from None
    except ValueError as exc:
        raise ConversionError(f"--singleop {json_path!r} is not valid JSON: {exc}") from None
    if not isinstance(ops, list) or not ops:
        raise ConversionError("--singleop: the JSON must be a non-empty array of op descriptions")
    images = []
    for index, desc in enumerate(ops):
        model = build(desc, index)
        meta = model.to_json()
        images.append((file_name(desc, model, index), om.pack(meta, b"", model.op_type, soc, model.dynamic)))
    if check_only:
        return []
    os.makedirs(output, exist_ok=True)
    written = []
    for name, image in images:
        path = os.path.join(output, name)
        with open(path, "wb") as f:
            f.write(image)
        written.append(path)
    return written
