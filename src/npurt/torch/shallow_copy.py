"""`cpu_tensor.data = npu_tensor` (and the reverse): torch's `data` setter
(VariableHooks::set_data) asks `aten::_has_compatible_shallow_copy_type(self, new)` whether
`new`'s TensorImpl may be copied into `self`'s, and torch's own answer counts only its built-in
dense backends (CPU, CUDA, ...), not PrivateUse1. torch_npu answers it for every key: the key
sets are equal, or both are dense, which for it means CPU or PrivateUse1
(torch_npu/csrc/aten/ops/HasCompatibleShallowCopyType.cpp). Registered for PrivateUse1 here,
the kernel is reached for every pair with an npu tensor (PrivateUse1 outranks CPU in the
dispatch), and torch's kernel still answers the rest.
"""
from __future__ import annotations

import torch

_CPU, _NPU = torch._C.DispatchKey.CPU, torch._C.DispatchKey.PrivateUse1


def _dense(keys) -> bool:
    return keys.has(_CPU) or keys.has(_NPU)


def has_compatible_shallow_copy_type(self: torch.Tensor, other: torch.Tensor) -> bool:
    mine, theirs = torch._C._dispatch_keys(self), torch._C._dispatch_keys(other)
    return mine == theirs or (_dense(mine) and _dense(theirs))
