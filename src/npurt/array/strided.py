"""Strided copies between device regions: the DMA engine's gather/scatter, as a stream task.

`strided_copy(dst, src, stream)` queues element i of `dst.shape` from src + sum(i*src.strides)
to dst + sum(i*dst.strides) (strides in bytes; either side a view of any layout), checks both
spans against their allocations and records the stream's use of them.
"""
from __future__ import annotations

import numpy as np

from .. import runtime as rt
from ..runtime import RUNTIME, Task, address, resolve
from ..runtime import constants as C
from .layout import byte_span


class StridedCopyTask(Task):
    """A strided copy between two device regions (the DMA engine's gather/scatter): element
    i of `shape` goes from src + sum(i*src_strides) to dst + sum(i*dst_strides)."""

    __slots__ = ("dst", "dst_strides", "src", "src_strides", "shape", "dtype", "dst_span", "src_span")
    kind = "strided_copy"
    error_code = C.ACL_ERROR_RT_SYS_DMA

    def __init__(self, dst: "DeviceArray", src: "DeviceArray"):
        self.dst, self.dst_strides = dst._ptr, dst.strides
        self.src, self.src_strides = src._ptr, src.strides
        self.shape, self.dtype = dst.shape, dst.dtype
        self.dst_span = byte_span(dst.shape, dst.strides, dst.dtype.itemsize)
        self.src_span = byte_span(src.shape, src.strides, src.dtype.itemsize)

    def run(self) -> None:
        np.copyto(self._view(self.dst, self.dst_strides, self.dst_span),
                  self._view(self.src, self.src_strides, self.src_span))

    def _view(self, ptr: int, strides, span) -> np.ndarray:
        lo, hi = span
        raw = address.view(ptr + lo, hi - lo)
        return np.ndarray(self.shape, self.dtype, buffer=raw, offset=-lo, strides=strides)

    def accesses(self) -> tuple:
        (slo, shi), (dlo, dhi) = self.src_span, self.dst_span  # the spans the strides cover
        return (self.src + slo, shi - slo, "r"), (self.dst + dlo, dhi - dlo, "w")

    def describe(self) -> str:
        return f"strided copy {self.shape} {self.dtype} 0x{self.src:x} -> 0x{self.dst:x}"

    def details(self) -> dict:
        return {"bytes": int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize}


def strided_copy(dst: "DeviceArray", src: "DeviceArray", stream) -> int:
    task = StridedCopyTask(dst, src)
    dspan = resolve(RUNTIME, dst._ptr + task.dst_span[0], task.dst_span[1] - task.dst_span[0], "destination")
    sspan = resolve(RUNTIME, src._ptr + task.src_span[0], task.src_span[1] - task.src_span[0], "source")
    return rt.enqueue(stream, task, holders=(dspan.block, sspan.block))  # the uses, recorded at enqueue
