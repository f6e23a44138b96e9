"""The hot C functions' direct entry points (the "fast path" of `npurt.capi.shims`).

For a few functions programs call in loops, the C shim skips cffi: it takes the GIL itself,
builds the integer arguments and calls the callable of the same name here with a vectorcall,
and writes the returned value to the C output pointer (cffi's crossing costs about 0.35 µs,
this one about half). Each callable takes the C arguments as ints (addresses and handles too)
and returns the output's value (or None), raising for a failure; `fail(exc, name)` turns the
exception into the aclError code exactly as the cffi path does (`npurt.capi.errors`). A call
with a NULL output pointer, or any call before these are loaded, takes the ordinary cffi path.
aclrtMalloc and aclrtFree are the C accelerator's entries where it runs: the shim first calls
their fast case in C through the entry's `c_api` capsule (`npurt.capi.shims.DIRECT`) and calls
them only when it declines.
"""
from __future__ import annotations

from .. import runtime as rt
from .errors import code_space, fail as _fail
from .impl._common import note_task, stream_of
from .spec import load

_stream_lookup = rt.RUNTIME.streams.lookup
_memcpy_async, _synchronize_stream = rt.memcpy_async, rt.synchronize_stream

aclrtMalloc = rt.malloc          # (size, policy) -> address
aclrtFree = rt.free              # (devPtr) -> None
aclrtMemcpy = rt.memcpy          # (dst, destMax, src, count, kind) -> None


def aclrtMemcpyAsync(dst, destMax, src, count, kind, stream):
    note_task(_memcpy_async(dst, destMax, src, count, kind,
                            (_stream_lookup(stream) or stream_of(stream)) if stream else None))


def aclrtSynchronizeStream(stream):
    _synchronize_stream((_stream_lookup(stream) or stream_of(stream)) if stream else None)


aclrtGetDevice = rt.get_device   # () -> device id

NAMES = ("aclrtMalloc", "aclrtFree", "aclrtMemcpy", "aclrtMemcpyAsync", "aclrtSynchronizeStream", "aclrtGetDevice")
_spaces: dict[str, object] = {}


def fail(exc: BaseException, name: str) -> int:
    space = _spaces.get(name)
    if space is None:
        fn = load().functions[name]
        space = _spaces[name] = code_space(name, tuple(p["name"] for p in fn["params"] if p.get("name")))
    return _fail(exc, name, space)
