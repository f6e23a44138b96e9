"""Making DeviceArrays: empty, zeros, ones, full (and their _like forms), to_device, asarray,
array, asnumpy — numpy's and CuPy's spellings, and torch's `f(*size)` alike.

Shapes are `f((2, 3), dtype, device)` or `f(2, 3, dtype=, device=)`; dtype float32 and the
current device by default. Fills and copies are queued on the current stream of the array's
device (or `stream=`); nothing here waits but `asnumpy`. `npurt.arange` is an op (npurt.ops):
it launches the arange kernel.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..exceptions import InvalidValueError
from .. import runtime as rt
from .core import DeviceArray, _rt_stream, as_dtype
from .layout import LAYOUTS
from .dlpack import KDL_CPU


_NOT_COUNTS = (type, str, tuple, list, np.dtype)  # a dtype or a shape: never a dimension


def _all_counts(size: tuple) -> bool:
    """Whether every item is an integer (not a bool): torch's `f(*size)`. Exact ints and the
    usual dtype and shape arguments are told apart before the ABC check, which costs about
    a microsecond per item (and npurt.empty is on the hot path)."""
    for n in size:
        if type(n) is int:
            continue
        if isinstance(n, _NOT_COUNTS) or type(n) is bool or not isinstance(n, numbers.Integral):
            return False
    return True


def _size(fn: str, size: tuple, dtype, device):
    """(shape, dtype, device) from numpy's `f(shape, dtype, device)` or torch's `f(*size, ...)`."""
    if size and _all_counts(size):
        return size, dtype, device                     # torch: zeros(2, 3), zeros(5)
    if not size:
        raise InvalidValueError(f"npurt.{fn}() needs a shape: {fn}((2, 3)) or {fn}(2, 3)")
    if len(size) > 3:
        raise InvalidValueError(f"npurt.{fn}: a shape is ints, or one tuple followed by dtype and device; "
                                f"got {size!r}")
    n = len(size)
    if n > 1:
        if dtype is not None:
            raise InvalidValueError(f"npurt.{fn}: dtype given twice")
        dtype = size[1]
    if n > 2:
        if device is not None:
            raise InvalidValueError(f"npurt.{fn}: device given twice")
        device = size[2]
    return size[0], dtype, device


def _dt(dtype):
    return "float32" if dtype is None else dtype


def empty(*size, dtype=None, device=None) -> DeviceArray:
    """An uninitialized array: `empty((2, 3), dtype, device)` or `empty(2, 3, dtype=, device=)`
    (float32 and the current device by default)."""
    n = len(size)
    if device is None and (n == 1 or n == 2 and dtype is None):
        # the hot path, decided as _size would: empty(n), empty(shape), empty(n or shape, dtype)
        first = size[0]
        if n == 1:
            if type(first) is int or type(first) is tuple:
                return DeviceArray(first, "float32" if dtype is None else dtype)
        else:
            kind = type(size[1])
            if kind is type or kind is str or isinstance(size[1], np.dtype):  # never a count
                return DeviceArray(first, size[1])
    shape, dtype, device = _size("empty", size, dtype, device)
    return DeviceArray(shape, "float32" if dtype is None else dtype, device)



# with the C accelerator: the hot forms above without a Python frame (npurt.runtime.entries)
empty = rt.fast_entry("empty", empty, (DeviceArray, LAYOUTS, np.dtype, "float32"))

def empty_like(a: DeviceArray, dtype=None, device=None) -> DeviceArray:
    return DeviceArray(a.shape, a.dtype if dtype is None else dtype, a.device if device is None else device)


def zeros(*size, dtype=None, device=None, stream=None) -> DeviceArray:
    """An array of zeros (a memset queued on the current stream); shapes as in `empty`."""
    shape, dtype, device = _size("zeros", size, dtype, device)
    out = DeviceArray(shape, _dt(dtype), device)
    if out.nbytes:
        rt.memset_async(out._ptr, out.nbytes, 0, out.nbytes, _rt_stream(stream, out.device))
    return out


def zeros_like(a: DeviceArray, dtype=None, stream=None) -> DeviceArray:
    return zeros(a.shape, a.dtype if dtype is None else dtype, a.device, stream=stream)


def _default_dtype(*values) -> np.dtype:
    if all(isinstance(v, numbers.Integral) for v in values):
        return np.dtype(np.int32)
    return np.dtype(np.float32)


def full(shape, fill_value, dtype=None, device: int | None = None, stream=None) -> DeviceArray:
    """An array filled with `fill_value` (the fill kernel). dtype defaults to int32 for an
    int value and float32 otherwise."""
    out = DeviceArray(shape, _default_dtype(fill_value) if dtype is None else dtype, device)
    return out.fill(fill_value, stream=stream)


def full_like(a: DeviceArray, fill_value, dtype=None, stream=None) -> DeviceArray:
    return full(a.shape, fill_value, a.dtype if dtype is None else dtype, a.device, stream)


def ones(*size, dtype=None, device=None, stream=None) -> DeviceArray:
    """An array of ones; shapes as in `empty`."""
    shape, dtype, device = _size("ones", size, dtype, device)
    return full(shape, 1, _dt(dtype), device, stream)


def ones_like(a: DeviceArray, dtype=None, stream=None) -> DeviceArray:
    return full(a.shape, 1, a.dtype if dtype is None else dtype, a.device, stream)


def to_device(arr, stream=None, device=None, dtype=None) -> DeviceArray:
    """Copy host data (a numpy array or anything np.asarray takes) to a new DeviceArray on
    `device` (default: current). The copy is queued on `stream` (default: the current stream
    of that device) and is asynchronous: the queued copy holds `arr` and reads it when it
    runs, so do not modify `arr` until the stream has passed the copy. The dtype is kept
    (float64 stays float64), except that Python floats and lists become float32 as in torch."""
    if isinstance(arr, DeviceArray):
        return arr.to(device, dtype=dtype, stream=stream)
    host = np.asarray(arr) if dtype is None else np.asarray(arr, dtype=as_dtype(dtype))
    if host.dtype == np.float64 and dtype is None and not isinstance(arr, np.ndarray):
        host = host.astype(np.float32)  # Python floats/lists default to float32, as in torch
    as_dtype(host.dtype)
    out = DeviceArray(host.shape, host.dtype, device)
    return out.copy_from_host(host, stream)


def asarray(a, dtype=None, device=None, stream=None) -> DeviceArray:
    """CuPy's asarray: `a` itself if it is a DeviceArray already there with that dtype, else a
    copy of it on the device (host data is copied as in to_device)."""
    return to_device(a, stream=stream, device=device, dtype=dtype)


def array(obj, dtype=None, device=None, copy: bool = True, stream=None) -> DeviceArray:
    """A DeviceArray from host data or another DeviceArray (CuPy's `array`, torch's `tensor`):
    always a new array unless `copy=False` and `obj` is already a DeviceArray that fits."""
    if isinstance(obj, DeviceArray):
        out = obj.to(device, dtype=dtype, stream=stream)
        return out.copy(stream) if copy and out is obj else out
    return to_device(obj, stream=stream, device=device, dtype=dtype)


tensor = array


def asnumpy(a, stream=None, out: np.ndarray | None = None) -> np.ndarray:
    """CuPy's asnumpy: a numpy array of `a` (a DeviceArray is copied to the host, waiting for
    the copy; host data is returned as np.asarray returns it)."""
    if isinstance(a, DeviceArray):
        return a.copy_to_host(out, stream)
    host = np.asarray(a)
    if out is not None:
        out[...] = host
        return out
    return host


def from_dlpack(x, device=None, stream=None) -> DeviceArray:
    """A DeviceArray from a DLPack producer (`np.from_dlpack`'s counterpart). A DeviceArray is
    returned as it is (the same memory). A host producer (a numpy array, a CPU torch tensor,
    anything whose `__dlpack_device__` is kDLCPU) is copied to `device`, as `to_device` does:
    host memory is not device memory, so no zero-copy view of it can exist."""
    if isinstance(x, DeviceArray):
        return x
    if not hasattr(x, "__dlpack__") or not hasattr(x, "__dlpack_device__"):
        raise InvalidValueError(f"npurt.from_dlpack needs a DLPack producer (an object with __dlpack__ and "
                                f"__dlpack_device__), got {type(x).__name__}; for other host data use "
                                "npurt.to_device")
    device_type, _ = x.__dlpack_device__()
    if int(device_type) != KDL_CPU:
        raise InvalidValueError(f"npurt.from_dlpack: the producer's memory is on DLPack device type "
                                f"{int(device_type)}; npurt takes host (kDLCPU) producers and DeviceArrays "
                                "(move a tensor to the CPU first, or pass the DeviceArray itself)")
    return to_device(np.from_dlpack(x), stream=stream, device=device)
