"""The explicit aten kernels: factories, resize, record_stream, and the routes torch takes
only for non-CPU/CUDA devices, mapped onto ops the CPU kernels implement.

* `empty.memory_format` / `empty_strided`: a new allocation in npurt's pool.
* `resize_`: resize.py.
* `set_()`: an empty storage of the tensor's device.
* `record_stream`: notes the stream's use of the block. npurt already orders every free
  after the work queued on any stream that uses the block, so this only matters for device
  memory used behind torch's back (pyACL calls on `data_ptr()`).
* Mappings: `convolution_overrideable` (and backward) to `convolution`; LSTM/GRU fused cells
  (`_thnn_fused_*`, CUDA-only ops torch picks for accelerators) computed from their
  definitions; `native_dropout` with the npu generator; `scaled_dot_product_attention` takes
  the kernel CPU torch takes (torch's backend choice for PrivateUse1 is C++-only and would
  always take the slower math path).
"""
from __future__ import annotations

import torch

from ..runtime import note_uses
from . import copies, pinned, random, storage
from .shallow_copy import has_compatible_shallow_copy_type
from .device import index_of
from .fallback import Call
from .optask import launch, run_sync
from .plan import plan_of
from .refs import ref, write_view
from .resize import resize_npu
from .streams import check_not_external, runtime_stream


# ---------------------------------------------------------------- factories
def _device_index(device):
    if device is None:
        return None
    return index_of(device)


def empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    if layout not in (None, torch.strided):
        raise RuntimeError(f"npu tensors are strided; layout {layout} is not supported")
    if pin_memory:
        raise RuntimeError("pin_memory applies to CPU tensors only")
    size = tuple(size)
    if any(n < 0 for n in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(size)}")
    dtype = dtype or torch.get_default_dtype()
    return storage.empty_strided(size, storage.strides_for(size, memory_format), dtype, _device_index(device))


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    if layout not in (None, torch.strided):
        raise RuntimeError(f"npu tensors are strided; layout {layout} is not supported")
    size = tuple(size)
    if any(n < 0 for n in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(size)}")
    return storage.empty_strided(size, tuple(stride), dtype or torch.get_default_dtype(), _device_index(device))


# ---------------------------------------------------------------- resize
def resize_(self, size, memory_format=None):
    return resize_npu(self, size, memory_format)


# ---------------------------------------------------------------- streams
def record_stream(self, s) -> None:
    check_not_external(s, "record_stream")
    rs = runtime_stream(s)
    blocks = []
    ref(self, blocks)
    seq = rs.enqueued_seq
    if seq > rs.completed_seq:
        note_uses(blocks, rs, seq)


# ---------------------------------------------------------------- mappings
def _as(op_name):
    """Run the op on host views through the generic path, as if it were `op_name`."""
    target = getattr(torch.ops.aten, op_name.split(".")[0])
    target = getattr(target, op_name.split(".")[1] if "." in op_name else "default")

    def kernel(*args, **kwargs):
        return Call(plan_of(target), args, kwargs).run()
    return kernel


def convolution_overrideable(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    return Call(plan_of(torch.ops.aten.convolution.default),
                (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups), {}).run()


def convolution_backward_overrideable(grad_output, input, weight, stride, padding, dilation, transposed,
                                      output_padding, groups, output_mask):
    # the bias's size, which convolution_backward wants for its grad (out channels)
    bias_sizes = [weight.shape[1] * groups if transposed else weight.shape[0]] if output_mask[2] else None
    return Call(plan_of(torch.ops.aten.convolution_backward.default),
                (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
                 groups, output_mask), {}).run()


def nested_tensor_from_mask_left_aligned(t, mask) -> bool:
    """Nested tensors are not supported on npu: say "not left aligned", so that
    nn.TransformerEncoder keeps the padded path (same results) instead of converting."""
    return False


def _lstm_cell_ref(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    hy = o * cy.tanh()
    return hy, cy, torch.cat([i, f, g, o], 1)  # workspace: the activated gates, as CUDA keeps them


def _lstm_cell_backward_ref(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    i, f, g, o = workspace.chunk(4, 1)
    tanh_cy = cy.tanh()
    ghy = grad_hy if grad_hy is not None else torch.zeros_like(cy)
    gcy = grad_cy if grad_cy is not None else torch.zeros_like(cy)
    gc = ghy * o * (1 - tanh_cy * tanh_cy) + gcy
    gi = gc * g * i * (1 - i)
    gf = gc * cx * f * (1 - f)
    gg = gc * i * (1 - g * g)
    go = ghy * tanh_cy * o * (1 - o)
    grad_gates = torch.cat([gi, gf, gg, go], 1)
    grad_cx = gc * f
    grad_bias = grad_gates.sum(0) if has_bias else None
    return grad_gates, grad_cx, grad_bias


def _gru_cell_ref(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    if input_bias is not None:
        input_gates = input_gates + input_bias
        hidden_gates = hidden_gates + hidden_bias
    ir, ii, in_ = input_gates.chunk(3, 1)
    hr, hi, hn = hidden_gates.chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (ii + hi).sigmoid()
    n = (in_ + r * hn).tanh()
    hy = n + z * (hx - n)
    # workspace as CUDA lays it out: r, z, n, hx, hn
    return hy, torch.cat([r, z, n, hx, hn], 1)


def _gru_cell_backward_ref(grad_hy, workspace, has_bias):
    r, z, n, hx, hn = workspace.chunk(5, 1)
    gz = grad_hy * (hx - n) * z * (1 - z)
    gn = grad_hy * (1 - z) * (1 - n * n)
    gr = gn * hn * r * (1 - r)
    grad_input_gates = torch.cat([gr, gz, gn], 1)
    grad_hidden_gates = torch.cat([gr, gz, gn * r], 1)
    grad_hx = grad_hy * z
    gib = grad_input_gates.sum(0) if has_bias else None
    ghb = grad_hidden_gates.sum(0) if has_bias else None
    return grad_input_gates, grad_hidden_gates, grad_hx, gib, ghb


def _on_host(fn, name, n_outputs):
    """A kernel computing `fn` on host views, its outputs shaped by running fn on meta."""
    def kernel(*args):
        metas = fn(*[_meta(a) for a in args])
        index = next(a.get_device() for a in args if isinstance(a, torch.Tensor) and a.device.type == "npu")
        outs = [None if m is None else storage.empty_strided(tuple(m.shape), m.stride(), m.dtype, index)
                for m in metas]
        blocks, reads, writes = [], [], []
        hargs = []
        for a in args:
            if isinstance(a, torch.Tensor):
                r = ref(a, blocks)
                reads.append(r)
                hargs.append(r)
            else:
                hargs.append(a)
        out_refs = [None if o is None else ref(o, blocks) for o in outs]
        writes.extend(r for r in out_refs if r is not None)

        def run(*host_args):
            res = fn(*host_args)
            for r, x in zip(out_refs, res):
                if r is not None:
                    write_view(r).copy_(x)
        launch(index, run, hargs, None, name, reads, writes, blocks)
        return tuple(outs)
    return kernel


def _meta(a):
    if isinstance(a, torch.Tensor):
        return torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device="meta")
    return a


def native_dropout(input, p, train):
    if not train or p == 0:
        return (input.clone(), torch.ones_like(input, dtype=torch.bool))
    index = input.get_device()
    out = storage.empty_strided(tuple(input.shape), storage.contiguous_strides(input.shape), input.dtype, index)
    mask = storage.empty(tuple(input.shape), torch.bool, index)
    blocks = []
    ri, ro, rm = ref(input, blocks), ref(out, blocks), ref(mask, blocks)
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)

    def run(x, o, m, generator=None):
        m.bernoulli_(1.0 - p, generator=generator)
        torch.mul(x, m, out=o)
        o.mul_(scale)
    launch(index, random.seeded(run, index), (ri, ro, rm), {}, "aten::native_dropout", [ri], [ro, rm], blocks)
    return out, mask


def _flash_ok(query, key, value, attn_mask, dropout_p, enable_gqa) -> bool:
    """Whether CPU torch would pick its flash kernel for these inputs (sdp::SDPBackend)."""
    return (query.dim() == 4 and key.dim() == 4 and value.dim() == 4 and dropout_p == 0.0
            and not enable_gqa and query.dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16)
            and query.size(-1) == key.size(-1) == value.size(-1)
            and query.stride(-1) == key.stride(-1) == value.stride(-1) == 1)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    """SDPA on npu, choosing the kernel CPU torch would choose (the flash kernel where it
    applies, else the math path), so results match CPU torch. Registered for the autograd
    key: the ops it calls carry their own derivatives."""
    if attn_mask is not None and attn_mask.dtype == torch.bool:  # as torch converts it
        attn_mask = torch.zeros_like(attn_mask, dtype=query.dtype).masked_fill_(
            attn_mask.logical_not(), float("-inf"))
    if _flash_ok(query, key, value, attn_mask, dropout_p, enable_gqa):
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, dropout_p, is_causal, attn_mask=attn_mask, scale=scale)[0]
    return torch.ops.aten._scaled_dot_product_attention_math(
        query, key, value, attn_mask, dropout_p, is_causal, None, scale=scale, enable_gqa=enable_gqa)[0]


def set_empty(self):
    """aten::set_() of an npu tensor: it gets an empty storage of its own device, as on CUDA
    (torch's CPU kernel, which a metadata op would reach, gives it a CPU one and refuses)."""
    empty = storage.empty((0,), self.dtype, self.get_device())
    return self.set_(empty.untyped_storage(), 0, (0,), (1,))


def local_scalar_dense(self):
    blocks = []
    r = ref(self, blocks)
    return run_sync(self.get_device(), _item, (r,), None, "aten::_local_scalar_dense", [r], [], blocks)


def _item(x):
    return x.item()


# ---------------------------------------------------------------- the table
CONTIGUOUS_ONLY = ("NPU contiguous operator only supported contiguous memory format. "
                   "ERR01007 OPS feature not supported")


def contiguous(self, memory_format=torch.contiguous_format):
    """torch_npu's contiguous (torch_npu/csrc/aten/common/TensorProperties.cpp): a tensor already
    contiguous in `memory_format` is itself; otherwise only the default format is made (a copy),
    and channels_last / channels_last_3d / preserve_format are refused. `.to(memory_format=...)`
    and `clone(memory_format=...)` still make those layouts."""
    if self.is_contiguous(memory_format=memory_format):
        return self
    if memory_format != torch.contiguous_format:
        raise RuntimeError(CONTIGUOUS_ONLY)
    return self.clone(memory_format=memory_format)


def npu_kernels() -> dict:
    """aten op name -> PrivateUse1 kernel."""
    return {
        "_to_copy": pinned.to_copy,
        "empty.memory_format": empty_memory_format,
        "empty_strided": empty_strided,
        "_copy_from": copies.copy_from,
        "_copy_from_and_resize": copies.copy_from_and_resize,
        "resize_": resize_,
        "record_stream": record_stream,
        "set_": set_empty,
        "_local_scalar_dense": local_scalar_dense,
        "convolution_overrideable": convolution_overrideable,
        "convolution_backward_overrideable": convolution_backward_overrideable,
        "_thnn_fused_lstm_cell": _on_host(_lstm_cell_ref, "aten::_thnn_fused_lstm_cell", 3),
        "_thnn_fused_lstm_cell_backward_impl": _on_host(_lstm_cell_backward_ref,
                                                        "aten::_thnn_fused_lstm_cell_backward_impl", 3),
        "_thnn_fused_gru_cell": _on_host(_gru_cell_ref, "aten::_thnn_fused_gru_cell", 2),
        "_thnn_fused_gru_cell_backward": _on_host(_gru_cell_backward_ref, "aten::_thnn_fused_gru_cell_backward", 5),
        "native_dropout": native_dropout,
        "_nested_tensor_from_mask_left_aligned": nested_tensor_from_mask_left_aligned,
        "contiguous": contiguous,   # under inference_mode, where the autograd kernel is not reached
        "_has_compatible_shallow_copy_type": has_compatible_shallow_copy_type,   # cpu_tensor.data = npu_tensor
    }


def autograd_kernels() -> dict:
    """aten op name -> AutogradPrivateUse1 kernel (composite ops routed as on CPU)."""
    return {"scaled_dot_product_attention": scaled_dot_product_attention,
            "contiguous": contiguous}  # torch_npu's own kernel; clone keeps the autograd graph


def cpu_kernels() -> dict:
    """aten op name -> CPU kernel (pinned host memory)."""
    return {
        "_pin_memory": pinned.pin_memory,
        "is_pinned": lambda self, device=None: copies.is_pinned_tensor(self),
    }
