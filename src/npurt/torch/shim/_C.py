"""`torch_npu._C`: the private bindings real code calls directly, over torch.npu.

Names as torch_npu registers them (torch_npu/csrc/npu/Module.cpp). The CANN version queries
answer with the CANN release npurt models and compare as torch_npu does (cann_version.py).
"""
from __future__ import annotations

import torch

from ... import devices as _devices
from .. import forked as _forked
from .. import raw_runtime as _npurt  # noqa: F401 - torch_npu._C._npurt
from .. import cann_version


def _npu_getDeviceCount() -> int:
    """The runtime's count (started here; fixed from then on), where torch.npu.device_count()
    re-reads the environment until the runtime starts."""
    return _devices.device_count()


def _npu_isInBadFork() -> bool:
    return _forked.in_bad_fork


def _npu_getLocalDevice() -> int:
    return torch.npu.current_device()


def _npu_getDevice() -> int:
    return torch.npu.current_device()


def _npu_setDevice(device: int) -> None:
    torch.npu.set_device(device)


def _npu_getCurrentRawStream(device: int) -> int:
    """The current stream's native handle (aclrtStream) on `device`."""
    return torch.npu.current_stream(device).native_handle


def _npu_getCurrentRawStreamNoWait(device: int) -> int:
    return _npu_getCurrentRawStream(device)


def _npu_synchronize() -> None:
    torch.npu.synchronize()


def _get_cann_version(module: str = "CANN") -> str:
    return cann_version.get(module)


def _is_gte_cann_version(version: str, module: str = "CANN") -> bool:
    return cann_version.is_gte(version, module)
