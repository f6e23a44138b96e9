"""Running single operators: the operations acl.op calls, and the operator task.

`execute` finds the op model a call matches (registry.py) and enqueues one `OpTask` on the
stream: it reads its inputs from device memory when it runs (a const input's value comes
from its tensor desc), computes with the operator library (library.py) and writes the
outputs into device memory. A failure surfaces at the stream's synchronize as
ACL_ERROR_RT_AICORE_EXCEPTION (507015), as a failing AI core operator does. For a
dynamic-shape operator the output descs receive the real output dims when the task ran.
If every output has zero elements, nothing is enqueued (the call succeeds).
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...runtime import address, constants as C
from ...runtime import stream_of
from ...runtime import InvalidValueError, NpuError, RUNTIME, Task, resolve as locate
from ..constants import ACL_MEMTYPE_DEVICE
from ..tensor import DataBuffer, TensorDesc
from . import kernels, registry
from .attrs import OpAttr
from .library import OPS
from .opmodel import OpModel, absent

_EMPTY = OpAttr()


def arrange(op, arrays: list, descs) -> list:
    """Input arrays in the order compute() takes them: dynamic inputs grouped into a list,
    absent optional inputs as None (trailing ones may be left out)."""
    spec = op.inputs
    if any(n.endswith("*") for n in spec):
        star = next(i for i, n in enumerate(spec) if n.endswith("*"))
        rest = len(spec) - star - 1
        count = len(arrays) - star - rest
        return arrays[:star] + [arrays[star:star + count]] + arrays[star + count:]
    required = sum(1 for n in spec if not n.endswith("?"))
    if not required <= len(arrays) <= len(spec):
        raise InvalidValueError(f"the operator takes {required} to {len(spec)} inputs, got {len(arrays)}")
    return arrays


def evaluate(op_type: str, arrays: list, in_descs, attr: OpAttr, n_outputs: int) -> list[np.ndarray]:
    op = OPS.get(op_type)
    if op is None:
        raise NpuError(f"operator type {op_type!r} is not in npurt's operator library", C.ACL_ERROR_OP_NOT_FOUND)
    attrs = {name: default for name, (_, default) in op.attrs.items()}
    attrs.update(attr.plain())
    missing = [name for name, value in attrs.items() if value is None]
    if missing:
        raise InvalidValueError(f"{op_type} needs the attribute(s) {', '.join(missing)}")
    attrs["_formats"] = [d.format for d in in_descs]
    ys = op.compute(arrange(op, arrays, in_descs), attrs)
    if len(ys) < n_outputs:
        raise InvalidValueError(f"{op_type} computes {len(ys)} output(s); the model declares {n_outputs}")
    return ys[:n_outputs]


def _check_input(buf: DataBuffer, desc: TensorDesc, i: int, blocks: list) -> None:
    if absent(desc) or desc.const_data is not None:
        return
    need = desc.size()
    if not buf.data:
        if need == 0:
            return
        raise InvalidValueError(f"input {i}: the data buffer has no memory (address 0) for {need} bytes")
    if buf.size < need:
        raise InvalidValueError(f"input {i}: the data buffer holds {buf.size} bytes, the desc ({desc.dims}) "
                                f"needs {need}")
    span = locate(RUNTIME, buf.data, max(need, 1), f"op input {i}")
    if span.device is None and desc.memtype == ACL_MEMTYPE_DEVICE:
        # The AI core cannot read host memory of a host-attached device; a host input is one
        # whose desc says so (aclSetTensorPlaceMent ACL_MEMTYPE_HOST: GE takes its value).
        raise InvalidValueError(f"input {i} at 0x{buf.data:x} is host memory; operator inputs must be device "
                                "memory (acl.rt.malloc and a copy), or the tensor desc placed in host memory "
                                "with set_tensor_place_ment(desc, ACL_MEMTYPE_HOST)")
    if span.block is not None and span.device is not None:
        blocks.append(span.block)


def _check_output(buf: DataBuffer, desc: TensorDesc, i: int, blocks: list) -> None:
    need = desc.size() if not desc.is_dynamic else 0
    if not buf.data:
        if need == 0 and not desc.is_dynamic:
            return
        raise InvalidValueError(f"output {i}: the data buffer has no memory (address 0)")
    if buf.size < need:
        raise InvalidValueError(f"output {i}: the data buffer holds {buf.size} bytes, the desc ({desc.dims}) "
                                f"needs {need}")
    span = locate(RUNTIME, buf.data, max(need, 1), f"op output {i}")
    if span.device is None:
        raise InvalidValueError(f"output {i} at 0x{buf.data:x} is host memory; operator outputs must be device memory")
    blocks.append(span.block)


def execute(op_type: str, in_descs, inputs, out_descs, outputs, attr: OpAttr | None, stream,
            update_outputs: bool = True, model: OpModel | None = None) -> int | None:
    """Match and enqueue; returns the task's sequence number (None when nothing ran)."""
    if len(in_descs) != len(inputs):
        raise InvalidValueError(f"{len(in_descs)} input descs but {len(inputs)} input buffers")
    if len(out_descs) != len(outputs):
        raise InvalidValueError(f"{len(out_descs)} output descs but {len(outputs)} output buffers")
    attr = attr or _EMPTY
    if model is None and kernels.has_selector(op_type):
        return kernels.execute(op_type, in_descs, inputs, out_descs, outputs, attr, stream)
    if model is None:
        model = registry.find(op_type, in_descs, out_descs, attr.key())
    s = stream_of(stream)
    if out_descs and all(not d.is_dynamic and d.element_count() == 0 for d in out_descs):
        return None
    blocks: list = []
    for i, (buf, desc) in enumerate(zip(inputs, in_descs)):
        _check_input(buf, desc, i, blocks)
    for i, (buf, desc) in enumerate(zip(outputs, out_descs)):
        _check_output(buf, desc, i, blocks)
    ins = tuple((b.data, b.size, d.copy()) for b, d in zip(inputs, in_descs))
    outs = tuple((b.data, b.size) for b in outputs)
    task = OpTask(model, attr, ins, outs, tuple(out_descs) if update_outputs else None)
    return s.enqueue(task, holders=blocks)


def read_input(addr: int, size: int, desc: TensorDesc) -> np.ndarray | None:
    if absent(desc):
        return None
    const = desc.const_array()
    if const is not None:
        return const
    dt = desc.numpy_dtype()
    count = desc.element_count()
    if count == 0:
        return np.zeros(desc.dims, dt)
    return address.view(addr, count * dt.itemsize).view(dt).reshape(desc.dims)


class OpTask(Task):
    """One operator on a stream."""

    __slots__ = ("model", "attr", "ins", "outs", "out_descs")
    kind = "op_execute"
    error_code = C.ACL_ERROR_RT_AICORE_EXCEPTION

    def __init__(self, model: OpModel, attr: OpAttr, ins, outs, out_descs):
        self.model, self.attr, self.ins, self.outs, self.out_descs = model, attr, ins, outs, out_descs

    def details(self) -> dict:
        return {"name": self.model.op_type}  # for tools: the profiler names the task by its op

    def run(self) -> None:
        arrays = [read_input(addr, size, desc) for addr, size, desc in self.ins]
        descs = [d for _, _, d in self.ins]
        try:
            ys = evaluate(self.model.op_type, arrays, descs, self.attr, len(self.outs))
        except NpuError:
            raise
        except Exception as exc:  # noqa: BLE001 - the operator's failure, reported at synchronize
            raise NpuError(f"operator {self.model.op_type} failed: {type(exc).__name__}: {exc}",
                           C.ACL_ERROR_RT_AICORE_EXCEPTION) from None
        for k, ((addr, size), y, model_desc) in enumerate(zip(self.outs, ys, self.model.outputs)):
            want = model_desc.numpy_dtype()
            y = np.ascontiguousarray(y, dtype=want)
            if y.nbytes > size:
                raise NpuError(f"operator {self.model.op_type}: output {k} is {y.nbytes} bytes {list(y.shape)}; "
                               f"its buffer holds {size}", C.ACL_ERROR_RT_AICORE_EXCEPTION)
            if y.nbytes:
                address.view(addr, y.nbytes)[:] = y.reshape(-1).view(np.uint8)
            if self.out_descs is not None and model_desc.is_dynamic:
                self.out_descs[k].dims = list(y.shape)

    def accesses(self) -> tuple:
        reads = tuple((a, s, "r") for a, s, d in self.ins if a and d.const_data is None)
        return reads + tuple((a, s, "w") for a, s in self.outs if a)

    def describe(self) -> str:
        return f"operator {self.model.op_type}"


# ---------------------------------------------------------------- handles
class OpHandle:
    """aclopHandle: a call matched once (create_handle), executed many times."""

    __slots__ = ("model", "op_type", "in_descs", "out_descs", "attr", "handle")

    def __init__(self, op_type, in_descs, out_descs, attr: OpAttr | None):
        attr = attr or _EMPTY
        for role, descs in (("input", in_descs), ("output", out_descs)):
            for i, d in enumerate(descs):
                # op.cpp, aclopCreateHandle: a handle cannot take host memory (its value would be
                # a const matched at each call), so a non-const desc placed in host memory is refused
                if d.memtype != ACL_MEMTYPE_DEVICE and d.const_data is None:
                    raise NpuError(f"{role} desc {i} is placed in host memory (set_tensor_place_ment); "
                                   "create_handle takes device-placed or const descs only",
                                   C.ACL_ERROR_API_NOT_SUPPORT)
        self.model = registry.find(op_type, in_descs, out_descs, attr.key())
        self.op_type = op_type
        self.in_descs = [d.copy() for d in in_descs]
        self.out_descs = [d.copy() for d in out_descs]
        self.attr = attr
        self.handle = 0

    def execute(self, inputs, outputs, stream) -> int | None:
        if len(inputs) != len(self.in_descs):
            raise NpuError(f"the handle was created for {len(self.in_descs)} input(s), got {len(inputs)} buffer(s)",
                           C.ACL_ERROR_OP_INPUT_NOT_MATCH)
        if len(outputs) != len(self.out_descs):
            raise NpuError(f"the handle was created for {len(self.out_descs)} output(s), got {len(outputs)} "
                           "buffer(s)", C.ACL_ERROR_OP_OUTPUT_NOT_MATCH)
        return execute(self.op_type, self.in_descs, inputs, self.out_descs, outputs, self.attr, stream,
                       update_outputs=False, model=self.model)


# ---------------------------------------------------------------- shapes on the host
def infer_shape(op_type: str, in_descs, inputs, out_descs, attr: OpAttr | None) -> None:
    """Output dims from the input descs (const inputs and shape inputs read on the host)."""
    op = OPS.get(op_type)
    if op is None:
        raise NpuError(f"operator type {op_type!r} is not in npurt's operator library", C.ACL_ERROR_OP_NOT_FOUND)
    arrays = []
    for i, desc in enumerate(in_descs):
        if absent(desc):
            arrays.append(None)
            continue
        if any(d < 0 for d in desc.dims):
            raise InvalidValueError(f"input {i} has dynamic dims {desc.dims}; infer_shape needs concrete ones")
        const = desc.const_array()
        if const is not None:
            arrays.append(const)
        elif i in op.shape_inputs and i < len(inputs) and inputs[i].data:
            arrays.append(read_input(inputs[i].data, inputs[i].size, desc).copy())
        elif i in op.shape_inputs:
            raise InvalidValueError(f"input {i} of {op_type} decides the output shape: give its value (a const desc "
                                    "or a buffer)")
        else:
            arrays.append(np.zeros(desc.dims, desc.numpy_dtype()))
    ys = evaluate(op_type, arrays, in_descs, attr or _EMPTY, len(out_descs))
    for desc, y in zip(out_descs, ys):
        desc.dims = list(y.shape)


def output_nbytes(desc: TensorDesc) -> int:
    return prod(desc.dims) * desc.numpy_dtype().itemsize
