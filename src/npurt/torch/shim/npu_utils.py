"""`torch_npu.npu.utils` (also `torch.npu.utils`): the device helpers torch_npu keeps there
(torch_npu/npu/utils.py), over torch.npu."""
from __future__ import annotations

import torch

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


_get_device_index = torch.npu._get_device_index
