"""acl.prof's model subscription (aclprofModelSubscribe and the aclprofGetOp* readers): op
records of a subscribed model's executions written to the application's pipe, in npurt's
layout (OP_DESC), and the functions that read them back. Part of `acl.prof` (prof.py
re-exports every function).
"""
from __future__ import annotations

import os
import struct
import time

from ..ge import model as ge_model
from ..runtime import HOOKS, address, constants as C
from ._prof_state import INVALID, METRICS, _error, _parse, _running, _state, _sub_configs
from ._wrap import fail
from .constants import ACL_PROF_MAX_OP_NAME_LEN, ACL_PROF_MAX_OP_TYPE_LEN, ACL_SUBSCRIBE_OP

# One op record in the bytes a subscription writes to its pipe (npurt's layout; read it with
# the get_op_* functions): model id, ACL_SUBSCRIBE_OP, start, end, duration (microseconds
# of time.perf_counter), op type and op name (NUL-terminated, ACL_PROF_MAX_OP_*_LEN bytes).
OP_DESC = struct.Struct(f"<IIQQQ{ACL_PROF_MAX_OP_TYPE_LEN}s{ACL_PROF_MAX_OP_NAME_LEN}s6x")


class _SubscribeConfig:
    __slots__ = ("time_info", "metrics", "fd")

    def __init__(self, time_info, metrics, fd):
        self.time_info, self.metrics, self.fd = time_info, metrics, fd


# model indexes registered with profiling by MsprofSetDeviceIdByGeModelIdx (aprof_pub.h): what
# aclmdlLoadFromFile registers on CANN, and what a program without a model registers itself
# (hicann/runtime example/5_performance/profiling/2_subscribe_model): index -> device id
_registered_models: dict[int, int] = {}


def register_model_device(model_id: int, device_id: int) -> None:
    _registered_models[model_id] = device_id


def unregister_model_device(model_id: int, device_id: int) -> None:
    if _registered_models.get(model_id) == device_id:
        del _registered_models[model_id]


def _loaded_model(model_id: int):
    """The loaded model `model_id` (npurt.ge), a registered model index, or None."""
    model = ge_model._models.get(model_id)
    if model is None and model_id in _registered_models:
        return _registered_models[model_id]
    return model


class _Subscriptions:
    """The observer that writes op records of subscribed models' executions to their pipes.
    Registered with the runtime's hooks only while a model is subscribed."""

    def __init__(self):
        self.started: dict = {}

    def __call__(self, name, task=None, error=None, **fields):
        if name == "task_started":
            self.started[task] = time.perf_counter_ns()
        elif name == "task_finished":
            t0 = self.started.pop(task, None)
            if t0 is None or error is not None:
                return
            details = task.details()
            config = _state.subscribed.get(details.get("model_id"))
            if config is None or not config.time_info:
                return
            ops = details.get("ops") or [(details.get("name", task.kind), "Model", t0, time.perf_counter_ns())]
            data = b"".join(_op_record(details["model_id"], *op) for op in ops)
            try:
                os.write(config.fd, data)
            except OSError:  # the reader closed its end: nothing to deliver to
                pass


_observer = _Subscriptions()


def _op_record(model_id, name, op_type, start_ns, end_ns) -> bytes:
    start, end = start_ns // 1000, end_ns // 1000
    return OP_DESC.pack(model_id & 0xFFFFFFFF, ACL_SUBSCRIBE_OP, start, end, end - start,
                        str(op_type).encode()[:ACL_PROF_MAX_OP_TYPE_LEN - 1],
                        str(name).encode()[:ACL_PROF_MAX_OP_NAME_LEN - 1])


def create_subscribe_config(*args):
    """acl.prof.create_subscribe_config(time_info_switch, aicore_metrics, fd) -> handle (0 on
    failure). fd: the write end of a pipe that op records go to."""
    switch, metrics, fd = _parse(args, "bii", "acl.prof.create_subscribe_config args parse failed")
    where = "create_subscribe_config"
    if switch not in (0, 1):
        _error(INVALID, where, f"time_info_switch must be 0 or 1, got {switch}")
        return 0
    if metrics not in METRICS:
        _error(INVALID, where, f"Value {metrics} for parameter aicoreMetrics is invalid")
        return 0
    try:
        os.fstat(fd)
    except OSError:
        _error(INVALID, where, f"fd {fd} is not an open file descriptor (pass the write end of os.pipe())")
        return 0
    return _sub_configs.add(_SubscribeConfig(switch, metrics, fd))


def destroy_subscribe_config(*args):
    """acl.prof.destroy_subscribe_config(sub_config) -> ret."""
    (handle,) = _parse(args, "k", "acl.prof.destroy_subscribe_config args parse failed")
    if not handle or _sub_configs.lookup(handle) is None:
        return _error(INVALID, "destroy_subscribe_config", f"0x{handle:x} is not a live subscribe config")
    _sub_configs.remove(handle)
    return 0


def model_subscribe(*args):
    """acl.prof.model_subscribe(model_id, sub_config) -> ret: each execution of the model writes
    its op records to the config's pipe."""
    model_id, handle = _parse(args, "Ik", "acl.prof.model_subscribe args parse failed")
    where = "model_subscribe"
    with _state.lock:
        if _state.initialized or _running() is not None:
            return _error(C.ACL_ERROR_PROF_API_CONFLICT, where, "Failed to start Profiling in subscribe mode "
                          "because it is already in aclapi mode (acl.prof.init ... finalize).")
        config = _sub_configs.lookup(handle) if handle else None
        if config is None:
            return _error(INVALID, where, f"0x{handle:x} is not a live subscribe config")
        if _loaded_model(model_id) is None:
            return _error(C.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID, where, f"model {model_id} is not loaded")
        if model_id in _state.subscribed:
            return _error(C.ACL_ERROR_PROF_REPEAT_SUBSCRIBE, where, f"model {model_id} is already subscribed")
        if not _state.subscribed:
            HOOKS.add(_observer)
        _state.subscribed[model_id] = config
    return 0


def model_unsubscribe(*args):
    """acl.prof.model_unsubscribe(model_id) -> ret."""
    (model_id,) = _parse(args, "I", "acl.prof.model_unsubscribe args parse failed")
    with _state.lock:
        if _state.subscribed.pop(model_id, None) is None:
            return _error(INVALID, "model_unsubscribe", f"model {model_id} is not subscribed")
        if not _state.subscribed:
            HOOKS.remove(_observer)
            _observer.started.clear()
    return 0


model_un_subscribe = model_unsubscribe


def get_op_desc_size(*args):
    """acl.prof.get_op_desc_size() -> (size, ret): bytes per op record."""
    return OP_DESC.size, 0


def _records(op_info: int, length: int, where: str):
    if not op_info or not length or length % OP_DESC.size:
        return _error(INVALID, where, f"op_info_len must be a positive multiple of {OP_DESC.size} (the size "
                      f"acl.prof.get_op_desc_size returns), got {length}")
    try:
        data = bytes(address.view(op_info, length))
    except Exception as exc:  # noqa: BLE001
        return fail(exc, f"acl.prof.{where}")
    return data


def _record(op_info, length, index, where):
    data = _records(op_info, length, where)
    if isinstance(data, int):
        return data
    if index >= len(data) // OP_DESC.size:
        return _error(INVALID, where, f"index {index} is out of range: the data holds {len(data) // OP_DESC.size} ops")
    return OP_DESC.unpack_from(data, index * OP_DESC.size)


def get_op_num(*args):
    """acl.prof.get_op_num(op_info, op_info_len) -> (num, ret)."""
    op_info, length = _parse(args, "kk", "acl.prof.get_op_num args parse failed")
    data = _records(op_info, length, "get_op_num")
    if isinstance(data, int):
        return 0, data
    return len(data) // OP_DESC.size, 0


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode(errors="replace")


def _get_str(args, field: int, fmt: str, message: str, where: str, sized: bool):
    parsed = _parse(args, fmt, message)
    if sized and parsed[3] > 4096:
        _error(INVALID, where, "Invalid param of the length: at most 4096")
        return "", INVALID
    rec = _record(parsed[0], parsed[1], parsed[2], where)
    if isinstance(rec, int):
        return ("" if sized else None), rec
    text = _text(rec[field])
    if sized and parsed[3] < len(text.encode()) + 1:
        return "", _error(INVALID, where, f"the buffer length {parsed[3]} is too small: the string needs "
                          f"{len(text.encode()) + 1} bytes (get_op_{'type' if field == 5 else 'name'}_len)")
    return text, 0


def get_op_type(*args):
    """acl.prof.get_op_type(op_info, op_info_len, index, op_type_len) -> (op_type, ret)."""
    return _get_str(args, 5, "kkIk", "acl.prof.get_op_type args parse failed", "get_op_type", True)


def get_op_name(*args):
    """acl.prof.get_op_name(op_info, op_info_len, index, op_name_len) -> (op_name, ret)."""
    return _get_str(args, 6, "kkIk", "acl.prof.get_op_name args parse failed", "get_op_name", True)


def get_op_type_v2(*args):
    """acl.prof.get_op_type_v2(op_info, op_info_len, index) -> (op_type or None, ret)."""
    return _get_str(args, 5, "kkI", "acl.prof.get_op_type args parse failed", "get_op_type_v2", False)


def get_op_name_v2(*args):
    """acl.prof.get_op_name_v2(op_info, op_info_len, index) -> (op_name or None, ret)."""
    return _get_str(args, 6, "kkI", "acl.prof.get_op_name args parse failed", "get_op_name_v2", False)


def _get_len(args, field, message, where):
    rec = _record(*_parse(args, "kkI", message), where)
    if isinstance(rec, int):
        return 0, rec
    return len(_text(rec[field]).encode()) + 1, 0


def get_op_type_len(*args):
    """acl.prof.get_op_type_len(op_info, op_info_len, index) -> (length with the NUL, ret)."""
    return _get_len(args, 5, "acl.prof.get_op_type args parse failed", "get_op_type_len")


def get_op_name_len(*args):
    """acl.prof.get_op_name_len(op_info, op_info_len, index) -> (length with the NUL, ret)."""
    return _get_len(args, 6, "acl.prof.get_op_name args parse failed", "get_op_name_len")


def _get_int(args, field, name):
    rec = _record(*_parse(args, "kkI", f"acl.prof.{name} args parse failed"), name)
    return 0 if isinstance(rec, int) else rec[field]


def get_op_start(*args):
    """acl.prof.get_op_start(op_info, op_info_len, index) -> start in microseconds (0 on failure)."""
    return _get_int(args, 2, "get_op_start")


def get_op_end(*args):
    """acl.prof.get_op_end(op_info, op_info_len, index) -> end in microseconds (0 on failure)."""
    return _get_int(args, 3, "get_op_end")


def get_op_duration(*args):
    """acl.prof.get_op_duration(op_info, op_info_len, index) -> duration in microseconds (0 on failure)."""
    return _get_int(args, 4, "get_op_duration")


def get_model_id(*args):
    """acl.prof.get_model_id(op_info, op_info_len, index) -> the op's model id (0 on failure)."""
    return _get_int(args, 0, "get_model_id")
