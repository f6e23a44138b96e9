"""torch.compile with the eager and aot_eager backends runs npu models (inductor generates CPU
code that would dereference device memory: out of scope, see docs/torch.md)."""
from __future__ import annotations

import pytest
import torch


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compiled_model_matches_eager_on_npu(backend):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).npu()
    x = torch.randn(3, 8, device="npu")
    compiled = torch.compile(model, backend=backend)
    got = compiled(x)
    assert got.device.type == "npu"
    torch.testing.assert_close(got.cpu(), model(x).cpu())
    got.sum().backward()
    assert model[0].weight.grad is not None
