"""`torch_npu.npu.utils` (also `torch.npu.utils`): the device helpers torch_npu keeps there
(torch_npu/npu/utils.py), over torch.npu."""
from __future__ import annotations

from typing import Any

import torch
from torch._utils import _get_device_index as _torch_get_device_index

from . import _C
from .socs import soc_version

StreamContext = torch.npu.stream  # what torch.npu.stream(s) returns
stream = torch.npu.stream
set_device, current_device, device, synchronize = (torch.npu.set_device, torch.npu.current_device,
                                                   torch.npu.device, torch.npu.synchronize)
current_stream, default_stream, set_stream = torch.npu.current_stream, torch.npu.default_stream, torch.npu.set_stream


def get_cann_version(module: str = "CANN") -> str:
    return _C._get_cann_version(module)


def _is_gte_cann_version(version: str, module: str = "CANN") -> bool:
    return bool(_C._is_gte_cann_version(version, module))


def get_soc_version() -> int:
    """torch_npu's SocVersion number of the simulated chip (-1 if torch_npu has none for it)."""
    return soc_version(torch.npu.get_device_name(0))


def is_support_inf_nan() -> bool:
    return True


def is_bf16_supported(including_emulation: bool = False) -> bool:
    return True


def _get_device_index(device: Any, optional: bool = False, allow_cpu: bool = False) -> int:
    """The device index of `device` (torch.device, str, int or None), as torch_npu's helper."""
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if allow_cpu:
            if device.type not in ("npu", "cpu"):
                raise ValueError(f"Expected a npu or cpu device, but got: {device}")
        elif device.type != "npu":
            raise ValueError(f"Expected a npu device, but got: {device}")
    if isinstance(device, torch.npu.device):
        return device.idx
    return _torch_get_device_index(device, optional, allow_cpu)
