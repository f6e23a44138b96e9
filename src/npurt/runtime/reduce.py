"""reduce_async: the runtime's built-in element-wise reduction task (aclrtReduceAsync).

`dst[i] = dst[i] op src[i]` for the `count` BYTES at dst and src, op one of
ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM (10), _MAX (11), _MIN (12); _EQUAL (13) is not supported
(ACL_ERROR_RT_FEATURE_NOT_SUPPORT). `type` is an aclDataType number; the A2 profile
supports ACL_INT8, ACL_INT16, ACL_INT32, ACL_FLOAT16, ACL_FLOAT and ACL_BF16. Other known
aclDataType values are FEATURE_NOT_SUPPORT; unknown numbers and a count that is not a
whole number of elements are INVALID_PARAM. Integer sums wrap; float16/bfloat16 sums are
computed in float32 and rounded once. Both buffers must be device memory of the stream's
device. The task is an SDMA operation: a failure reports ACL_ERROR_RT_SYS_DMA.
"""
from __future__ import annotations

import numpy as np

from . import address
from . import constants as C
from . import dtypes
from .api import stream_of
from .errors import FeatureNotSupportedError, InvalidValueError
from .memops import locate
from .runtime import RUNTIME
from .tasks import Task

KINDS = {C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM: np.add, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX: np.maximum,
         C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN: np.minimum}
_TYPE_NAMES = {C.ACL_INT8: "int8", C.ACL_INT16: "int16", C.ACL_INT32: "int32", C.ACL_FLOAT16: "float16",
               C.ACL_FLOAT: "float32", C.ACL_BF16: "bfloat16"}
_KNOWN_TYPES = {C.ACL_DT_UNDEFINED, C.ACL_FLOAT, C.ACL_FLOAT16, C.ACL_INT8, C.ACL_INT32, C.ACL_UINT8,
                C.ACL_INT16, C.ACL_UINT16, C.ACL_UINT32, C.ACL_INT64, C.ACL_UINT64, C.ACL_DOUBLE, C.ACL_BOOL,
                C.ACL_STRING, C.ACL_COMPLEX64, C.ACL_COMPLEX128, C.ACL_BF16, *range(29, 42)}
SPLIT = 1 << 22  # bytes above which the reduction is split over the AI cores


class ReduceTask(Task):
    """dst op= src over `count` bytes of `dtype`."""

    __slots__ = ("dst", "src", "count", "ufunc", "dtype")
    kind = "reduce_async"
    error_code = C.ACL_ERROR_RT_SYS_DMA

    def __init__(self, dst: int, src: int, count: int, ufunc, dtype: np.dtype):
        self.dst, self.src, self.count, self.ufunc, self.dtype = dst, src, count, ufunc, dtype

    def run(self) -> None:
        dt = self.dtype
        d = address.view(self.dst, self.count).view(dt)
        s = address.view(self.src, self.count).view(dt)
        ufunc = self.ufunc
        wide = dt.itemsize == 2 and dt.kind != "i"  # float16, bfloat16: compute in float32
        n = d.size
        if self.count < SPLIT:
            _apply(ufunc, d, s, wide)
            return
        parts = RUNTIME.driver.cores.threads
        step = -(-n // parts)
        RUNTIME.driver.cores.run(parts, lambda i: _apply(ufunc, d[i * step:(i + 1) * step],
                                                           s[i * step:(i + 1) * step], wide))

    def accesses(self) -> tuple:
        return (self.src, self.count, "r"), (self.dst, self.count, "rw")

    def describe(self) -> str:
        return f"reduce_async {self.ufunc.__name__} {self.count} B of {self.dtype} 0x{self.src:x} -> 0x{self.dst:x}"

    def details(self) -> dict:
        return {"name": f"reduce_async {self.ufunc.__name__}", "bytes": self.count, "dtype": str(self.dtype)}


def _apply(ufunc, d: np.ndarray, s: np.ndarray, wide: bool) -> None:
    if wide:
        d[...] = ufunc(d.astype(np.float32), s.astype(np.float32))
    else:
        ufunc(d, s, out=d)


def _dtype(data_type) -> np.dtype:
    if type(data_type) is not int:
        raise InvalidValueError(f"reduce_async type must be an aclDataType int, got {data_type!r}")
    name = _TYPE_NAMES.get(data_type)
    if name is None:
        if data_type in _KNOWN_TYPES:
            raise FeatureNotSupportedError(
                f"reduce_async does not support aclDataType {data_type}; supported: ACL_INT8 (2), ACL_INT16 (6), "
                "ACL_INT32 (3), ACL_FLOAT16 (1), ACL_FLOAT (0), ACL_BF16 (27)")
        raise InvalidValueError(f"reduce_async: {data_type} is not an aclDataType value")
    return dtypes.resolve(name)


def reduce_async(dst: int, src: int, count: int, kind: int, data_type: int, stream=None, reserve=None) -> int:
    """Enqueue dst op= src element-wise over `count` bytes; returns the task's sequence number."""
    s = stream_of(stream)
    if reserve not in (None, 0):
        raise InvalidValueError("reduce_async: reserve must be 0")
    if kind == C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL:
        raise FeatureNotSupportedError("reduce_async kind ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL (13) is not supported")
    ufunc = KINDS.get(kind) if type(kind) is int else None
    if ufunc is None:
        raise InvalidValueError(f"reduce_async kind must be ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM (10), _MAX (11) "
                                f"or _MIN (12), got {kind!r}")
    dt = _dtype(data_type)
    if type(count) is not int or count < 0:
        raise InvalidValueError(f"reduce_async count (bytes) must be a non-negative int, got {count!r}")
    if count % dt.itemsize:
        raise InvalidValueError(f"reduce_async count {count} is not a whole number of {dt} elements "
                                f"({dt.itemsize} bytes each); count is in bytes")
    d = locate(RUNTIME, dst, count, "destination")
    r = locate(RUNTIME, src, count, "source")
    for span, role in ((d, "destination"), (r, "source")):
        if span.device is not s.device:
            where = "host memory" if span.device is None else f"memory of device {span.device.id}"
            raise InvalidValueError(f"reduce_async {role} 0x{span.addr:x} is {where}; both buffers must be "
                                    f"device memory of the stream's device {s.device.id}")
    return s.enqueue(ReduceTask(d.addr, r.addr, count, ufunc, dt), holders=(d.block, r.block))
