"""npurt.ops: operations on DeviceArrays, each launching a built-in kernel on a stream.

    y = npurt.ops.gelu(x @ w)            # queued on the current stream
    p = npurt.ops.softmax(y, axis=-1)

The functions live in `npurt.array.operations` (array level: shapes, dtypes, broadcasting,
allocation; `npurt.ops.array_ops` is its old name); `launchers` holds the pointer-level
launchers (`launch` is its old name) and `kernels` the kernels themselves. Importing this
package gives DeviceArray its operators (`x + y`, `x @ w`) and kernel-backed methods (`fill`,
`astype`, `contiguous`), which forward to `npurt.array.operations`.
"""
from ..array import core as _core
from . import kernels, launchers  # noqa: F401
from ..array import operations as _operations
from . import array_ops, launch  # noqa: F401,E402 - the old names of operations and launchers
from ..array.operations import (abs, add, arange, arange_into, astype, cast, concatenate, contiguous,  # noqa: F401
                               div, equal, exp, fill, gelu, greater, greater_equal, layer_norm, less, less_equal,
                               log, matmul, max, maximum, mean, minimum, mul, not_equal, power, relu, softmax,
                               sqrt, stack, sub, sum, transpose, where)
from ..array.operations import __all__  # noqa: F401

_core.use_operations(_operations)
