"""`import npurt.torch` makes "npu" a real torch device; nothing changes without it."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import npurt.torch


def test_npu_tensors_are_real_privateuse1_tensors_on_the_npu_device():
    t = torch.ones(3, device="npu")
    assert t.device == torch.device("npu:0")
    assert t.device.type == "npu" and t.is_npu
    assert torch._C._get_privateuse1_backend_name() == "npu"
    assert type(t) is torch.Tensor


def test_torch_npu_is_the_registered_device_module():
    assert torch.npu is sys.modules["torch.npu"]
    assert torch.get_device_module("npu") is torch.npu
    assert torch.npu.is_available() and torch.npu.device_count() == 2


def test_generated_methods_move_tensors_and_modules_to_npu():
    x = torch.arange(4.0)
    assert x.npu().device == torch.device("npu:0")
    assert x.npu(1).device == torch.device("npu:1")
    m = torch.nn.Linear(2, 2).npu()
    assert m.weight.device.type == "npu"
    assert torch.UntypedStorage(8).npu().device.type == "npu"


def test_device_without_index_means_the_current_device():
    with torch.npu.device(1):
        assert torch.npu.current_device() == 1
        assert torch.empty(2, device="npu").device == torch.device("npu:1")
    assert torch.empty(2, device="npu").device == torch.device("npu:0")


def test_registering_twice_is_harmless():
    npurt.torch.register()
    assert torch.ones(1, device="npu").device.type == "npu"


def test_registration_refuses_a_torch_older_than_2_9(monkeypatch):
    monkeypatch.setattr(npurt.torch, "_registered", False)
    monkeypatch.setattr(torch, "__version__", "2.8.1+cpu")
    with pytest.raises(RuntimeError, match=r"torch >= 2\.9"):
        npurt.torch.register()


def test_registration_refuses_when_another_backend_owns_privateuse1(monkeypatch):
    monkeypatch.setattr(npurt.torch, "_registered", False)
    monkeypatch.setattr(torch._C, "_get_privateuse1_backend_name", lambda: "foo")
    with pytest.raises(RuntimeError, match="already owns torch's PrivateUse1"):
        npurt.torch.register()


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          check=True).stdout.strip()


def test_npurt_never_imports_torch_and_torch_is_unchanged_by_npurt_being_installed():
    out = _run("import sys, npurt, npurt.acl; before = 'torch' in sys.modules; import torch; "
               "print(before, hasattr(torch, 'npu'), torch._C._get_privateuse1_backend_name(), "
               "'npurt.torch' in sys.modules)")
    assert out == "False False privateuseone False"
