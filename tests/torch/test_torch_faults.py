"""Injected faults reach a torch program where the real ones would: an AI-core exception at the
next synchronize (a RuntimeError naming the code), an out-of-memory at the allocation (the error a
real one gives)."""
from __future__ import annotations

import pytest
import torch

import npurt


@pytest.fixture
def faults():
    yield npurt.faults
    npurt.faults.clear()


def test_an_injected_kernel_fault_surfaces_at_torch_npu_synchronize(npu, faults):
    x = torch.ones(64, device=npu)
    torch.npu.synchronize()
    faults.inject("task:kernel@1=507015")
    y = x * 2  # accepted: the device fails it later
    with pytest.raises(RuntimeError) as info:
        torch.npu.synchronize()
    assert "507015" in str(info.value)
    assert (x * 3).cpu().tolist() == [3.0] * 64
    del y


def test_an_allocation_past_the_budget_fails_as_a_real_out_of_memory_does(npu, faults):
    with pytest.raises(npurt.OutOfMemoryError) as real:  # what torch gets from npurt today
        torch.empty(1 << 48, dtype=torch.uint8, device=npu)
    faults.inject("alloc,budget=1M")
    with pytest.raises(type(real.value)) as info:
        torch.empty(4 << 20, dtype=torch.uint8, device=npu)
    assert info.value.code == real.value.code == 207001 and "injected" in str(info.value)
    faults.clear()
    assert torch.empty(4 << 20, dtype=torch.uint8, device=npu).numel() == 4 << 20
