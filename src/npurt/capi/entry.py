"""Where libacl_rt.so's Python side starts: every C function bound to its implementation.

`start(ffi, lib)` runs once, from cffi's embedding start code, the first time a C program
calls any function of the library. It binds, for every function of the spec, the Python entry
point `npurt_py_<name>` the C shim calls: the registered implementation
(`npurt.capi.registry`) or, for a function npurt does not implement, a stub that records
"<name> is not supported by npurt" for aclGetRecentErrMsg and returns
ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000) — or 0 / NULL where the function returns no aclError.
An exception escaping an implementation becomes its aclError code (`npurt.capi.errors.fail`)
through cffi's `onerror`, so a successful call pays nothing for error handling.

"""
from __future__ import annotations

import atexit
import os
import sys

from ..runtime import constants as C, detach_shared_devices
from ..sanitizer import add_native_entries
from . import cdata, fast, impl, session  # noqa: F401 - impl registers the implementations
from .errors import code_space, fail, record
from .faults import describe_fault
from .registry import IMPLEMENTATIONS
from .shims import interface_digest
from .spec import load

# why a function npurt does not implement is a stub, by a part of its name (each key names at
# least one stub: tests/capi/test_capi_spec.py)
STUB_REASONS = (
    ("InterServer", "IPC across the servers of a super pod is not simulated (one host is)"),
    # CANN's documentation lists these three as unsupported on Atlas A2 parts (the default 910B3)
    ("ReserveMemAddressNoUCMemory", "CANN does not support it on Atlas A2 parts (npurt's default Ascend910B3) "
                                    "and npurt does not simulate it; aclrtReserveMemAddress reserves device addresses"),
    ("MemMapSetLink", "CANN does not support it on Atlas A2 parts (npurt's default Ascend910B3): npurt does not "
                      "simulate choosing a mapping's link (SIO, HCCS, UB port paths)"),
    ("MemMapSelectedLink", "CANN does not support it on Atlas A2 parts (npurt's default Ascend910B3): npurt does not "
                           "simulate mapping over a chosen link"),
)


def stub_reason(name: str) -> str:
    for key, reason in STUB_REASONS:
        if key in name:
            return reason
    return "npurt does not implement it (docs/c-api.md lists what is implemented)"


# return types that carry a status code: a failure returns its code (aclnn's aclnnStatus too)
STATUS_TYPES = ("aclError", "aclnnStatus")


def _stub(name: str, returns_error: bool):
    message = f"not supported by npurt: {stub_reason(name)}"

    def stub(*_args):
        record(C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT, name, message)
        return C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT if returns_error else 0

    stub.not_supported = True
    return stub


def _onerror(name: str, params: tuple[str, ...], returns_error: bool):
    space = code_space(name, params)

    def onerror(exc_type, exc, tb):
        if exc is None:
            exc = exc_type()
        if tb is not None and exc.__traceback__ is None:
            exc = exc.with_traceback(tb)
        code = fail(exc, name, space)
        return code if returns_error else 0

    return onerror


def flush() -> None:
    session.stop()       # the tools npurt run asked for end here: the interpreter never finalises
    detach_shared_devices()  # and the shared devices are let go of here (the last one out removes them)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - a closed stream at exit
            pass


def bindings() -> dict[str, object]:
    """C function name -> the Python function that answers it (implementation or stub)."""
    spec = load()
    out = {}
    for name, fn in spec.functions.items():
        returns_error = fn["ret"] in STATUS_TYPES
        out[name] = IMPLEMENTATIONS.get(name) or _stub(name, returns_error)
    return out


def start(ffi, lib) -> None:
    cdata.ffi = ffi
    spec = load()
    built = ffi.string(lib.npurt_interface_digest()).decode()
    if built != interface_digest(spec):
        raise RuntimeError("this libacl_rt.so was built for another version of npurt's C interface (its functions "
                           "differ from this npurt's); make the prefix again with `npurt cann-home` and rebuild "
                           "the program against it")
    entries = bindings()
    add_native_entries({**entries, **{name: getattr(fast, name) for name in fast.NAMES}})  # the sanitizer's sites of a native program's calls
    for name, py in entries.items():
        fn = spec.functions[name]
        params = tuple(p["name"] for p in fn["params"] if p.get("name"))
        ffi.def_extern(name=f"npurt_py_{name}", onerror=_onerror(name, params, fn["ret"] in STATUS_TYPES))(py)
    ffi.def_extern(name="npurt_py_flush")(flush)
    # Loaded into a Python process, the host's exit is the one that runs (c/start.c then installs
    # no C atexit hook); in a C program this never runs, and the C hook calls flush().
    atexit.register(flush)

    @ffi.def_extern(name="npurt_py_describe_fault")
    def _describe(addr, exact, out, size):
        text = describe_fault(addr, bool(exact)).encode("utf-8", "replace")[: size - 1]
        ffi.memmove(out, text + b"\0", len(text) + 1)
        return len(text)

    _apply_environment()

    @ffi.def_extern(name="npurt_py_ready")
    def _ready():
        return 1


def _apply_environment() -> None:
    """Tools asked for by a launcher through the environment (`npurt run --sanitize` /
    `--profile` of a native program): npurt.capi.session."""
    session.start()
