"""npurt: an NPU runtime in Python, modelled on the CANN runtime, with a simulated NPU.

The Pythonic API, in torch.cuda's naming::

    import numpy as np, npurt

    x = npurt.to_device(np.random.rand(256, 512).astype(np.float32))
    w = npurt.to_device(np.random.rand(512, 128).astype(np.float32))
    s = npurt.Stream()
    with npurt.stream(s):
        y = npurt.ops.gelu(x @ w)        # kernels queued on s
    print(y.to_host())                   # copy back (waits for s)

The runtime initializes on first use and a thread starts on device 0. `npurt.Model(path)`
runs an .om model (converted by `npurt atc`) on device arrays. `npurt.acl` is the
pyACL-compatible facade over the same runtime; `npurt.runtime` is the runtime layer.
"""
from ._version import __version__  # noqa: F401

import importlib as _importlib
import sys as _sys

from .devices import (DeviceProperties, current_device, device, device_count, empty_cache,  # noqa: F401
                       get_device_name, get_device_properties, is_available, max_memory_allocated,
                       max_memory_reserved, mem_get_info, memory_allocated, memory_reserved, memory_stats,
                       memory_summary, reset_peak_memory_stats, set_device, synchronize)
from .array import (DeviceArray, array, asarray, asnumpy, broadcast_to, empty, empty_like,  # noqa: F401
                    empty_pinned, from_dlpack, full, full_like, is_pinned, ones, ones_like, tensor, to_device, zeros,
                    zeros_like)
from . import ops  # noqa: E402 - gives DeviceArray its operators (npurt.ops.use_operations)
from .kernel import GM, kernel, launch  # noqa: F401 - (binds `npurt.kernel` to the decorator, not its module)
from .ops import (abs, arange, concatenate, exp, log, matmul, sqrt, stack, where)  # noqa: F401,A004
from . import dtypes as _dtypes
from .dtypes import (double, float16, float32, float64, half, int8, int16, int32, int64, uint8,  # noqa: F401
                     bool_)
from .random import manual_seed, rand, randint, randn  # noqa: F401
from .exceptions import (AddressUnalignedError, ArrayIndexError, ContextError, DeadlockError, EventError,  # noqa: F401
                         FeatureNotSupportedError, HangWarning, HostConversionError, InvalidDeviceError, LeakWarning,
                         InvalidHandleError, InvalidValueError, MemcpyKindWarning, NotInitializedError, NpuError,
                         OutOfMemoryError, ParamInvalidError, ResourceExhaustedError,
                         StreamAbortedError, SubscriptionError, SyncTimeoutError, TaskError)
from .streams import Event, Stream, current_stream, default_stream, set_stream, stream  # noqa: F401
from .graphs import CaptureError, Graph, graph, is_capturing  # noqa: F401,E402
from .virtual import VirtualBuffer  # noqa: F401,E402
from .sharing import IpcHandle, ipc_close, ipc_export, ipc_import  # noqa: F401,E402
from . import faults  # noqa: F401,E402 - npurt.faults: fault injection and controlled schedules
from .runtime import API_SURFACES as _API_SURFACES  # noqa: E402

# the Pythonic API's functions and methods, offered to tools that time API calls (profiler spans)
for _owner, _prefix in ((_sys.modules[__name__], "npurt"), (ops, "npurt.ops"), (Stream, "npurt.Stream"),
                        (Event, "npurt.Event"), (DeviceArray, "npurt.DeviceArray"),
                        (Graph, "npurt.Graph")):
    _API_SURFACES.offer("npurt", _owner, _prefix)
del _owner, _prefix

# loaded on first use: the pyACL face, the profiler, the model runner, the sanitizer and the
# collectives pull in more than the core needs. The submodules are offered as attributes
# (`npurt.acl` after `import npurt`, the binding `import npurt.acl` makes); the names are
# published from their modules (tests/architecture/layers.toml [offers] and [loads]).
_SUBMODULES = ("acl", "profiler", "sanitizer", "hccl")
_LAZY = {"Model": ("npurt.model", "Model")}


def __getattr__(name: str):
    if name in ("bfloat16", "bf16"):  # needs ml_dtypes: looked up on first use
        return getattr(_dtypes, name)
    if name in _SUBMODULES:
        value = _importlib.import_module(f"{__name__}.{name}")
    elif name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(_importlib.import_module(module), attribute)
    else:
        raise AttributeError(f"module 'npurt' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES) + list(_LAZY) + ["bfloat16"])
