"""Every aten op works on npu tensors: a table of ops against CPU torch (same inputs, same
numbers), plus what torch users rely on around them (views, in-place, out=, item, printing)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

g = torch.Generator().manual_seed(0)


def r(*shape, dtype=torch.float32, low=-2.0, high=2.0):
    return (torch.rand(*shape, generator=g) * (high - low) + low).to(dtype)


def pos(*shape):
    return torch.rand(*shape, generator=g) + 0.1


def ints(*shape, high=10):
    return torch.randint(0, high, shape, generator=g)


def spd(n):
    a = r(n, n)
    return a @ a.T + n * torch.eye(n)


# name -> (fn, inputs); fn gets the inputs moved to the device under test
OPS = {
    # elementwise
    "abs": (torch.abs, [r(5, 7)]), "neg": (torch.neg, [r(5, 7)]), "exp": (torch.exp, [r(5, 7)]),
    "log": (torch.log, [pos(5, 7)]), "sqrt": (torch.sqrt, [pos(5, 7)]), "sin": (torch.sin, [r(5, 7)]),
    "tanh": (torch.tanh, [r(5, 7)]), "sigmoid": (torch.sigmoid, [r(5, 7)]), "relu": (F.relu, [r(5, 7)]),
    "gelu": (F.gelu, [r(5, 7)]), "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [r(5, 7)]),
    "silu": (F.silu, [r(5, 7)]), "erf": (torch.erf, [r(5, 7)]), "floor": (torch.floor, [r(5, 7)]),
    "round": (torch.round, [r(5, 7)]), "sign": (torch.sign, [r(5, 7)]), "reciprocal": (torch.reciprocal, [pos(5)]),
    "clamp": (lambda x: x.clamp(-0.5, 0.7), [r(5, 7)]), "add": (torch.add, [r(5, 7), r(5, 7)]),
    "add_alpha": (lambda a, b: torch.add(a, b, alpha=0.5), [r(5, 7), r(5, 7)]),
    "add_broadcast": (torch.add, [r(5, 7), r(7)]), "sub": (torch.sub, [r(4, 1, 3), r(2, 3)]),
    "mul_scalar": (lambda a: a * 3.5, [r(6)]), "div": (torch.div, [r(5, 7), pos(5, 7)]),
    "div_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), [r(5, 7), pos(5, 7)]),
    "pow": (torch.pow, [pos(5, 7), r(5, 7)]), "pow_scalar": (lambda a: a ** 2, [r(5)]),
    "maximum": (torch.maximum, [r(5, 7), r(5, 7)]), "atan2": (torch.atan2, [r(9), r(9)]),
    "remainder": (torch.remainder, [r(9), pos(9)]), "fmod": (torch.fmod, [r(9), pos(9)]),
    "lt": (torch.lt, [r(9), r(9)]), "eq_scalar": (lambda a: a == 3, [ints(9)]),
    "logical_and": (torch.logical_and, [r(9) > 0, r(9) > 0]), "bitwise_xor": (torch.bitwise_xor, [ints(9), ints(9)]),
    "int_plus_float": (torch.add, [ints(6), r(6)]), "where": (torch.where, [r(6) > 0, r(6), r(6)]),
    "lerp": (torch.lerp, [r(6), r(6), r(6)]), "addcmul": (lambda a, b, c: torch.addcmul(a, b, c, value=0.3),
                                                           [r(6), r(6), r(6)]),
    "nan_to_num": (torch.nan_to_num, [torch.tensor([float("nan"), float("inf"), 1.0])]),
    # reductions
    "sum": (torch.sum, [r(5, 7)]), "sum_dim": (lambda x: x.sum(1, keepdim=True), [r(5, 7)]),
    "mean": (lambda x: x.mean((0, 2)), [r(3, 4, 5)]), "prod": (lambda x: x.prod(0), [r(4, 3)]),
    "max": (torch.max, [r(5, 7)]), "max_dim": (lambda x: tuple(x.max(1)), [r(5, 7)]),
    "argmax": (lambda x: x.argmax(0), [r(5, 7)]), "std": (lambda x: x.std(1), [r(5, 7)]),
    "var_mean": (lambda x: torch.var_mean(x, 0), [r(5, 7)]), "norm": (torch.linalg.vector_norm, [r(5, 7)]),
    "logsumexp": (lambda x: x.logsumexp(-1), [r(5, 7)]), "cumsum": (lambda x: x.cumsum(1), [r(5, 7)]),
    "cumprod": (lambda x: x.cumprod(0), [r(5, 3)]), "all": (lambda x: (x > -1).all(1), [r(5, 7)]),
    "any": (lambda x: (x > 1.5).any(), [r(5, 7)]), "median": (lambda x: tuple(x.median(1)), [r(5, 7)]),
    "kthvalue": (lambda x: tuple(x.kthvalue(2, 1)), [r(5, 7)]), "count_nonzero": (torch.count_nonzero, [ints(20)]),
    # linear algebra
    "mm": (torch.mm, [r(16, 8), r(8, 12)]), "bmm": (torch.bmm, [r(3, 4, 5), r(3, 5, 2)]),
    "matmul_broadcast": (torch.matmul, [r(2, 3, 4, 5), r(5, 6)]), "mv": (torch.mv, [r(4, 5), r(5)]),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), [r(4, 6), r(4, 3), r(3, 6)]),
    "einsum": (lambda a, b: torch.einsum("bij,bjk->bik", a, b), [r(2, 3, 4), r(2, 4, 5)]),
    "dot": (torch.dot, [r(7), r(7)]), "inv": (torch.linalg.inv, [spd(5)]), "solve": (torch.linalg.solve, [spd(4), r(4, 2)]),
    "det": (torch.linalg.det, [spd(4)]), "cholesky": (torch.linalg.cholesky, [spd(4)]),
    "qr": (lambda a: tuple(torch.linalg.qr(a)), [r(5, 3)]), "eigvalsh": (torch.linalg.eigvalsh, [spd(4)]),
    # shapes and indexing
    "cat": (lambda a, b: torch.cat([a, b], 1), [r(3, 2), r(3, 4)]), "stack": (lambda a, b: torch.stack([a, b]), [r(3), r(3)]),
    "split": (lambda x: x.split([2, 3], 1), [r(4, 5)]), "chunk": (lambda x: x.chunk(3), [r(7, 2)]),
    "permute_contiguous": (lambda x: x.permute(2, 0, 1).contiguous(), [r(2, 3, 4)]),
    "transpose_add": (lambda x: x.t() + 1, [r(3, 5)]), "flip": (lambda x: x.flip(0), [r(4, 3)]),
    "roll": (lambda x: x.roll(2, 1), [r(3, 5)]), "repeat": (lambda x: x.repeat(2, 3), [r(2, 2)]),
    "repeat_interleave": (lambda x: x.repeat_interleave(2, dim=0), [r(3, 2)]),
    "repeat_interleave_tensor": (lambda x: x.repeat_interleave(torch.tensor([1, 0, 2], device=x.device), dim=0),
                                 [r(3, 2)]),
    "expand_contiguous": (lambda x: x.expand(3, 4).contiguous(), [r(1, 4)]), "narrow": (lambda x: x.narrow(1, 1, 2), [r(3, 4)]),
    "unfold": (lambda x: x.unfold(0, 3, 2), [r(9)]), "tril": (torch.tril, [r(4, 4)]), "triu": (lambda x: x.triu(1), [r(4, 4)]),
    "diag": (torch.diag, [r(4, 4)]), "gather": (lambda x, i: x.gather(1, i), [r(3, 4), ints(3, 2, high=4)]),
    "scatter": (lambda x, i, s: x.scatter(0, i, s), [r(3, 4), torch.tensor([[0, 1, 2, 0]]), r(1, 4)]),
    "scatter_add": (lambda x, i, s: x.scatter_add(1, i, s), [r(3, 4), ints(3, 4, high=4), r(3, 4)]),
    "index_select": (lambda x, i: x.index_select(0, i), [r(5, 3), torch.tensor([4, 0, 2])]),
    "advanced_index": (lambda x, i: x[i, 1:], [r(5, 3), torch.tensor([4, 0, 4])]),
    "bool_index": (lambda x: x[x > 0], [r(5, 3)]),
    "index_put": (lambda x, i, v: x.index_put((i,), v, accumulate=True), [r(5), torch.tensor([0, 2, 0]), r(3)]),
    "masked_fill": (lambda x: x.masked_fill(x < 0, -9.0), [r(5, 3)]), "masked_select": (lambda x: x.masked_select(x > 0), [r(8)]),
    "nonzero": (torch.nonzero, [ints(4, 5, high=2)]), "unique": (lambda x: tuple(torch.unique(x, return_counts=True)), [ints(20)]),
    "sort": (lambda x: tuple(x.sort(1, descending=True)), [r(4, 6)]), "argsort": (lambda x: x.argsort(0), [r(6, 2)]),
    "topk": (lambda x: tuple(x.topk(3)), [r(4, 8)]), "searchsorted": (torch.searchsorted, [torch.arange(10.0), r(5, high=9)]),
    "bucketize": (lambda x: torch.bucketize(x, torch.tensor([-1.0, 0.0, 1.0], device=x.device)), [r(7)]),
    "histc": (lambda x: torch.histc(x, bins=5, min=-2, max=2), [r(30)]), "bincount": (torch.bincount, [ints(30)]),
    "one_hot": (lambda x: F.one_hot(x, 10), [ints(6)]), "arange_like": (lambda x: torch.arange(x.shape[0], device=x.device) * x, [r(5)]),
    "zeros_ones_full": (lambda x: (torch.zeros_like(x), torch.ones(2, 3, device=x.device), torch.full((2,), 7, device=x.device)), [r(3)]),
    "clone_detach": (lambda x: x.clone().detach(), [r(3, 3)]),
    # nn
    "softmax": (lambda x: x.softmax(-1), [r(4, 9)]), "log_softmax": (lambda x: F.log_softmax(x, 0), [r(4, 9)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (6,), w, b), [r(3, 6), r(6), r(6)]),
    "group_norm": (lambda x: F.group_norm(x, 2), [r(2, 4, 3, 3)]),
    "batch_norm_eval": (lambda x, m, v: F.batch_norm(x, m, v, training=False), [r(4, 3, 2), r(3), pos(3)]),
    "conv1d": (lambda x, w: F.conv1d(x, w, padding=1), [r(2, 3, 10), r(4, 3, 3)]),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), [r(2, 3, 9, 9), r(5, 3, 3, 3), r(5)]),
    "conv2d_groups": (lambda x, w: F.conv2d(x, w, groups=2), [r(1, 4, 6, 6), r(4, 2, 3, 3)]),
    "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w, stride=2), [r(1, 3, 4, 4), r(3, 2, 3, 3)]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), [r(2, 3, 8, 8)]), "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, 1, 1), [r(1, 2, 6, 6)]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [r(1, 2, 7, 8)]),
    "interpolate_bilinear": (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), [r(1, 2, 4, 4)]),
    "interpolate_nearest": (lambda x: F.interpolate(x, size=(5, 3)), [r(1, 2, 4, 4)]),
    "pad_reflect": (lambda x: F.pad(x, (2, 1), mode="reflect"), [r(2, 3, 6)]),
    "embedding": (F.embedding, [ints(3, 4, high=10), r(10, 5)]),
    "cross_entropy": (F.cross_entropy, [r(6, 5), ints(6, high=5)]), "nll_loss": (F.nll_loss, [r(6, 5), ints(6, high=5)]),
    "mse_loss": (F.mse_loss, [r(6, 5), r(6, 5)]),
    "bce_with_logits": (F.binary_cross_entropy_with_logits, [r(6), torch.rand(6, generator=g)]),
    "cosine_similarity": (F.cosine_similarity, [r(4, 6), r(4, 6)]), "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2), [r(1, 8, 3, 3)]),
    "sdpa": (F.scaled_dot_product_attention, [r(2, 3, 5, 4), r(2, 3, 7, 4), r(2, 3, 7, 4)]),
    "sdpa_causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [r(1, 2, 6, 8)] * 3),
    "sdpa_bool_mask": (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                       [r(1, 2, 4, 8), r(1, 2, 5, 8), r(1, 2, 5, 8), r(4, 5) > -1]),
    # dtypes
    "float16_add": (torch.add, [r(8, dtype=torch.float16), r(8, dtype=torch.float16)]),
    "bfloat16_matmul": (torch.matmul, [r(8, 16, dtype=torch.bfloat16), r(16, 4, dtype=torch.bfloat16)]),
    "float64_exp": (torch.exp, [r(5, dtype=torch.float64)]), "to_dtype": (lambda x: x.to(torch.int32), [r(6) * 10]),
    "complex_mul": (torch.mul, [torch.randn(4, dtype=torch.complex64, generator=g)] * 2),
    "rfft": (torch.fft.rfft, [r(16)]), "fft2": (torch.fft.fft2, [r(4, 8)]), "irfft": (torch.fft.irfft, [torch.fft.rfft(r(10))]),
}


def _to(x, device):
    return x.to(device) if isinstance(x, torch.Tensor) else x


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_on_npu_matches_cpu_torch(name):
    fn, inputs = OPS[name]
    expect = fn(*inputs)
    got = fn(*[_to(x, "npu") for x in inputs])
    expect = expect if isinstance(expect, (tuple, list)) else (expect,)
    got = got if isinstance(got, (tuple, list)) else (got,)
    assert len(got) == len(expect)
    for e, o in zip(expect, got):
        assert o.device.type == "npu"
        torch.testing.assert_close(o.cpu(), e, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_half_precision_matmul_accumulates_in_float32_and_rounds_once():
    a, b = r(64, 128, dtype=torch.float16), r(128, 32, dtype=torch.float16)
    got = (a.npu() @ b.npu()).cpu()
    assert got.dtype == torch.float16
    assert torch.equal(got, (a.float() @ b.float()).half())
    torch.testing.assert_close(got, a @ b, rtol=2e-3, atol=2e-3)  # and agrees with CPU torch's fp16


def test_views_share_the_storage_and_take_no_copy():
    x = torch.zeros(4, 6, device="npu")
    v = x.t()[1:3]
    v.fill_(5.0)
    assert v.data_ptr() == x.data_ptr() + 4 and v.untyped_storage().data_ptr() == x.data_ptr()
    assert x.cpu()[:, 1:3].eq(5.0).all() and x.cpu().sum() == 40


def test_in_place_ops_and_out_arguments_write_the_given_tensor():
    x = torch.ones(3, device="npu")
    x.mul_(4).add_(torch.ones(3, device="npu"))
    out = torch.empty(0, device="npu")
    torch.add(x, 1, out=out)               # resized as torch resizes outs
    assert out.shape == (3,) and out.cpu().tolist() == [6.0, 6.0, 6.0]
    assert x.cpu().tolist() == [5.0, 5.0, 5.0]


def test_an_out_tensor_of_the_wrong_dtype_is_refused_at_the_call():
    out = torch.empty(3, dtype=torch.int64, device="npu")
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.add(torch.ones(3, device="npu"), 0.5, out=out)


def test_a_write_into_a_tensor_whose_elements_share_memory_is_refused_at_the_call():
    y = torch.rand(3, 3, device="npu")
    for write in (lambda x: torch.cat([y, y], out=x), lambda x: x.add_(1), lambda x: x.uniform_()):
        x = torch.zeros(1, 3, device="npu").expand(6, 3)
        with pytest.raises(RuntimeError, match="unsupported operation: more than one element"):
            write(x)  # torch's CPU kernel refuses it; the caller sees it now, not a later op
    # the ones torch allows still run, and the stream goes on
    x = torch.zeros(1, 3, device="npu").expand(6, 3)
    x.fill_(2)
    assert x.cpu().tolist() == [[2.0] * 3] * 6
    torch.sum(torch.ones(6, 3, 2, device="npu"), 2, out=x)
    assert torch.ones(3, device="npu").sum().item() == 3


def test_set_without_a_source_gives_an_empty_storage_of_the_tensors_device():
    y = torch.randn(1, 2, 3, device="npu:1")
    assert y.set_() is y
    assert y.shape == (0,) and y.stride() == (1,) and y.device == torch.device("npu:1")
    assert y.untyped_storage().device == torch.device("npu:1") and y.untyped_storage().nbytes() == 0
    src = torch.arange(4.0, device="npu:1")
    assert y.set_(src.untyped_storage(), 0, (2, 2), (2, 1)).cpu().tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_scalars_come_back_with_item_float_bool_and_tolist():
    x = torch.tensor([1.5, -2.0], device="npu")
    assert x[0].item() == 1.5 and float(x.sum()) == -0.5
    assert bool(x[1] < 0) and x.tolist() == [1.5, -2.0] and int(x.argmax()) == 0


def test_printing_shows_the_values_and_the_npu_device():
    assert repr(torch.tensor([[1.0, 2.0]], device="npu")) == "tensor([[1., 2.]], device='npu:0')"
    assert "device='npu:1'" in repr(torch.arange(3, device="npu:1"))


def test_numpy_conversion_of_an_npu_tensor_is_refused_as_on_real_devices():
    with pytest.raises(TypeError, match="npu"):
        torch.ones(2, device="npu").numpy()


def test_tensors_on_two_npus_cannot_mix_in_one_op():
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(2, device="npu:0") + torch.ones(2, device="npu:1")


def test_an_elementwise_op_refuses_a_cpu_tensor_beside_an_npu_tensor():
    d = torch.ones(3, device="npu")
    for mixed in (lambda: d + torch.ones(3), lambda: torch.ones(3) * d,
                  lambda: torch.where(d > 0, torch.zeros(3), d)):
        with pytest.raises(RuntimeError, match="same device.*npu:0 and cpu"):
            mixed()
    torch.testing.assert_close((d + 1).cpu(), torch.full((3,), 2.0))  # still usable


def test_a_zero_dim_cpu_tensor_is_a_scalar_and_a_cpu_index_is_taken():
    d = torch.arange(4.0, device="npu")
    torch.testing.assert_close((d * torch.tensor(2.0)).cpu(), torch.arange(4.0) * 2)
    torch.testing.assert_close(d[torch.tensor([1, 3])].cpu(), torch.tensor([1.0, 3.0]))


def test_copies_between_npus_and_to_the_host_keep_the_values():
    x = torch.arange(6.0, device="npu:0").view(2, 3)
    y = x.to("npu:1")
    assert y.device == torch.device("npu:1") and y.t().cpu().tolist() == x.cpu().t().tolist()
    assert y.data_ptr() != x.data_ptr()


def test_empty_and_zero_dim_tensors_work():
    e = torch.empty(0, 3, device="npu")
    assert (e + 1).shape == (0, 3) and e.sum().item() == 0.0
    s = torch.tensor(3.0, device="npu")
    assert (s * s).item() == 9.0 and s.dim() == 0


def test_a_cpu_scalar_tensor_mixes_with_npu_tensors():
    x = torch.ones(3, device="npu")
    assert (x * torch.tensor(2.5)).cpu().tolist() == [2.5, 2.5, 2.5]
