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
    with pytest.raises(ValueError, match="does not match"):
        graphed(torch.randn(4, 16, device="npu"))


def test_a_graphed_modules_backward_replays_a_captured_backward_with_cpu_torchs_grads():
    cpu = _mlp()
    npu_model = _mlp().to("npu")
    sample = torch.randn(8, 16, device="npu", requires_grad=True)
    graphed = torch.npu.make_graphed_callables(npu_model, (sample,))
    assert graphed is npu_model                      # a Module comes back with its forward graphed
    for step in range(3):
        # as with CUDA graphs, a parameter's .grad may alias the static grad the backward graph
        # writes: clear grads between steps (zero_grad(set_to_none=True), the usual loop)
        npu_model.zero_grad(set_to_none=True)
        cpu.zero_grad(set_to_none=True)
        x = torch.randn(8, 16)
        w = torch.randn(8, 4)
        x_npu = x.to("npu").requires_grad_()
        (graphed(x_npu) * w.to("npu")).sum().backward()
        x_cpu = x.clone().requires_grad_()
        (cpu(x_cpu) * w).sum().backward()
        torch.testing.assert_close(x_npu.grad.cpu(), x_cpu.grad, rtol=1e-5, atol=1e-5)
        for p_npu, p_cpu in zip(npu_model.parameters(), cpu.parameters()):
            torch.testing.assert_close(p_npu.grad.cpu(), p_cpu.grad, rtol=1e-5, atol=1e-5)
    npu_model.eval()                                 # another training state: the eager forward
    x = torch.randn(8, 16)
    torch.testing.assert_close(npu_model(x.to("npu")).detach().cpu(), cpu(x).detach(), rtol=1e-5, atol=1e-5)


def test_a_graphed_function_of_two_inputs_gives_the_grads_of_both():
    def fn(a, b):
        return (a * b).relu(), a.tanh()

    a0 = torch.randn(6, device="npu", requires_grad=True)
    b0 = torch.randn(6, device="npu", requires_grad=True)
    graphed = torch.npu.make_graphed_callables(fn, (a0, b0), num_warmup_iters=1)
    a, b = torch.randn(6), torch.randn(6)
    an, bn = a.to("npu").requires_grad_(), b.to("npu").requires_grad_()
    y, z = graphed(an, bn)
    (y.sum() + 2 * z.sum()).backward()
    ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
    yc, zc = fn(ac, bc)
    (yc.sum() + 2 * zc.sum()).backward()
    torch.testing.assert_close(y.detach().cpu(), yc.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(an.grad.cpu(), ac.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(bn.grad.cpu(), bc.grad, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="only tensors"):
        torch.npu.make_graphed_callables(fn, (a0, 3))


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


def test_debug_dump_writes_the_graph_and_its_chrome_trace_beside_it(tmp_path):
    import json
    x = torch.ones(4, device="npu")
    side = torch.npu.Stream()
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        side.wait_stream(torch.npu.current_stream())
        with torch.npu.stream(side):
            y = x * 2
        torch.npu.current_stream().wait_stream(side)
        y.add_(1)
    path = tmp_path / "g.json"
    g.debug_dump(str(path))
    dump = json.loads(path.read_text())
    trace = json.loads((tmp_path / "g.aligned.json").read_text())
    assert dump["lanes"] == 2 and {e["tid"] for e in trace if e["ph"] == "X"} == {"stream0", "stream1"}
    joins = [n for n in dump["nodes"] if n["kind"] == "join"]
    starts = {e["args"]["node"]: e["ts"] for e in trace if e["ph"] == "X"}
    for j in joins:                               # a join starts after the node it waits for ends
        assert starts[j["id"]] >= starts[j["after_node"]] + 1
    assert sum(e["ph"] == "s" for e in trace) == len(joins)
    untouched = tmp_path / "other.json"
    torch.npu.NPUGraph().debug_dump(str(untouched))      # no capture: nothing written
    assert not untouched.exists()
