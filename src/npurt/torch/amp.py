"""`torch.npu.amp`: torch_npu's mixed-precision names over `torch.amp` with device type "npu"."""
from __future__ import annotations

import functools

import torch


class autocast(torch.amp.autocast_mode.autocast):
    """`torch.npu.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)`."""

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True):
        super().__init__("npu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """`torch.npu.amp.GradScaler(...)`: torch.amp.GradScaler for npu."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        super().__init__("npu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


custom_fwd = functools.partial(torch.amp.custom_fwd, device_type="npu")
custom_bwd = functools.partial(torch.amp.custom_bwd, device_type="npu")
