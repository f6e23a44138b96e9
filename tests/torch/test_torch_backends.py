"""torch_npu's backend switches on torch.npu and torch.backends.npu: the SDP flags are torch's
global ones, aclnn.allow_hf32 is the convolution hf32 option, the deterministic markers switch
torch.use_deterministic_algorithms in forward and back in backward."""
from __future__ import annotations

import warnings

import torch


def test_sdp_switches_set_torchs_flags_and_sdp_kernel_restores_them():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.backends.npu.enable_flash_sdp is torch.npu.enable_flash_sdp
        before = torch._C._get_flash_sdp_enabled()
        with torch.npu.sdp_kernel(enable_flash=not before, enable_math=True, enable_mem_efficient=True):
            assert torch._C._get_flash_sdp_enabled() is (not before) and torch.npu.flash_sdp_enabled() is (not before)
        assert torch.npu.flash_sdp_enabled() is before
        assert torch.npu.preferred_linalg_library("Magma") == torch._C._LinalgBackend.Default


def test_aclnn_allow_hf32_is_the_convolution_option():
    before = torch.npu.conv.allow_hf32
    try:
        torch.npu.conv.allow_hf32 = False
        assert torch.npu.aclnn.allow_hf32 is False
        with torch.npu.aclnn.flags(allow_hf32=True):
            assert torch.npu.conv.allow_hf32 is True
        assert torch.npu.conv.allow_hf32 is False
    finally:
        torch.npu.conv.allow_hf32 = before


def test_deterministic_markers_switch_on_in_forward_and_off_in_backward():
    before = torch.are_deterministic_algorithms_enabled()
    try:
        x = torch.ones(2, 2, device="npu", requires_grad=True)
        y = torch.npu.enable_deterministic_with_backward(x * 2)
        assert torch.are_deterministic_algorithms_enabled()
        y.sum().backward()
        assert not torch.are_deterministic_algorithms_enabled()
        assert torch.equal(x.grad.cpu(), torch.full((2, 2), 2.0))
    finally:
        torch.use_deterministic_algorithms(before)
