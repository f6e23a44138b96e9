"""One task per elementwise op of the Pythonic API: `a + b`, `a * 2`, `x - row` as one task.

The general route of `a + 2` queues a fill of a temporary (the scalar), and of `x - row`
a broadcast copy, before the kernel launch; and each launch goes through the kernel model
(argument packing and checks, the watchdog's deadline, a KernelContext and three bounds-
checked `ctx.gm` views per block). An `ElementwiseTask` is the whole op in one task: it holds
the operands' addresses and shapes (a Python number as a numpy scalar of the op's dtype) and,
when it runs, applies the numpy ufunc to views of device memory, numpy's broadcasting taking
the place of the materialized copies. It gives the same bits as the kernel route, which also
applies that ufunc to views, so `fused_binary` takes only what that holds for:

* binary ops of BINARY_OPS (div: float dtypes only, as the kernel);
* dtypes the kernel computes in directly (float32, float64, the integer types), not float16
  or bfloat16, which the kernel computes in float32 and rounds once;
* operands that are C-contiguous DeviceArrays of the op's dtype on one device, or Python
  numbers exactly representable in an integer dtype (any number, for a float dtype: the
  fill rounds it the same way).

Anything else returns None and takes the general route. For tools the task is a kernel
(`kind`), named after the op, whose `accesses()` are the operands it reads and the result
it writes; the allocations it uses are its holders (the stream-ordered free). Small ops are
cheap (runtime inline execution).

With the C accelerator the common case is C from the operator to the result: the `binary`
entry (operations.binary_same) makes the result and the task and queues it, and the run loop
computes add, sub, mul and div of two same-shape operands of up to 16 KiB in all itself
(`IN_C`: the ops and dtypes below, for which IEEE 754 or integer wrap-around fixes the bits,
so they are numpy's); anything else calls ElementwiseTask.run.
"""
from __future__ import annotations

import numbers

import numpy as np

from .core import DeviceArray
from ..runtime import Task, address, cheap_bytes, compute_in_c, enqueue_task
from ..runtime import constants as C
from ..ops import kernels as K

_UFUNCS = dict(zip(K.BINARY_OPS, (np.add, np.subtract, np.multiply, np.divide, np.maximum, np.power, np.minimum)))
_DIRECT = {np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8)}


class ElementwiseTask(Task):
    """out = ufunc(*operands) over device memory: each operand a (ptr, shape, nbytes) of a
    contiguous device array, or a numpy scalar."""

    __slots__ = ("name", "ufunc", "out", "shape", "dtype", "nbytes", "operands", "cheap")
    kind = "kernel"
    batchable = True
    error_code = C.ACL_ERROR_RT_AICORE_EXCEPTION

    def __init__(self, name: str, ufunc, out: int, shape: tuple, dtype: np.dtype, nbytes: int, operands: list,
                 total: int = 0):
        self.name, self.ufunc, self.out, self.shape, self.dtype = name, ufunc, out, shape, dtype
        self.nbytes, self.operands = nbytes, operands
        if not total:  # the bytes the op touches (the caller may know them)
            total = nbytes
            for x in operands:
                if type(x) is tuple:
                    total += x[2]
        self.cheap = cheap_bytes(total)

    def run(self) -> None:
        d, view = self.dtype, address.typed_view
        args = []
        for x in self.operands:
            if type(x) is tuple:  # a typed view of its bytes is already the array a 1-D operand is
                v = view(x[0], x[2], d)
                args.append(v if len(x[1]) == 1 else v.reshape(x[1]))
            else:
                args.append(x)
        out = view(self.out, self.nbytes, d)
        with np.errstate(all="ignore"):  # as the C loop and the device: inf and nan, no warning
            self.ufunc(*args, out=out if len(self.shape) == 1 else out.reshape(self.shape))

    def accesses(self) -> tuple:
        reads = tuple((x[0], x[2], "r") for x in self.operands if type(x) is tuple)
        return (*reads, (self.out, self.nbytes, "w"))

    def describe(self) -> str:
        return f"kernel {self.name} ({self.nbytes // self.dtype.itemsize} elements, fused)"

    def details(self) -> dict:
        return {"name": self.name, "bytes": sum(n for _, n, _ in self.accesses()), "bytes_written": self.nbytes}


# The ops and dtypes the C run loop computes itself (_speedups.c: elementwise), in its order.
_C_OPS = ("add", "sub", "mul", "div")
_C_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8))
IN_C = compute_in_c(ElementwiseTask, _C_OPS, tuple(_UFUNCS[op] for op in _C_OPS), _C_DTYPES)


def _scalar(x, dtype: np.dtype):
    """x as a numpy scalar of `dtype` the way a fill of it would store it, or None."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        return None
    if dtype.kind == "f":
        return dtype.type(float(x))
    if isinstance(x, numbers.Integral):
        info = np.iinfo(dtype)
        if info.min <= x <= info.max:
            return dtype.type(x)
    return None


def fused_same(op: str, a: DeviceArray, b: DeviceArray, stream) -> DeviceArray | None:
    """`a op b` for two C-contiguous arrays of one shape, dtype and device (the caller has
    checked that): the common case of fused_binary, without its checks. None as there."""
    ufunc = _UFUNCS.get(op)
    dtype = a.dtype
    if ufunc is None or dtype not in _DIRECT or (op == "div" and dtype.kind != "f"):
        return None
    mem = a._mem
    device = mem.device
    if device is not stream.device:
        return None
    shape = a.shape
    result = DeviceArray._new(shape, dtype, device)
    rmem = result._mem
    nbytes = rmem.nbytes
    if nbytes:
        task = ElementwiseTask(op, ufunc, result._ptr, shape, dtype, nbytes,
                               [(a._ptr, shape, nbytes), (b._ptr, shape, nbytes)], 3 * nbytes)
        if enqueue_task is not None:  # Stream.enqueue's common case in C
            enqueue_task(stream, task, mem.block, b._mem.block, rmem.block)
        else:
            stream.enqueue(task, holders=(mem.block, b._mem.block, rmem.block))
    return result


def fused_binary(op: str, a, b, stream, out=None) -> DeviceArray | None:
    """Queue `a op b` as one ElementwiseTask on the runtime stream `stream` and return the
    result, or None when the op is not one this route gives the same bits for."""
    ufunc = _UFUNCS.get(op)
    if ufunc is None:
        return None
    arrays = [x for x in (a, b) if type(x) is DeviceArray]
    if not arrays:
        return None
    dtype = arrays[0].dtype
    if dtype not in _DIRECT or (op == "div" and dtype.kind != "f"):
        return None
    mem = arrays[0]._mem
    device = mem.device
    if device is not stream.device:
        return None
    operands, holders, shapes = [], [], []
    for x in (a, b):
        if type(x) is DeviceArray:
            if x.dtype != dtype or x._mem.device is not device or not x.is_contiguous():
                return None
            shape = x.shape
            operands.append((x._ptr, shape, x.nbytes))
            holders.append(x._mem.block)
            shapes.append(shape)
        else:
            s = _scalar(x, dtype)
            if s is None:
                return None
            operands.append(s)
    try:
        shape = np.broadcast_shapes(*shapes) if len(shapes) == 2 else shapes[0]
    except ValueError:
        return None  # the general route says which shapes do not broadcast
    if out is None:
        result = DeviceArray._new(shape, dtype, device)
    elif (type(out) is DeviceArray and out.shape == shape and out.dtype == dtype and out._mem.device is device
          and out.is_contiguous()):
        result = out
    else:
        return None
    nbytes = result.nbytes
    if nbytes:
        holders.append(result._mem.block)
        stream.enqueue(ElementwiseTask(op, ufunc, result._ptr, shape, dtype, nbytes, operands), holders=holders)
    return result
