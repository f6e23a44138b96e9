"""npurt's torch_npu shim: the torch_npu-only names, each fused op checked against the plain
PyTorch formula torch_npu documents for it."""
from __future__ import annotations

import copy
import math
import sys

import pytest
import torch
import torch.nn.functional as F

import npurt.torch.shim as torch_npu

g = torch.Generator().manual_seed(0)


def rnd(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=g).to(dtype).npu()


def close(a, b, **kw):
    torch.testing.assert_close(a.cpu(), b.cpu(), **kw)


def test_npu_rms_norm_follows_its_formula_and_returns_rstd():
    x, w = rnd(2, 5, 16), rnd(16)
    y, rstd = torch_npu.npu_rms_norm(x, w, epsilon=1e-5)
    expect_rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    close(rstd, expect_rstd)
    close(y, x * expect_rstd * w)
    assert rstd.shape == (2, 5, 1) and rstd.dtype == torch.float32


def test_npu_rms_norm_in_half_precision_computes_in_float32():
    x, w = rnd(4, 32, dtype=torch.float16), rnd(32, dtype=torch.float16)
    y, _ = torch_npu.npu_rms_norm(x, w)
    assert y.dtype == torch.float16
    ref = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).half()
    assert torch.equal(y.cpu(), ref.cpu())


def test_npu_add_rms_norm_adds_then_normalizes_and_returns_the_sum():
    a, b, w = rnd(3, 8), rnd(3, 8), rnd(8)
    y, rstd, x = torch_npu.npu_add_rms_norm(a, b, w)
    close(x, a + b)
    close(y, torch_npu.npu_rms_norm(a + b, w)[0])


def test_npu_rotary_mul_half_and_interleave_modes():
    x, r1, r2 = rnd(2, 3, 5, 8), rnd(1, 1, 5, 8), rnd(1, 1, 5, 8)
    x1, x2 = x.chunk(2, -1)
    close(torch_npu.npu_rotary_mul(x, r1, r2), r1 * x + r2 * torch.cat((-x2, x1), -1))
    rotated = torch.stack((-x[..., 1::2], x[..., ::2]), -1).reshape(x.shape)
    close(torch_npu.npu_rotary_mul(x, r1, r2, rotary_mode="interleave"), r1 * x + r2 * rotated)
    with pytest.raises(RuntimeError, match="rotary_mode"):
        torch_npu.npu_rotary_mul(x, r1, r2, rotary_mode="spiral")


def test_npu_swiglu_is_silu_of_the_first_half_times_the_second():
    x = rnd(4, 10)
    a, b = x.chunk(2, -1)
    close(torch_npu.npu_swiglu(x), F.silu(a) * b)
    close(torch_npu.npu_swiglu(x.t().contiguous(), dim=0), (F.silu(a) * b).t())


def test_npu_fast_gelu_and_scaled_masked_softmax_follow_their_formulas():
    x = rnd(3, 4, 6)
    close(torch_npu.npu_fast_gelu(x), x / (1 + torch.exp(-1.702 * x)))
    mask = rnd(3, 4, 6) > 0.5
    close(torch_npu.npu_scaled_masked_softmax(x, mask, 0.5), torch.softmax((x * 0.5).masked_fill(mask, -10000.0), -1))
    triu = torch.ones(4, 6, dtype=torch.bool, device="npu").triu(1)
    close(torch_npu.npu_scaled_masked_softmax(x, mask, 2.0, fixed_triu_mask=True),
          torch.softmax((x * 2.0).masked_fill(triu, -10000.0), -1))


def test_npu_confusion_transpose_fuses_reshape_and_permute():
    x = rnd(2, 3, 4)
    close(torch_npu.npu_confusion_transpose(x, (0, 2, 1), (2, 4, 3), True), x.permute(0, 2, 1).reshape(2, 4, 3))
    close(torch_npu.npu_confusion_transpose(x, (1, 0), (6, 4), False), x.reshape(6, 4).permute(1, 0))


@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH", "SBH"])
def test_npu_fusion_attention_equals_scaled_dot_product_attention(layout):
    b, n, s, d = 2, 3, 6, 8
    q, k, v = rnd(b, n, s, d), rnd(b, n, s, d), rnd(b, n, s, d)
    expect = F.scaled_dot_product_attention(q, k, v)
    to = {"BNSD": lambda t: t, "BSND": lambda t: t.transpose(1, 2), "BSH": lambda t: t.transpose(1, 2).reshape(b, s, n * d),
          "SBH": lambda t: t.permute(2, 0, 1, 3).reshape(s, b, n * d)}[layout]
    out, smax, ssum, _, *_ = torch_npu.npu_fusion_attention(to(q), to(k), to(v), n, layout, scale=1 / math.sqrt(d))
    close(out, to(expect), rtol=1e-5, atol=1e-5)
    assert smax.shape == (b, n, s, 8) and ssum.dtype == torch.float32
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(d)        # max + log(sum) is the logsumexp
    close((smax + ssum.log())[..., 0], scores.logsumexp(-1), rtol=1e-5, atol=1e-5)


def test_npu_fusion_attention_masks_causal_patterns_and_supports_gqa():
    b, s, d = 1, 5, 4
    q, k, v = rnd(b, 4, s, d), rnd(b, 2, s, d), rnd(b, 2, s, d)
    causal = torch.ones(s, s, dtype=torch.bool, device="npu").triu(1)
    out = torch_npu.npu_fusion_attention(q, k, v, 4, "BNSD", atten_mask=causal, scale=0.5, sparse_mode=3)[0]
    expect = F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1),
                                            is_causal=True, scale=0.5)
    close(out, expect, rtol=1e-5, atol=1e-5)


def test_npu_fusion_attention_varlen_layout_attends_within_each_sequence():
    n, d = 2, 4
    q, k, v = rnd(7, n, d), rnd(7, n, d), rnd(7, n, d)
    out = torch_npu.npu_fusion_attention(q, k, v, n, "TND", scale=0.5, actual_seq_qlen=[3, 7],
                                         actual_seq_kvlen=[3, 7])[0]
    for lo, hi in ((0, 3), (3, 7)):
        ref = F.scaled_dot_product_attention(*(t[lo:hi].transpose(0, 1) for t in (q, k, v)), scale=0.5)
        close(out[lo:hi], ref.transpose(0, 1), rtol=1e-5, atol=1e-5)


def test_npu_fusion_attention_backpropagates_like_sdpa():
    q, k, v = (rnd(1, 2, 4, 8).requires_grad_() for _ in range(3))
    torch_npu.npu_fusion_attention(q, k, v, 2, "BNSD", scale=0.25)[0].sum().backward()
    grads = [t.grad.cpu() for t in (q, k, v)]
    q2, k2, v2 = (t.detach().clone().requires_grad_() for t in (q, k, v))
    F.scaled_dot_product_attention(q2, k2, v2, scale=0.25).sum().backward()
    for a, b in zip(grads, (q2.grad, k2.grad, v2.grad)):
        close(a, b, rtol=1e-4, atol=1e-5)


@pytest.fixture
def internal_formats(monkeypatch):
    monkeypatch.setattr(torch.npu.config, "allow_internal_format", True)


def test_internal_formats_become_their_base_format_unless_allowed():
    x = rnd(4, 4)
    assert torch.npu.config.allow_internal_format is False          # torch_npu's default
    assert torch_npu.get_npu_format(torch_npu.npu_format_cast(x, 29)) == torch_npu.Format.ND
    assert torch_npu.get_npu_format(torch_npu.npu_format_cast(x, torch_npu.Format.NC1HWC0)) == torch_npu.Format.NCHW
    assert torch_npu.get_npu_format(torch_npu.npu_format_cast_(rnd(2, 2), 33)) == torch_npu.Format.NCDHW
    assert torch_npu.get_npu_format(torch_npu.npu_format_cast(x, torch_npu.Format.NHWC)) == torch_npu.Format.NHWC
    e = torch_npu.empty_with_format((2, 3), dtype=torch.float32, device="npu", acl_format=29)
    assert e.shape == (2, 3) and e.device.type == "npu" and torch_npu.get_npu_format(e) == 2


def test_empty_with_format_keeps_an_allowed_format_and_storage_size_counts_elements(internal_formats):
    e = torch_npu.empty_with_format((2, 3), dtype=torch.float16, device="npu", acl_format=29)
    assert torch_npu.get_npu_format(e) == 29 and e.dtype == torch.float16
    x = rnd(1, 2, 3, 4, 5)
    assert torch_npu.get_storage_size(x) == 120 == torch_npu.get_storage_size(copy.deepcopy(x))
    assert torch_npu.get_storage_size(x[0, 1]) == 120       # a view: its whole storage


def test_format_casts_record_the_format_and_keep_the_values(internal_formats):
    x = rnd(4, 4)
    assert torch_npu.get_npu_format(x) == torch_npu.Format.ND == 2
    nz = torch_npu.npu_format_cast(x, 29)
    assert torch_npu.get_npu_format(nz) == torch_npu.Format.FRACTAL_NZ and torch.equal(nz.cpu(), x.cpu())
    assert torch_npu.get_npu_format(x) == 2                 # a new tensor; x is unchanged
    torch_npu.npu_format_cast_(x, nz)
    assert torch_npu.get_npu_format(x) == 29
    assert x.npu_format_cast(2) is not None and torch.npu_format_cast is torch_npu.npu_format_cast
    with pytest.raises(RuntimeError, match="aclFormat"):
        torch_npu.npu_format_cast(x, 12345)
    with pytest.raises(RuntimeError, match="npu tensor"):
        torch_npu.npu_format_cast(torch.ones(2), 29)


def _reference_attention(q, k, v, scale, mask=None):
    """BNSD, as torch_npu's test of npu_prompt_flash_attention computes the expected result."""
    scores = torch.matmul(q, k.transpose(2, 3)) * scale
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype), v)


def test_prompt_flash_attention_is_softmax_of_scaled_scores_times_v():
    q, k, v = (rnd(1, 4, 16, 8, dtype=torch.float16) for _ in range(3))
    out = torch_npu.npu_prompt_flash_attention(q, k, v, num_heads=4, input_layout="BNSD", scale_value=0.125,
                                              pre_tokens=65535, next_tokens=65535, sparse_mode=0)
    assert out.dtype == torch.float16 and torch.equal(out.cpu(), _reference_attention(q, k, v, 0.125).cpu())
    # BSH with a mask, and GQA (2 kv heads for 4 query heads)
    bsh = lambda t: t.transpose(1, 2).reshape(1, 16, -1)  # noqa: E731
    kv2 = [rnd(1, 2, 16, 8, dtype=torch.float16) for _ in range(2)]
    mask = torch.triu(torch.ones(16, 16, dtype=torch.bool, device="npu"), 1)
    out = torch_npu.npu_prompt_flash_attention(bsh(q), bsh(kv2[0]), bsh(kv2[1]), num_heads=4, num_key_value_heads=2,
                                              input_layout="BSH", scale_value=0.5, atten_mask=mask)
    want = _reference_attention(q, *(t.repeat_interleave(2, dim=1) for t in kv2), 0.5, mask)
    close(out.cpu().float(), bsh(want).cpu().float(), rtol=1e-3, atol=1e-3)
    with pytest.raises(RuntimeError, match="actual_seq_lengths"):
        torch_npu.npu_prompt_flash_attention(q, k, v, num_heads=4, input_layout="BNSD", actual_seq_lengths=[16])


def test_the_shims_modules_are_torch_npus_names():
    assert torch_npu.npu is torch.npu and torch_npu.optim.NpuFusedAdamW is torch.optim.AdamW
    with torch_npu.profiler.profile(activities=[torch_npu.profiler.ProfilerActivity.CPU,
                                                torch_npu.profiler.ProfilerActivity.NPU]) as prof:
        (rnd(4) + 1).cpu()
    assert any("aten::add" in e.name for e in prof.events())


def test_npurt_run_torch_npu_resolves_import_torch_npu_to_the_shim(tmp_path, capsys, internal_formats):
    from npurt.apps import runner
    script = tmp_path / "uses_torch_npu.py"
    script.write_text("import torch, torch_npu\nfrom torch_npu.npu import amp\n"
                      "torch_npu.npu.config.allow_internal_format = True\n"
                      "x = torch_npu.npu_format_cast(torch.ones(2, device='npu:0'), 29)\n"
                      "print(torch_npu.__npurt_shim__, torch_npu.get_npu_format(x), torch.npu.is_available())\n")
    assert runner.main(["--torch-npu", str(script)]) == 0
    assert capsys.readouterr().out.strip() == "True 29 True"
    assert "torch_npu" not in sys.modules          # the alias lasts for the run only
