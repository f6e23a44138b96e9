"""Real tensors at addresses we choose, made through DLPack: npu tensors over npurt device
memory, and CPU tensors over the host views of it.

`torch._C._from_dlpack` turns a DLManagedTensor whose device type is kDLExtDev into a tensor
on "npu:<index>" whose storage `data_ptr()` is the address in it. The capsule is made by
`npurt.array.dlpack.capsule_at` (the one implementation DeviceArray's `__dlpack__` uses too:
numpy's capsule of a one-element array, rewritten); when torch frees the storage, the
owner's release runs as that array's finalizer. This module holds torch's side: its dtypes
as DLPack types, and dtypes DLPack cannot carry (reinterpreted bytes).
"""
from __future__ import annotations

import torch

from ..array import dlpack as _array_dlpack
from ..array.dlpack import KDL_CPU, KDL_EXT_DEV, capsule_at as _capsule_at  # noqa: F401 - (KDL_*: this face's too)

# DLDataTypeCode: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6
DL_TYPES = {
    torch.float32: (2, 32), torch.float64: (2, 64), torch.float16: (2, 16), torch.bfloat16: (4, 16),
    torch.int64: (0, 64), torch.int32: (0, 32), torch.int16: (0, 16), torch.int8: (0, 8),
    torch.uint8: (1, 8), torch.bool: (6, 8), torch.complex64: (5, 64), torch.complex128: (5, 128),
}
_from_dlpack = torch._C._from_dlpack
# torch reads npurt's device memory in place (its "npu" device): torch.from_dlpack(DeviceArray)
_array_dlpack.add_device_consumer("torch")


def tensor_at(ptr: int, shape, strides, dtype: torch.dtype, index: int, owner: tuple | None,
              device_type: int = KDL_EXT_DEV) -> torch.Tensor:
    """A tensor on npu:`index` (or the CPU) over memory at `ptr`, strides in elements; once
    torch frees the storage, `owner[0](owner)` is called (if there is an owner)."""
    code = DL_TYPES.get(dtype)
    if code is None:  # a dtype DLPack cannot carry: a byte tensor reinterpreted
        return _reinterpreted(ptr, shape, strides, dtype, index, owner, device_type)
    return _from_dlpack(_capsule_at(ptr, shape, strides, code[0], code[1], device_type, index, owner))


def _reinterpreted(ptr, shape, strides, dtype, index, owner, device_type) -> torch.Tensor:
    itemsize = torch.empty((), dtype=dtype).element_size()
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides) if n > 0) if all(shape) else 0
    raw = tensor_at(ptr, (span * itemsize,), (1,), torch.uint8, index, owner, device_type)
    return raw.view(dtype).as_strided(shape, strides)


def host_tensor_at(addr: int, shape, strides, dtype: torch.dtype) -> torch.Tensor:
    """A CPU tensor over host memory at `addr` that owns nothing: its storage is exactly the
    bytes it spans (kernels that reason about their output's storage see their own)."""
    return tensor_at(addr, shape, strides, dtype, 0, None, KDL_CPU)
