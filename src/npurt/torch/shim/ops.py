"""Reference implementations of torch_npu's fused ops, from the formulas in its documentation.

Each is plain torch on the caller's tensors: on npu tensors every step is an npurt task, and
autograd differentiates them (the fused ops' backward passes are these formulas' gradients).
Half-precision inputs are computed in float32 where the fused kernels accumulate in float32
(normalizations, softmax), and rounded once at the end.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

_NO_LIMIT = 2147483647


# ---------------------------------------------------------------- normalization
def npu_rms_norm(input: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6):
    """(y, rstd): y = x * rsqrt(mean(x^2 over gamma's dims) + eps) * gamma; rstd in float32,
    shaped like x with gamma's dims reduced to 1."""
    dims = tuple(range(input.dim() - gamma.dim(), input.dim()))
    x = input.float()
    rstd = torch.rsqrt(x.pow(2).mean(dim=dims, keepdim=True) + epsilon)
    y = (x * rstd * gamma.float()).to(input.dtype)
    return y, rstd


def npu_add_rms_norm(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6):
    """(y, rstd, x): x = x1 + x2, then npu_rms_norm(x, gamma)."""
    x = x1 + x2
    y, rstd = npu_rms_norm(x, gamma, epsilon)
    return y, rstd, x


def npu_layer_norm_eval(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


# ---------------------------------------------------------------- activations
def npu_swiglu(input: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """SwiGLU: the input split in two halves A, B along `dim`; silu(A) * B."""
    a, b = input.chunk(2, dim=dim)
    return (F.silu(a.float()) * b.float()).to(input.dtype)


def npu_fast_gelu(input: torch.Tensor) -> torch.Tensor:
    """fast_gelu(x) = x / (1 + exp(-1.702 x)) (the Atlas A2/A3 formula; npurt simulates A2)."""
    return input * torch.sigmoid(1.702 * input)


fast_gelu = npu_fast_gelu


def npu_gelu(input: torch.Tensor, *, approximate: str = "none") -> torch.Tensor:
    return F.gelu(input, approximate=approximate)


def npu_silu(input: torch.Tensor) -> torch.Tensor:
    return F.silu(input)


def npu_silu_(input: torch.Tensor) -> torch.Tensor:
    return F.silu(input, inplace=True)


# ---------------------------------------------------------------- layout and casts
def npu_dtype_cast(input: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return input.to(dtype)


def npu_confusion_transpose(input: torch.Tensor, perm, shape, transpose_first: bool) -> torch.Tensor:
    """Reshape and transpose fused: permute then reshape, or reshape then permute."""
    if transpose_first:
        return input.permute(*perm).contiguous().view(*shape)
    return input.reshape(*shape).permute(*perm)


def npu_transpose(input: torch.Tensor, perm, require_contiguous: bool = True) -> torch.Tensor:
    out = input.permute(*perm)
    return out.contiguous() if require_contiguous else out


def npu_broadcast(input: torch.Tensor, size) -> torch.Tensor:
    return input.expand(*size).contiguous()


def npu_linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    return F.linear(input, weight, bias)


def npu_bmmV2(input: torch.Tensor, mat2: torch.Tensor, output_sizes=()) -> torch.Tensor:
    return torch.matmul(input, mat2)


# ---------------------------------------------------------------- rotary embedding
def npu_rotary_mul(input: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor, rotary_mode: str = "half"):
    """RoPE: r1 * x + r2 * rotate(x); "half" rotates (x1, x2) -> (-x2, x1) over the two halves
    of the last dim, "interleave" each adjacent pair."""
    if rotary_mode == "half":
        x1, x2 = input.chunk(2, dim=-1)
        rotated = torch.cat((-x2, x1), dim=-1)
    elif rotary_mode == "interleave":
        x1, x2 = input[..., ::2], input[..., 1::2]
        rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
    else:
        raise RuntimeError(f"npu_rotary_mul: rotary_mode must be 'half' or 'interleave', got {rotary_mode!r}")
    return r1 * input + r2 * rotated


# ---------------------------------------------------------------- softmax and attention
def npu_scaled_masked_softmax(x: torch.Tensor, mask: torch.Tensor, scale: float = 1.0,
                              fixed_triu_mask: bool = False) -> torch.Tensor:
    """softmax(x * scale with masked positions (mask True) set to -10000) over the last dim,
    computed in float32; with `fixed_triu_mask` the mask is the upper triangle."""
    if fixed_triu_mask:
        n, m = x.shape[-2:]
        mask = torch.ones(n, m, dtype=torch.bool, device=x.device).triu(1)
    scores = (x * scale).masked_fill(mask.bool(), -10000.0)
    return torch.softmax(scores.float(), dim=-1).to(x.dtype)


def _to_bnsd(t: torch.Tensor, layout: str, heads: int) -> torch.Tensor:
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    if layout == "BSH":
        b, s, h = t.shape
        return t.view(b, s, heads, h // heads).transpose(1, 2)
    if layout == "SBH":
        s, b, h = t.shape
        return t.view(s, b, heads, h // heads).permute(1, 2, 0, 3)
    raise RuntimeError(f"npu_fusion_attention: input_layout must be BSH, SBH, BSND, BNSD or TND, got {layout!r}")


def _from_bnsd(t: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    b, n, s, d = t.shape
    if layout == "BSH":
        return t.transpose(1, 2).reshape(b, s, n * d)
    return t.permute(2, 0, 1, 3).reshape(s, b, n * d)  # SBH


def _sparse_mask(sq: int, skv: int, sparse_mode: int, pre: int, nxt: int, device):
    """The positions (True: masked) a sparse mode masks, over (Sq, Skv)."""
    i = torch.arange(sq, device=device).view(-1, 1)
    j = torch.arange(skv, device=device).view(1, -1)
    if sparse_mode == 2:          # leftUpCausal
        return j > i
    if sparse_mode == 3:          # rightDownCausal
        return j > i + (skv - sq)
    if sparse_mode == 4:          # band, around the right-down diagonal
        d = j - i - (skv - sq)
        return (d > nxt) | (d < -pre)
    raise RuntimeError(f"npu_fusion_attention: sparse_mode {sparse_mode} is not supported by npurt's reference "
                       "implementation (0 to 4 are)")


def _attention(q, k, v, heads_q, pse, mask, scale, keep_prob, sparse_mode, pre, nxt):
    """BNSD attention; (out, softmax_max, softmax_sum) with the statistics in float32."""
    nkv = k.shape[1]
    if heads_q != nkv:  # GQA: each kv head serves Nq / Nkv query heads
        k = k.repeat_interleave(heads_q // nkv, dim=1)
        v = v.repeat_interleave(heads_q // nkv, dim=1)
    scores = torch.matmul(q.float(), k.float().transpose(-1, -2))
    if pse is not None:
        scores = scores + pse.float()
    scores = scores * scale
    sq, skv = scores.shape[-2:]
    if sparse_mode in (2, 3, 4) and mask is not None:
        mask = _sparse_mask(sq, skv, sparse_mode, pre, nxt, q.device)
    if mask is not None:
        scores = scores.masked_fill(mask.bool(), float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    safe_max = torch.where(torch.isinf(row_max), torch.zeros_like(row_max), row_max)
    e = torch.exp(scores - safe_max)
    row_sum = e.sum(dim=-1, keepdim=True)
    probs = e / row_sum.clamp_min(torch.finfo(torch.float32).tiny)
    if keep_prob < 1.0:
        probs = F.dropout(probs, p=1.0 - keep_prob, training=True)
    out = torch.matmul(probs, v.float()).to(q.dtype)
    return out, row_max.expand(*row_max.shape[:-1], 8), row_sum.expand(*row_sum.shape[:-1], 8)


def npu_fusion_attention(query, key, value, head_num: int, input_layout: str, pse=None, padding_mask=None,
                         atten_mask=None, scale: float = 1.0, keep_prob: float = 1.0,
                         pre_tockens: int = _NO_LIMIT, next_tockens: int = _NO_LIMIT, inner_precise: int = 0,
                         prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode: int = 0,
                         gen_mask_parallel: bool = True, sync: bool = False, softmax_layout: str = ""):
    """Fused attention: Dropout(Softmax(Mask(scale * (pse + q k^T), atten_mask)), keep_prob) v.

    `atten_mask` True (or 1) masks a position; sparse modes 2/3/4 mask the left-up causal, the
    right-down causal and the band (pre/next tokens) pattern. Returns (attention_out,
    softmax_max, softmax_sum, softmax_out (empty), seed, offset, numels), the statistics
    float32 and (B, N, Sq, 8), as torch_npu's."""
    if padding_mask is not None:
        raise RuntimeError("npu_fusion_attention: padding_mask is not supported (torch_npu does not either)")
    if not 0.0 < keep_prob <= 1.0:
        raise RuntimeError(f"npu_fusion_attention: keep_prob must be in (0, 1], got {keep_prob}")
    if sparse_mode not in (0, 1, 2, 3, 4):
        _sparse_mask(1, 1, sparse_mode, 0, 0, query.device)  # raises naming the mode
    if input_layout == "TND":
        return _varlen_attention(query, key, value, head_num, pse, atten_mask, scale, keep_prob,
                                 actual_seq_qlen, actual_seq_kvlen, sparse_mode, pre_tockens, next_tockens)
    q = _to_bnsd(query, input_layout, head_num)
    nkv = head_num * key.shape[-1] // query.shape[-1] if input_layout in ("BSH", "SBH") else None
    k = _to_bnsd(key, input_layout, nkv or head_num)
    v = _to_bnsd(value, input_layout, nkv or head_num)
    out, smax, ssum = _attention(q, k, v, head_num, pse, atten_mask, scale, keep_prob, sparse_mode,
                                 pre_tockens, next_tockens)
    numels = q.shape[0] * head_num * q.shape[2] * k.shape[2] if keep_prob < 1.0 else 0
    empty = torch.empty(0, dtype=query.dtype, device=query.device)
    return _from_bnsd(out, input_layout), smax, ssum, empty, 0, 0, numels


def _varlen_attention(query, key, value, head_num, pse, atten_mask, scale, keep_prob, qlen, kvlen,
                      sparse_mode, pre, nxt):
    """TND layout: sequences packed along T, their cumulative lengths in actual_seq_*len."""
    if qlen is None or kvlen is None:
        raise RuntimeError("npu_fusion_attention: input_layout TND needs actual_seq_qlen and actual_seq_kvlen")
    outs, maxes, sums = [], [], []
    q0 = k0 = 0
    for q1, k1 in zip(qlen, kvlen):
        if q1 == 0 and k1 == 0:  # trailing batches that take no part
            break
        q = query[q0:q1].transpose(0, 1).unsqueeze(0)          # (1, N, Sq, D)
        k = key[k0:k1].transpose(0, 1).unsqueeze(0)
        v = value[k0:k1].transpose(0, 1).unsqueeze(0)
        mask = atten_mask[: q1 - q0, : k1 - k0] if atten_mask is not None else None
        out, smax, ssum = _attention(q, k, v, head_num, None, mask, scale, keep_prob, sparse_mode, pre, nxt)
        outs.append(out[0].transpose(0, 1))
        maxes.append(smax[0].transpose(0, 1))
        sums.append(ssum[0].transpose(0, 1))
        q0, k0 = q1, k1
    out = torch.cat(outs, 0)
    if out.shape[0] < query.shape[0]:
        out = torch.cat([out, torch.zeros_like(query[out.shape[0]:, :, : value.shape[-1]])], 0)
    empty = torch.empty(0, dtype=query.dtype, device=query.device)
    # softmax statistics in torch_npu's default N, T, 8 layout
    return out, torch.cat(maxes, 0).transpose(0, 1), torch.cat(sums, 0).transpose(0, 1), empty, 0, 0, 0



def npu_prompt_flash_attention(query, key, value, *, pse_shift=None, padding_mask=None, atten_mask=None,
                               actual_seq_lengths=None, deq_scale1=None, quant_scale1=None, deq_scale2=None,
                               quant_scale2=None, quant_offset2=None, num_heads: int = 1, scale_value: float = 1.0,
                               pre_tokens: int = 2147473647, next_tokens: int = 0, input_layout: str = "BSH",
                               num_key_value_heads: int = 0, actual_seq_lengths_kv=None, sparse_mode: int = 0):
    """Prompt (full-sequence) attention for inference: Softmax(Mask(scale_value * q k^T + pse_shift,
    atten_mask)) v, layouts BSH, BSND and BNSD, GQA with `num_key_value_heads`.

    Computed as torch_npu's own test of it computes the expected result: q k^T in the inputs'
    dtype (npurt's half matmul accumulates in float32 and rounds once), scaled in that dtype,
    the softmax in float32 and its result back in the inputs' dtype, then times v. `atten_mask`
    True (or 1) masks a position; sparse modes 2/3/4 mask the left-up causal, right-down causal
    and band (pre/next tokens) patterns. Not provided: per-batch actual_seq_lengths and the
    quantization arguments (RuntimeError)."""
    if actual_seq_lengths is not None or actual_seq_lengths_kv is not None:
        raise RuntimeError("npu_prompt_flash_attention: actual_seq_lengths are not supported by npurt's reference "
                           "implementation (pad the batch to one length)")
    if any(x is not None for x in (deq_scale1, quant_scale1, deq_scale2, quant_scale2, quant_offset2)):
        raise RuntimeError("npu_prompt_flash_attention: the quantized variant is not supported by npurt")
    if input_layout not in ("BSH", "BSND", "BNSD"):
        raise RuntimeError(f"npu_prompt_flash_attention: input_layout must be BSH, BSND or BNSD, got {input_layout!r}")
    nkv = num_key_value_heads or num_heads
    if num_heads % nkv:
        raise RuntimeError(f"npu_prompt_flash_attention: num_heads {num_heads} is not a multiple of "
                           f"num_key_value_heads {nkv}")
    q = _to_bnsd(query, input_layout, num_heads)
    k = _to_bnsd(key, input_layout, nkv)
    v = _to_bnsd(value, input_layout, nkv)
    if nkv != num_heads:  # each kv head serves num_heads / nkv query heads
        k = k.repeat_interleave(num_heads // nkv, dim=1)
        v = v.repeat_interleave(num_heads // nkv, dim=1)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale_value
    if pse_shift is not None:
        scores = scores + pse_shift.to(scores.dtype)
    mask = atten_mask
    if sparse_mode in (2, 3, 4):
        mask = _sparse_mask(scores.shape[-2], scores.shape[-1], sparse_mode, pre_tokens, next_tokens, q.device)
    elif sparse_mode not in (0, 1):
        _sparse_mask(1, 1, sparse_mode, 0, 0, q.device)  # raises naming the mode
    if mask is not None:
        scores = scores.masked_fill(mask.bool(), float("-inf"))
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return _from_bnsd(torch.matmul(probs, v), input_layout)
