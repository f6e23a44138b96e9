"""npurt.ops: operations on DeviceArrays, each launching a built-in kernel on a stream.

    y = npurt.ops.gelu(x @ w)            # queued on the current stream
    p = npurt.ops.softmax(y, axis=-1)

The functions live in `array_ops` (array level: shapes, dtypes, broadcasting, allocation);
`launchers` holds the pointer-level launchers (`launch` is its old name) and `kernels` the
kernels themselves. Importing this package gives DeviceArray its operators (`x + y`, `x @ w`)
and kernel-backed methods (`fill`, `astype`, `contiguous`), which forward to `array_ops`.
"""
from ..array import core as _core
from . import array_ops, kernels, launch, launchers  # noqa: F401 - (launch: the launchers' old name)
from .array_ops import (add, arange, arange_into, astype, cast, contiguous, div, fill, gelu,  # noqa: F401
                        layer_norm, matmul, max, maximum, mean, mul, relu, softmax, sub, sum, transpose)
from .array_ops import __all__  # noqa: F401

_core.use_operations(array_ops)
