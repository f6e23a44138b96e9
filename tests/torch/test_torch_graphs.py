"""torch.npu.NPUGraph, torch.npu.graph, graph_pool_handle, is_current_stream_capturing and
make_graphed_callables (issue 25 item 7, torch face), with torch_npu's semantics: static
inputs and outputs, replay with new inputs copied in, results equal to CPU torch."""
from __future__ import annotations

import pytest
import torch

from npurt.runtime import CaptureError


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def test_a_captured_step_replays_with_new_inputs_and_matches_cpu():
    cpu = _mlp()
    npu_model = _mlp().to("npu")
    static_x = torch.zeros(8, 16, device="npu")
    g = torch.npu.NPUGraph()
    with torch.no_grad():
        npu_model(static_x)                      # warm-up, as with CUDA graphs
        torch.npu.synchronize()
        with torch.npu.graph(g):
            assert torch.npu.is_current_stream_capturing()
            static_y = npu_model(static_x)
        assert not torch.npu.is_current_stream_capturing()
        for k in range(3):
            x = torch.randn(8, 16)
            static_x.copy_(x.to("npu"))
            g.replay()
            torch.npu.synchronize()
            torch.testing.assert_close(static_y.cpu(), cpu(x), rtol=1e-5, atol=1e-5)
    g.reset()
    with pytest.raises(RuntimeError):
        g.replay()


def test_pool_handles_and_capture_on_the_default_stream():
    assert torch.npu.graph_pool_handle() != torch.npu.graph_pool_handle()
    g = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="default stream"):
        g.capture_begin()
    x = torch.ones(4, device="npu")
    with torch.npu.graph(g, pool=torch.npu.graph_pool_handle()):
        y = x * 3
    assert g.pool() is not None
    g.replay()
    torch.npu.synchronize()
    assert y.cpu().tolist() == [3.0] * 4


def test_a_synchronous_copy_in_the_capture_fails_and_leaves_torch_usable():
    x = torch.ones(4, device="npu")
    g = torch.npu.NPUGraph()
    with pytest.raises(CaptureError):
        with torch.npu.graph(g):
            (x + 1).cpu()
    assert not torch.npu.is_current_stream_capturing()
    assert (x + 1).cpu().tolist() == [2.0] * 4


def test_make_graphed_callables_forward_matches_eager():
    model = _mlp().to("npu")
    sample = torch.randn(8, 16, device="npu")
    with torch.no_grad():
        graphed = torch.npu.make_graphed_callables(model, (sample,))
        for _ in range(2):
            x = torch.randn(8, 16, device="npu")
            out = graphed(x)
            torch.testing.assert_close(out.cpu(), model(x).cpu(), rtol=1e-5, atol=1e-5)
    with pytest.raises(NotImplementedError):
        torch.npu.make_graphed_callables(model, (sample,))   # grad enabled, parameters require grad


def test_torch_npu_graph_captures_again_after_the_runtime_was_finalized(fresh_runtime):
    # the default side stream of torch.npu.graph is made again when a finalize (or a device
    # reset) destroyed the one kept from an earlier capture
    x = torch.ones(4, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        y = x * 2
    g.replay()
    assert y.cpu().tolist() == [2.0] * 4
    del g, x, y
    torch.npu.synchronize()
    fresh_runtime.finalize()
    fresh_runtime.finalized = False
    x = torch.ones(4, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        y = x + 3
    g.replay()
    assert y.cpu().tolist() == [4.0] * 4
