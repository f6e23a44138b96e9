"""The registered single-operator models of the process (acl.op.set_model_dir / load).

`set_model_dir` may be called once per process (ACL_ERROR_REPEAT_INITIALIZE 100002 the
second time, as aclopSetModelDir); it registers every .om under the directory, three levels
deep. A missing or unreadable directory is ACL_ERROR_READ_MODEL_FAILURE (100014); a file
that is not an .om is ACL_ERROR_DESERIALIZE_MODEL (100012); an .om that is not a single-op
model, or whose description cannot be read, ACL_ERROR_PARSE_MODEL (100013). `find` returns
the model a call matches (opmodel.py), or raises ACL_ERROR_OP_NOT_FOUND (100024); results are
cached by the call's key. The cache holds at most `max_queue` entries (set_max_op_queue_num).
"""
from __future__ import annotations

import os
from collections import OrderedDict

from ...runtime import InvalidValueError, NpuError, constants as C, fork_safe_lock
from .. import om
from .opmodel import OpModel

_models: list[OpModel] = []
_cache: OrderedDict = OrderedDict()
_lock = fork_safe_lock()
_dir_set = False
max_queue = 20000
MAX_DEPTH = 3


def parse(data, where: str) -> OpModel:
    try:
        meta, _, _ = om.unpack(data)
    except om.ModelFormatError as exc:
        raise NpuError(f"{where}: {exc.message}", C.ACL_ERROR_DESERIALIZE_MODEL) from None
    except NpuError as exc:
        raise NpuError(f"{where}: {exc.message}", C.ACL_ERROR_PARSE_MODEL) from None
    if meta.get("kind") != "singleop":
        raise NpuError(f"{where} is a model (acl.mdl.load_from_file), not a single-operator model",
                       C.ACL_ERROR_PARSE_MODEL)
    try:
        return OpModel.from_json(meta)
    except (KeyError, TypeError, ValueError) as exc:
        raise NpuError(f"{where}: the operator description cannot be read ({exc})", C.ACL_ERROR_PARSE_MODEL) from None


# acl_op_resource_manager.cpp: registering a Cast model whose attributes include "truncate"
# sets a process-wide flag; from then on aclopCast / aclopCreateHandleForCast add truncate to
# the attributes they build (cast_op.cpp), so models compiled with it are found.
cast_has_truncate = False


def register(model: OpModel) -> None:
    global cast_has_truncate
    with _lock:
        _models.append(model)
        _cache.clear()
        if model.op_type == "Cast" and "truncate" in model.attr.values:
            cast_has_truncate = True


def set_model_dir(path: str) -> int:
    """Register every single-op .om under `path`; returns how many."""
    global _dir_set
    if _dir_set:
        raise NpuError("acl.op.set_model_dir may be called once per process; register more models with "
                       "acl.op.load", C.ACL_ERROR_REPEAT_INITIALIZE)
    if not os.path.isdir(path):
        raise NpuError(f"op model directory {path!r} does not exist", C.ACL_ERROR_READ_MODEL_FAILURE)
    found = []
    base_depth = os.path.abspath(path).rstrip(os.sep).count(os.sep)
    try:
        for root, dirs, files in os.walk(path):
            if os.path.abspath(root).count(os.sep) - base_depth >= MAX_DEPTH:
                dirs[:] = []
            for name in sorted(files):
                if name.endswith(".om"):
                    found.append(os.path.join(root, name))
    except OSError as exc:
        raise NpuError(f"op model directory {path!r} cannot be read: {exc}", C.ACL_ERROR_READ_MODEL_FAILURE) from None
    models = []
    for file in found:
        try:
            with open(file, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise NpuError(f"op model {file!r} cannot be read: {exc.strerror}", C.ACL_ERROR_READ_MODEL_FAILURE) \
                from None
        models.append(parse(data, f"op model {file!r}"))
    for m in models:
        register(m)
    _dir_set = True
    return len(models)


def load(data: bytes) -> None:
    register(parse(data, "the op model"))


def find(op_type: str, inputs, outputs, attr_key: tuple) -> OpModel:
    key = (op_type, tuple(_desc_key(d) for d in inputs), tuple(_desc_key(d) for d in outputs), attr_key)
    model = _cache.get(key)
    if model is not None:
        return model
    with _lock:
        candidates = [m for m in _models if m.op_type == op_type]
    for m in candidates:
        if m.matches(op_type, inputs, outputs, attr_key):
            with _lock:
                _cache[key] = m
                while len(_cache) > max_queue:
                    _cache.popitem(last=False)
            return m
    if not candidates:
        why = (f"no single-op model of type {op_type!r} is registered (compile one with npurt atc --singleop and "
               "register it with acl.op.set_model_dir or acl.op.load)")
    else:
        why = (f"none of the {len(candidates)} registered {op_type!r} model(s) matches these input/output descs "
               f"and attributes: {_describe(inputs, outputs, attr_key)}")
    raise NpuError(why, C.ACL_ERROR_OP_NOT_FOUND)


def _desc_key(d) -> tuple:
    return (d.data_type, tuple(d.dims), d.format, d.storage_format, tuple(d.shape_range), d.const_data, d.memtype)


def _describe(inputs, outputs, attr_key) -> str:
    def one(d):
        return f"{d.data_type}/{d.format}/{d.dims}"
    return (f"inputs [{', '.join(one(d) for d in inputs)}], outputs [{', '.join(one(d) for d in outputs)}], "
            f"attrs {dict((n, v) for n, (_, v) in attr_key)}")


def set_max_queue(n: int) -> None:
    global max_queue
    if n == 0:
        raise InvalidValueError("max_op_num must be positive")
    max_queue = n


def registered() -> list[OpModel]:
    with _lock:
        return list(_models)
