"""A large npu tensor the host cannot back is refused as out of memory (npurt.torch.host_backing):
device memory is host RAM on the simulated NPU, and the kernel's OOM killer is no error a
program can catch."""
from __future__ import annotations

import pytest
import torch

from npurt.runtime import constants as C
from npurt.torch import host_backing

GiB = 1 << 30


def _host(monkeypatch, available, total=64 * GiB):
    """The host says it has `available` bytes (a number, or a function of nothing)."""
    def meminfo():
        return {"MemTotal": total, "MemAvailable": available() if callable(available) else available}
    monkeypatch.setattr(host_backing, "meminfo", meminfo)


def test_a_tensor_the_host_cannot_back_is_torchs_out_of_memory_error(monkeypatch, npu):
    _host(monkeypatch, 3 * GiB)  # 2 GiB asked: the tensor and its host copy need 4, plus the reserve
    with pytest.raises(torch.OutOfMemoryError) as info:
        torch.empty(GiB, dtype=torch.int16, device=npu)
    assert isinstance(info.value, torch.npu.OutOfMemoryError)
    assert info.value.code == C.ACL_ERROR_RT_MEMORY_ALLOCATION
    assert "NPU out of memory. Tried to allocate 2.00 GiB" in str(info.value)
    assert "host" in str(info.value)
    # the device goes on working
    assert torch.ones(4, device=npu).sum().item() == 4


def test_the_rule_counts_what_npu_tensors_already_hold(monkeypatch, npu):
    _host(monkeypatch, 12 * GiB + GiB // 2)  # the reserve: 4 GiB of 64
    first = torch.empty(GiB, dtype=torch.int32, device=npu)  # 4 GiB: 0 + 2 * 4 + 4 <= 12.5
    # 3 GiB alone would fit (2 * 3 + 4); with the 4 GiB held, 4 + 2 * 3 + 4 does not
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(3 * GiB, dtype=torch.int8, device=npu)
    del first
    torch.npu.empty_cache()
    assert torch.empty(3 * GiB, dtype=torch.int8, device=npu).numel() == 3 * GiB
    torch.npu.empty_cache()


def test_a_tensor_the_host_can_back_is_allocated(monkeypatch, npu):
    _host(monkeypatch, 16 * GiB)
    t = torch.empty(GiB, dtype=torch.int32, device=npu)  # untouched: costs the host nothing
    assert t.numel() == GiB
    del t
    torch.npu.empty_cache()


def test_small_tensors_never_read_the_hosts_memory_figures(monkeypatch, npu):
    def meminfo():
        raise AssertionError("read /proc/meminfo for a small tensor")
    monkeypatch.setattr(host_backing, "meminfo", meminfo)
    assert torch.zeros(1 << 20, device=npu).sum().item() == 0


def test_the_pools_cache_goes_back_to_the_host_before_a_refusal(monkeypatch, npu):
    _host(monkeypatch, 64 * GiB)
    torch.empty(GiB, dtype=torch.int16, device=npu)  # freed at once: 2 GiB stay cached
    assert torch.npu.memory_reserved(npu) >= 2 * GiB
    # the host has room only once the cache is given back
    _host(monkeypatch, lambda: 2 * GiB if torch.npu.memory_reserved(npu) >= 2 * GiB else 16 * GiB)
    t = torch.empty(GiB, dtype=torch.int32, device=npu)
    assert t.numel() == GiB
    del t
    torch.npu.empty_cache()


def test_the_check_can_be_turned_off(monkeypatch, npu):
    _host(monkeypatch, 0)
    monkeypatch.setenv("NPURT_HOST_BACKING_CHECK", "0")
    t = torch.empty(GiB, dtype=torch.int16, device=npu)
    del t
    torch.npu.empty_cache()


def test_the_hosts_figures_come_from_proc_meminfo():
    info = host_backing.meminfo()
    if info is None:
        pytest.skip("this host has no /proc/meminfo")
    assert 0 < info["MemAvailable"] <= info["MemTotal"]
