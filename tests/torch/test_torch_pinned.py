"""Pinned host memory: pin_memory=True factories, non-blocking copies to the host land in pinned
memory and are queued, and torch_npu's host allocator statistics count the blocks."""
from __future__ import annotations

import gc

import pytest
import torch


@pytest.mark.parametrize("make", [
    lambda: torch.empty(16, pin_memory=True),
    lambda: torch.zeros(2, 3, pin_memory=True),
    lambda: torch.full((4,), 2.0, pin_memory=True),
    lambda: torch.tensor([1.0, 2.0], pin_memory=True),
    lambda: torch.arange(8, pin_memory=True),
    lambda: torch.empty_like(torch.ones(3, 4), pin_memory=True),
    lambda: torch.ones(2).new_zeros(5, pin_memory=True),
])
def test_factories_with_pin_memory_make_pinned_cpu_tensors(make):
    t = make()
    assert t.device.type == "cpu" and t.is_pinned()
    assert not torch.empty(4).is_pinned()     # without it: torch's own pageable tensor


def test_pin_memory_keeps_values_and_an_npu_factory_refuses_it():
    assert torch.equal(torch.tensor([[1, 2], [3, 4]], pin_memory=True), torch.tensor([[1, 2], [3, 4]]))
    with pytest.raises(RuntimeError, match="CPU tensors only"):
        torch.empty(4, device="npu", pin_memory=True)


def test_a_non_blocking_copy_to_the_host_is_pinned_and_queued(gate):
    x = torch.arange(1000.0, device="npu")
    gate.hold(torch.npu.current_stream())
    host = x.to("cpu", non_blocking=True)          # returns while the stream is held
    assert host.is_pinned()
    gate.open()
    torch.npu.synchronize()
    assert host.sum().item() == sum(range(1000))
    assert not x.cpu().is_pinned()                  # a blocking copy: torch's pageable result


def test_non_blocking_copy_keeps_strides_dtype_and_autograd():
    x = torch.arange(12.0, device="npu").view(3, 4).t()
    host = x.to("cpu", dtype=torch.float64, non_blocking=True)
    torch.npu.synchronize()
    assert host.dtype == torch.float64 and host.stride() == (1, 4)
    assert torch.equal(host, x.cpu().double())
    w = torch.ones(3, device="npu", requires_grad=True)
    (w.to("cpu", non_blocking=True) * 2).sum().backward()
    assert torch.equal(w.grad.cpu(), torch.full((3,), 2.0))


def test_host_memory_stats_count_pinned_blocks_until_their_tensors_die():
    gc.collect()
    torch.npu.reset_accumulated_host_memory_stats()
    before = torch.npu.host_memory_stats()
    t = torch.empty(4096, dtype=torch.uint8, pin_memory=True)
    during = torch.npu.host_memory_stats()
    assert during["allocations.current"] == before["allocations.current"] + 1
    assert during["allocated_bytes.current"] - before["allocated_bytes.current"] >= 4096
    assert during["num_host_alloc"] == 1 and during["host_alloc_time.count"] == 1
    del t
    gc.collect()
    after = torch.npu.host_memory_stats()
    assert after["allocations.current"] == before["allocations.current"] and after["num_host_free"] == 1
    assert list(after) == sorted(after)


def test_torchscript_compiles_calls_to_the_pin_memory_factories_as_their_aten_ops():
    class Model(torch.nn.Module):
        def forward(self):
            a = torch.randn(2)
            return torch.cat((a, torch.zeros(2)), 0)

    scripted = torch.jit.script(Model())
    assert "aten::randn" in str(scripted.graph) and scripted().shape == (4,)
