"""DeviceArray: an n-dimensional array in device memory (layout, views, indexing, copies).

The functions that make one are in creation.py (and pinned host buffers in pinned.py); its
operators and kernel-backed methods forward to npurt.ops (`use_operations`).

* Memory is one runtime allocation (`rt.malloc`) shared by the array and every view of it
  (basic slicing, reshape, `.T`); the allocation is freed when the last of them is
  garbage-collected. The free is stream-ordered: memory that queued work (a copy, a kernel)
  still uses goes back to the pool only after that work has finished.
* Work is queued on the *current stream* of the array's device (see npurt.streams), or on
  the stream passed explicitly. Methods that return host data (`to_host`, `get`, `item`)
  wait for their copy; everything else returns at once.
* Host to device copies from ordinary (pageable) numpy arrays are asynchronous too: the
  queued copy keeps the numpy array alive and reads it when it runs. Do not modify the host
  array until the stream has passed the copy (synchronize, or an event). Pinned host buffers
  (`npurt.empty_pinned`) are the fast way to feed a pipeline.
* There is no implicit conversion to host values (`np.asarray(x)`, `float(x)`, `if x:`):
  that would hide a device-to-host copy and a wait. Copy explicitly with `.to_host()`.
* Operations (`+ - * / @`, `npurt.ops.*`) launch the built-in kernels. They need
  C-contiguous inputs; a non-contiguous view is first copied to a contiguous array on the
  same stream (`.contiguous()`, which uses the transpose kernel for permuted views and a
  strided DMA copy otherwise).
"""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from .. import devices as _devices
from .. import runtime as rt
from .. import streams as _streams
from ..exceptions import ArrayIndexError, HostConversionError, InvalidValueError
from ..runtime import PER_THREAD, constants as C
from . import dlpack
from .allocation import allocate
from .layout import LAYOUTS, as_dtype, c_strides, ints, layout_of, normalize_axes, permuted_contiguous, shape_of
from .strided import strided_copy

H2D, D2H, D2D = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST, C.ACL_MEMCPY_DEVICE_TO_DEVICE
# numpy functions with a device counterpart in npurt.ops (named in the "copy it first" error)
_UFUNC_OPS = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div",
              "maximum": "maximum", "matmul": "matmul"}
_DEVICE_OPS = {"add", "subtract", "multiply", "divide", "maximum", "matmul", "sum", "max", "mean", "transpose",
               "amax"}


def _rt_stream(stream, device_id: int):
    """The runtime stream for an optional npurt.Stream argument (None: the current stream of
    the array's device in this thread)."""
    if stream is None:
        return _streams._runtime_stream(device_id)
    if isinstance(stream, _streams.Stream):
        return stream._s
    raise InvalidValueError(f"stream must be an npurt.Stream or None, got {type(stream).__name__}")


def _is_dtype(obj) -> bool:
    """True for a dtype given where a device could be (np.float16, npurt.bfloat16, "float32")."""
    if isinstance(obj, np.dtype) or isinstance(obj, type) and issubclass(obj, np.generic):
        return True
    return isinstance(obj, str) and not obj.lower().startswith(("npu", "cpu", "cuda"))


def _host_error(what: str) -> HostConversionError:
    return HostConversionError(
        f"{what}: a DeviceArray lives in device memory, which the host cannot read directly. "
        "Copy it to the host first: x.to_host() (or x.cpu(), x.numpy(), x.get(), npurt.asnumpy(x)); "
        "for the other direction use npurt.to_device(array)")


# ---------------------------------------------------------------- DeviceArray
class DeviceArray:
    """An n-dimensional array in device memory (C-contiguous, or a strided view of one).

    Make one with `npurt.to_device(np_array)`, `npurt.empty/zeros/ones/full/arange`, or
    `DeviceArray(shape, dtype)` (uninitialized). `shape`, `dtype`, `strides` (bytes),
    `device`, `size`, `ndim`, `nbytes` are as in numpy.
    """

    __slots__ = ("_mem", "_ptr", "shape", "dtype", "strides", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, shape, dtype="float32", device: int | None = None):
        shape, dtype, nbytes, strides = layout_of(shape, dtype)
        if device is None:  # the current device, as devices.current_runtime_device (inlined: the hot path)
            ctx = PER_THREAD.context
            device = ctx.device if ctx is not None and ctx.alive else _devices.current_runtime_device()
        else:
            device = _devices.runtime_device(device)
        mem = self._mem = allocate(nbytes, device)
        self._ptr = mem.ptr
        self.shape, self.dtype, self.strides = shape, dtype, strides

    @classmethod
    def _new(cls, shape: tuple, dtype: np.dtype, device) -> "DeviceArray":
        """A new contiguous array of a checked shape and dtype on a runtime Device."""
        try:
            shape, dtype, nbytes, strides = LAYOUTS[shape, dtype]  # canonical already: no checks
        except KeyError:
            shape, dtype, nbytes, strides = layout_of(shape, dtype)
        obj = cls.__new__(cls)
        mem = obj._mem = allocate(nbytes, device)
        obj._ptr = mem.ptr
        obj.shape, obj.dtype, obj.strides = shape, dtype, strides
        return obj

    @classmethod
    def _view(cls, base: "DeviceArray", ptr: int, shape, strides, dtype=None) -> "DeviceArray":
        obj = cls.__new__(cls)
        obj._mem, obj._ptr = base._mem, ptr
        obj.shape, obj.strides = tuple(shape), tuple(strides)
        obj.dtype = base.dtype if dtype is None else dtype
        return obj

    # ---------------------------------------------------------- facts
    @property
    def device(self) -> int:
        """The id of the device that holds the array."""
        return self._mem.device.id

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def ptr(self) -> int:
        """Device address of the first element (for kernels and the runtime API)."""
        return self._ptr

    def data_ptr(self) -> int:
        return self._ptr

    def is_contiguous(self) -> bool:
        """True if the elements are laid out C-contiguously (what kernels need). An array
        with no elements is contiguous, as in numpy."""
        shape = self.shape
        if len(shape) == 1:  # the common case, without the loop
            return self.strides[0] == self.dtype.itemsize or shape[0] <= 1
        if 0 in shape:
            return True
        expect = self.dtype.itemsize
        for n, st in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and st != expect:
                return False
            expect *= n
        return True

    def __repr__(self) -> str:
        layout = "" if self.is_contiguous() else f", strides={self.strides}"
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.device}{layout})"

    def __len__(self) -> int:
        if not self.shape:
            raise HostConversionError("len() of a 0-d DeviceArray")
        return self.shape[0]

    # ---------------------------------------------------------- no implicit host conversion
    def __array__(self, *args, **kwargs):
        raise _host_error("np.asarray / np.array of a DeviceArray")

    def __bool__(self):
        raise _host_error("truth value of a DeviceArray (if x:, and, or, not)")

    def __float__(self):
        raise _host_error("float() of a DeviceArray")

    def __int__(self):
        raise _host_error("int() of a DeviceArray")

    def __complex__(self):
        raise _host_error("complex() of a DeviceArray")

    def __index__(self):
        raise _host_error("using a DeviceArray as an index")

    def __iter__(self):
        raise _host_error("iterating over a DeviceArray")

    def tolist(self):
        raise _host_error("tolist()")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = ufunc.__name__
        hint = f" (on the device: npurt.ops.{_UFUNC_OPS[name]})" if name in _UFUNC_OPS else ""
        raise _host_error(f"np.{name} of a DeviceArray{hint}")

    def __array_function__(self, func, types, args, kwargs):
        name = getattr(func, "__name__", str(func))
        hint = f" (on the device: npurt.ops.{name})" if name in _DEVICE_OPS else ""
        raise _host_error(f"np.{name} of a DeviceArray{hint}")

    @property
    def __array_interface__(self):
        raise _host_error("the numpy array interface of a DeviceArray (torch.as_tensor, np.asarray, ...)")

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the array's device memory (kDLExtDev; `torch.from_dlpack(x)` is an
        npu tensor over it); `dl_device=(1, 0)` asks for a host copy (array/dlpack.py)."""
        return dlpack.export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return dlpack.device_of(self)

    def __reduce__(self):
        raise _host_error("pickling a DeviceArray")

    def __copy__(self) -> "DeviceArray":
        return self.copy()

    def __deepcopy__(self, memo) -> "DeviceArray":
        return self.copy()

    # ---------------------------------------------------------- host <-> device
    def to_host(self, stream=None) -> np.ndarray:
        """A new numpy array with the contents; waits for the copy (queued on `stream`,
        default: the current stream of the array's device) and raises a failure the stream
        reported."""
        out = np.empty(self.shape, self.dtype)
        return self.copy_to_host(out, stream)

    def get(self, stream=None) -> np.ndarray:
        """Same as to_host (CuPy's name)."""
        return self.to_host(stream)

    def cpu(self, stream=None) -> np.ndarray:
        """Same as to_host (torch's name): an explicit, synchronising copy to a numpy array."""
        return self.to_host(stream)

    def numpy(self, stream=None) -> np.ndarray:
        """Same as to_host: an explicit, synchronising copy to a numpy array."""
        return self.to_host(stream)

    def set(self, arr, stream=None) -> None:
        """Copy host data `arr` into this array (CuPy's name for copy_from_host; queued)."""
        self.copy_from_host(arr, stream)

    def record_stream(self, stream) -> None:
        """torch's Tensor.record_stream, accepted for porting and not needed: npurt frees are
        stream-ordered, so memory another stream still uses is never reused before that
        stream's queued work has run."""
        if not isinstance(stream, _streams.Stream):
            raise InvalidValueError(f"record_stream expects an npurt.Stream, got {type(stream).__name__}")
        if stream.device != self.device:
            raise InvalidValueError(f"record_stream: the stream is on device {stream.device}, the array on "
                                    f"device {self.device}")

    def item(self):
        """The single element of a size-1 array as a Python scalar (copies and waits)."""
        if self.size != 1:
            raise InvalidValueError(f"item() needs an array of one element, this one has shape {self.shape}")
        return self.to_host().reshape(()).item()

    def copy_to_host(self, out: np.ndarray | None = None, stream=None, blocking: bool = True) -> np.ndarray:
        """Copy into the numpy array `out` (same shape and dtype, C-contiguous, writable; a
        new one if None) and return it. With `blocking=False` the copy is only queued: read
        `out` after synchronizing the stream (use a pinned `out` for a truly async copy)."""
        if out is None:
            out = np.empty(self.shape, self.dtype)
        elif not isinstance(out, np.ndarray):
            raise InvalidValueError(f"out must be a numpy array, got {type(out).__name__}")
        if out.shape != self.shape or out.dtype != self.dtype:
            raise InvalidValueError(f"out has shape {out.shape} and dtype {out.dtype}; this array has "
                                    f"shape {self.shape} and dtype {self.dtype}")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise InvalidValueError("out must be a C-contiguous, writable numpy array")
        s = _rt_stream(stream, self.device)
        src = self.contiguous(stream)
        if out.nbytes:
            seq = rt.copy_array_async(src._ptr, out, s, False, src._mem.block)
            if blocking:
                s.synchronize(until=seq)
        elif blocking:
            s.synchronize()
        return out

    def copy_from_host(self, arr, stream=None) -> "DeviceArray":
        """Queue a copy of host data `arr` (same shape; cast to this dtype on the host) into
        this array; returns self. Asynchronous: keep `arr` unchanged until the stream has run
        the copy."""
        # an array of this shape and dtype whose strides are ours (contiguous) is used as it is
        if type(arr) is np.ndarray and arr.strides == self.strides and arr.shape == self.shape \
                and arr.dtype == self.dtype:
            host = arr
        else:
            host = np.asarray(arr)
            if host.shape != self.shape:
                raise InvalidValueError(f"host array has shape {host.shape}, this array has shape {self.shape}")
            host = np.ascontiguousarray(host, dtype=self.dtype)
        if not self.is_contiguous():
            _copy_into(self, _uploaded(host, self.device, stream), stream)
            return self
        if host.nbytes:
            rt.copy_array_async(self._ptr, host, _rt_stream(stream, self.device), True, self._mem.block)
        return self

    # ---------------------------------------------------------- device copies
    def copy(self, stream=None) -> "DeviceArray":
        """A new contiguous array on the same device with the same contents."""
        out = DeviceArray(self.shape, self.dtype, self.device)
        _copy_into(out, self, stream)
        return out

    def contiguous(self, stream=None) -> "DeviceArray":
        """self if C-contiguous, else a contiguous copy (queued on the stream)."""
        if self.is_contiguous():
            return self
        perm = permuted_contiguous(self)
        if perm is not None:
            base_shape, axes = perm
            base = DeviceArray._view(self, self._ptr, base_shape, c_strides(base_shape, self.itemsize))
            return _ops.transpose(base, axes, stream=stream)
        out = DeviceArray(self.shape, self.dtype, self.device)
        if out.size:
            strided_copy(out, self, _rt_stream(stream, self.device))
        return out

    def to(self, device: int | None = None, dtype=None, stream=None) -> "DeviceArray":
        """This array on `device` (and/or as `dtype`); self if nothing changes.

        A copy to another device is queued on `stream` (default: the current stream of the
        source device) and the current stream of the target device waits for it, so work
        queued there afterwards sees the data. Peer access is enabled as needed; between
        devices that cannot access each other (different HCCS modules) the copy goes through
        host memory and waits for the source stream. As in torch, `x.to(npurt.float16)` (a
        dtype first) converts the dtype only."""
        if device is not None and dtype is None and _is_dtype(device):
            device, dtype = None, device
        out = self
        if dtype is not None and as_dtype(dtype) != self.dtype:
            out = out.astype(dtype, stream=stream)
        if device is None or _devices.device_id_of(device) == self.device:
            return out
        target = _devices.device_id_of(device)
        src = out.contiguous(stream)
        s = _rt_stream(stream, src.device)
        if not rt.device_can_access_peer(src.device, target):
            return _uploaded(src.to_host(stream), target, None)
        _enable_peer(src.device, target)
        dst = DeviceArray(src.shape, src.dtype, target)
        if src.nbytes:
            rt.memcpy_async(dst._ptr, dst.nbytes, src._ptr, src.nbytes, D2D, s, require_aligned=False)
            with _devices.on_device(src.device):
                ev = rt.create_event()
            rt.record_event(ev, s)
            rt.stream_wait_event(_streams._runtime_stream(target), ev)
            rt.destroy_event(ev)  # never blocks; the queued record and wait still complete
        return dst

    def fill(self, value, stream=None) -> "DeviceArray":
        """Set every element to `value` (queued); returns self."""
        _ops.fill(self, value, stream=stream)
        return self

    def astype(self, dtype, copy: bool = True, stream=None) -> "DeviceArray":
        """A new array of `dtype` (the cast kernel); self if the dtype is already right and
        copy is False."""
        dtype = as_dtype(dtype)
        if dtype == self.dtype:
            return self.copy(stream) if copy else self
        return _ops.cast(self, dtype, stream=stream)

    # ---------------------------------------------------------- views
    def reshape(self, *shape) -> "DeviceArray":
        """Same data in a new shape (one -1 may be inferred). A view for contiguous arrays; a
        non-contiguous array is copied first."""
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = shape[0]
        shape = ints(shape, "reshape sizes")
        if shape.count(-1) > 1:
            raise InvalidValueError("reshape: only one dimension can be -1")
        known = math.prod(n for n in shape if n != -1)
        if -1 in shape:
            if known == 0 or self.size % known:
                raise InvalidValueError(f"cannot reshape an array of size {self.size} into shape {tuple(shape)}")
            shape[shape.index(-1)] = self.size // known
        shape = shape_of(shape)
        if math.prod(shape) != self.size:
            raise InvalidValueError(f"cannot reshape an array of size {self.size} into shape {shape}")
        src = self.contiguous()
        return DeviceArray._view(src, src._ptr, shape, c_strides(shape, self.itemsize))

    view = reshape

    def ravel(self) -> "DeviceArray":
        return self.reshape(-1)

    flatten = ravel

    def transpose(self, *axes) -> "DeviceArray":
        """A view with the axes permuted (reversed by default), as numpy's transpose. Kernels
        that take it make it contiguous first (the transpose kernel)."""
        if len(axes) == 1 and not isinstance(axes[0], numbers.Integral):
            axes = axes[0]
        axes = normalize_axes(axes, self.ndim)
        return DeviceArray._view(self, self._ptr, [self.shape[a] for a in axes], [self.strides[a] for a in axes])

    @property
    def T(self) -> "DeviceArray":
        return self.transpose()

    def __getitem__(self, key) -> "DeviceArray":
        ptr, shape, strides = _index(self, key)
        return DeviceArray._view(self, ptr, shape, strides)

    def __setitem__(self, key, value) -> None:
        dst = self[key]
        if isinstance(value, DeviceArray):
            _copy_into(dst, value, None)
        elif isinstance(value, numbers.Number):
            dst.fill(value)
        else:
            host = np.asarray(value, dtype=self.dtype)
            _copy_into(dst, _uploaded(host, self.device, None), None)

    # ---------------------------------------------------------- operators (npurt.ops)
    def _op(self, name, *args, **kw):
        return getattr(_ops, name)(*args, **kw)

    def __add__(self, other):
        if type(other) is DeviceArray:  # the common case: one C call with the accelerator
            return _ops.binary_same("add", self, other)
        return self._op("add", self, _operand(other))

    def __radd__(self, other):
        return self._op("add", _operand(other), self)

    def __sub__(self, other):
        if type(other) is DeviceArray:
            return _ops.binary_same("sub", self, other)
        return self._op("sub", self, _operand(other))

    def __rsub__(self, other):
        return self._op("sub", _operand(other), self)

    def __mul__(self, other):
        if type(other) is DeviceArray:
            return _ops.binary_same("mul", self, other)
        return self._op("mul", self, _operand(other))

    def __rmul__(self, other):
        return self._op("mul", _operand(other), self)

    def __truediv__(self, other):
        if type(other) is DeviceArray:
            return _ops.binary_same("div", self, other)
        return self._op("div", self, _operand(other))

    def __rtruediv__(self, other):
        return self._op("div", _operand(other), self)

    def __matmul__(self, other):
        return self._op("matmul", self, _operand(other, scalar_ok=False))

    def __rmatmul__(self, other):
        return self._op("matmul", _operand(other, scalar_ok=False), self)

    def __iadd__(self, other):
        return self._op("add", self, _operand(other), out=self)

    def __isub__(self, other):
        return self._op("sub", self, _operand(other), out=self)

    def __imul__(self, other):
        return self._op("mul", self, _operand(other), out=self)

    def __itruediv__(self, other):
        return self._op("div", self, _operand(other), out=self)

    def __neg__(self):
        return self._op("mul", self, -1)

    def __pow__(self, other):
        return self._op("power", self, _operand(other))

    def __rpow__(self, other):
        return self._op("power", _operand(other), self)

    def __abs__(self):
        return self._op("abs", self)

    # comparisons give bool arrays, as numpy's and CuPy's (so `x == y` is no longer identity:
    # DeviceArrays stay hashable by identity, as keys of the runtime's own tables)
    def __lt__(self, other):
        return self._op("less", self, _operand(other))

    def __le__(self, other):
        return self._op("less_equal", self, _operand(other))

    def __gt__(self, other):
        return self._op("greater", self, _operand(other))

    def __ge__(self, other):
        return self._op("greater_equal", self, _operand(other))

    def __eq__(self, other):
        return self._op("equal", self, _operand(other))

    def __ne__(self, other):
        return self._op("not_equal", self, _operand(other))

    __hash__ = object.__hash__

    def __pos__(self):
        return self

    def sum(self, axis=None, keepdims=False):
        return self._op("sum", self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        return self._op("max", self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return self._op("mean", self, axis=axis, keepdims=keepdims)


class _NoOperations:
    """Until npurt.ops gives DeviceArray its operations (it does on import, and `import npurt`
    imports it): a clear error instead of an AttributeError on None."""

    def __getattr__(self, name):
        raise RuntimeError(f"DeviceArray operation {name!r} needs npurt.ops, which is not imported yet")


_ops = _NoOperations()


def use_operations(ops) -> None:
    """Give DeviceArray its operations: `ops` has the array-level functions its operators and
    methods forward to (add, sub, mul, div, matmul, sum, max, mean, fill, cast, transpose).
    npurt.ops calls this when it is imported: the operations sit above this module (they
    allocate DeviceArrays), as numpy's ndarray gets its arithmetic from its umath module."""
    global _ops
    _ops = ops


def _operand(other, scalar_ok: bool = True):
    if isinstance(other, DeviceArray):
        return other
    if scalar_ok and isinstance(other, numbers.Number) and not isinstance(other, bool):
        return other
    if isinstance(other, (np.ndarray, np.generic, list, tuple)):
        raise _host_error(f"an operation between a DeviceArray and a host {type(other).__name__}")
    raise InvalidValueError(f"unsupported operand of type {type(other).__name__} for a DeviceArray")


def _index(x: DeviceArray, key):
    """Basic indexing: ints, slices, Ellipsis, None. Returns (ptr, shape, strides)."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(isinstance(k, (DeviceArray, np.ndarray, list)) or isinstance(k, bool) for k in key):
        raise ArrayIndexError("DeviceArray supports basic indexing only (ints, slices, ..., None); "
                              "index arrays and masks are not supported")
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise ArrayIndexError("an index can only have a single ellipsis (...)")
    if n_real > x.ndim:
        raise ArrayIndexError(f"too many indices: the array has {x.ndim} dimension(s), {n_real} were given")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (x.ndim - n_real))
        else:
            expanded.append(k)
    if Ellipsis not in key:
        expanded.extend([slice(None)] * (x.ndim - n_real))
    ptr, shape, strides, dim = x._ptr, [], [], 0
    for k in expanded:
        if k is None:
            shape.append(1)
            strides.append(0)
            continue
        n, st = x.shape[dim], x.strides[dim]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            length = len(range(start, stop, step))
            if length:
                ptr += start * st
            shape.append(length)
            strides.append(st * step)
        else:
            try:
                i = operator.index(k)
            except TypeError:
                raise ArrayIndexError(f"unsupported index {k!r} of type {type(k).__name__}") from None
            if not -n <= i < n:
                raise ArrayIndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            ptr += (i % n) * st
        dim += 1
    return ptr, tuple(shape), tuple(strides)


def broadcast_to(x: DeviceArray, shape) -> DeviceArray:
    """A read-only view of `x` broadcast to `shape` (numpy rules; stride 0 on new axes)."""
    shape = shape_of(shape)
    if len(shape) < x.ndim:
        raise InvalidValueError(f"cannot broadcast shape {x.shape} to {shape}")
    pad = len(shape) - x.ndim
    strides = [0] * pad
    for i, (n, st) in enumerate(zip(x.shape, x.strides)):
        target = shape[pad + i]
        if n == target:
            strides.append(st)
        elif n == 1:
            strides.append(0)
        else:
            raise InvalidValueError(f"cannot broadcast shape {x.shape} to {shape}")
    return DeviceArray._view(x, x._ptr, shape, strides)


def _copy_into(dst: DeviceArray, src: DeviceArray, stream) -> None:
    """Queue dst[...] = src (broadcasting src; casting if dtypes differ)."""
    if src.device != dst.device:
        src = src.to(dst.device, stream=stream)
    if src.dtype != dst.dtype:
        src = src.astype(dst.dtype, stream=stream)
    if src.shape != dst.shape:
        src = broadcast_to(src, dst.shape)
    if not dst.size:
        return
    s = _rt_stream(stream, dst.device)
    if dst.is_contiguous() and src.is_contiguous():
        rt.memcpy_async(dst._ptr, dst.nbytes, src._ptr, dst.nbytes, D2D, s, require_aligned=False)
    else:
        strided_copy(dst, src, s)


def _uploaded(host: np.ndarray, device: int, stream) -> DeviceArray:
    """A new array on `device` with the contents of numpy array `host` (queued on `stream`)."""
    return DeviceArray(host.shape, host.dtype, device).copy_from_host(host, stream)


def _enable_peer(src: int, dst: int) -> None:
    if not rt.device_peer_access_status(src, dst):  # the copy runs on src's stream: src -> dst
        with _devices.on_device(src):
            rt.device_enable_peer_access(dst, 0)
