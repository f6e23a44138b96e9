"""aclTensor, aclScalar, aclIntArray, aclFloatArray, aclBoolArray, aclTensorList,
aclScalarList: what acl_meta.h's create functions make, as objects behind int handles.

A tensor is a view of device memory: `data` (the device address given to aclCreateTensor),
view shape, strides and offset in elements (the element at index i lies at
data + (offset + sum(i_k * stride_k)) * itemsize, as CANN defines its view), the storage
shape and the format (only ND and the 4-D formats, which are ND-like for elementwise work).
Scalars and arrays copy their host values at creation. aclnn status codes (CANN's
aclnn common status values):

| situation | code |
| --- | --- |
| a NULL tensor / scalar / array / output pointer | ACLNN_ERR_PARAM_NULLPTR 161001 |
| a bad value: shapes, dtypes, dims, workspace too small, a stale handle | ACLNN_ERR_PARAM_INVALID 161002 |
| the runtime refused a launch (stream, device memory) | ACLNN_ERR_RUNTIME_ERROR 361001 |
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import numpy as np

from ...runtime import fork_safe_lock
from ...runtime import dtypes as _dtypes
from ...runtime import NpuError, handle_table

ACLNN_SUCCESS = 0
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002
ACLNN_ERR_RUNTIME_ERROR = 361001

ACL_FORMAT_ND = 2
_FORMATS = {-1, 0, 1, 2, 3, 4, 27, 29, 30, 31, 32}  # UNDEFINED NCHW NHWC ND NC1HWC0 ... NCDHW NDHWC NCL


STATUS_NAMES = {ACLNN_ERR_PARAM_NULLPTR: "ACLNN_ERR_PARAM_NULLPTR", ACLNN_ERR_PARAM_INVALID: "ACLNN_ERR_PARAM_INVALID",
                ACLNN_ERR_RUNTIME_ERROR: "ACLNN_ERR_RUNTIME_ERROR"}


class AclnnError(NpuError):
    """A failure of an aclnn call, with its aclnn status code."""

    def __str__(self) -> str:
        return f"{self.message} [{STATUS_NAMES.get(self.code, 'aclnnStatus')} {self.code}]"


def null(name: str) -> AclnnError:
    return AclnnError(f"{name} is NULL", ACLNN_ERR_PARAM_NULLPTR)


def invalid(message: str) -> AclnnError:
    return AclnnError(message, ACLNN_ERR_PARAM_INVALID)


def numpy_dtype(data_type: int, what: str) -> np.dtype:
    try:
        return _dtypes.to_numpy(data_type)
    except NpuError:
        raise invalid(f"{what}: data type {data_type} is not supported") from None


def acl_dtype(dtype: np.dtype) -> int:
    return _dtypes.from_numpy(dtype)


@dataclass(frozen=True)
class Tensor:
    """An aclTensor (immutable: an executor keeps the tensors it planned with)."""
    shape: tuple
    strides: tuple
    offset: int
    dtype: np.dtype
    data_type: int
    format: int
    storage: tuple
    data: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def is_contiguous(self) -> bool:
        return self.strides == contiguous_strides(self.shape) or self.numel <= 1

    @property
    def address(self) -> int:
        """Address of the view's first element."""
        return self.data + self.offset * self.itemsize

    def describe(self) -> str:
        return f"aclTensor(shape={list(self.shape)}, dtype={self.dtype.name}, strides={list(self.strides)})"


def contiguous_strides(shape) -> tuple:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Scalar:
    value: object          # a numpy scalar of `dtype`
    dtype: np.dtype
    data_type: int


@dataclass(frozen=True)
class Array:
    kind: str              # "int array", "float array", "bool array", "tensor list", "scalar list"
    values: tuple


TENSORS = handle_table("aclnn tensor")
SCALARS = handle_table("aclnn scalar")
ARRAYS = handle_table("aclnn array")
_lock = fork_safe_lock()


def _add(table, obj) -> int:
    with _lock:
        return table.add(obj)


def _get(table, handle, what: str):
    if not handle:
        raise null(what)
    obj = table.lookup(handle)
    if obj is None:
        raise invalid(f"{what} 0x{handle:x} is not a live {table.kind} (destroyed, or another kind of object)")
    return obj


def tensor(handle, what: str = "tensor") -> Tensor:
    return _get(TENSORS, handle, what)


def optional_tensor(handle, what: str) -> Tensor | None:
    return tensor(handle, what) if handle else None


def scalar(handle, what: str = "scalar") -> Scalar:
    return _get(SCALARS, handle, what)


def array(handle, kind: str, what: str) -> Array:
    a = _get(ARRAYS, handle, what)
    if a.kind != kind:
        raise invalid(f"{what} is an acl{a.kind.title().replace(' ', '')}, not an acl{kind.title().replace(' ', '')}")
    return a


# ---------------------------------------------------------------- create / destroy
def create_tensor(view_dims, ndim, data_type, strides, offset, fmt, storage_dims, storage_ndim, data) -> int:
    """aclCreateTensor; `view_dims`, `strides`, `storage_dims`: indexable (C int64_t*) or None."""
    if ndim and not view_dims:
        raise null("viewDims")
    if not 0 <= ndim <= 8:
        raise invalid(f"viewDimsNum {ndim} is outside [0, 8]")
    shape = tuple(int(view_dims[i]) for i in range(ndim))
    if any(d < 0 for d in shape):
        raise invalid(f"viewDims {list(shape)} has a negative dimension")
    dtype = numpy_dtype(data_type, "aclCreateTensor")
    if strides:
        st = tuple(int(strides[i]) for i in range(ndim))
        if any(s < 0 for s in st):
            raise invalid(f"stride {list(st)} has a negative entry")
    else:
        st = contiguous_strides(shape)
    if offset < 0:
        raise invalid(f"offset {offset} is negative")
    if fmt not in _FORMATS:
        raise invalid(f"format {fmt} is not a format aclnn takes here (ND, NCHW, NHWC, ...)")
    if storage_ndim and not storage_dims:
        raise null("storageDims")
    storage = tuple(int(storage_dims[i]) for i in range(storage_ndim)) if storage_ndim else shape
    return _add(TENSORS, Tensor(shape, st, int(offset), dtype, int(data_type), int(fmt), storage, int(data or 0)))


def create_scalar(value_addr: int, data_type: int) -> int:
    """aclCreateScalar: copies the value at host address `value_addr`."""
    if not value_addr:
        raise null("value")
    dtype = numpy_dtype(data_type, "aclCreateScalar")
    raw = ctypes.string_at(value_addr, dtype.itemsize)
    return _add(SCALARS, Scalar(np.frombuffer(raw, dtype)[0], dtype, int(data_type)))


def create_array(kind: str, values, size: int) -> int:
    if size and not values:
        raise null("value")
    if size < 0:
        raise invalid(f"size {size} is negative")
    return _add(ARRAYS, Array(kind, tuple(values[i] for i in range(size))))


def create_bool_array(addr: int, size: int) -> int:
    if size and not addr:
        raise null("value")
    raw = ctypes.string_at(addr, size) if size else b""
    return _add(ARRAYS, Array("bool array", tuple(bool(b) for b in raw)))


def create_tensor_list(handles, size: int) -> int:
    if size and not handles:
        raise null("value")
    items = tuple(int(handles[i]) for i in range(size))
    for i, h in enumerate(items):
        tensor(h, f"value[{i}]")
    return _add(ARRAYS, Array("tensor list", items))


def create_scalar_list(handles, size: int) -> int:
    if size and not handles:
        raise null("value")
    items = tuple(int(handles[i]) for i in range(size))
    for i, h in enumerate(items):
        scalar(h, f"value[{i}]")
    return _add(ARRAYS, Array("scalar list", items))


def destroy(table, handle, what: str, kind: str | None = None) -> None:
    obj = _get(table, handle, what)
    if kind is not None and obj.kind != kind:
        raise invalid(f"{what} is an {obj.kind}, not an {kind}")
    with _lock:
        table.remove(handle)

