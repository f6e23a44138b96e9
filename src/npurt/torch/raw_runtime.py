"""`torch_npu._C._npurt`, what `torch_npu.npu.npurt()` returns: four raw runtime calls.

As torch_npu binds them (torch_npu/csrc/npu/npurt.cpp): each takes integer addresses and
returns the aclError number (0 on success) instead of raising, and a 0 pointer is
ACL_ERROR_INVALID_PARAM without a call.

* `npuStreamCreate(ptr)`: aclrtCreateStream on the current device; the new aclrtStream handle
  is written to the 8 bytes at host address `ptr` (e.g. `ctypes.addressof(ctypes.c_void_p())`);
  `torch_npu.npu.ExternalStream(handle)` then wraps it.
* `npuStreamDestroy(stream)`: aclrtDestroyStream (its queued work runs first).
* `npuHostRegister(ptr, size, flags)` / `npuHostUnregister(ptr)`: aclrtHostRegisterV2 /
  aclrtHostUnregister of a host range (flags as ACL's host-register values).
"""
from __future__ import annotations

import ctypes

from .. import devices as _devices
from ..runtime import (RUNTIME, NpuError, constants as C, create_stream, destroy_stream, host_register,
                       host_unregister)


def _code(call) -> int:
    try:
        call()
    except NpuError as err:
        return int(err.code)
    return C.ACL_SUCCESS


def npuStreamCreate(ptr: int) -> int:
    if not ptr:
        return C.ACL_ERROR_INVALID_PARAM
    _devices.thread_context()  # the current device's context, as torch_npu's lazy init makes it

    def make() -> None:
        ctypes.c_uint64.from_address(ptr).value = create_stream().handle
    return _code(make)


def npuStreamDestroy(stream: int) -> int:
    if not stream:
        return C.ACL_ERROR_INVALID_PARAM
    return _code(lambda: destroy_stream(RUNTIME.streams.get(stream)))


def npuHostRegister(ptr: int, size: int, flags: int) -> int:
    if not ptr:
        return C.ACL_ERROR_INVALID_PARAM
    _devices.thread_context()
    return _code(lambda: host_register(ptr, size, flags))


def npuHostUnregister(ptr: int) -> int:
    if not ptr:
        return C.ACL_ERROR_INVALID_PARAM
    return _code(lambda: host_unregister(ptr))
