"""acl.util: pointers, bytes and numpy arrays, and helper threads.

pyACL hands host buffers to the runtime as int addresses; these helpers convert between
Python objects and those addresses. Reading an address back (`ptr_to_bytes`,
`ptr_to_numpy`) checks it first: a device address (from acl.rt.malloc) or an unmapped one
would crash a C extension with a segmentation fault; here it returns None, records
ACL_ERROR_INVALID_PARAM (see acl.get_recent_err_msg) and warns (RuntimeWarning) with what
to do instead.
"""
from __future__ import annotations

import ctypes
import threading
import warnings

import numpy as np

from ..runtime import address
from ..runtime import constants as C
from ..runtime.observers import HOOKS
from ..runtime.runtime import RUNTIME
from ._wrap import Group, fail, record

util = Group("acl.util")

# NumPy type numbers (what pyACL's ptr_to_numpy takes): 0 bool, 1 int8, 2 uint8, ...,
# 11 float32, 12 float64, 23 float16
_TYPES = {np.dtype(c).num: np.dtype(c) for c in "?" + np.typecodes["AllInteger"] + np.typecodes["AllFloat"]}


class _Refused(Exception):
    """An address the host must not read (device memory, unmapped pages)."""


def _host_view(ptr, nbytes: int, where: str, writes: bool = False) -> np.ndarray:
    """A uint8 view of host memory at `ptr`, after checking it is readable host memory; with
    `writes`, read-only memory gives a read-only view."""
    if type(ptr) is not int:
        raise TypeError(f"ptr must be an int address, got {type(ptr).__name__}")
    if type(nbytes) is not int or nbytes < 0:
        raise ValueError(f"size must be a non-negative int, got {nbytes!r}")
    if address.is_device(ptr):
        raise _Refused(
            f"{where}: 0x{ptr:x} is a device address (memory of the NPU, from acl.rt.malloc); the host "
            "cannot read it. Copy it to host memory first with acl.rt.memcpy(host_ptr, size, dev_ptr, "
            "size, ACL_MEMCPY_DEVICE_TO_HOST) (host_ptr from acl.rt.malloc_host), then read host_ptr")
    if nbytes == 0:
        return np.empty(0, np.uint8)
    rng = RUNTIME.host.find(ptr, nbytes) if ptr > 0 else None
    if rng is None and not address.host_readable(ptr, nbytes):
        raise _Refused(
            f"{where}: 0x{ptr:x} (+{nbytes} bytes) is not mapped, readable host memory in this process (a "
            "null, stale or freed pointer, a guard page, or a number that is not an address); reading it "
            "would crash")
    if HOOKS.active:  # the host reads this memory now (tools check it against queued work)
        HOOKS.emit("host_access", addr=ptr, nbytes=nbytes, mode="r", what=where)
    if rng is not None and rng.mm is not None:
        return rng.view(ptr, nbytes)  # holds the mapping: free_host cannot unmap it under us
    view = address.raw_host_view(ptr, nbytes)
    if writes and (rng.readonly if rng is not None else not address.host_writable(ptr, nbytes)):
        view.flags.writeable = False  # read-only memory: a write raises instead of crashing
    return view


def _refuse(exc: Exception, where: str):
    """These functions have no ret: record the failure and warn so it is not missed."""
    if isinstance(exc, _Refused):
        record(C.ACL_ERROR_INVALID_PARAM, f"{exc} [ACL_ERROR_INVALID_PARAM {C.ACL_ERROR_INVALID_PARAM}]")
        message = str(exc)
    else:
        fail(exc, where)
        message = f"{where} failed: {exc}"
    warnings.warn(message, RuntimeWarning, stacklevel=3)


# ---------------------------------------------------------------- pointers
def ptr_to_bytes(ptr, size):
    """Copy `size` bytes from the host address `ptr` into a new bytes object."""
    try:
        return _host_view(ptr, size, "acl.util.ptr_to_bytes").tobytes()
    except Exception as exc:
        _refuse(exc, "acl.util.ptr_to_bytes")
        return None


def ptr_to_numpy(ptr, shape, type):  # noqa: A002 - pyACL's parameter name
    """An ndarray of `shape` and NumPy type number `type` over the host memory at `ptr`
    (no copy: writes to it change that memory; over read-only memory it is read-only)."""
    try:
        dtype = _TYPES.get(type) if isinstance(type, int) else None
        if dtype is None:
            raise ValueError(f"unknown NumPy type number {type!r} (0 bool, 1 int8, 2 uint8, 3 int16, "
                             "4 uint16, 5 int32, 6 uint32, 7 int64, 8 uint64, 11 float32, 12 float64, 23 float16)")
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ValueError(f"shape must be non-negative ints, got {shape!r}")
        count = int(np.prod(shape, dtype=np.int64))
        return _host_view(ptr, count * dtype.itemsize, "acl.util.ptr_to_numpy", writes=True).view(dtype).reshape(shape)
    except Exception as exc:
        _refuse(exc, "acl.util.ptr_to_numpy")
        return None


@util.value(0)
def numpy_to_ptr(data):
    """Address of an ndarray's data (no copy; keep the array alive). Deprecated in pyACL in
    favour of bytes_to_ptr(arr.tobytes())."""
    if not isinstance(data, np.ndarray):
        raise TypeError(f"numpy_to_ptr expects a numpy.ndarray, got {type(data).__name__}")
    if not data.flags.c_contiguous:
        warnings.warn("acl.util.numpy_to_ptr: the array is not C-contiguous, so its memory is not laid "
                      "out as its shape says; copies through this pointer will be wrong. Use "
                      "numpy_contiguous_to_ptr or np.ascontiguousarray", RuntimeWarning, stacklevel=3)
    return data.__array_interface__["data"][0]


@util.value((0, None))
def numpy_contiguous_to_ptr(data_in):
    """(ptr, data_out): data_out is data_in or a C-contiguous copy of it; keep it alive."""
    if not isinstance(data_in, np.ndarray):
        raise TypeError(f"numpy_contiguous_to_ptr expects a numpy.ndarray, got {type(data_in).__name__}")
    data_out = np.ascontiguousarray(data_in)
    return data_out.__array_interface__["data"][0], data_out


@util.value(0)
def bytes_to_ptr(data):
    """Address of the bytes' buffer (no copy; keep the object alive while the pointer is used)."""
    if isinstance(data, bytes):
        return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0
    if isinstance(data, bytearray):
        return ctypes.addressof((ctypes.c_char * len(data)).from_buffer(data)) if data else 0
    view = memoryview(data)  # any other buffer: numpy arrays, memoryviews, mmaps
    return np.frombuffer(view, np.uint8).__array_interface__["data"][0] if view.nbytes else 0


# ---------------------------------------------------------------- threads
_threads: dict[int, threading.Thread] = {}


@util.one(0)
def start_thread(thr_func, args_list):
    """Run thr_func(args_list) on a new thread; (thread_id, ret). The id is what
    acl.rt.subscribe_report takes. The new thread has no context: call set_context in it."""
    if not callable(thr_func):
        raise TypeError(f"start_thread needs a callable, got {thr_func.__class__.__name__}")
    thread = threading.Thread(target=thr_func, args=(args_list,), daemon=True,
                              name=f"acl.util thread {getattr(thr_func, '__name__', '')}")
    thread.start()
    _threads[thread.ident] = thread
    return thread.ident


@util.ret
def stop_thread(thr_id):
    """Wait for (join) a thread started by start_thread."""
    thread = _threads.get(thr_id)
    if thread is None:
        raise ValueError(f"{thr_id!r} is not a thread started by acl.util.start_thread (or it was "
                         "already stopped)")
    if thread is threading.current_thread():
        raise ValueError("a thread cannot stop (join) itself; call stop_thread from another thread")
    thread.join()
    _threads.pop(thr_id, None)


__all__ = ["ptr_to_bytes", "ptr_to_numpy", *util.names]
