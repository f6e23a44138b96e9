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


# ---------------------------------------------------------------- a small model zoo
class _Res(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(x + self.b2(self.c2(torch.relu(self.b1(self.c1(x))))))


def _resnet():
    return nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3), nn.MaxPool2d(3, 2, 1), _Res(), _Res(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(8, 10))


class _Mobile(nn.Module):  # depthwise + pointwise convolutions, squeeze-excitation, hardswish
    def __init__(self):
        super().__init__()
        self.a, self.dw, self.pw = nn.Conv2d(3, 16, 3, 2, 1), nn.Conv2d(16, 16, 3, 1, 1, groups=16), nn.Conv2d(16, 24, 1)
        self.se1, self.se2, self.bn, self.h = nn.Conv2d(24, 12, 1), nn.Conv2d(12, 24, 1), nn.BatchNorm2d(24), nn.Linear(24, 5)

    def forward(self, x):
        y = self.pw(nn.functional.relu6(self.dw(self.a(x))))
        y = y * torch.sigmoid(self.se2(torch.relu(self.se1(nn.functional.adaptive_avg_pool2d(y, 1)))))
        return self.h(nn.functional.adaptive_max_pool2d(nn.functional.hardswish(self.bn(y)), 1).flatten(1))


class _UNet(nn.Module):  # group/instance norm, transposed convolution, skip concat, bicubic resize
    def __init__(self):
        super().__init__()
        self.d, self.down, self.up = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 16, 3, 2, 1), nn.ConvTranspose2d(16, 8, 2, 2)
        self.o, self.gn, self.inn = nn.Conv2d(16, 2, 1), nn.GroupNorm(4, 8), nn.InstanceNorm2d(16, affine=True)

    def forward(self, x):
        a = nn.functional.silu(self.gn(self.d(x)))
        u = self.up(nn.functional.leaky_relu(self.inn(self.down(a))))
        return nn.functional.interpolate(self.o(torch.cat([a, u], 1)), scale_factor=2, mode="bicubic")


class _Seq(nn.Module):  # embedding, packed bidirectional 2-layer LSTM, GRU
    def __init__(self):
        super().__init__()
        self.e = nn.Embedding(20, 8, padding_idx=0)
        self.lstm = nn.LSTM(8, 12, num_layers=2, bidirectional=True, batch_first=True)
        self.gru, self.h = nn.GRU(24, 6, batch_first=True), nn.Linear(6, 20)

    def forward(self, x):
        packed = nn.utils.rnn.pack_padded_sequence(self.e(x), torch.tensor([5, 3, 2]), batch_first=True)
        out, _ = nn.utils.rnn.pad_packed_sequence(self.lstm(packed)[0], batch_first=True)
        return self.h(self.gru(out)[0])


class _Misc(nn.Module):  # embedding bag, conv1d dilated, conv3d, grid_sample, fold/unfold, RMSNorm, weight norm
    def __init__(self):
        super().__init__()
        self.eb, self.pr, self.c3 = nn.EmbeddingBag(30, 6, mode="mean"), nn.PReLU(), nn.Conv3d(1, 2, 3, padding=1)
        self.c1, self.rms = nn.Conv1d(6, 4, 3, dilation=2, padding=2), nn.RMSNorm(4)
        self.wn = nn.utils.parametrizations.weight_norm(nn.Linear(4, 4))

    def forward(self, x):
        d = x.device
        e = self.eb(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9], device=d), torch.tensor([0, 4], device=d))
        c = self.c1(e.unsqueeze(-1).expand(2, 6, 8)).transpose(1, 2)
        grid = torch.linspace(-1, 1, 18, device=d).view(1, 3, 3, 2).expand(2, 3, 3, 2)
        g = nn.functional.grid_sample(x[:, :, 0], grid, align_corners=False)
        f = nn.functional.fold(nn.functional.unfold(x[:, :, 0], 2), x.shape[-2:], 2)
        return self.wn(self.rms(self.pr(c))).sum() + self.c3(x).mean() + g.sum() + nn.functional.pixel_unshuffle(f, 2).sum()


ZOO = {
    "resnet": (_resnet, lambda: torch.randn(2, 3, 32, 32)),
    "mobilenet": (_Mobile, lambda: torch.randn(2, 3, 16, 16)),
    "unet": (_UNet, lambda: torch.randn(2, 3, 8, 8)),
    "packed_rnn": (_Seq, lambda: torch.tensor([[1, 2, 3, 4, 5], [3, 4, 5, 0, 0], [6, 7, 0, 0, 0]])),
    "transformer_with_masks": (lambda: nn.Transformer(16, 2, 1, 1, 32, dropout=0.0, batch_first=True),
                               lambda: torch.randn(2, 6, 16)),
    "misc_layers": (_Misc, lambda: torch.randn(2, 1, 4, 6, 6)),
}


def _forward(name, model, x):
    if name == "transformer_with_masks":
        mask = nn.Transformer.generate_square_subsequent_mask(5, device=x.device)
        pad = torch.tensor([[False] * 6, [False] * 5 + [True]], device=x.device)
        return model(x, x[:, :5], tgt_mask=mask, src_key_padding_mask=pad, memory_key_padding_mask=pad)
    return model(x)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")  # CPU torch's fast path
@pytest.mark.parametrize("name", sorted(ZOO))
def test_model_zoo_gradients_and_eval_outputs_match_cpu(name):
    make, data = ZOO[name]
    torch.manual_seed(0)
    cpu = make()
    npu = copy.deepcopy(cpu).npu()
    x = data()
    _forward(name, cpu, x).float().pow(2).mean().backward()
    _forward(name, npu, x.npu()).float().pow(2).mean().backward()
    for (pname, p), q in zip(cpu.named_parameters(), npu.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=1e-5, atol=1e-6, msg=lambda m: f"{pname}: {m}")
    cpu.eval()
    npu.eval()
    with torch.no_grad():
        torch.testing.assert_close(_forward(name, npu, x.npu()).cpu(), _forward(name, cpu, x), rtol=1e-5, atol=1e-6)


def test_scalars_torch_unwraps_into_numbers_still_reach_ops_that_take_only_tensors():
    x = torch.arange(15)
    assert torch.equal((x.npu() % 4).cpu(), x % 4)          # remainder.Tensor gets the 4 as a number
    assert torch.equal(torch.fmod(x.npu(), 3).cpu(), torch.fmod(x, 3))
