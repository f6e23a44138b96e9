"""torch_npu's backend switches on `torch.npu` (also `torch.backends.npu`): the scaled-dot-product
attention selectors, `preferred_linalg_library`, `aclnn.allow_hf32`, and the deterministic
begin/end markers for autograd.

As torch_npu (torch_npu/npu/_backends.py, aclnn/, deterministic.py):

* `enable_flash_sdp(b)` / `flash_sdp_enabled()`, the same for `mem_efficient` and `math`, and the
  `sdp_kernel(...)` context manager set and read torch's own global SDP flags (torch._C), with
  torch_npu's warning that the device has no separate kernels for them (here SDPA runs torch's
  CPU implementation, which honours the flags as CPU torch does);
* `preferred_linalg_library(...)` returns `torch._C._LinalgBackend.Default` whatever it is
  given (warning that it is not implemented, as there);
* `aclnn.allow_hf32` is the convolution hf32 switch (`torch.npu.conv.allow_hf32`, the same
  recorded option), `aclnn.flags(allow_hf32=...)` sets it for a block;
* `enable_deterministic_with_backward(t)` turns `torch.use_deterministic_algorithms` on in
  forward and off again when backward reaches that point; `disable_...` the reverse.
"""
from __future__ import annotations

import contextlib
import types
import warnings

import torch
from torch.autograd.function import Function

from .options import conv


def flash_sdp_enabled() -> bool:
    warnings.warn("Currently, the device operator does not support flash sdp and only sets the global variable!")
    return torch._C._get_flash_sdp_enabled()


def enable_flash_sdp(enabled: bool) -> None:
    warnings.warn("Currently, the device operator does not support flash sdp and only sets the global variable!")
    torch._C._set_sdp_use_flash(enabled)


def mem_efficient_sdp_enabled() -> bool:
    warnings.warn("Currently, the device operator does not support mem_efficient sdp and only sets Global variable!")
    return torch._C._get_mem_efficient_sdp_enabled()


def enable_mem_efficient_sdp(enabled: bool) -> None:
    warnings.warn("Currently, the device operator does not support mem_efficient sdp and only sets Global variable!")
    torch._C._set_sdp_use_mem_efficient(enabled)


def math_sdp_enabled() -> bool:
    warnings.warn("Currently, the device operator does not support math sdp and only sets Global variable!")
    return torch._C._get_math_sdp_enabled()


def enable_math_sdp(enabled: bool) -> None:
    warnings.warn("Currently, the device operator does not support math sdp and only sets Global variable!")
    torch._C._set_sdp_use_math(enabled)


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True):
    """Set the three SDP flags for the block; the previous ones come back after it."""
    previous = flash_sdp_enabled(), mem_efficient_sdp_enabled(), math_sdp_enabled()
    try:
        enable_flash_sdp(enable_flash)
        enable_mem_efficient_sdp(enable_mem_efficient)
        enable_math_sdp(enable_math)
        yield {}
    finally:
        enable_flash_sdp(previous[0])
        enable_mem_efficient_sdp(previous[1])
        enable_math_sdp(previous[2])


def preferred_linalg_library(backend=None) -> "torch._C._LinalgBackend":
    """There is no choice of linear-algebra library on the device: always Default."""
    warnings.warn("torch.npu.preferred_linalg_library isn't implemented!")
    return torch._C._LinalgBackend.Default


class _AclnnSwitches(types.ModuleType):
    """torch.npu.aclnn: `allow_hf32` (the convolution hf32 option), `flags(...)`, `version()`."""

    @property
    def allow_hf32(self) -> bool:
        return conv.allow_hf32

    @allow_hf32.setter
    def allow_hf32(self, value) -> None:
        conv.allow_hf32 = value

    @staticmethod
    @contextlib.contextmanager
    def flags(allow_hf32=True):
        previous = conv.allow_hf32
        if allow_hf32 is not None:
            conv.allow_hf32 = bool(allow_hf32)
        try:
            yield
        finally:
            conv.allow_hf32 = previous

    @staticmethod
    def version():
        warnings.warn("torch.npu.aclnn.version isn't implemented!")
        return None


aclnn = _AclnnSwitches("torch.npu.aclnn")


class _DeterministicBegin(Function):
    @staticmethod
    def forward(ctx, tensor):
        torch.use_deterministic_algorithms(True)
        return tensor

    @staticmethod
    def backward(ctx, grad):
        torch.use_deterministic_algorithms(False)
        return grad


class _DeterministicEnd(Function):
    @staticmethod
    def forward(ctx, tensor):
        torch.use_deterministic_algorithms(False)
        return tensor

    @staticmethod
    def backward(ctx, grad):
        torch.use_deterministic_algorithms(True)
        return grad


def _forbid_in_graph(fn):
    fn._dynamo_forbidden = True  # torch.compile must not trace through a global switch
    return fn


@_forbid_in_graph
def enable_deterministic_with_backward(tensor):
    return _DeterministicBegin.apply(tensor)


@_forbid_in_graph
def disable_deterministic_with_backward(tensor):
    return _DeterministicEnd.apply(tensor)


NAMES = ("flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp",
         "math_sdp_enabled", "enable_math_sdp", "sdp_kernel", "preferred_linalg_library", "aclnn",
         "enable_deterministic_with_backward", "disable_deterministic_with_backward")
