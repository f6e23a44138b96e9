"""aclnn from C (aclnn/acl_meta.h, aclnn/aclnn_base.h, aclnnop/aclnn_*.h): the tensor
objects and the two phases of every operator of `npurt.capi.aclnn.optable`.

Pointer-returning create functions return NULL on failure (and record the error for
aclGetRecentErrMsg); the others return an aclnnStatus (npurt.capi.aclnn.objects).
"""
from __future__ import annotations

import ctypes

from ... import runtime as rt
from ..aclnn import objects as O
from ..aclnn import optable as T
from ..aclnn import plans as P
from ..registry import c_function
from . import dump
from ._common import note_task, stream_of

_libc = ctypes.CDLL(None)
_libc.malloc.restype = ctypes.c_void_p
_libc.malloc.argtypes = (ctypes.c_size_t,)


@c_function("aclCreateTensor")
def aclCreateTensor(viewDims, viewDimsNum, dataType, stride, offset, format, storageDims, storageDimsNum,
                    tensorData):
    return O.create_tensor(viewDims, viewDimsNum, dataType, stride, offset, format, storageDims, storageDimsNum,
                           tensorData)


@c_function("aclCreateScalar")
def aclCreateScalar(value, dataType):
    return O.create_scalar(value, dataType)


@c_function("aclCreateIntArray")
def aclCreateIntArray(value, size):
    return O.create_array("int array", value, size)


@c_function("aclCreateFloatArray")
def aclCreateFloatArray(value, size):
    return O.create_array("float array", value, size)


@c_function("aclCreateBoolArray")
def aclCreateBoolArray(value, size):
    return O.create_bool_array(value, size)


@c_function("aclCreateTensorList")
def aclCreateTensorList(value, size):
    return O.create_tensor_list(value, size)


@c_function("aclCreateScalarList")
def aclCreateScalarList(value, size):
    return O.create_scalar_list(value, size)


@c_function("aclDestroyTensor")
def aclDestroyTensor(tensor):
    O.destroy(O.TENSORS, tensor, "tensor")
    return 0


@c_function("aclDestroyScalar")
def aclDestroyScalar(scalar):
    O.destroy(O.SCALARS, scalar, "scalar")
    return 0


def _destroy_array(kind):
    def destroy(array):
        O.destroy(O.ARRAYS, array, "array", kind)
        return 0
    return destroy


for _name, _kind in (("aclDestroyIntArray", "int array"), ("aclDestroyFloatArray", "float array"),
                     ("aclDestroyBoolArray", "bool array"), ("aclDestroyTensorList", "tensor list"),
                     ("aclDestroyScalarList", "scalar list")):
    c_function(_name)(_destroy_array(_kind))


def _dims_out(values, p_dims, p_num, what: str) -> int:
    if not p_dims:
        raise O.null(what)
    if not p_num:
        raise O.null(f"{what}Num")
    n = len(values)
    buf = _libc.malloc(max(8 * n, 8))  # the caller frees it (free / delete[])
    (ctypes.c_int64 * n).from_address(buf)[:] = list(values)
    p_dims[0] = buf
    p_num[0] = n
    return 0


@c_function("aclGetViewShape")
def aclGetViewShape(tensor, viewDims, viewDimsNum):
    return _dims_out(O.tensor(tensor).shape, viewDims, viewDimsNum, "viewDims")


@c_function("aclGetStorageShape")
def aclGetStorageShape(tensor, storageDims, storageDimsNum):
    return _dims_out(O.tensor(tensor).storage, storageDims, storageDimsNum, "storageDims")


@c_function("aclGetViewStrides")
def aclGetViewStrides(tensor, stridesValue, stridesNum):
    return _dims_out(O.tensor(tensor).strides, stridesValue, stridesNum, "stridesValue")


def _out(p, name, value):
    if not p:
        raise O.null(name)
    p[0] = value
    return 0


@c_function("aclGetViewOffset")
def aclGetViewOffset(tensor, offset):
    return _out(offset, "offset", O.tensor(tensor).offset)


@c_function("aclGetFormat")
def aclGetFormat(tensor, format):
    return _out(format, "format", O.tensor(tensor).format)


@c_function("aclGetDataType")
def aclGetDataType(tensor, dataType):
    return _out(dataType, "dataType", O.tensor(tensor).data_type)


def _size_getter(kind):
    def get(array, size):
        return _out(size, "size", len(O.array(array, kind, "array").values))
    return get


for _name, _kind in (("aclGetIntArraySize", "int array"), ("aclGetFloatArraySize", "float array"),
                     ("aclGetBoolArraySize", "bool array")):
    c_function(_name)(_size_getter(_kind))


@c_function("aclGetTensorListSize")
def aclGetTensorListSize(tensorList, size):
    return _out(size, "size", len(O.array(tensorList, "tensor list", "tensorList").values))


@c_function("aclnnInit")
def aclnnInit(configPath):
    return 0  # the op library needs no set-up here; the runtime is initialised by aclInit


@c_function("aclnnFinalize")
def aclnnFinalize():
    return 0


@c_function("aclSetAclOpExecutorRepeatable")
def aclSetAclOpExecutorRepeatable(executor):
    P.executor(executor).repeatable = True
    return 0


@c_function("aclDestroyAclOpExecutor")
def aclDestroyAclOpExecutor(executor):
    P.destroy_executor(executor)
    return 0


def _register(op: T.Op) -> None:
    names = [n for _, n in op.params]

    def first(*args):
        values = dict(zip(names, args))
        workspace_size, executor = args[len(names)], args[len(names) + 1]
        if not workspace_size:
            raise O.null("workspaceSize")
        if not executor:
            raise O.null("executor")
        size, handle = T.get_workspace_size(op.name, values)
        workspace_size[0] = size
        executor[0] = handle
        return 0

    def second(workspace, workspaceSize, executor, stream):
        s = rt.stream_of(stream_of(stream))
        tensors = P.executor(executor).tensors
        note_task(P.run_executor(executor, workspace, workspaceSize, s, op.name))
        if dump.dumping():
            dump.dump_after(s, op.name, tensors)
        return 0

    first.__name__ = f"aclnn{op.name}GetWorkspaceSize"
    second.__name__ = f"aclnn{op.name}"
    c_function(first.__name__)(first)
    c_function(second.__name__)(second)


for _op in T.OPS:
    _register(_op)
