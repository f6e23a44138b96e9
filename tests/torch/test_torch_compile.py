"""torch.compile with the eager and aot_eager backends runs npu models (inductor generates CPU
code that would dereference device memory: it is refused by name, see docs/torch.md)."""
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


def test_the_default_inductor_backend_is_refused_by_name_and_npu_keeps_working():
    torch._dynamo.reset()
    model = torch.nn.Linear(4, 2).npu()
    with pytest.raises(Exception, match=r'inductor\) cannot generate code for npu.*backend="eager"'):
        torch.compile(model)(torch.ones(3, 4, device="npu"))
    torch._dynamo.reset()
    assert model(torch.ones(3, 4, device="npu")).cpu().shape == (3, 2)

