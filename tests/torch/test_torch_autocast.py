"""torch.autocast("npu") casts as torch's CUDA policy says: matmul-class ops to the autocast
dtype, precision-sensitive ops to float32, mixed-input ops to the widest type."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F


def test_matmul_class_ops_run_in_float16_by_default():
    a, b = torch.randn(8, 8, device="npu"), torch.randn(8, 8, device="npu")
    lin = torch.nn.Linear(8, 4).npu()
    with torch.autocast("npu"):
        assert torch.get_autocast_dtype("npu") == torch.float16
        assert (a @ b).dtype == torch.float16
        assert lin(a).dtype == torch.float16
        assert torch.bmm(a[None], b[None]).dtype == torch.float16
    assert (a @ b).dtype == torch.float32  # and not outside


def test_bfloat16_autocast_casts_to_bfloat16():
    a = torch.randn(4, 4, device="npu")
    with torch.autocast("npu", dtype=torch.bfloat16):
        assert torch.mm(a, a).dtype == torch.bfloat16
        assert F.conv2d(a[None, None], torch.ones(1, 1, 2, 2, device="npu")).dtype == torch.bfloat16


def test_precision_sensitive_ops_run_in_float32():
    h = torch.randn(4, 8, device="npu").half()
    with torch.autocast("npu"):
        assert torch.exp(h).dtype == torch.float32
        assert F.layer_norm(h, (8,)).dtype == torch.float32
        assert F.mse_loss(h, h).dtype == torch.float32
        assert torch.softmax(h, -1).dtype == torch.float32
        assert h.sum().dtype == torch.float32


def test_mixed_precision_ops_promote_to_the_widest_input():
    h, f = torch.randn(4, device="npu").half(), torch.randn(4, device="npu")
    with torch.autocast("npu"):
        assert torch.addcmul(h, h, f).dtype == torch.float32
        assert (h + f).dtype == torch.float32  # ordinary type promotion, untouched


def test_autocast_results_match_the_same_casts_done_by_hand():
    a, b = torch.randn(16, 32), torch.randn(32, 8)
    with torch.autocast("npu"):
        got = (a.npu() @ b.npu()).cpu()
    assert torch.equal(got, (a.half().float() @ b.half().float()).half())


def test_a_training_step_under_autocast_with_a_grad_scaler():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).npu()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.npu.amp.GradScaler(init_scale=2.0 ** 8)  # small enough that no fp16 grad overflows
    x, y = torch.randn(4, 8, device="npu"), torch.randn(4, 1, device="npu")
    before = model[0].weight.detach().clone()
    with torch.npu.amp.autocast():
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert loss.dtype == torch.float32 and scaler.get_scale() == 2.0 ** 8  # the step was taken
    assert model[0].weight.dtype == torch.float32 and not torch.equal(model[0].weight.cpu(), before.cpu())


def test_autocast_on_npu_leaves_cpu_ops_alone():
    a = torch.randn(4, 4)
    with torch.autocast("npu"):
        assert (a @ a).dtype == torch.float32


def test_cross_entropy_follows_the_cuda_policy_step_by_step():
    # cross_entropy = nll_loss(log_softmax(x, 1, x.dtype)): the explicit dtype keeps log_softmax
    # in half precision; nll_loss is on the float32 list
    logits = torch.randn(4, 3, device="npu").half()
    target = torch.tensor([0, 2, 1, 0], device="npu")
    with torch.autocast("npu"):
        loss = F.cross_entropy(logits, target)
        by_hand = F.nll_loss(F.log_softmax(logits, 1), target)   # dtype unset: float32 throughout
    assert loss.dtype == by_hand.dtype == torch.float32
    lc, tc = logits.cpu(), target.cpu()
    assert torch.equal(loss.cpu(), F.nll_loss(torch.log_softmax(lc, 1, dtype=torch.float16).float(), tc))
    assert torch.equal(by_hand.cpu(), F.nll_loss(torch.log_softmax(lc.float(), 1), tc))


def test_binary_cross_entropy_is_banned_under_autocast_as_on_torch_npu():
    p = torch.rand(4, device="npu")
    target = torch.rand(4, device="npu")
    with torch.autocast("npu"):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            torch.nn.functional.binary_cross_entropy(p, target)
        torch.nn.functional.binary_cross_entropy_with_logits(p, target)    # the safe form runs
    assert torch.nn.functional.binary_cross_entropy(p, target).item() >= 0  # outside autocast: allowed
