"""Kernels as the Pythonic API sees them: `@npurt.kernel` makes a `Kernel`, launched from Python
on DeviceArrays and scalars.

    @npurt.kernel
    def vadd(ctx, x: npurt.GM, y: npurt.GM, z: npurt.GM, n: np.int32): ...

    vadd[8](x, y, z, n)                      # 8 blocks, on the current stream
    vadd[8, s](x, y, z, n)                   # on stream s
    npurt.launch(vadd, 8, x, y, z, n, stream=s)

A GM parameter takes a DeviceArray (its device address; it must be C-contiguous, since the
kernel sees raw memory), anything with `data_ptr()` (a torch npu tensor), or a device address
int; a scalar parameter takes a number. The launch is queued, like every operation: read the
results after synchronizing (or with `.to_host()`). Without `stream`, it goes to the current
stream of the device holding the first array argument (else of the current device).
"""
from __future__ import annotations

import numbers

import numpy as np

from . import devices as _devices
from . import streams
from .array import DeviceArray
from .exceptions import InvalidValueError
from .runtime import GM, KernelFunction, enqueue_launch, function_of

__all__ = ["GM", "Kernel", "BoundKernel", "bind", "kernel", "launch"]


class Kernel(KernelFunction):
    """A kernel (the runtime's KernelFunction) that launches from Python with `k[blocks](args)`
    or `k[blocks, stream](args)`: what `@npurt.kernel` makes. Everything that takes a
    KernelFunction (kernel binaries, acl.rt.launch_kernel*, the tools) takes it."""

    def __getitem__(self, config) -> "BoundKernel":
        """`vadd[blocks]` / `vadd[blocks, stream]`: a launcher taking DeviceArrays and scalars."""
        return bind(self, config)


def kernel(fn=None, *, name: str | None = None):
    """Mark a function as a kernel: `@npurt.kernel` or `@npurt.kernel(name="other_name")`.
    The first parameter is the block's context (`ctx.gm`, `ctx.block_range`, ...); the others
    are annotated `npurt.GM` (a device address) or a numpy scalar type."""
    if fn is None:
        return lambda f: Kernel(f, name)
    return Kernel(fn, name)


class BoundKernel:
    """`kernel[blocks]` or `kernel[blocks, stream]`: call it with the kernel's arguments."""

    __slots__ = ("func", "blocks", "stream")

    def __init__(self, func: KernelFunction, blocks, stream=None):
        self.func, self.blocks, self.stream = func, blocks, stream

    def __call__(self, *args) -> None:
        launch(self.func, self.blocks, *args, stream=self.stream)

    def __repr__(self) -> str:
        return f"<{self.func.name}[{self.blocks}{'' if self.stream is None else ', stream'}]>"


def bind(func: KernelFunction, config) -> BoundKernel:
    """What `func[config]` returns (config: blocks, or (blocks, stream))."""
    if isinstance(config, tuple):
        if len(config) != 2:
            raise InvalidValueError(f"launch configuration is {func.name}[blocks] or {func.name}[blocks, stream], "
                                    f"got {len(config)} values")
        return BoundKernel(func, *config)
    return BoundKernel(func, config)


def launch(kernel, blocks: int, *args, stream=None) -> None:
    """Queue `blocks` instances of `kernel` (an @kernel function or a kernel handle) with
    `args` on `stream` (an npurt.Stream; default: the current stream of the arrays' device)."""
    func = function_of(kernel)
    if len(args) != len(func.params):
        names = ", ".join(n for n, _ in func.params)
        raise InvalidValueError(f"kernel {func.name!r} takes {len(func.params)} arguments ({names}), got {len(args)}")
    values, device = [], None
    for (name, ann), arg in zip(func.params, args):
        if ann is GM:
            ptr, dev = _gm(func, name, arg)
            values.append(ptr)
            device = dev if device is None else device
        else:
            if isinstance(arg, (DeviceArray, np.ndarray)) or not isinstance(arg, (numbers.Number, np.generic)):
                raise InvalidValueError(f"kernel {func.name!r} argument {name!r} is a scalar ({ann.__name__}), "
                                        f"got {type(arg).__name__}")
            values.append(arg)
    if stream is None:
        s = streams._runtime_stream(device)
    elif isinstance(stream, streams.Stream):
        s = stream.runtime_stream
    else:
        raise InvalidValueError(f"stream must be an npurt.Stream or None, got {type(stream).__name__}")
    enqueue_launch(func, blocks, s, func.values(tuple(values)))


def _gm(func: KernelFunction, name: str, arg) -> tuple[int, int | None]:
    """(device address, device id or None) for a GM argument."""
    where = f"kernel {func.name!r} argument {name!r}"
    if isinstance(arg, DeviceArray):
        if not arg.is_contiguous():
            raise InvalidValueError(f"{where} is a non-contiguous view; kernels see raw memory: pass x.contiguous()")
        return arg.ptr, arg.device
    if isinstance(arg, np.ndarray):
        raise InvalidValueError(f"{where} is a host (numpy) array; kernels read device memory: copy it with "
                                "npurt.to_device(array) first")
    if callable(getattr(arg, "data_ptr", None)):  # e.g. a torch tensor on npu
        dev = getattr(arg, "device", None)
        index = getattr(dev, "index", None)
        return int(arg.data_ptr()), None if index is None else _devices.device_id_of(dev)
    if isinstance(arg, numbers.Integral) and not isinstance(arg, bool):
        return int(arg), None
    raise InvalidValueError(f"{where} is a global-memory address: pass a DeviceArray (or a device address int), "
                            f"got {type(arg).__name__}")
