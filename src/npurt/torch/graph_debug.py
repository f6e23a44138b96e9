"""Looking at tensors inside captured graphs: torch_npu's `print_npugraph_tensor` and
`save_npugraph_tensor` (torch_npu/npu/graphs.py, ops `torch.ops.npu.*`).

    with torch.npu.graph(g):
        y = model(x)
        torch.ops.npu.print_npugraph_tensor(y, tensor_name="y")     # at every replay
        torch.ops.npu.save_npugraph_tensor(y, save_path="y.pt")     # y_device_0_0.pt, _1.pt, ...
    g.replay()

Each call queues, after the current stream's work so far, on one debug stream per device: a
device-to-host copy of the tensor into pinned memory, then a host function that prints it
(`"name=tensor(...), shape=(...), dtype=..."`) or `torch.save`s it. Inside a capture they are
captured (the debug stream joins the capture), so each replay prints or saves the tensor as
the replay left it. The current stream then waits for the debug stream. A CPU tensor is
printed / saved at once; other devices are ignored.

File names, as torch_npu's `_build_save_npugraph_tensor_path`: `save_path` (default
`tensor_<timestamp>.pt`, ".pt" added when it has no suffix) gets `_device_<index>` for npu
tensors, then a per-path counter `_<n>` unless `overwrite=True`.

Host functions hand their tensors over as torch_npu's do: a "host_tensor_ptr" spec (address,
bytes, shape, dtype) of the pinned copy, read into a "host_tensor_buffer" spec when the host
function runs (`_materialize_npugraph_tensor_arg` turns one back into a tensor).
"""
from __future__ import annotations

import os
from datetime import datetime

import torch

from ..runtime import fork_safe_lock
from .host_funcs import TENSOR_BUFFER_SPEC, TENSOR_PTR_SPEC, launch_host_func_pending
_counters: dict = {}
_counters_lock = fork_safe_lock()
_debug_streams: dict = {}


def make_tensor_ptr_spec(tensor: torch.Tensor) -> tuple:
    return (TENSOR_PTR_SPEC, tensor.data_ptr(), tensor.numel() * tensor.element_size(), tuple(tensor.shape),
            tensor.dtype)


def materialize_tensor_arg(arg):
    """A buffer spec as a CPU tensor; lists element-wise; anything else as it is."""
    if isinstance(arg, tuple) and len(arg) == 4 and arg[0] == TENSOR_BUFFER_SPEC:
        _, buffer, shape, dtype = arg
        if len(buffer) == 0:
            return torch.empty(shape, dtype=dtype)
        return torch.frombuffer(buffer, dtype=dtype).reshape(shape)
    if isinstance(arg, list):
        return [materialize_tensor_arg(a) for a in arg]
    return arg


def build_save_path(save_path=None, device_index=None, overwrite: bool = False) -> str:
    if save_path is None:
        save_path = f"tensor_{datetime.now().strftime('%Y%m%d_%H%M%S_%f')}.pt"
    if not isinstance(save_path, str):
        raise TypeError(f"save_path must be str or None, but got {type(save_path).__name__}")
    if not isinstance(overwrite, bool):
        raise TypeError(f"overwrite must be bool, but got {type(overwrite).__name__}")
    directory, filename = os.path.split(save_path)
    stem, suffix = os.path.splitext(filename)
    if not stem:
        raise ValueError("save_path must include a file name")
    stem += "" if device_index is None else f"_device_{device_index}"
    suffix = suffix or ".pt"
    if not overwrite:
        key = os.path.join(directory, stem + suffix)
        with _counters_lock:
            n = _counters.get(key, 0)
            _counters[key] = n + 1
        stem += f"_{n}"
    return os.path.join(directory, stem + suffix) if directory else stem + suffix


def _print_now(tensor_name, arg) -> None:
    t = materialize_tensor_arg(arg)
    text = str(t) if tensor_name is None else f"{tensor_name}={t}"
    print(f"{text}, shape={tuple(t.shape)}, dtype={t.dtype}", flush=True)


def _save_now(arg, path: str) -> None:
    torch.save(materialize_tensor_arg(arg), path)


def _debug_stream(index: int):
    s = _debug_streams.get(index)
    if s is None:
        s = _debug_streams[index] = torch.npu.Stream(device=index, priority=-1)
    return s


def _on_host_after_current_work(tensors: list, callback, make_args) -> None:
    """Copy `tensors` (npu, one device) to pinned host memory on the debug stream after the
    current stream's work, then run callback(*make_args(ptr specs)) in that stream's order."""
    index = tensors[0].device.index
    index = torch.npu.current_device() if index is None else index
    debug = _debug_stream(index)
    before, after = torch.npu.Event(), torch.npu.Event()
    before.record()
    with torch.npu.stream(debug):
        before.wait()
        host = [t.to("cpu", non_blocking=True, memory_format=torch.contiguous_format) for t in tensors]
        specs = [make_tensor_ptr_spec(h) for h in host]
        # the host copies go with the host function: a captured one keeps them for every replay
        launch_host_func_pending(debug, callback, make_args(specs), keep=host)
        after.record()
    after.wait()


def print_npugraph_tensor(input, *, tensor_name=None) -> None:
    if not isinstance(input, torch.Tensor):
        return
    if input.device.type == "cpu":
        _print_now(tensor_name, input)
    elif input.device.type == "npu":
        _on_host_after_current_work([input], _print_now, lambda specs: (tensor_name, specs[0]))


def save_npugraph_tensor(input, *, save_path=None, overwrite: bool = False) -> None:
    if not isinstance(input, torch.Tensor):
        return
    if input.device.type == "cpu":
        torch.save(input, build_save_path(save_path, overwrite=overwrite))
    elif input.device.type == "npu":
        path = build_save_path(save_path, input.device.index if input.device.index is not None
                               else torch.npu.current_device(), overwrite)
        _on_host_after_current_work([input], _save_now, lambda specs: (specs[0], path))


def save_npugraph_tensor_list(input, *, save_path=None, overwrite: bool = False) -> None:
    if not isinstance(input, (list, tuple)):
        raise TypeError(f"input must be Tensor or TensorList, but got {type(input).__name__}")
    if not input:
        raise ValueError("input tensor list must not be empty")
    if not all(isinstance(t, torch.Tensor) for t in input):
        raise TypeError("all elements in input tensor list must be Tensor")
    device = input[0].device
    if any(t.device != device for t in input[1:]):
        raise ValueError("all tensors in input tensor list must be on the same device")
    if device.type == "cpu":
        torch.save(list(input), build_save_path(save_path, overwrite=overwrite))
    elif device.type == "npu":
        index = device.index if device.index is not None else torch.npu.current_device()
        path = build_save_path(save_path, index, overwrite)
        _on_host_after_current_work(list(input), _save_now, lambda specs: (list(specs), path))


_LIB = torch.library.Library("npu", "FRAGMENT")


def register_ops() -> None:
    """torch.ops.npu.print_npugraph_tensor / save_npugraph_tensor(.tensor_list), as torch_npu
    defines them (with fake kernels, so tracing keeps them)."""
    if hasattr(torch.ops.npu, "print_npugraph_tensor"):
        return
    _LIB.define("print_npugraph_tensor(Tensor input, *, str? tensor_name=None) -> ()")
    _LIB.define("save_npugraph_tensor(Tensor input, *, str? save_path=None, bool overwrite=False) -> ()")
    _LIB.define("save_npugraph_tensor.tensor_list(Tensor[] input, *, str? save_path=None, "
                "bool overwrite=False) -> ()")
    for key in ("PrivateUse1", "CPU"):
        _LIB.impl("print_npugraph_tensor", print_npugraph_tensor, key)
        _LIB.impl("save_npugraph_tensor", save_npugraph_tensor, key)
        _LIB.impl("save_npugraph_tensor.tensor_list", save_npugraph_tensor_list, key)
    for name in ("print_npugraph_tensor", "save_npugraph_tensor", "save_npugraph_tensor.tensor_list"):
        torch.library.register_fake(f"npu::{name}", lambda *a, **k: None, lib=_LIB)
