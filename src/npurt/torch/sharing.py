"""npu tensors sent between processes with torch.multiprocessing: the storage travels as an IPC key.

torch.multiprocessing pickles a CUDA tensor as a CUDA IPC handle of its storage; an npu tensor
travels the same way as an IPC key of its npurt allocation (npurt.runtime.ipc): the receiver
imports the memory and gets an npu tensor over the sender's bytes, at the same device
address (the processes of a device namespace share the simulated devices). Writes in either
process are seen by the other, as with CUDA tensors.

The rules are torch's for CUDA tensors (docs/torch.md):
* the sender keeps the tensor alive while receivers use it. When the sender's storage is
  freed, its memory stays reserved until every receiver has dropped its tensor (the import
  closes when torch frees the received storage), then goes back to the sender's pool; a key
  not imported by then is stale (the receiver gets an error, never another tensor's bytes);
* a tensor that requires grad and is not a leaf cannot be sent (torch's message).

Registered with multiprocessing's ForkingPickler for torch.Tensor and nn.Parameter when
npurt.torch is imported, after torch.multiprocessing's own reductions, which it extends: a
tensor on another device is reduced by torch's reduce_tensor as before.
"""
from __future__ import annotations

import torch
import torch.multiprocessing  # noqa: F401 - its reductions register first; ours extend them
from multiprocessing.reduction import ForkingPickler
from torch.multiprocessing import reductions as _torch_reductions

from .. import runtime as rt
from . import _dlpack
from .storage import info, itemsize, storage_base

_torch_reduce_tensor = _torch_reductions.reduce_tensor
_SHARED: dict = {}   # id(block) -> (key, block): one export per storage, reused by every send


def _export(t: torch.Tensor) -> tuple[str, int, int]:
    """(key, storage address, storage bytes) of the storage of npu tensor `t`."""
    inf = info(t.device.index)
    base = storage_base(t)
    block = inf.live.get(base)
    if block is None:
        raise RuntimeError(f"cannot send an npu tensor whose storage at 0x{base:x} is not an allocation of "
                           f"npu:{t.device.index} (a tensor received from another process is sent by its owner)")
    nbytes = t.untyped_storage().nbytes() or 1
    shared = _SHARED.get(id(block))
    if shared is not None and shared[1] is block and rt.ipc.export_open(shared[0]):
        return shared[0], base, nbytes
    key = rt.ipc_mem_get_export_key(base, nbytes, rt.ipc.EXPORT_FLAG_DISABLE_PID_VALIDATION)
    rt.ipc.close_when_freed(key)
    _SHARED[id(block)] = (key, block)
    return key, base, nbytes


def reduce_tensor(t: torch.Tensor):
    """ForkingPickler's reduction of a tensor: npu tensors as IPC keys, others as torch does."""
    if t.device.type != "npu":
        return _torch_reduce_tensor(t)
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  "
                           "If you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    key, base, nbytes = _export(t)
    return (rebuild_npu_tensor, (key, nbytes, t.device.index, t.dtype, tuple(t.shape), tuple(t.stride()),
                                 t.storage_offset(), t.requires_grad, type(t) is torch.nn.Parameter))


def _close(owner: tuple) -> None:
    try:
        rt.ipc_mem_close(owner[1])
    except rt.NpuError:  # the runtime went first (finalize, device reset)
        pass


def rebuild_npu_tensor(key: str, nbytes: int, index: int, dtype: torch.dtype, shape, stride, offset: int,
                       requires_grad: bool, parameter: bool) -> torch.Tensor:
    """The receiving side: import the storage and view it as the sender's tensor."""
    info(index)  # starts the runtime, binds the device
    rt.set_device(index) if rt.peek_context() is None else None
    ptr = rt.ipc_mem_import_by_key(key)
    size = itemsize(dtype)
    storage = _dlpack.tensor_at(ptr, (nbytes // size,), (1,), dtype, index, (_close, key))
    t = storage.as_strided(shape, stride, offset)
    if parameter:
        return torch.nn.Parameter(t, requires_grad=requires_grad)
    t.requires_grad_(requires_grad)
    return t


for _cls in (torch.Tensor, torch.nn.parameter.Parameter):
    ForkingPickler.register(_cls, reduce_tensor)
