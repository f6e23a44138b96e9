"""Resizing an npu tensor (torch's `resize_`, and `resize_output` for `out=` tensors).

It restrides in place when the storage is large enough; else the tensor moves to a new
allocation, the old bytes copied in stream order, as torch's resize keeps them.
"""
from __future__ import annotations

import torch

from . import storage
from .optask import launch
from .plan import CPU_KEYSET
from .refs import bytes_ref


def resize_npu(t: torch.Tensor, size, memory_format=None) -> torch.Tensor:
    """torch's resize_ for an npu tensor."""
    size = tuple(size)
    if any(n < 0 for n in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(size)}")
    stride = storage.strides_for(size, memory_format)
    item = t.element_size()
    need = (t.storage_offset() * item + storage.span_bytes(size, stride, item)) if all(size) else 0
    old_storage = t.untyped_storage()
    if need <= old_storage.nbytes():
        return torch.ops.aten.resize_.default.redispatch(CPU_KEYSET, t, size, memory_format=memory_format)
    index = t.get_device()
    new = storage.empty((need,), torch.uint8, index)
    old = old_storage.nbytes()
    if old:  # keep the old bytes, in stream order
        blocks = []
        inf = storage.info(index)
        s = bytes_ref(inf, old_storage.data_ptr(), old, blocks)
        d = bytes_ref(inf, new.data_ptr(), old, blocks)
        launch(index, _copy, (d, s), None, "aten::resize_ (copy)", [s], [d], blocks)
    torch.ops.aten.set_.source_Storage_storage_offset.redispatch(
        CPU_KEYSET, t, new.untyped_storage(), t.storage_offset(), size, stride)
    return t


def _copy(dst, src) -> None:
    dst.copy_(src)
