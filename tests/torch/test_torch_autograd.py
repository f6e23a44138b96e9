"""Autograd, optimizers and modules on npu give CPU torch's numbers: an MLP, a CNN and a
transformer block train bit-identically (same CPU kernels, same order); RNN cells (computed
from their definitions, as torch routes accelerators to CUDA's fused cells) agree closely."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn


def _train(make, batch, steps=2, opt=torch.optim.SGD, **opt_kw):
    """Train a CPU model and its npu copy on the same batches; (cpu, npu) models, last losses."""
    torch.manual_seed(0)
    cpu = make()
    npu = copy.deepcopy(cpu).to("npu")
    o1, o2 = opt(cpu.parameters(), lr=0.05, **opt_kw), opt(npu.parameters(), lr=0.05, **opt_kw)
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = batch(g)
        losses = []
        for model, o, dev in ((cpu, o1, "cpu"), (npu, o2, "npu")):
            y = model(x.to(dev))
            y = y[0] if isinstance(y, tuple) else y
            loss = y.float().pow(2).mean()
            o.zero_grad()
            loss.backward()
            o.step()
            losses.append(loss.item())
    return cpu, npu, losses


def _max_diff(a: nn.Module, b: nn.Module) -> float:
    return max((p.detach() - q.detach().cpu()).abs().max().item() for p, q in zip(a.parameters(), b.parameters()))


def test_an_mlp_trains_bit_identically_to_cpu():
    cpu, npu, (l1, l2) = _train(lambda: nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)),
                                lambda g: torch.randn(8, 16, generator=g))
    assert l1 == l2 and _max_diff(cpu, npu) == 0.0
    assert all(p.grad.device.type == "npu" for p in npu.parameters())


def test_a_cnn_trains_bit_identically_to_cpu():
    def make():
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(8 * 4 * 4, 10))
    cpu, npu, (l1, l2) = _train(make, lambda g: torch.randn(4, 3, 8, 8, generator=g))
    assert l1 == l2 and _max_diff(cpu, npu) == 0.0
    assert torch.equal(cpu[1].running_mean, npu[1].running_mean.cpu())


def test_a_transformer_block_trains_bit_identically_to_cpu_with_adam():
    cpu, npu, (l1, l2) = _train(lambda: nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True),
                                lambda g: torch.randn(2, 10, 32, generator=g), opt=torch.optim.Adam)
    assert l1 == l2 and _max_diff(cpu, npu) == 0.0


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU, nn.RNN])
def test_recurrent_layers_train_as_on_cpu(cell):
    cpu, npu, (l1, l2) = _train(lambda: cell(8, 16, batch_first=True), lambda g: torch.randn(3, 5, 8, generator=g))
    assert l1 == pytest.approx(l2, rel=1e-6) and _max_diff(cpu, npu) < 1e-6


def test_an_embedding_model_with_cross_entropy_trains_as_on_cpu():
    def make():
        return nn.Sequential(nn.Embedding(50, 16), nn.Flatten(), nn.Linear(16 * 6, 50))
    torch.manual_seed(0)
    cpu = make()
    npu = copy.deepcopy(cpu).npu()
    x, y = torch.randint(0, 50, (4, 6)), torch.randint(0, 50, (4,))
    for m, dev in ((cpu, "cpu"), (npu, "npu")):
        nn.functional.cross_entropy(m(x.to(dev)), y.to(dev)).backward()
    assert torch.equal(cpu[0].weight.grad, npu[0].weight.grad.cpu())


def test_gradients_of_a_function_match_cpu():
    x = torch.randn(5, 4, requires_grad=True)
    xn = x.detach().npu().requires_grad_()
    f = lambda t: (t.sin() * t.exp()).logsumexp(1).sum()  # noqa: E731
    gx, = torch.autograd.grad(f(x), x)
    gn, = torch.autograd.grad(f(xn), xn)
    assert torch.equal(gx, gn.cpu())


def test_state_dict_moves_between_devices_and_deepcopy_keeps_the_device():
    m = nn.Linear(3, 2).npu()
    sd = m.state_dict()
    assert sd["weight"].device.type == "npu"
    cpu = nn.Linear(3, 2)
    cpu.load_state_dict(sd)
    assert torch.equal(cpu.weight, m.weight.detach().cpu())
    clone = copy.deepcopy(m)
    assert clone.weight.device.type == "npu" and clone.weight.data_ptr() != m.weight.data_ptr()
    torch.testing.assert_close(clone.weight.cpu(), m.weight.cpu())
