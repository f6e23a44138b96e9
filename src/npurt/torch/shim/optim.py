"""torch_npu.optim: the fused optimizers are torch's own here (same updates, one op each)."""
from __future__ import annotations

import torch

NpuFusedSGD = torch.optim.SGD
NpuFusedAdam = torch.optim.Adam
NpuFusedAdamW = torch.optim.AdamW
NpuFusedAdadelta = torch.optim.Adadelta
NpuFusedRMSprop = torch.optim.RMSprop
