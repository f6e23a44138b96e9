"""torch_npu's device controls that are neither memory nor streams: core limits, the
synchronization debug mode, the op timeout, the compatible-implementation switch and
`get_device_capability`.

As torch_npu defines them (torch_npu/npu/npu_config.py, torch_npu/npu/utils.py,
torch_npu/npu/__init__.py, torch_npu/csrc/npu/Module.cpp):

* `set_device_limit(device, cube_num=-1, vector_num=-1)` (callable once per process, then
  RuntimeError), `get_device_limit(device)` -> {"cube_core_num", "vector_core_num"}: the
  device's AI Core / vector core limits (aclrtSetDeviceResLimit); `device` must be an int
  (TypeError "device must be an int") in range (AssertionError "Invalid device id").
  `set_stream_limit` / `reset_stream_limit` / `get_stream_limit` do the same for one stream.
* `set_sync_debug_mode`, `get_sync_debug_mode`: module sync_debug.
* `set_op_timeout_ms(ms)`: aclrtSetOpExecuteTimeOutV2(ms * 1000), the argument unpacked as a
  C uint32 ("can't convert negative value to unsigned int", "Overflow when unpacking long").
* `use_compatible_impl(bool)` / `are_compatible_impl_enabled()`: the option
  TORCH_NPU_USE_COMPATIBLE_IMPL ("1"/"0"), recorded as set_option records options.
* `get_device_capability(device=None)`: None (with a warning) unless TORCH_NPU_DEVICE_CAPABILITY
  is "major.minor", then (major, minor): torch_npu says its value is only for compatibility.
"""
from __future__ import annotations

import os
import re
import warnings

import torch

from ..runtime import (get_device_res_limit, get_stream_res_limit, reset_stream_res_limit,
                       set_device_res_limit, set_op_execute_timeout_us, set_stream_res_limit)
from .. import devices as _devices
from . import options
from .streams import Stream, runtime_stream
from .sync_debug import get_sync_debug_mode, set_sync_debug_mode  # noqa: F401 - torch.npu's names

CUBE, VECTOR = 0, 1  # aclrtDevResLimitType: ACL_RT_DEV_RES_CUBE_CORE, ACL_RT_DEV_RES_VECTOR_CORE


def _check_device(device) -> None:
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"device must be an int, but got {type(device).__name__}")
    if device < 0 or device >= torch.npu.device_count():
        raise AssertionError("Invalid device id")


class _CallOnce:
    """torch_npu's _call_once_class: the second call raises."""

    def __init__(self, func):
        self.func, self.called, self.result = func, False, None
        self.__name__, self.__doc__ = func.__name__, func.__doc__

    def __call__(self, *args, **kwargs):
        if self.called:
            raise RuntimeError(f"Function '{self.func.__name__}' has already been called, "
                               "You can only set this interface once.")
        self.called = True
        self.result = self.func(*args, **kwargs)
        return self.result


@_CallOnce
def set_device_limit(device, cube_num=-1, vector_num=-1) -> None:
    """Limit the AI Cores (cube) and vector cores that kernels on `device` use."""
    _check_device(device)
    _devices.thread_context()
    if cube_num != -1:
        set_device_res_limit(device, CUBE, cube_num)
    if vector_num != -1:
        set_device_res_limit(device, VECTOR, vector_num)


def get_device_limit(device) -> dict:
    _check_device(device)
    _devices.thread_context()
    return {"cube_core_num": get_device_res_limit(device, CUBE),
            "vector_core_num": get_device_res_limit(device, VECTOR)}


def _check_stream(stream) -> None:
    if stream is None:
        raise AssertionError("stream cannot be None")
    if not isinstance(stream, Stream):
        raise AssertionError(f"stream should be torch_npu.npu.Stream, could not be {type(stream)}")


def set_stream_limit(stream, cube_num=-1, vector_num=-1) -> None:
    _check_stream(stream)
    if cube_num != -1:
        set_stream_res_limit(runtime_stream(stream), CUBE, cube_num)
    if vector_num != -1:
        set_stream_res_limit(runtime_stream(stream), VECTOR, vector_num)


def reset_stream_limit(stream) -> None:
    _check_stream(stream)
    reset_stream_res_limit(runtime_stream(stream))


def get_stream_limit(stream) -> dict:
    _check_stream(stream)
    return {"cube_core_num": get_stream_res_limit(runtime_stream(stream), CUBE),
            "vector_core_num": get_stream_res_limit(runtime_stream(stream), VECTOR)}


def _unpack_uint32(value) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an int, got {type(value).__name__}")
    if value < 0:
        raise OverflowError("can't convert negative value to unsigned int")
    if value > 0xFFFFFFFF:
        raise RuntimeError(f"Overflow when unpacking long {value}")
    return value


def set_op_timeout_ms(timeout) -> None:
    """Kernels that run longer than `timeout` ms fail (aclrtSetOpExecuteTimeOutV2)."""
    timeout_ms = _unpack_uint32(timeout)
    _devices.thread_context()
    set_op_execute_timeout_us(timeout_ms * 1000)


def use_compatible_impl(is_enable) -> None:
    options.set_option({"TORCH_NPU_USE_COMPATIBLE_IMPL": "1" if is_enable else "0"})


def are_compatible_impl_enabled() -> bool:
    value = options.get_option("TORCH_NPU_USE_COMPATIBLE_IMPL")
    return value is not None and value.decode() == "1"


_NOT_REAL = ("The return value of get_device_capability is only for compatibility with PyTorch "
             "and does not represent the actual capability of the NPU device.")


def get_device_capability(device=None):
    """None, or (major, minor) from TORCH_NPU_DEVICE_CAPABILITY ("8.0"); `device` is unused."""
    value = os.environ.get("TORCH_NPU_DEVICE_CAPABILITY")
    if not value:
        warnings.warn("You can set the device capability via the environment variable "
                      f"TORCH_NPU_DEVICE_CAPABILITY. {_NOT_REAL}")
        return None
    match = re.match(r"^(\d+)\.(\d+)$", value)
    if not match:
        warnings.warn(f"torch.npu.get_device_capability can't parse TORCH_NPU_DEVICE_CAPABILITY environment "
                      f"variable: {value}. Expected format is 'major.minor' where major and minor are "
                      "non-negative integers (e.g., '8.0').")
        return None
    warnings.warn(_NOT_REAL)
    return int(match.group(1)), int(match.group(2))
