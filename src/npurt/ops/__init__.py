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
from .array_ops import (abs, add, arange, arange_into, astype, cast, concatenate, contiguous, div, equal,  # noqa: F401
                        exp, fill, gelu, greater, greater_equal, layer_norm, less, less_equal, log, matmul, max,
                        maximum, mean, minimum, mul, not_equal, power, relu, softmax, sqrt, stack, sub, sum,
                        transpose, where)
from .array_ops import __all__  # noqa: F401

_core.use_operations(array_ops)
