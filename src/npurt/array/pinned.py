"""Page-locked host memory for numpy arrays: `empty_pinned`, `is_pinned`.

Copies to and from pinned buffers are truly asynchronous (the DMA reads them when the copy
runs); a pinned buffer is freed when the last numpy array viewing it is collected.
"""
from __future__ import annotations

import math

import numpy as np

from .. import devices as _devices
from .. import runtime as rt
from ..runtime import RUNTIME
from .layout import as_dtype, shape_of


class _PinnedBuffer:
    """Owner of a malloc_host allocation exposed to numpy (as the array's base); frees the
    allocation when the last array viewing it is collected."""

    def __init__(self, nbytes: int):
        _devices.thread_context()
        self.ptr = rt.malloc_host(max(nbytes, 1), managed=True)
        self.range = RUNTIME.host.ranges[self.ptr]
        # a buffer export of the mapping keeps it mapped while we live, even if the runtime
        # is finalized meanwhile (its close then leaves the mapping to us)
        self._export = memoryview(self.range.mm)
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (self.ptr, False),
                                    "version": 3}

    def __del__(self) -> None:
        try:
            self._export.release()
            if RUNTIME.initialized and RUNTIME.host.ranges.get(self.ptr) is self.range:
                rt.free_host(self.ptr, managed=True)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def empty_pinned(shape, dtype="float32") -> np.ndarray:
    """An uninitialized numpy array in page-locked host memory (malloc_host): copies to and
    from it are truly asynchronous. Freed when the array (and every view) is collected."""
    shape, dtype = shape_of(shape), as_dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.asarray(_PinnedBuffer(nbytes))   # base: the owner
    return raw[:nbytes].view(dtype).reshape(shape)


def is_pinned(arr: np.ndarray) -> bool:
    """True if the numpy array lies in page-locked host memory the runtime knows."""
    if not isinstance(arr, np.ndarray) or RUNTIME.initialized is False or arr.nbytes == 0:
        return False
    try:
        return RUNTIME.host.find(arr.ctypes.data, arr.nbytes) is not None
    except Exception:  # noqa: BLE001 - part of the range outside a pinned range
        return False
