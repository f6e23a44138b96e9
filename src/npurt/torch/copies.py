"""Copies between the host and npu tensors (`_copy_from`, what `.to()`, `.cpu()`, `copy_` reach),
and pinned host memory (`pin_memory()`, `is_pinned()`).

* Host to device: a pinned source with `non_blocking=True` is read by the queued copy itself
  (truly asynchronous: do not modify it until the stream passed the copy). Any other source
  is first taken (a host-side snapshot, what the driver's staging buffer does), so the call
  returns at once and the caller may reuse its tensor.
* Device to host: waits for the copy, unless `non_blocking=True` into pinned memory (then
  synchronize the stream, or an event, before reading it).
* Device to device: one queued copy; between two devices the destination's current stream
  first waits for the source's, and the source's waits for the copy afterwards.
Same-dtype contiguous copies are npurt DMA tasks (`memcpy_async`); anything else (casts,
strides, broadcasting) is a kernel task running `copy_` on host views.
"""
from __future__ import annotations

import numpy as np
import torch

from ..array import pinned as _pinned
from .. import streams as _np_streams
from ..runtime import RUNTIME, memcpy_async
from ..runtime import constants as C
from . import storage, sync_debug
from .optask import current_stream, launch
from .refs import ref
from .resize import resize_npu


def is_pinned_tensor(t: torch.Tensor) -> bool:
    """True if the CPU tensor's memory lies in npurt's page-locked host memory."""
    if not RUNTIME.initialized or t.numel() == 0:
        return False
    try:
        return RUNTIME.host.find(t.data_ptr(), max(storage.nbytes_of(t), 1)) is not None
    except Exception:  # noqa: BLE001 - partly outside a pinned range
        return False


def pin_memory(t: torch.Tensor, device=None) -> torch.Tensor:
    """A copy of CPU tensor `t` in page-locked host memory (npurt.empty_pinned)."""
    arr = _pinned.empty_pinned(max(t.numel() * t.element_size(), 1), np.uint8)
    out = torch.from_numpy(arr)[: t.numel() * t.element_size()].view(t.dtype).view(t.shape)
    out.copy_(t)
    return out


def _contiguous_same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.is_contiguous() and b.is_contiguous()


def _queue_copy_task(index, dst_host, src, reads, writes, blocks) -> int:
    """A kernel task `dst.copy_(src)`; either side a ref (device) or a CPU tensor."""
    return launch(index, _copy, (dst_host, src), None, "aten::copy_", reads, writes, blocks)


def _copy(dst, src) -> None:
    dst.copy_(src)


def copy_from(src: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    """aten::_copy_from: dst.copy_(src) where at least one of them is an npu tensor."""
    if dst.numel() == 0:
        return dst
    if src.device.type == "npu" and dst.device.type == "npu":
        _device_to_device(src, dst)
    elif dst.device.type == "npu":
        _host_to_device(src, dst, non_blocking)
    else:
        _device_to_host(src, dst, non_blocking)
    return dst


def _host_to_device(src, dst, non_blocking: bool) -> None:
    if src.device.type != "cpu":
        raise RuntimeError(f"copy from {src.device} to {dst.device} is not supported")
    index = dst.get_device()
    if src.dtype != dst.dtype or src.shape != dst.shape:
        src = src.to(dst.dtype).expand(dst.shape)  # cast and broadcast on the host
    pinned = non_blocking and is_pinned_tensor(src) and src.is_contiguous()
    if not pinned:
        src = src.clone(memory_format=torch.contiguous_format)  # the staging snapshot
    stream = current_stream(index)
    if _contiguous_same(src, dst):
        n = src.numel() * src.element_size()
        memcpy_async(dst.data_ptr(), n, src.data_ptr(), n, C.ACL_MEMCPY_HOST_TO_DEVICE, stream,
                        require_aligned=False, keep=src)
        return
    blocks = []
    r = ref(dst, blocks)
    _queue_copy_task(index, r, src, [], [r], blocks)


def _device_to_host(src, dst, non_blocking: bool) -> None:
    if dst.device.type != "cpu":
        raise RuntimeError(f"copy from {src.device} to {dst.device} is not supported")
    index = src.get_device()
    stream = current_stream(index)
    if _contiguous_same(src, dst):
        n = src.numel() * src.element_size()
        seq = memcpy_async(dst.data_ptr(), n, src.data_ptr(), n, C.ACL_MEMCPY_DEVICE_TO_HOST, stream,
                              require_aligned=False, keep=dst)
    else:
        blocks = []
        r = ref(src, blocks)
        seq = _queue_copy_task(index, dst, r, [r], [], blocks)
    if not (non_blocking and is_pinned_tensor(dst)):
        if sync_debug._sync_debug_mode:
            sync_debug.on_sync()
        stream.synchronize(until=seq)


def _device_to_device(src, dst) -> None:
    si, di = src.get_device(), dst.get_device()
    dstream = current_stream(di)
    if si != di:
        sstream = current_stream(si)
        _stream_waits(dstream, sstream)
    if si == di and _contiguous_same(src, dst) and not _overlap(src, dst):
        n = src.numel() * src.element_size()
        memcpy_async(dst.data_ptr(), n, src.data_ptr(), n, C.ACL_MEMCPY_DEVICE_TO_DEVICE, dstream,
                        require_aligned=False)
    else:
        blocks = []
        s = ref(src, blocks)
        d = ref(dst, blocks)
        _queue_copy_task(di, d, s, [s], [d], blocks)
    if si != di:
        _stream_waits(sstream, dstream)


def _overlap(a, b) -> bool:
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + storage.nbytes_of(b) and b0 < a0 + storage.nbytes_of(a)


def _stream_waits(waiter, on) -> None:
    """Future work on runtime stream `waiter` waits for what `on` has queued so far."""
    _np_streams.Stream._wrap(waiter).wait_stream(_np_streams.Stream._wrap(on))


def copy_from_and_resize(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """aten::_copy_from_and_resize: resize dst to src's shape, then copy."""
    if dst.device.type == "npu" and tuple(dst.shape) != tuple(src.shape):
        resize_npu(dst, src.shape)
    elif tuple(dst.shape) != tuple(src.shape):
        dst.resize_(src.shape)
    return copy_from(src, dst)
