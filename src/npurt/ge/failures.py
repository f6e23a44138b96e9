"""What acl.mdl.create_and_get_op_desc reports: the failed model tasks, by (device id,
stream id, task id) as the exception-info callback names them. npurt's "operator" of a
model task is the model itself: its name and its input / output tensor descs."""
from __future__ import annotations

from collections import OrderedDict

from ..runtime import NpuError, constants as C, fork_safe_lock
from .tensor import TensorDesc

_failed: OrderedDict = OrderedDict()
_lock = fork_safe_lock()
LIMIT = 256


def record(device_id: int, stream_id: int, task_id: int, model) -> None:
    mdef = model.mdef
    ins = [(io.dtype, io.shape_at(None), io.format, io.name) for io in mdef.inputs]
    outs = [(io.dtype, io.shape_at(None), io.format, io.name) for io in mdef.outputs]
    with _lock:
        _failed[(device_id, stream_id, task_id)] = (mdef.name, ins, outs)
        while len(_failed) > LIMIT:
            _failed.popitem(last=False)


def lookup(device_id: int, stream_id: int, task_id: int) -> tuple[str, list, list]:
    with _lock:
        entry = _failed.get((device_id, stream_id, task_id))
    if entry is None:
        raise NpuError(f"no failed model task {task_id} on stream {stream_id} of device {device_id} is known "
                       "(create_and_get_op_desc describes tasks the exception callback reported)",
                       C.ACL_ERROR_GE_FAILURE)
    name, ins, outs = entry
    return (name, [TensorDesc(t, d, f, n) for t, d, f, n in ins], [TensorDesc(t, d, f, n) for t, d, f, n in outs])
