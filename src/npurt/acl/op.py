"""acl.op: single-operator execution, with pyACL's names, argument parsing and return shapes
(python/pyACL/op/op.cpp), on npurt's graph engine (npurt.ge.ops).

Compile op models with `npurt atc --singleop=ops.json --output=dir`, register them with
`set_model_dir(dir)` (once per process) or `load(ptr, size)`, describe inputs and outputs
with `acl.create_tensor_desc` / `acl.create_data_buffer`, attributes with `create_attr` and
the `set_attr_*` family, then `execute_v2` (or `create_handle` + `execute_with_handle`, or
`cast`) on a stream. A call runs the registered model its op type, descs and attributes
match; none: ACL_ERROR_OP_NOT_FOUND (100024).
"""
from __future__ import annotations

import logging
import struct
import warnings

from ..ge.ops import execute as X
from ..ge.ops import kernels as K
from ..ge.ops import registry
from ..ge.ops.attrs import OpAttr as _OpAttr, acl_to_ge_type as _acl_to_ge_type
from ..ge.tensor import DataBuffer as _DataBuffer
from ..runtime import (InvalidValueError as _InvalidValueError, NpuError as _NpuError, constants as C,
                       host_bytes as _host_bytes)
from . import _handles as H
from ._args import Api as _Api, ArgTypeError as _ArgTypeError, ArgValueError as _ArgValueError
from ._args import handle_list as _handle_list
from ._wrap import stream_of as _stream_of
from ..ge.ops import registry

op = _Api("acl.op")
_log = logging.getLogger("npurt.acl.op")
_attrs, _descs, _buffers = H.op_attrs, H.tensor_descs, H.buffers


def _attr(handle) -> _OpAttr | None:
    return _attrs.get(handle) if handle else None


def _desc_list(handles) -> list:
    return [_descs.get(h) for h in handles]


def _buffer_list(handles) -> list:
    return [_buffers.get(h) for h in handles]


# ---------------------------------------------------------------- registration
@op.fn("s", "ret")
def set_model_dir(model_dir):
    """Register every single-op .om under `model_dir` (3 levels deep); once per process."""
    registry.set_model_dir(model_dir)


@op.fn("kk", "ret")
def load(model, model_size):
    """Register one single-op model from host memory."""
    if not model_size:
        raise _InvalidValueError("model_size must not be 0")
    registry.load(_host_bytes(model, model_size, "op model"))


@op.fn("K", "ret")
def set_max_op_queue_num(max_op_num):
    """Capacity of the matched-model cache; 0 is invalid."""
    registry.set_max_queue(max_op_num)


# ---------------------------------------------------------------- attributes
@op.fn(None, "value", 0)
def create_attr():
    return _attrs.register(_OpAttr())


@op.fn("k", "none")
def destroy_attr(attr):
    if attr:
        _attrs.drop(_attrs.get(attr))


def _set(attr, name, kind, value):
    a = _attrs.get(attr)
    a.set(name, kind, value)


@op.fn("ksB", "ret")
def set_attr_bool(attr, attr_name, attr_value):
    _set(attr, attr_name, "bool", attr_value)


@op.fn("ksL", "ret")
def set_attr_int(attr, attr_name, attr_value):
    _set(attr, attr_name, "int", attr_value)


@op.fn("ksf", "ret")
def set_attr_float(attr, attr_name, attr_value):
    _set(attr, attr_name, "float", attr_value)


@op.fn("kss", "ret")
def set_attr_string(attr, attr_name, attr_value):
    _set(attr, attr_name, "string", attr_value)


def _values(obj, kind: str) -> list:
    """A list argument (or, with the real wrapper's deprecation warning, a numpy array)."""
    if isinstance(obj, list):
        out = []
        for v in obj:
            if kind == "float":
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    raise _ArgTypeError("invalid data type")
                out.append(float(v))
            else:
                if not isinstance(v, int):
                    raise _ArgTypeError("invalid data type")
                if kind == "bool" and not 0 <= v <= 255:
                    raise _ArgValueError("the value must between 0 and 255")
                if kind == "int" and not -(1 << 63) <= v < (1 << 63):
                    raise _ArgValueError("PyLong_AsLongLong failed")
                out.append(int(v))
        return out
    import numpy as np
    warnings.warn("argument 3 only support the format of list in the future.", Warning, stacklevel=3)
    if not isinstance(obj, np.ndarray):
        raise _ArgTypeError("argument 3 is not list or numpy array")
    return obj.ravel().tolist()


@op.fn("ksO", "ret")
def set_attr_list_bool(attr, attr_name, values):
    _set(attr, attr_name, "list_bool", _values(values, "bool"))


@op.fn("ksO", "ret")
def set_attr_list_int(attr, attr_name, values):
    _set(attr, attr_name, "list_int", _values(values, "int"))


@op.fn("ksO", "ret")
def set_attr_list_float(attr, attr_name, values):
    _set(attr, attr_name, "list_float", _values(values, "float"))


@op.fn("ksO", "ret")
def set_attr_list_string(attr, attr_name, values):
    if not isinstance(values, list):
        raise _ArgTypeError("argument 3 is not list")
    if not all(isinstance(v, str) for v in values):
        raise _ArgTypeError("the list argument is not list of str")
    _set(attr, attr_name, "list_string", values)


@op.fn("ksO", "ret")
def set_attr_list_list_int(attr, attr_name, values):
    if not isinstance(values, list):
        raise _ArgTypeError("argument 3 is not list")
    rows = [_values(row, "int") if isinstance(row, list) else _values(row, "int") for row in values]
    _set(attr, attr_name, "list_list_int", rows)


@op.fn("ksi", "echo")
def set_attr_data_type(attr, attr_name, attr_value):
    """(attr, ret): the real wrapper echoes the attr handle back."""
    _set(attr, attr_name, "data_type", _acl_to_ge_type(attr_value))


@op.fn("ksO", "echo")
def set_attr_list_data_type(attr, attr_name, values):
    if not isinstance(values, list):
        raise _ArgTypeError("the third argument is not list")
    if not all(isinstance(v, int) for v in values):
        raise _ArgTypeError("the list argument is not list of int")
    _set(attr, attr_name, "list_data_type", [_acl_to_ge_type(int(v)) for v in values])


# ---------------------------------------------------------------- execution
_LISTS4 = "argument 2, 3, 4, or 5 is not list"


def _lists(*objs, message):
    if not all(isinstance(o, list) for o in objs):
        raise _ArgTypeError(message)
    return [_handle_list(o, message) for o in objs]


@op.fn("sOOOOkk", "ret")
def execute_v2(op_type, input_desc, inputs, output_desc, outputs, attr, stream):
    """Run an operator on `stream` (asynchronous; synchronize before reading outputs). For a
    dynamic-shape operator the output descs get the real output dims."""
    in_d, in_b, out_d, out_b = _lists(input_desc, inputs, output_desc, outputs, message=_LISTS4)
    X.execute(op_type, _desc_list(in_d), _buffer_list(in_b), _desc_list(out_d), _buffer_list(out_b), _attr(attr),
              _stream_of(stream))


@op.fn("sOOOOkk", "ret")
def execute(op_type, input_desc, inputs, output_desc, outputs, attr, stream):
    """Deprecated predecessor of execute_v2 (the output descs are not updated)."""
    in_d, in_b, out_d, out_b = _lists(input_desc, inputs, output_desc, outputs, message=_LISTS4)
    X.execute(op_type, _desc_list(in_d), _buffer_list(in_b), _desc_list(out_d), _buffer_list(out_b), _attr(attr),
              _stream_of(stream), update_outputs=False)


@op.fn("sOOk", "one", 0)
def create_handle(op_type, input_desc, output_desc, attr):
    """(handle, ret): match once; run with execute_with_handle. No match: (0, 100024)."""
    in_d, out_d = _lists(input_desc, output_desc, message="argument 2 or 3 is not list")
    return H.op_handles.register(X.OpHandle(op_type, _desc_list(in_d), _desc_list(out_d), _attr(attr)))


@op.fn("kOOk", "ret")
def execute_with_handle(handle, inputs, outputs, stream):
    in_b, out_b = _lists(inputs, outputs, message="argument 2 or 3 is not list")
    H.op_handles.get(handle).execute(_buffer_list(in_b), _buffer_list(out_b), _stream_of(stream))


@op.fn("k", "none")
def destroy_handle(handle):
    if handle:
        H.op_handles.drop(H.op_handles.get(handle))


def _cast_attr(dst_desc, truncate) -> _OpAttr:
    """The attributes aclopCast builds: dst_type, and truncate once a registered Cast model
    has that attribute (cast_op.cpp, GetIfCastHasTruncateAttr)."""
    attr = _OpAttr()
    if registry.cast_has_truncate:
        attr.set("truncate", "bool", bool(truncate))
    attr.set("dst_type", "int", _acl_to_ge_type(_descs.get(dst_desc).data_type))
    return attr


@op.fn("kkkkBk", "ret")
def cast(src_desc, src_buffer, dst_desc, dst_buffer, truncate, stream):
    """The Cast operator (attribute dst_type = the destination desc's data type)."""
    if not dst_desc:
        raise _InvalidValueError("the destination tensor desc is null")
    X.execute("Cast", [_descs.get(src_desc)], [_buffers.get(src_buffer)], [_descs.get(dst_desc)],
              [_buffers.get(dst_buffer)], _cast_attr(dst_desc, truncate), _stream_of(stream))


@op.fn("kkB", "one", 0)
def create_handle_for_cast(src_desc, dst_desc, truncate):
    if not dst_desc:
        raise _InvalidValueError("the destination tensor desc is null")
    return H.op_handles.register(X.OpHandle("Cast", [_descs.get(src_desc)], [_descs.get(dst_desc)],
                                            _cast_attr(dst_desc, truncate)))


@op.fn("sOOk", "ret")
def update_params(op_type, input_desc, output_desc, attr):
    """Compile an operator for these descs: with a registered compile function it is called to
    pick the kernel (register_compile_func); otherwise a registered model must cover them."""
    in_d, out_d = _lists(input_desc, output_desc, message="argument 2 or 3 is not list")
    in_descs, out_descs = _desc_list(in_d), _desc_list(out_d)
    a = _attr(attr) or _OpAttr()
    if K.has_selector(op_type):
        def call(func, kernel_desc):
            handle = H.kernel_descs.register(kernel_desc)
            try:
                func(len(in_d), list(in_d), len(out_d), list(out_d), attr, handle)
            except Exception:  # noqa: BLE001 - the real wrapper logs a failing callback and goes on
                _log.exception("acl.op: the compile function of %s raised", op_type)
            finally:
                H.kernel_descs.drop(kernel_desc)
        K.select(op_type, in_descs, out_descs, a, call)
        return
    registry.find(op_type, in_descs, out_descs, a.key())


@op.fn("sOOiOk", "ret")
def infer_shape(op_type, input_desc, inputs, num_outputs, output_desc, attr):
    """Write the output dims an operator gives for these inputs into the output descs."""
    in_d, in_b, out_d = _lists(input_desc, inputs, output_desc, message="argument 2, 3, or 5 is not list")
    if num_outputs != len(out_d):
        raise _InvalidValueError(f"num_outputs ({num_outputs}) must equal the number of output descs ({len(out_d)})")
    X.infer_shape(op_type, _desc_list(in_d), [_buffers.get(b) if b else _DataBuffer() for b in in_b],
                  _desc_list(out_d), _attr(attr))


# ---------------------------------------------------------------- kernels of the application
def register_compile_func(*args):
    """Register `func(num_inputs, input_descs, num_outputs, output_descs, attr, kernel_desc)`,
    called by update_params to pick the kernel of `op_type` (set_kernel_args inside)."""
    if len(args) != 2 or not isinstance(args[0], str) or "\0" in args[0]:
        raise TypeError("acl.op.register_compile_func args parse failed")
    if not callable(args[1]):
        raise TypeError("argument 2 must be a callback function.")
    return _register_compile_func(*args)


@op.fn("sO", "ret", name="register_compile_func")
def _register_compile_func(op_type, func):
    K.register_compile_func(op_type, func)


register_compile_func.pyacl_parsing = True
op.names.append("register_compile_func")


@op.fn("s", "ret")
def unregister_compile_func(op_type):
    K.unregister_compile_func(op_type)


@op.fn("ssskiii", "ret")
def create_kernel(op_type, kernel_id, kernel_name, bin_ptr, bin_size, engine_type, deallocator):
    """Register kernel `kernel_name` of a kernel binary (a Python file of npurt @kernel
    functions, `bin_size` bytes of host memory) as `kernel_id` of `op_type`."""
    if bin_size <= 0:
        raise _InvalidValueError("bin_size must be positive")
    K.create_kernel(op_type, kernel_id, kernel_name, _host_bytes(bin_ptr, bin_size, "kernel binary"), engine_type)


@op.fn("ksIkI", "ret")
def set_kernel_args(kernel_desc, kernel_id, block_dim, args, args_size):
    """Inside a compile function: the kernel, its block count and its tiling bytes."""
    if not args:
        raise _InvalidValueError("args is null")
    K.set_kernel_args(H.kernel_descs.get(kernel_desc), kernel_id, block_dim, _host_bytes(args, args_size, "args"))


@op.fn("kik", "ret")
def set_kernel_workspace_sizes(kernel_desc, num_workspaces, workspace_sizes):
    """Inside a compile function: `num_workspaces` sizes (size_t) at host address `workspace_sizes`."""
    desc = H.kernel_descs.get(kernel_desc)
    if num_workspaces < 0:
        raise _InvalidValueError("num_workspaces must not be negative")
    raw = _host_bytes(workspace_sizes, 8 * num_workspaces, "workspace sizes") if num_workspaces else b""
    K.set_workspace_sizes(desc, list(struct.unpack(f"<{num_workspaces}Q", raw)))


# ---------------------------------------------------------------- not simulated
_DUMP = "operator argument dumps (acl.op.start_dump_args / stop_dump_args) are not simulated"


@op.fn("Is", "ret")
def start_dump_args(dump_type, path):
    raise _NpuError(f"{_DUMP}; npurt writes no dump files", C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT)


@op.fn("I", "ret")
def stop_dump_args(dump_type):
    raise _NpuError(_DUMP, C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT)


start_dump_args.not_supported = stop_dump_args.not_supported = True

__all__ = sorted(op.names)
