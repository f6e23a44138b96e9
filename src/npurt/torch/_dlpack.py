"""Real tensors at addresses we choose, made through DLPack: npu tensors over npurt device
memory, and CPU tensors over the host views of it.

`torch._C._from_dlpack` turns a DLManagedTensor whose device type is kDLExtDev into a tensor
on "npu:<index>" whose storage `data_ptr()` is the address in it. The DLManagedTensor comes
from numpy: a one-element array (of a subclass that remembers the npurt allocation) exports
a capsule, whose fields are then rewritten (address, device, dtype, shape, strides). numpy's
deleter is C code that drops the array, so when torch frees the storage the allocation is
released by the array's finalizer. That is the point of the detour: a deleter written in
Python (a ctypes callback) runs while torch may be unwinding with an exception set, and
replaces that exception with a SystemError; Python runs finalizers with the exception saved.

Fields are read and written through one memoryview over the process's address space (only
at addresses of capsules numpy just made for us).
"""
from __future__ import annotations

import ctypes
import struct

import numpy as np
import torch

KDL_CPU = 1
KDL_EXT_DEV = 12  # DLDeviceType kDLExtDev: torch maps it to PrivateUse1
# DLDataTypeCode: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6
DL_TYPES = {
    torch.float32: (2, 32), torch.float64: (2, 64), torch.float16: (2, 16), torch.bfloat16: (4, 16),
    torch.int64: (0, 64), torch.int32: (0, 32), torch.int16: (0, 16), torch.int8: (0, 8),
    torch.uint8: (1, 8), torch.bool: (6, 8), torch.complex64: (5, 64), torch.complex128: (5, 128),
}

_MEM = memoryview((ctypes.c_char * (1 << 47)).from_address(0)).cast("B")
_U64 = struct.Struct("<Q")
# DLTensor's first fields: data, device {type, id}, ndim, dtype {code, bits, lanes}
_HEAD = struct.Struct("<QiiiBBH")
_DIMS = [struct.Struct(f"<{n}q") for n in range(65)]
_ONES = [(1,) * n for n in range(65)]
_CAPSULE_POINTER = 16  # offset of PyCapsule's pointer (after PyObject_HEAD)
_SCRATCH = np.zeros(8, np.float32)
_F32 = np.dtype(np.float32)
_new = np.ndarray.__new__
_from_dlpack = torch._C._from_dlpack


class _Owned(np.ndarray):
    """The array behind an npu storage; its finalizer calls owner[0](owner)."""

    def __del__(self):
        try:
            owner = self.__dict__.pop("owner", None)
            if owner is not None:
                owner[0](owner)
        except Exception:  # noqa: BLE001 - interpreter shutdown or a torn-down runtime
            pass


def tensor_at(ptr: int, shape, strides, dtype: torch.dtype, index: int, owner: tuple | None,
              device_type: int = KDL_EXT_DEV) -> torch.Tensor:
    """A tensor on npu:`index` (or the CPU) over memory at `ptr`, strides in elements; once
    torch frees the storage, `owner[0](owner)` is called (if there is an owner)."""
    code = DL_TYPES.get(dtype)
    if code is None:  # a dtype DLPack cannot carry: a byte tensor reinterpreted
        return _reinterpreted(ptr, shape, strides, dtype, index, owner, device_type)
    ndim = len(shape)
    if owner is None:
        arr = _new(np.ndarray, _ONES[ndim], _F32, _SCRATCH)
    else:
        arr = _new(_Owned, _ONES[ndim], _F32, _SCRATCH)
        arr.owner = owner
    capsule = arr.__dlpack__()
    mem = _MEM
    p = _U64.unpack_from(mem, id(capsule) + _CAPSULE_POINTER)[0]
    _HEAD.pack_into(mem, p, ptr, device_type, index, ndim, code[0], code[1], 1)
    if ndim:  # numpy's shape and strides arrays (their pointers follow dtype in DLTensor)
        dims = _DIMS[ndim]
        dims.pack_into(mem, _U64.unpack_from(mem, p + 24)[0], *shape)
        dims.pack_into(mem, _U64.unpack_from(mem, p + 32)[0], *strides)
    return _from_dlpack(capsule)


def _reinterpreted(ptr, shape, strides, dtype, index, owner, device_type) -> torch.Tensor:
    itemsize = torch.empty((), dtype=dtype).element_size()
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides) if n > 0) if all(shape) else 0
    raw = tensor_at(ptr, (span * itemsize,), (1,), torch.uint8, index, owner, device_type)
    return raw.view(dtype).as_strided(shape, strides)


def host_tensor_at(addr: int, shape, strides, dtype: torch.dtype) -> torch.Tensor:
    """A CPU tensor over host memory at `addr` that owns nothing: its storage is exactly the
    bytes it spans (kernels that reason about their output's storage see their own)."""
    return tensor_at(addr, shape, strides, dtype, 0, None, KDL_CPU)
