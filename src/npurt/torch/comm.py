"""DataParallel's copy functions on npu: `torch._C._broadcast`, `_broadcast_out`,
`_broadcast_coalesced`, `_scatter`, `_scatter_out`, `_gather`, `_gather_out`.

torch.nn.parallel.comm (and so `nn.DataParallel`) calls these on torch._C; the CPU build of
torch has none, and torch_npu defines them there (torch_npu/csrc/npu/Module.cpp,
initCommMethods) with the semantics of torch's CUDA versions: a broadcast copies a tensor to
every device (the source device keeps the tensor itself), a scatter splits along `dim`
(`chunk_sizes` or evenly) and copies each piece to its device (on `streams[i]` when given), a
gather concatenates along `dim` on the destination (`destination_index` -1: the CPU, None: the
current device). Copies between npus are npurt copies, ordered as docs/torch.md says.
"""
from __future__ import annotations

import torch


def _device(index: int) -> torch.device:
    return torch.device("cpu") if index == -1 else torch.device("npu", index)


def broadcast(tensor: torch.Tensor, devices) -> list:
    return [tensor if tensor.device == _device(d) else tensor.to(_device(d)) for d in devices]


def broadcast_out(tensor: torch.Tensor, out) -> list:
    for o in out:
        if o.shape != tensor.shape:
            raise RuntimeError(f"output tensor of shape {tuple(o.shape)} does not match the input's "
                               f"{tuple(tensor.shape)}")
        o.copy_(tensor)
    return list(out)


def broadcast_coalesced(tensors, devices, buffer_size: int) -> list:
    return [list(tensors) if i == 0 else [broadcast(t, [d])[0] for t in tensors] for i, d in enumerate(devices)]


def _copy_on(piece: torch.Tensor, device: torch.device, stream) -> torch.Tensor:
    if stream is None:
        return piece.to(device, non_blocking=True).contiguous()
    with torch.npu.stream(stream):
        return piece.to(device, non_blocking=True).contiguous()


def scatter(tensor: torch.Tensor, devices, chunk_sizes=None, dim: int = 0, streams=None) -> tuple:
    devices = list(devices)
    if not devices:
        raise RuntimeError("Expected at least one device to scatter to")
    if chunk_sizes is not None and len(chunk_sizes) != len(devices):
        raise RuntimeError(f"Expected devices and chunk_sizes to be of same length, but got len(devices) = "
                           f"{len(devices)} and len(chunk_sizes) = {len(chunk_sizes)}")
    pieces = tensor.split(list(chunk_sizes), dim) if chunk_sizes is not None else tensor.chunk(len(devices), dim)
    streams = list(streams) if streams else [None] * len(pieces)
    return tuple(_copy_on(p, _device(d), s) for p, d, s in zip(pieces, devices, streams))


def scatter_out(tensor: torch.Tensor, out, dim: int = 0, streams=None) -> tuple:
    sizes = [o.shape[dim] for o in out]
    pieces = tensor.split(sizes, dim)
    streams = list(streams) if streams else [None] * len(out)
    for o, p, s in zip(out, pieces, streams):
        if s is None:
            o.copy_(p, non_blocking=True)
        else:
            with torch.npu.stream(s):
                o.copy_(p, non_blocking=True)
    return tuple(out)


def _gathered_size(tensors, dim: int) -> tuple[list, int]:
    """torch_npu's gather checks (DataParallelComm.cpp): the size of the result, and dim wrapped."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("Expected at least one tensor to gather from")
    first = tensors[0]
    dim = dim + first.dim() if dim < 0 else dim
    expected = list(first.shape)
    total = 0
    for i, t in enumerate(tensors):
        if t.device.type != "npu":
            raise RuntimeError(f"Expected all input tensors to be NPU tensors, but tensor at index {i} has device "
                               f"{t.device}")
        if t.dim() != len(expected):
            raise RuntimeError(f"Expected all input tensors to have the same number of dimensions, but tensor at "
                               f"index {i}has {t.dim()} dimensions, (expected {len(expected)})")
        expected[dim] = t.shape[dim]
        if list(t.shape) != expected:
            raise RuntimeError(f"Input tensor at index {i} has invalid shape {list(t.shape)}, but expected {expected}")
        total += t.shape[dim]
    expected[dim] = total
    return expected, dim


def _gather_into(tensors, out: torch.Tensor, dim: int) -> torch.Tensor:
    for piece, t in zip(out.split([t.shape[dim] for t in tensors], dim), tensors):
        piece.copy_(t, non_blocking=out.device.type == "npu")
    return out


def gather(tensors, dim: int = 0, destination_index=None) -> torch.Tensor:
    tensors = list(tensors)
    size, dim = _gathered_size(tensors, dim)
    dest = torch.device("npu", torch.npu.current_device()) if destination_index is None \
        else _device(destination_index)
    first = tensors[0]
    fmt = torch.channels_last if first.dim() == 4 and first.is_contiguous(memory_format=torch.channels_last) \
        and not first.is_contiguous() else torch.contiguous_format
    return _gather_into(tensors, torch.empty(size, dtype=first.dtype, device=dest, memory_format=fmt), dim)


def gather_out(tensors, out: torch.Tensor, dim: int = 0) -> torch.Tensor:
    tensors = list(tensors)
    size, dim = _gathered_size(tensors, dim)
    if list(out.shape) != size:
        raise RuntimeError(f"Expected out tensor to have shape {size}, but got {list(out.shape)}")
    return _gather_into(tensors, out, dim)


FUNCTIONS = {"_broadcast": broadcast, "_broadcast_out": broadcast_out, "_broadcast_coalesced": broadcast_coalesced,
             "_scatter": scatter, "_scatter_out": scatter_out, "_gather": gather, "_gather_out": gather_out}


def install() -> None:
    """Set them on torch._C, where torch.nn.parallel.comm looks (only those torch lacks)."""
    for name, fn in FUNCTIONS.items():
        if not hasattr(torch._C, name):
            setattr(torch._C, name, fn)
