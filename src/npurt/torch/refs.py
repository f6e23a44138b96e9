"""Tensor refs: an npu tensor argument as a task sees it, and the host views a task runs on.

A *ref* is the plain tuple (arena view, shape, strides, element offset in the arena, device
address, item size) — a class instance would cost a microsecond per tensor; boxed aten
arguments are never tuples, so in a task's arguments a tuple is a ref. Building one also
appends the npurt block holding the tensor to the caller's `blocks` (the uses the stream
records), and refuses released or foreign memory.

When the task runs, each ref becomes a host view: a fresh CPU tensor for a tensor the op
writes (its storage exactly the bytes it spans), and for reads a view shared through the
arena view's cache.
"""
from __future__ import annotations

import torch

from ..runtime import RUNTIME
from . import _dlpack
from .storage import INFOS, ITEMSIZE, DeviceInfo, block_of, info, itemsize

BASE, SHAPE, STRIDE, OFFSET, PTR, SIZE = range(6)
_READ_VIEWS_MAX = 8192   # per arena view and cache: it is cleared when it grows past this


def write_view(r: tuple) -> torch.Tensor:
    """A host view for a tensor the op writes: a CPU tensor whose storage is exactly the bytes
    it spans (out kernels may restride their outs or reason about their storage), made
    through DLPack once per (address, shape, strides) and kept in the arena view's cache (the
    pool hands the same addresses out again: making one is a few microseconds of every op).
    A cached view is handed out again only while its address, shape and strides are still
    what it was made with, so a kernel that resized or restrided its out (which a fresh view
    would have met the same way) gets a fresh one next time."""
    base, shape, stride, offset, ptr, size = r
    if not ptr:  # an empty tensor: no bytes of its own (an arena view here could grow over others')
        return _dlpack.host_tensor_at(base.addr, shape, stride, base.dtype)
    addr = base.addr + offset * size
    cache = base.writes
    key = (offset, shape, stride)
    v = cache.get(key)
    if v is not None and v.data_ptr() == addr and v.stride() == stride and v.shape == shape:
        return v
    if len(cache) > _READ_VIEWS_MAX:
        cache.clear()
    v = cache[key] = _dlpack.host_tensor_at(addr, shape, stride, base.dtype)
    return v


def read_view(r: tuple) -> torch.Tensor:
    """A host view for reading, shared through the arena view's cache."""
    base = r[0]
    if not r[4]:  # an empty tensor: no bytes of its own
        return _dlpack.host_tensor_at(base.addr, r[1], r[2], base.dtype)
    cache = base.reads
    key = (r[3], r[1], r[2])
    v = cache.get(key)
    if v is None:
        if len(cache) > _READ_VIEWS_MAX:
            cache.clear()
        v = cache[key] = base.tensor.as_strided(r[1], r[2], r[3])
    return v


def span(r: tuple) -> tuple[int, int]:
    """(address, bytes) of the device memory a ref reaches."""
    shape, stride, ptr, size = r[1], r[2], r[4], r[5]
    lo = hi = 0
    for n, st in zip(shape, stride):
        if n > 1:
            if st < 0:
                lo += st * (n - 1)
            else:
                hi += st * (n - 1)
    if not all(shape):
        return ptr, 0
    return ptr + lo * size, (hi - lo + 1) * size


def info_of(index: int) -> DeviceInfo:
    """storage.info for a device index, with the common case (known, current) inlined."""
    inf = INFOS.get(index)
    if inf is None or inf.devs is not RUNTIME.devices:
        return info(index)
    return inf


def ref(t: torch.Tensor, blocks: list) -> tuple:
    """The ref of npu tensor `t`; appends the npurt block holding it to `blocks`."""
    return ref_on(info_of(t.get_device()), t, t.shape, t.stride(), t.dtype, blocks)


def ref_on(inf: DeviceInfo, t: torch.Tensor, shape, stride, dt, blocks: list) -> tuple:
    """`ref` with the device's info and the tensor's layout already in hand."""
    size = ITEMSIZE.get(dt) or itemsize(dt)
    ptr = t.data_ptr()
    block = inf.live.get(ptr - t.storage_offset() * size)
    if block is not None:
        blocks.append(block)
    elif t.numel():
        block_of(inf, t)  # raises: released or foreign memory
    base = inf.views.get(dt)
    if base is None:
        base = inf.view_of(dt)
    return (base, shape, stride, (ptr - inf.va_base) // size if ptr else 0, ptr, size)


def bytes_ref(inf: DeviceInfo, ptr: int, nbytes: int, blocks: list) -> tuple:
    """The ref of `nbytes` raw bytes at device address `ptr` (the start of a live block)."""
    blocks.append(inf.live[ptr])
    return (inf.view_of(torch.uint8), (nbytes,), (1,), ptr - inf.va_base, ptr, 1)
