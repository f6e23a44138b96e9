"""`torch.autocast("npu")`: the casting policy torch applies on CUDA, for the AutocastPrivateUse1 key.

Torch registers no autocast kernels for a Python backend: without any, every op fails once
autocast is on. Here every op falls through, except the ones torch's CUDA policy names
(torch_npu uses the same lists):

* lower precision: matmul-class ops, convolutions, RNN cells, attention run in the autocast
  dtype (float16 by default, or bfloat16);
* float32: ops that lose too much in half precision (exp, log, pow, norms, losses, ...);
* float32 by dtype: softmax, log_softmax, cumsum, cumprod, prod, sum compute in float32;
* promote: ops mixing dtypes (addcmul, cat-like index_put, ...) run in the widest one.

Only npu tensors of floating types other than float64 are cast, as torch's `is_eligible`.
Torch's cache of casted weights is not kept (the casts are recomputed: slower, same numbers).
"""
from __future__ import annotations

import torch

_KEY = torch._C.DispatchKey.AutocastPrivateUse1
_EXCLUDE = torch._C.DispatchKeySet(_KEY)

LOWER_PRECISION = [
    "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv",
    "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot",
    "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "lstm_cell", "gru_cell", "rnn_tanh_cell",
    "rnn_relu_cell", "_scaled_dot_product_flash_attention", "scaled_dot_product_attention",
]
FP32 = [
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "pow", "softplus", "layer_norm", "native_layer_norm", "rms_norm", "group_norm",
    "frobenius_norm",
    "nuclear_norm", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss",
    "nll_loss2d", "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
    "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
    "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp",
    "upsample_nearest1d", "_upsample_nearest_exact1d", "upsample_nearest2d", "_upsample_nearest_exact2d",
    "upsample_nearest3d", "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d",
    "_upsample_bilinear2d_aa", "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bicubic2d_aa", "norm",
]
FP32_SET_DTYPE = ["prod", "softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm",
                  "linalg_matrix_norm", "sum"]
PROMOTE = ["addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler", "index_put",
           "scatter_add", "tensordot"]


def _eligible(t) -> bool:
    return (isinstance(t, torch.Tensor) and t.device.type == "npu" and t.is_floating_point()
            and t.dtype is not torch.float64)


def _cast(x, dtype):
    if _eligible(x):
        return x if x.dtype is dtype else x.to(dtype)
    if type(x) in (list, tuple):
        return type(x)(_cast(i, dtype) for i in x)
    return x


def _tensors(args, kwargs):
    for a in (*args, *kwargs.values()):
        if isinstance(a, torch.Tensor):
            yield a
        elif type(a) in (list, tuple):
            yield from (i for i in a if isinstance(i, torch.Tensor))


def _kernel(op, policy: str):
    names = [a.name for a in op._schema.arguments]
    dtype_pos = names.index("dtype") if "dtype" in names else None

    def run(*args, **kwargs):
        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            if policy == "lower":
                dtype = torch.get_autocast_dtype("npu")
                args, kwargs = _cast(args, dtype), {k: _cast(v, dtype) for k, v in kwargs.items()}
            elif policy == "fp32":
                args, kwargs = _cast(args, torch.float32), {k: _cast(v, torch.float32) for k, v in kwargs.items()}
            elif policy == "fp32_dtype":  # a dtype the caller left unset becomes float32
                positional = dtype_pos is not None and dtype_pos < len(args)
                unset = args[dtype_pos] is None if positional else kwargs.get("dtype") is None
                if unset and any(_eligible(t) and t.dtype != torch.float32 for t in _tensors(args, kwargs)):
                    if positional:
                        args = (*args[:dtype_pos], torch.float32, *args[dtype_pos + 1:])
                    else:
                        kwargs = {**kwargs, "dtype": torch.float32}
            else:  # promote: the widest floating dtype among the eligible tensors
                dtypes = [t.dtype for t in _tensors(args, kwargs) if _eligible(t)]
                if dtypes:
                    wide = dtypes[0]
                    for d in dtypes[1:]:
                        wide = torch.promote_types(wide, d)
                    args, kwargs = _cast(args, wide), {k: _cast(v, wide) for k, v in kwargs.items()}
            return op(*args, **kwargs)
    return run


def _overloads(name: str):
    packet = getattr(torch.ops.aten, name, None)
    if packet is None:
        return []
    ops = []
    for ov in packet.overloads():
        op = getattr(packet, ov)
        schema = op._schema
        if any(a.kwarg_only and a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
            continue  # out= variants are not autocast, as in torch
        if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
            continue  # nor in-place ones
        if policy_needs_dtype(name) and not any(a.name == "dtype" for a in schema.arguments):
            continue
        ops.append((ov, op))
    return ops


def policy_needs_dtype(name: str) -> bool:
    return name in FP32_SET_DTYPE


BANNED_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")


def _banned(*args, **kwargs):
    """aten::binary_cross_entropy under autocast: refused, as torch_npu (and CUDA) refuse it
    (torch_npu/csrc/aten/AutoCastOps.cpp), since a float16 input overflows its log."""
    raise RuntimeError(BANNED_MESSAGE)


def register(lib: torch.library.Library, fallback_lib: torch.library.Library) -> None:
    """Fallthrough for every op; the policy's kernels for the listed ones; the banned op."""
    fallback_lib.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    lib.impl("binary_cross_entropy", _banned, "AutocastPrivateUse1")
    for names, policy in ((LOWER_PRECISION, "lower"), (FP32, "fp32"), (FP32_SET_DTYPE, "fp32_dtype"),
                          (PROMOTE, "promote")):
        for name in names:
            for ov, op in _overloads(name):
                qual = name if ov == "default" else f"{name}.{ov}"
                lib.impl(qual, _kernel(op, policy), "AutocastPrivateUse1")
