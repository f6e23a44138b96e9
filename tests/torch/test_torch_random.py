"""Random numbers on npu come from a per-device (seed, offset) generator: a seed fixes them,
get_rng_state / set_rng_state replay them, dropout masks included."""
from __future__ import annotations

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
