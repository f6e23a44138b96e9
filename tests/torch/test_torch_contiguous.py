"""torch_npu's contiguous (torch_npu/csrc/aten/common/TensorProperties.cpp): an npu tensor is made
contiguous only in the default format; channels_last (3d) and preserve_format are refused with
"ERR01007 OPS feature not supported" unless the tensor already is in that layout."""
from __future__ import annotations

import pytest
import torch

import npurt.torch  # noqa: F401


def _not_contiguous():
    return torch.randn(2, 3, 4, 4, device="npu").permute(0, 2, 1, 3)


@pytest.mark.parametrize("fmt", [torch.channels_last, torch.preserve_format])
def test_other_formats_are_refused_as_torch_npu_refuses_them(fmt):
    with pytest.raises(RuntimeError, match="ERR01007 OPS feature not supported"):
        _not_contiguous().contiguous(memory_format=fmt)
    with torch.inference_mode(), pytest.raises(RuntimeError, match="only supported contiguous memory format"):
        _not_contiguous().contiguous(memory_format=fmt)


def test_channels_last_3d_is_refused_and_a_tensor_already_in_the_format_is_itself():
    with pytest.raises(RuntimeError, match="ERR01007"):
        torch.randn(2, 3, 4, 4, 4, device="npu").transpose(2, 3).contiguous(memory_format=torch.channels_last_3d)
    nhwc = torch.randn(2, 3, 4, 4, device="npu").to(memory_format=torch.channels_last)  # .to still makes it
    assert nhwc.contiguous(memory_format=torch.channels_last) is nhwc


def test_the_default_format_copies_and_keeps_the_autograd_graph():
    y = torch.randn(2, 3, 4, 4, device="npu", requires_grad=True)
    z = y.permute(0, 2, 1, 3).contiguous()
    assert z.is_contiguous() and z.grad_fn is not None
    z.sum().backward()
    assert torch.equal(y.grad.cpu(), torch.ones(2, 3, 4, 4))
    assert torch.equal(z.detach().cpu(), y.detach().cpu().permute(0, 2, 1, 3))
