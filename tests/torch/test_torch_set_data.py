"""`t.data = other` across CPU and npu (torch_npu's _has_compatible_shallow_copy_type,
torch_npu/csrc/aten/ops/HasCompatibleShallowCopyType.cpp): dense CPU and npu tensors may take
each other's data, so a module's parameter moves to npu in place; other layouts are refused as
torch refuses them."""
from __future__ import annotations

import pytest
import torch

import npurt.torch  # noqa: F401


def test_a_cpu_tensor_takes_an_npu_tensors_data_and_becomes_an_npu_tensor():
    x = torch.ones(())
    x.data = x.data.npu()                       # torch_npu's test_function_tensor_data_npu
    assert x.device.type == "npu"
    y = torch.zeros(3)
    src = torch.arange(3.0, device="npu")
    y.data = src
    assert y.device == src.device and y.data_ptr() == src.data_ptr()
    assert (y + 1).cpu().tolist() == [1.0, 2.0, 3.0]


def test_a_parameter_moved_in_place_keeps_its_autograd_identity():
    p = torch.nn.Parameter(torch.ones(2))
    p.data = p.data.to("npu")
    (p * 3).sum().backward()
    assert p.grad.device.type == "npu" and p.grad.cpu().tolist() == [3.0, 3.0]


def test_an_npu_tensor_takes_cpu_data_back():
    t = torch.ones(2, device="npu")
    t.data = torch.zeros(2)
    assert t.device.type == "cpu" and t.tolist() == [0.0, 0.0]


def test_the_rule_is_torch_npus_dense_or_equal_keys():
    npu, cpu = torch.ones(1, device="npu"), torch.ones(1)
    assert torch._has_compatible_shallow_copy_type(cpu, npu)
    assert torch._has_compatible_shallow_copy_type(npu, cpu)
    assert not torch._has_compatible_shallow_copy_type(npu, cpu.to_sparse())
    with pytest.raises(RuntimeError, match="incompatible tensor type"):
        npu.data = cpu.to_sparse()
