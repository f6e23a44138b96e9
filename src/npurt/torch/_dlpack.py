"""Real PrivateUse1 tensors at npurt device addresses, made through DLPack.

`torch._C._from_dlpack` turns a DLManagedTensor whose device type is kDLExtDev into a tensor
on "npu:<index>" whose storage `data_ptr()` is the address we put in it. The structs live in
slots of a few ctypes slabs (no ctypes objects per tensor: filling a slot is one
`struct.pack_into`); the deleter, one global C callback, runs when torch frees the storage and
hands the slot back and calls `owner[0](owner)` (for npu storages: memory.release, which
frees the npurt block), so torch's refcount drives npurt's stream-ordered free.
"""
from __future__ import annotations

import ctypes
import struct

import torch

KDL_EXT_DEV = 12  # DLDeviceType kDLExtDev: torch maps it to PrivateUse1
# DLDataTypeCode: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6
DL_TYPES = {
    torch.float32: (2, 32), torch.float64: (2, 64), torch.float16: (2, 16), torch.bfloat16: (4, 16),
    torch.int64: (0, 64), torch.int32: (0, 32), torch.int16: (0, 16), torch.int8: (0, 8),
    torch.uint8: (1, 8), torch.bool: (6, 8), torch.complex64: (5, 64), torch.complex128: (5, 128),
}

# DLManagedTensor: DLTensor {data, device {type, id}, ndim, dtype {code, bits, lanes}, shape*,
# strides*, byte_offset}, manager_ctx, deleter: 64 bytes, then our shape and strides arrays
_HEADER = struct.Struct("<QiiiBBHQQQQQ")
_SLOT = 256
_MAX_NDIM = (_SLOT - _HEADER.size) // 16
_PER_SLAB = 1024
_PACK = [struct.Struct(_HEADER.format + f"{2 * n}q") for n in range(_MAX_NDIM + 1)]  # header + dims

_pycapsule_new = ctypes.pythonapi.PyCapsule_New
_pycapsule_new.restype = ctypes.py_object
_pycapsule_new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
_from_dlpack = torch._C._from_dlpack

_slabs: list = []                 # ctypes buffers (never freed: slots are recycled)
_views: dict[int, tuple] = {}     # slot address -> (memoryview of its slab, offset)
_free: list[int] = []             # free slot addresses
_owners: dict[int, object] = {}   # slot address -> owner (released by the deleter)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _deleter(slot: int, _owners=_owners, _free=_free) -> None:
    # runs in whatever thread drops the last reference, possibly during interpreter shutdown
    # (hence the tables bound as defaults); never raise into C
    owner = _owners.pop(slot, None)
    _free.append(slot)
    if owner is not None:
        try:
            owner[0](owner)
        except Exception:  # noqa: BLE001 - interpreter shutdown or a torn-down runtime
            pass


# torch keeps the pointer as long as any storage lives, which can be past this module's
# teardown: the trampoline must never be freed
ctypes.pythonapi.Py_IncRef(ctypes.py_object(_deleter))
_DELETER = ctypes.cast(_deleter, ctypes.c_void_p).value


def _grow() -> None:
    buf = ctypes.create_string_buffer(_SLOT * _PER_SLAB)
    _slabs.append(buf)
    view = memoryview(buf).cast("B")
    base = ctypes.addressof(buf)
    for i in range(_PER_SLAB - 1, -1, -1):
        _views[base + i * _SLOT] = (view, i * _SLOT)
        _free.append(base + i * _SLOT)


def tensor_at(ptr: int, shape, strides, dtype: torch.dtype, index: int, owner: tuple) -> torch.Tensor:
    """A tensor on npu:`index` over device memory at `ptr` (strides in elements); once torch
    frees the storage, `owner[0](owner)` is called."""
    code = DL_TYPES.get(dtype)
    if code is None:  # a dtype DLPack cannot carry: a byte tensor reinterpreted
        return _reinterpreted(ptr, shape, strides, dtype, index, owner)
    ndim = len(shape)
    if ndim > _MAX_NDIM:
        raise RuntimeError(f"npu tensors support at most {_MAX_NDIM} dimensions, got {ndim}")
    try:
        slot = _free.pop()
    except IndexError:
        _grow()
        slot = _free.pop()
    view, off = _views[slot]
    dims = slot + _HEADER.size
    _PACK[ndim].pack_into(view, off, ptr, KDL_EXT_DEV, index, ndim, code[0], code[1], 1, dims,
                          dims + 8 * ndim, 0, 0, _DELETER, *shape, *strides)
    _owners[slot] = owner
    try:
        return _from_dlpack(_pycapsule_new(slot, b"dltensor", None))
    except BaseException:
        _owners.pop(slot, None)
        _free.append(slot)
        raise


def _reinterpreted(ptr, shape, strides, dtype, index, owner) -> torch.Tensor:
    itemsize = torch.empty((), dtype=dtype).element_size()
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides) if n > 0) if all(shape) else 0
    raw = tensor_at(ptr, (span * itemsize,), (1,), torch.uint8, index, owner)
    return raw.view(dtype).as_strided(shape, strides)
