"""The kernel object: `@kernel` functions, their parameters and their argument packing.

`kernel(fn)` (published as `npurt.runtime.kernel_function`) makes a `KernelFunction`: the
Python function, its parameters after ctx (annotated `GM`, a device address, or a numpy
scalar type; at most MAX_PARAMS) and the struct that packs them, one 8-byte little-endian
slot each (SLOT), built once. `function_of` / `function_handle` convert between a kernel
and its int handle in the runtime's function table.
"""
from __future__ import annotations

from typing import Callable
import functools
import inspect
import struct

import numpy as np

from .. import constants as C, address
from ..errors import InvalidHandleError, InvalidValueError, NpuError
from ..runtime import RUNTIME


MAX_PARAMS = 128              # kernel parameters, as the A2 runtime allows
SLOT = 8                      # bytes per packed parameter
UB_SIZE = 192 * 1024          # A2 unified buffer per core: the DYN_UBUF_SIZE limit

_VA_BASE = address.VA_BASE
_is_alias = address.is_host_alias


class GM:
    """Annotation marker: the parameter is a global-memory address (a device pointer int)."""

    __slots__ = ()


# scalar annotation -> struct code of one 8-byte slot (value in the low bytes)
_SCALAR_CODES: dict[type, str] = {
    np.int8: "b7x", np.uint8: "B7x", np.int16: "h6x", np.uint16: "H6x",
    np.int32: "i4x", np.uint32: "I4x", np.int64: "q", np.uint64: "Q",
    np.float16: "e6x", np.float32: "f4x", np.float64: "d", np.bool_: "?7x",
    int: "q", float: "d", bool: "?7x",
}


# ---------------------------------------------------------------- the kernel object
class KernelFunction:
    """A kernel: the Python function, its parameter list and its argument packing.

    `params` is a tuple of (name, annotation) for the parameters after ctx; `args_size` is
    the packed size in bytes (8 per parameter)."""

    def __init__(self, fn: Callable, name: str | None = None):
        self.fn = fn
        self.name = name or fn.__name__
        self.params = _parse_params(fn, self.name)
        self.args_size = SLOT * len(self.params)
        self.struct = struct.Struct("<" + "".join("Q" if a is GM else _SCALAR_CODES[a] for _, a in self.params))
        self.gm_slots = tuple(i for i, (_, a) in enumerate(self.params) if a is GM)
        self.handle = 0          # int handle once registered (binary_get_function)
        self.binary = None       # the Binary it came from, if any
        self.label = None        # optional fn(values) -> what one launch computes, for tools
        # a built-in kernel that never waits for the host and costs about its bytes: a launch
        # of one block touching at most inline.MAX_BYTES (its extents) may run inline
        self.inline_ok = False
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        sig = ", ".join(f"{n}: {'GM' if a is GM else a.__name__}" for n, a in self.params)
        return f"<npurt kernel {self.name}(ctx, {sig})>"

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel {self.name!r} runs on the device, it cannot be called: launch it with "
                        f"{self.name}[blocks](args...), {self.name}[blocks, stream](args...) or "
                        f"npurt.launch({self.name}, blocks, args...) from Python, or acl.rt.launch_kernel* "
                        "from pyACL (npurt.launch, not the `npurt launch` command, which starts processes)")

    def __getitem__(self, config):
        """A KernelFunction made by the runtime's own decorator launches through the runtime's
        operations; `k[blocks](...)` belongs to the Pythonic `Kernel` (`@npurt.kernel`)."""
        raise TypeError(f"kernel {self.name!r} was made with npurt.runtime's kernel_function: launch it with "
                        f"npurt.launch({self.name}, blocks, args...) or the runtime's launch; "
                        f"{self.name}[blocks](args...) needs @npurt.kernel")

    def pack(self, *values) -> bytes:
        """The packed argument block for `values` (one 8-byte slot each)."""
        try:
            return self.struct.pack(*values)
        except (struct.error, OverflowError, TypeError, ValueError):
            raise self._mismatch(values) from None

    def unpack(self, data) -> tuple:
        """The parameter values in a packed argument block."""
        if len(data) != self.args_size:
            raise InvalidValueError(f"kernel {self.name!r} takes {self.args_size} bytes of arguments "
                                    f"({len(self.params)} parameters x 8), got {len(data)}")
        return self.struct.unpack(data)

    def values(self, args) -> tuple:
        """Canonical parameter values from host args: packed bytes or a tuple of values."""
        if isinstance(args, (bytes, bytearray, memoryview)):
            return self.unpack(args)
        if not isinstance(args, (tuple, list)):
            raise InvalidValueError(f"kernel {self.name!r} arguments must be a tuple of values or the "
                                    f"packed bytes, got {type(args).__name__}")
        s = self.struct
        try:
            return s.unpack(s.pack(*args))
        except (struct.error, OverflowError, TypeError, ValueError):
            raise self._mismatch(args) from None

    def _mismatch(self, values) -> InvalidValueError:
        """Name the first argument that does not fit its parameter."""
        if len(values) != len(self.params):
            names = ", ".join(n for n, _ in self.params)
            return InvalidValueError(f"kernel {self.name!r} takes {len(self.params)} arguments ({names}), "
                                     f"got {len(values)}")
        for (name, ann), value in zip(self.params, values):
            code = "Q" if ann is GM else _SCALAR_CODES[ann]
            try:
                struct.pack("<" + code, value)
            except (struct.error, OverflowError, TypeError, ValueError) as exc:
                want = "a device address (non-negative int)" if ann is GM else f"a {ann.__name__} value"
                return InvalidValueError(f"kernel {self.name!r} argument {name!r} must be {want}, "
                                         f"got {value!r} ({exc})")
        return InvalidValueError(f"kernel {self.name!r}: arguments do not match its signature")


def _parse_params(fn, name: str) -> tuple:
    if not callable(fn):
        raise TypeError(f"@kernel needs a function, got {type(fn).__name__}")
    try:
        sig = inspect.signature(fn, eval_str=True)  # resolves `from __future__ import annotations`
    except NameError as exc:
        raise TypeError(f"kernel {name!r}: an annotation cannot be resolved ({exc})") from None
    params = list(sig.parameters.values())
    if not params:
        raise TypeError(f"kernel {name!r} must take ctx as its first parameter")
    out = []
    for p in params[1:]:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError(f"kernel {name!r}: parameter {p.name!r} must be a plain positional parameter")
        ann = p.annotation
        if isinstance(ann, type) and issubclass(ann, GM):
            ann = GM
        elif ann not in _SCALAR_CODES:
            if isinstance(ann, np.dtype) and ann.type in _SCALAR_CODES:
                ann = ann.type
            else:
                raise TypeError(f"kernel {name!r}: parameter {p.name!r} must be annotated GM or a numpy "
                                f"scalar type (np.int32, np.float32, ...), got {ann!r}")
        out.append((p.name, ann))
    if len(out) > MAX_PARAMS:
        raise TypeError(f"kernel {name!r} has {len(out)} parameters; at most {MAX_PARAMS} are allowed")
    return tuple(out)


def kernel(fn: Callable | None = None, *, name: str | None = None):
    """Mark a function as a kernel: `@kernel` or `@kernel(name="other_name")`."""
    if fn is None:
        return lambda f: KernelFunction(f, name)
    return KernelFunction(fn, name)


def function_of(func) -> KernelFunction:
    """A KernelFunction from itself or its int handle."""
    if isinstance(func, KernelFunction):
        return func
    if type(func) is int:
        obj = RUNTIME.functions.get(func)
        if isinstance(obj, KernelFunction):
            return obj
    if callable(func):
        raise NpuError(f"{getattr(func, '__qualname__', func)!r} is not a kernel: mark it with @kernel "
                       "(or get one with binary_get_function)", C.ACL_ERROR_RT_INVALID_DEVICE_FUNCTION)
    raise InvalidHandleError(f"expected a kernel function or its handle, got {func!r}")


def function_handle(func: KernelFunction) -> int:
    """The int handle of a kernel (registered on first request, per runtime lifetime)."""
    RUNTIME.check_initialized()
    h = func.handle
    if h:
        try:
            if RUNTIME.functions.get(h) is func:
                return h
        except InvalidHandleError:
            pass
    func.handle = RUNTIME.functions.add(func)
    return func.handle
