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
import errno
import threading
import traceback
import warnings

import numpy as np

from ..runtime import HOOKS, RUNTIME, address, constants as C
from ._wrap import CPYTHON_MESSAGE, Group, Raise, fail, record

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
    if rng is None and ptr > 0 and RUNTIME.host.freed(ptr, nbytes) is not None:
        raise _Refused(f"{where}: 0x{ptr:x} lies in host memory freed with acl.rt.free_host (use after free); "
                       "the view would outlive its pages")
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


def _refuse(exc: Exception, where: str) -> None:
    """These functions have no ret: record the failure and warn so it is not missed (the
    real extension would crash the process)."""
    if isinstance(exc, _Refused):
        record(C.ACL_ERROR_INVALID_PARAM, f"{exc} [ACL_ERROR_INVALID_PARAM {C.ACL_ERROR_INVALID_PARAM}]")
        message = str(exc)
    else:
        fail(exc, where)
        message = f"{where} failed: {exc}"
    warnings.warn(message, RuntimeWarning, stacklevel=4)


# ---------------------------------------------------------------- pointers
# argument formats and messages from python/pyACL/util/numpy_convert.cpp, bytes_convert.cpp
# and thread.cpp; the numpy helpers warn (category Warning) on every call, as there
_DEPRECATED = "acl.util.{} will be deprecated. Please use acl.util.{} instead."


@util.value(None, args="kk")
def ptr_to_bytes(ptr, size):
    """Copy `size` bytes from the host address `ptr` into a new bytes object."""
    try:
        return _host_view(ptr, size, "acl.util.ptr_to_bytes").tobytes()
    except Exception as exc:  # noqa: BLE001 - recorded and warned: the real module would crash
        _refuse(exc, "acl.util.ptr_to_bytes")
        return None


@util.value(None, args="kOi")
def ptr_to_numpy(ptr, shape, type):  # noqa: A002 - pyACL's parameter name
    """An ndarray of `shape` (a tuple) and NumPy type number `type` over the host memory at
    `ptr` (no copy: writes to it change that memory; over read-only memory it is read-only)."""
    warnings.warn(_DEPRECATED.format("ptr_to_numpy", "ptr_to_bytes"), Warning, stacklevel=3)
    if not isinstance(shape, tuple):
        raise Raise(ValueError("shape is empty"))  # PyTuple_Size of a non-tuple is -1
    if not all(isinstance(d, int) for d in shape):
        raise Raise(TypeError("the second argument is not list of int"))
    try:
        dtype = _TYPES.get(type)
        if dtype is None:
            raise ValueError(f"unknown NumPy type number {type!r} (0 bool, 1 int8, 2 uint8, 3 int16, "
                             "4 uint16, 5 int32, 6 uint32, 7 int64, 8 uint64, 11 float32, 12 float64, 23 float16)")
        if any(d < 0 for d in shape):
            raise ValueError(f"negative dimensions are not allowed, got {shape!r}")
        count = int(np.prod(shape, dtype=np.int64))
        return _host_view(ptr, count * dtype.itemsize, "acl.util.ptr_to_numpy",
                          writes=True).view(dtype).reshape(shape)
    except Exception as exc:  # noqa: BLE001 - recorded and warned: the real module would crash
        _refuse(exc, "acl.util.ptr_to_numpy")
        return None


@util.value(0, args="O")
def numpy_to_ptr(data):
    """Address of an ndarray's data (no copy; keep the array alive). Deprecated in pyACL in
    favour of bytes_to_ptr(arr.tobytes())."""
    warnings.warn(_DEPRECATED.format("numpy_to_ptr", "bytes_to_ptr"), Warning, stacklevel=3)
    if not isinstance(data, np.ndarray):
        raise Raise(ValueError("needs an ndarray as argument"))
    if not data.flags.c_contiguous:
        warnings.warn("The input ndarray is discontiguous. Please use acl.util.bytes_to_ptr instead.",
                      Warning, stacklevel=3)
    return data.__array_interface__["data"][0]


@util.value((0, None), args="O")
def numpy_contiguous_to_ptr(data_in):
    """(ptr, data_out): data_out is data_in or a C-contiguous copy of it; keep it alive."""
    warnings.warn(_DEPRECATED.format("numpy_contiguous_to_ptr", "bytes_to_ptr"), Warning, stacklevel=3)
    if not isinstance(data_in, np.ndarray):
        raise Raise(ValueError("needs an ndarray as argument"))
    data_out = np.ascontiguousarray(data_in)
    return data_out.__array_interface__["data"][0], data_out


@util.value(0, args="O")
def bytes_to_ptr(data):
    """Address of a bytes object's buffer (no copy; keep the object alive while the pointer
    is used). Only bytes, as in pyACL: a bytearray or other buffer is a ValueError."""
    if not isinstance(data, bytes):
        raise Raise(ValueError("needs an byte as argument"))
    return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0


# ---------------------------------------------------------------- threads
_threads: dict[int, threading.Thread] = {}
_thread_errors: dict[int, list[str]] = {}


def _run(thr_func, args_list):
    try:
        if args_list is None:  # the real thread calls thr_func() when args_list is None
            thr_func()
        else:
            thr_func(args_list)
    except BaseException as exc:  # noqa: BLE001 - reported at stop_thread, as pyACL does
        traceback.print_exc()
        _thread_errors.setdefault(threading.get_ident(), []).append(
            f"exception={type(exc).__name__},msg=thread call failed")


@util.one(0, args="OO", message=CPYTHON_MESSAGE)
def start_thread(thr_func, args_list):
    """Run thr_func(args_list) (thr_func() for None) on a new thread; (thread_id, ret). The id
    is what acl.rt.subscribe_report takes. The new thread has no context: call set_context
    in it."""
    if not callable(thr_func):
        raise Raise(TypeError("parameter must be callable"))
    thread = threading.Thread(target=_run, args=(thr_func, args_list), daemon=True,
                              name=f"acl.util thread {getattr(thr_func, '__name__', '')}")
    thread.start()
    _threads[thread.ident] = thread
    return thread.ident


@util.value(0, args="K")
def stop_thread(thr_id):
    """Wait for (join) a thread started by start_thread; ret is pthread_join's: ESRCH (3) for
    an unknown thread, EDEADLK (35) for the calling thread itself. An exception in the
    thread is raised here as RuntimeError, as pyACL does."""
    thread = _threads.get(thr_id)
    if thread is None:
        return errno.ESRCH
    if thread is threading.current_thread():
        return errno.EDEADLK
    thread.join()
    _threads.pop(thr_id, None)
    messages = _thread_errors.pop(thr_id, None)
    if messages:
        raise Raise(RuntimeError("".join(m + ";" for m in messages)))
    return 0


__all__ = list(util.names)
