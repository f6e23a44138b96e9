"""Random numbers on npu come from a per-device (seed, offset) generator: a seed fixes them,
get_rng_state / set_rng_state replay them, dropout masks included; in a capture, each replay draws
from the generator state at the replay (torch_npu's graph-safe state)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F


def test_a_seed_makes_npu_random_numbers_reproducible():
    torch.npu.manual_seed(7)
    a = torch.randn(100, device="npu").cpu()
    torch.npu.manual_seed(7)
    b = torch.randn(100, device="npu").cpu()
    c = torch.randn(100, device="npu").cpu()
    assert torch.equal(a, b) and not torch.equal(b, c)
    assert torch.npu.initial_seed() == 7


def test_torch_manual_seed_also_seeds_the_npus():
    torch.manual_seed(3)
    a = torch.rand(10, device="npu").cpu()
    torch.manual_seed(3)
    assert torch.equal(a, torch.rand(10, device="npu").cpu())


def test_rng_state_round_trips_and_replays_dropout_masks():
    torch.npu.manual_seed(1)
    state = torch.npu.get_rng_state()
    assert state.dtype == torch.uint8 and state.numel() == 16
    x = torch.ones(1000, device="npu")
    m1 = F.dropout(x, 0.5, training=True).cpu()
    torch.npu.set_rng_state(state)
    m2 = F.dropout(x, 0.5, training=True).cpu()
    assert torch.equal(m1, m2)
    kept = m1.ne(0).float().mean().item()
    assert 0.4 < kept < 0.6 and set(m1.unique().tolist()) == {0.0, 2.0}


def test_distributions_have_the_requested_shapes_and_ranges():
    u = torch.rand(2000, device="npu").cpu()
    assert u.min() >= 0 and u.max() < 1 and 0.45 < u.mean() < 0.55
    i = torch.randint(3, 7, (500,), device="npu").cpu()
    assert set(i.unique().tolist()) == {3, 4, 5, 6}
    p = torch.randperm(50, device="npu").cpu()
    assert sorted(p.tolist()) == list(range(50))
    n = torch.empty(2000, device="npu").normal_(2.0, 0.5).cpu()
    assert abs(n.mean().item() - 2.0) < 0.1


def test_activation_checkpointing_recomputes_the_same_dropout():
    from torch.utils.checkpoint import checkpoint
    torch.manual_seed(0)
    layer = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Dropout(0.5)).npu()
    x = torch.randn(4, 16, device="npu", requires_grad=True)
    torch.npu.manual_seed(5)
    checkpoint(layer, x, use_reentrant=False).sum().backward()
    g_ckpt = x.grad.cpu()
    x.grad = None
    torch.npu.manual_seed(5)
    layer(x).sum().backward()
    assert torch.equal(g_ckpt, x.grad.cpu())


# ---------------------------------------------------------------- graph-safe state (captures and replays)
def test_a_replay_draws_what_the_same_ops_draw_eagerly_from_the_generator_state_then():
    torch.npu.manual_seed(7)
    eager = [torch.rand(8, device="npu").cpu() for _ in range(4)]
    buf = torch.empty(8, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        buf.copy_(torch.rand(8, device="npu"))
    for k in range(3):                     # each replay moves the device's offset on by one op
        if k == 0:
            torch.npu.manual_seed(7)
        g.replay()
        torch.npu.synchronize()
        assert torch.equal(buf.cpu(), eager[k])
    assert torch.equal(torch.rand(8, device="npu").cpu(), eager[3])   # eager ops go on after them


def test_get_and_set_rng_state_inside_a_capture_move_the_in_graph_offset():
    torch.npu.manual_seed(3)
    state = torch.npu.get_rng_state()
    first = torch.rand(4, device="npu").cpu()
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        inside = torch.npu.get_rng_state()
        a = torch.rand(4, device="npu")
        torch.npu.set_rng_state(inside)
        b = torch.rand(4, device="npu")
    assert torch.equal(inside[8:], torch.zeros(8, dtype=torch.uint8))   # offset 0 within the graph
    torch.npu.set_rng_state(state)
    g.replay()
    torch.npu.synchronize()
    assert torch.equal(a.cpu(), first) and torch.equal(b.cpu(), first)


def test_a_capture_refuses_a_new_seed_and_offset_access():
    torch.npu.manual_seed(0)
    other = torch.npu.get_rng_state()
    other[0] ^= 1
    g = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="only if new seed is the same"):
        with torch.npu.graph(g):
            torch.npu.manual_seed(1)
    with pytest.raises(RuntimeError, match="only if new seed is the same"):
        with torch.npu.graph(torch.npu.NPUGraph()):
            torch.npu.set_rng_state(other)
    with pytest.raises(RuntimeError, match="set_offset while in capture mode"):
        with torch.npu.graph(torch.npu.NPUGraph()):
            torch.npu._set_rng_state_offset(4)
    torch.npu._set_rng_state_offset(100)
    assert torch.npu._get_rng_state_offset() == 100
