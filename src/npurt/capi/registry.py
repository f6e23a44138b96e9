"""How a Python function becomes the implementation of a C function of libacl_rt.so.

    from npurt.capi.registry import c_function

    @c_function("aclrtGetDevice")
    def get_device(deviceId):          # the C parameter names, in their wire form
        deviceId[0] = rt.get_device()  # an output: write through the typed pointer
        return 0                       # ACL_SUCCESS; raise an NpuError for a failure

An implementation receives the C arguments in their wire form (`npurt.capi.spec.Spec.wire`):
addresses and handles as ints (`uintptr_t`), outputs of handles as `uintptr_t *` and of
integers as typed pointers (cffi cdata: `p[0] = value`; NULL is falsy), integers and floats
as themselves. It returns the C return value (0 for ACL_SUCCESS) and raises for a failure:
`npurt.capi.errors.fail` turns the exception into its aclError code and records it as the
calling thread's last error, prefixed with the C function's name, for aclGetRecentErrMsg and
aclrtGetLastError. One module per ACL group lives in `npurt.capi.impl`; a function the spec
declares and nobody implements is a stub (`npurt.capi.entry`).
"""
from __future__ import annotations

from collections.abc import Callable

IMPLEMENTATIONS: dict[str, Callable] = {}
"""C function name -> its Python implementation."""


def c_function(*names: str) -> Callable[[Callable], Callable]:
    """Register the decorated function as the implementation of the C functions `names`."""

    def register(fn: Callable) -> Callable:
        for name in names:
            if name in IMPLEMENTATIONS:
                raise ValueError(f"{name} is implemented twice: {IMPLEMENTATIONS[name].__module__} and {fn.__module__}")
            IMPLEMENTATIONS[name] = fn
        return fn

    return register
