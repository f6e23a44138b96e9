"""`torch.npu.amp`: torch_npu's mixed-precision names over `torch.amp` with device type "npu"."""
from __future__ import annotations

import functools
import types

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


def _submodule(name: str, doc: str, **names) -> types.ModuleType:
    module = types.ModuleType(f"{__name__}.{name}", doc)
    module.__dict__.update(names)
    return module


# torch_npu.npu.amp is a package; code reaches its submodules as attributes (transfer_to_npu makes
# torch.cuda.amp.autocast_mode torch_npu's, and torch._dynamo then reads
# torch.cuda.amp.autocast_mode.autocast at import)
autocast_mode = _submodule("autocast_mode", "torch_npu.npu.amp.autocast_mode's names.",
                           autocast=autocast, custom_fwd=custom_fwd, custom_bwd=custom_bwd,
                           __all__=["autocast", "custom_fwd", "custom_bwd"])
grad_scaler = _submodule("grad_scaler", "torch_npu.npu.amp.grad_scaler's names.", GradScaler=GradScaler,
                         OptState=torch.amp.grad_scaler.OptState)
common = _submodule("common", "torch_npu.npu.amp.common's names.",
                    amp_definitely_not_available=lambda: not torch.npu.is_available())
