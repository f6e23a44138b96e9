"""malloc and free as C entry points (the C accelerator's `Entry`), for every face.

`fast_entry(kind, slow)` returns a callable that does what `slow` does: with the accelerator
(npurt.runtime.accel), a C object that serves the cached-block case itself and calls `slow`
for everything else; without it, `slow` itself. The kinds:

| kind | stands for | fast case |
| --- | --- | --- |
| `malloc` | `npurt.runtime.malloc(size, policy=0, align32=False)` (and the C interface's aclrtMalloc) | policy 0, not align32, a cached block of the size's class in the thread's current context |
| `free` | `npurt.runtime.free(ptr, managed=False)` (and aclrtFree) | a live small block of a visible device with no unfinished use |
| `acl_malloc` | `acl.rt.malloc(size, policy)`: `(ptr, ret)` | as malloc, returning `(ptr, 0)` |
| `acl_free` | `acl.rt.free(dev_ptr)`: `ret` | as free, returning 0 |
| `allocate` | `npurt.array.allocation.allocate(nbytes, device)`: an Allocation record | a cached block of the device's pool, no listening tool |
| `empty` | `npurt.empty(*size, dtype=None, device=None)`: a DeviceArray | `empty(n or shape[, dtype])` on the current device with a cached layout and block |
| `binary` | `npurt.array.operations.binary_same(op, a, b)`: `a op b` of two DeviceArrays | add, sub, mul (div: floats) of one shape, dtype (float32, float64, int8-64, uint8) and device, C-contiguous, on the thread's current stream there, with a cached layout and block (`stream.compute_in_c` configured): the result array and its one ElementwiseTask, queued as `enqueue_task` does |

The entry decides before it changes anything, so whatever it hands to `slow` (a listening
tool: HOOKS.active; armed fault injection: `accel.suspend`; no live context; an argument to
convert or refuse; a cache miss) runs exactly as without the accelerator, errors and codes
included. The entry carries `slow`'s name, docstring, signature and `__wrapped__`.
"""
from __future__ import annotations

import functools

from . import accel
from .address import VA_BASE
from .context import PER_THREAD
from .observers import HOOKS
from .runtime import RUNTIME

KINDS = ("malloc", "free", "acl_malloc", "acl_free", "allocate", "empty", "binary")


def fast_entry(kind: str, slow, extra: tuple | None = None):
    """The C entry point of `kind` standing for the Python function `slow` (see the module
    docstring); `slow` itself without the accelerator. `extra`: what the kind needs besides
    the runtime (for `empty`: the array type, its layout cache, numpy.dtype, the default
    dtype; for `binary`: the array type and its layout cache)."""
    if kind not in KINDS:
        raise ValueError(f"fast_entry kind {kind!r}: one of {', '.join(KINDS)}")
    if accel.SPEEDUPS is None:
        return slow
    args = (kind, slow, PER_THREAD, HOOKS, RUNTIME, VA_BASE) + (() if extra is None else (extra,))
    entry = accel.SPEEDUPS.Entry(*args)
    functools.update_wrapper(entry, slow)  # __name__, __doc__, __module__, __qualname__, __wrapped__
    for attr in ("__signature__", "parse_format", "pyacl_parsing"):
        if hasattr(slow, attr):
            setattr(entry, attr, getattr(slow, attr))
    return entry


def allocation_record(release):
    """The C accelerator's allocation record type (npurt._speedups.Allocation: slots ptr,
    nbytes, device, block), whose dealloc frees a block the fast path took through the
    pool's C fast path and calls `release(ptr, device, block)` for everything else; None
    without the accelerator (the caller keeps its Python record)."""
    if accel.SPEEDUPS is None:
        return None
    accel.SPEEDUPS.configure_allocations(release, HOOKS)
    return accel.SPEEDUPS.Allocation


def is_fast_entry(obj) -> bool:
    """Whether `obj` is a C entry point made by `fast_entry` (not a Python function, yet an
    API function all the same: a tool that wraps the faces' functions wraps these too)."""
    return accel.SPEEDUPS is not None and type(obj) is accel.SPEEDUPS.Entry
