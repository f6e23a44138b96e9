"""`import torch_npu.contrib.transfer_to_npu`: run CUDA code on npu unmodified.

As torch_npu's module of the same name (torch_npu/contrib/transfer_to_npu.py), importing it
patches torch once:

* `torch.cuda.*` becomes torch.npu's (every public name torch.npu has: streams, events,
  devices, memory, amp, graphs, ...), `torch.cuda.CUDAGraph` is `torch.npu.NPUGraph`,
  `torch.cuda.DoubleTensor` is `torch.npu.FloatTensor` (as there);
* `Tensor.cuda` / `Module.cuda` are `.npu`, `Tensor.is_cuda` is `.is_npu`;
* device arguments naming cuda become npu — "cuda", "cuda:1", torch.device("cuda", 1), and for
  `to` / `to_empty` a bare int, in positional arguments and in the keywords `device`,
  `device_type`, `map_location`, `device_id` (and `device_ids` lists) — in torch's factories
  (`torch.empty`, `zeros`, `tensor`, `arange`, `load`, `set_default_device`, ... torch_npu's
  list), `Tensor.to` / `new_*` / `pin_memory`, `Module.to` / `to_empty`, the torch.cuda functions
  torch_npu lists, `torch.autocast`, `torch.device(...)` contexts, `UntypedStorage(...)`,
  `torch.Event(...)`;
* `torch.distributed.init_process_group(backend="nccl")` uses "hccl", and
  `is_nccl_available()` answers for hccl.
"""
from __future__ import annotations

import functools
import warnings

import torch
import torch.utils._device

import npurt.torch  # noqa: F401 - registers the npu device

TORCH_FUNCTIONS = (
    "logspace", "randint", "hann_window", "rand", "full_like", "ones_like", "rand_like", "randperm", "arange",
    "frombuffer", "normal", "_empty_per_channel_affine_quantized", "empty_strided", "empty_like", "scalar_tensor",
    "tril_indices", "bartlett_window", "ones", "sparse_coo_tensor", "randn", "kaiser_window", "tensor",
    "triu_indices", "as_tensor", "zeros", "randint_like", "full", "eye", "_sparse_csr_tensor_unsafe", "empty",
    "_sparse_coo_tensor_unsafe", "blackman_window", "zeros_like", "range", "sparse_csr_tensor", "randn_like",
    "from_file", "_cudnn_init_dropout_state", "_empty_affine_quantized", "linspace", "hamming_window",
    "empty_quantized", "_pin_memory", "load", "set_default_device", "get_device_module",
    "sparse_compressed_tensor")
TENSOR_METHODS = ("new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor", "new_zeros", "to",
                  "pin_memory")
MODULE_METHODS = ("to", "to_empty")
CUDA_FUNCTIONS = (
    "get_device_properties", "get_device_name", "get_device_capability", "list_gpu_processes", "set_device",
    "synchronize", "mem_get_info", "memory_stats", "memory_summary", "memory_allocated", "max_memory_allocated",
    "reset_max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_max_memory_cached",
    "reset_peak_memory_stats", "default_stream", "can_device_access_peer", "current_stream", "utilization",
    "set_per_process_memory_fraction", "caching_allocator_alloc")
DEVICE_KEYWORDS = ("device", "device_type", "map_location", "device_id")


def _npu_device(d: torch.device) -> torch.device:
    return torch.device("npu" if d.index is None else f"npu:{d.index}")


def _replace(value, replace_int: bool):
    if isinstance(value, str) and "cuda" in value:
        return value.replace("cuda", "npu")
    if isinstance(value, torch.device) and value.type == "cuda":
        return _npu_device(value)
    if replace_int and isinstance(value, int) and not isinstance(value, bool):
        return f"npu:{value}"
    if isinstance(value, dict):
        return {(k.replace("cuda", "npu") if isinstance(k, str) else k):
                (v.replace("cuda", "npu") if isinstance(v, str) else v) for k, v in value.items()}
    return value


def _keyword(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return f"npu:{value}"
    return _replace(value, False)


def wrap_cuda(fn):
    """`fn` with cuda device arguments turned into npu ones."""
    if getattr(fn, "__npurt_transfer__", False):
        return fn
    replace_int = getattr(fn, "__name__", "") in ("to", "to_empty")

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if args:
            args = tuple(_replace(a, replace_int) for a in args)
        for key in DEVICE_KEYWORDS:
            if kwargs.get(key) is not None:
                kwargs[key] = _keyword(kwargs[key])
        ids = kwargs.get("device_ids")
        if isinstance(ids, (list, tuple)):
            kwargs["device_ids"] = type(ids)(_replace(i, replace_int) for i in ids)
        return fn(*args, **kwargs)

    call.__npurt_transfer__ = True
    return call


def _wrap_all(owner, names) -> None:
    for name in names:
        fn = getattr(owner, name, None)
        if fn is not None:
            setattr(owner, name, wrap_cuda(fn))


def _wrap_new(cls) -> None:
    """cls(...) with cuda device arguments: its __new__ wrapped (kept a static method)."""
    original = cls.__dict__.get("__new__")
    if original is None or getattr(original, "__npurt_transfer__", False):
        return
    fn = original.__func__ if isinstance(original, staticmethod) else original
    cls.__new__ = staticmethod(wrap_cuda(fn))


def _init_process_group(fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if args and isinstance(args[0], str) and "nccl" in args[0]:
            args = (args[0].replace("nccl", "hccl"), *args[1:])
        if isinstance(kwargs.get("backend"), str) and "nccl" in kwargs["backend"]:
            kwargs["backend"] = kwargs["backend"].replace("nccl", "hccl")
        return fn(*args, **kwargs)
    return call


def _patch_cuda() -> None:
    for name in dir(torch.npu):
        if not name.startswith("__"):
            try:
                setattr(torch.cuda, name, getattr(torch.npu, name))
            except (AttributeError, TypeError):  # read-only attributes of the module
                pass
    torch.cuda.CUDAGraph = torch.npu.NPUGraph
    torch.cuda.DoubleTensor = torch.npu.FloatTensor
    _wrap_all(torch.cuda, CUDA_FUNCTIONS)
    torch.cuda.device.__init__ = wrap_cuda(torch.cuda.device.__init__) \
        if isinstance(torch.cuda.device, type) else torch.cuda.device.__init__


def _apply() -> None:
    warnings.warn("torch.Tensor.cuda and torch.nn.Module.cuda are replaced with torch.Tensor.npu and "
                  "torch.nn.Module.npu now; torch.cuda.* with torch.npu.*; device arguments naming cuda "
                  "with npu; init_process_group's backend nccl with hccl (torch_npu.contrib.transfer_to_npu)")
    _patch_cuda()
    _wrap_all(torch, TORCH_FUNCTIONS)
    _wrap_all(torch.Tensor, TENSOR_METHODS)
    _wrap_all(torch.nn.Module, MODULE_METHODS)
    torch.Tensor.cuda = torch.Tensor.npu
    torch.Tensor.is_cuda = torch.Tensor.is_npu
    torch.nn.Module.cuda = torch.nn.Module.npu
    torch.amp.autocast_mode.autocast.__init__ = wrap_cuda(torch.amp.autocast_mode.autocast.__init__)
    torch.utils._device.DeviceContext.__init__ = wrap_cuda(torch.utils._device.DeviceContext.__init__)
    for cls in (torch.Event, torch.UntypedStorage):
        _wrap_new(cls)
    if torch.distributed.is_available():
        dist = torch.distributed
        dist.init_process_group = _init_process_group(wrap_cuda(dist.init_process_group))
        dist.is_nccl_available = lambda: True   # backend "hccl" (npurt.torch.distributed) is there


if not getattr(torch, "_npurt_transfer_to_npu", False):
    _apply()
    torch._npurt_transfer_to_npu = True
