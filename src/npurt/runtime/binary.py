"""Kernel binaries: where the real runtime loads an Ascend C `.o`, npurt loads a Python file
of `@kernel` functions, or a shared object of native kernels built by npurt's host Ascend C
toolchain (`ascendc_fatbin_library`; an ELF file, see native.py).

Loading executes the file as a fresh module (under a unique name, so loading it twice gives
two independent binaries) and collects its module-level kernels by name. A binary is
trusted code, exactly as a device binary is: loading runs it.

Error codes (decisions):

| situation | code |
| --- | --- |
| the file does not exist or cannot be read | ACL_ERROR_INVALID_FILE 100003 |
| the file / data is not a kernel binary: an ELF file without npurt's kernel table, not UTF-8 Python source, a syntax error, an exception while it runs, or no @kernel in it | ACL_ERROR_PARSE_FILE 100006 |
| binary_get_function with a name the binary does not define | ACL_ERROR_KERNEL_NOT_FOUND 100029 |
| a binary or function handle after binary_unload | ACL_ERROR_RT_INVALID_HANDLE 107017 |
| register_cpu_func (no AI CPU kernels here) | ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000 |
"""
from __future__ import annotations

import itertools
import linecache
import os
import sys
import types

from . import constants as C
from .errors import FeatureNotSupportedError, InvalidHandleError, InvalidValueError, NpuError
from .address import host_bytes
from .kernel import KernelFunction, function_handle, function_of
from .native import load_elf
from .runtime import RUNTIME

_ids = itertools.count(1)
_OPTION_TYPES = (C.ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD, C.ACL_RT_BINARY_LOAD_OPT_MAGIC,
                 C.ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE)


class BinaryData:
    """create_binary: binary bytes not yet loaded."""

    def __init__(self, data: bytes):
        self.data = data
        self.handle = 0


class Binary:
    """A loaded kernel binary: its module and its kernels by name."""

    def __init__(self, module: types.ModuleType, origin: str, kernels: dict[str, KernelFunction]):
        self.module, self.origin, self.kernels = module, origin, kernels
        self.loaded = True
        self.handle = 0

    def __repr__(self) -> str:
        state = "" if self.loaded else " (unloaded)"
        return f"<npurt kernel binary {self.origin}: {', '.join(self.kernels)}{state}>"


def binary_of(obj) -> Binary:
    b = RUNTIME.binaries.get(obj) if type(obj) is int else obj
    if not isinstance(b, Binary):
        raise InvalidHandleError(f"expected a loaded kernel binary (binary_load_from_file) or its handle, got {obj!r}")
    if not b.loaded:
        raise InvalidHandleError(f"kernel binary {b.origin} was unloaded")
    return b


def _check_options(options) -> None:
    if options in (None, 0):
        return
    if not isinstance(options, (list, tuple)):
        raise InvalidValueError(f"binary load options must be a list of {{'type', 'value'}} dicts, got {options!r}")
    for opt in options:
        if not isinstance(opt, dict) or opt.get("type") not in _OPTION_TYPES or type(opt.get("value", 0)) is not int:
            raise InvalidValueError(f"unknown binary load option {opt!r}: types are LAZY_LOAD (1), MAGIC (2), "
                                    "CPU_KERNEL_MODE (3), each with an int value")


def _load(source: bytes, origin: str, filename: str) -> Binary:
    """Run kernel-binary source as a new module and collect its kernels."""
    RUNTIME.check_initialized()
    if source[:4] == b"\x7fELF":  # a host-built native kernel object (see native.py)
        return _load_native(source, origin, filename)
    try:
        text = source.decode("utf-8")
        code = compile(text, filename, "exec")
    except (UnicodeDecodeError, SyntaxError, ValueError) as exc:
        raise NpuError(f"{origin} is not a kernel binary (Python source of @kernel functions): {exc}",
                       C.ACL_ERROR_PARSE_FILE) from None
    name = f"npurt_binary_{next(_ids)}"
    module = types.ModuleType(name)
    module.__file__ = filename
    if not os.path.isfile(filename):  # data: let tracebacks show its lines
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except Exception as exc:  # noqa: BLE001 - any failure means "not a usable binary"
        sys.modules.pop(name, None)
        raise NpuError(f"{origin} failed while loading: {type(exc).__name__}: {exc}",
                       C.ACL_ERROR_PARSE_FILE) from exc
    kernels = {}
    for value in vars(module).values():
        if isinstance(value, KernelFunction):
            kernels.setdefault(value.name, value)
    if not kernels:
        sys.modules.pop(name, None)
        raise NpuError(f"{origin} defines no @kernel functions, so it is not a kernel binary",
                       C.ACL_ERROR_PARSE_FILE)
    binary = Binary(module, origin, kernels)
    for k in kernels.values():
        k.binary = binary
    binary.handle = RUNTIME.binaries.add(binary)
    return binary


def _load_native(source: bytes, origin: str, filename: str) -> Binary:
    path = filename if os.path.isfile(filename) else None
    library, kernels = load_elf(None if path else source, path, origin)
    module = types.ModuleType(f"npurt_binary_{next(_ids)}")  # not imported: holds the library
    module.__file__ = filename
    module.native_library = library
    binary = Binary(module, origin, kernels)
    for k in kernels.values():
        k.binary = binary
    binary.handle = RUNTIME.binaries.add(binary)
    return binary


# ---------------------------------------------------------------- runtime operations
def binary_load_from_file(path, options=None) -> Binary:
    """Load a Python file of kernels (acl.rt.binary_load_from_file)."""
    _check_options(options)
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidValueError(f"binary path must be a str, got {type(path).__name__}")
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as exc:
        raise NpuError(f"cannot read kernel binary {path!r}: {exc.strerror or exc}", C.ACL_ERROR_INVALID_FILE) from None
    return _load(source, f"kernel binary {path!r}", os.path.abspath(path))


def binary_load_from_data(data, length: int | None = None, options=None) -> Binary:
    """Load kernels from the bytes of such a file (bytes, or a host address + length)."""
    _check_options(options)
    raw = host_bytes(data, length, "binary data")
    if not raw:
        raise InvalidValueError("binary data is empty")
    n = next(_ids)
    return _load(raw, f"kernel binary data ({len(raw)} bytes)", f"<npurt binary data {n}>")


def create_binary(data, length: int | None = None) -> BinaryData:
    """Binary bytes to load later with binary_load (acl.rt.create_binary)."""
    RUNTIME.check_initialized()
    raw = host_bytes(data, length, "binary data")
    if not raw:
        raise InvalidValueError("binary data is empty")
    bd = BinaryData(raw)
    bd.handle = RUNTIME.binaries.add(bd)
    return bd


def destroy_binary(binary) -> None:
    bd = RUNTIME.binaries.get(binary) if type(binary) is int else binary
    if not isinstance(bd, BinaryData):
        raise InvalidHandleError(f"expected a binary from create_binary, got {binary!r}")
    RUNTIME.binaries.remove(bd.handle)


def binary_load(binary) -> Binary:
    bd = RUNTIME.binaries.get(binary) if type(binary) is int else binary
    if not isinstance(bd, BinaryData):
        raise InvalidHandleError(f"expected a binary from create_binary, got {binary!r}")
    return binary_load_from_data(bd.data)


def binary_unload(binary) -> None:
    """Unload a binary; its function handles become stale. Launches already queued still run."""
    b = binary_of(binary)
    b.loaded = False
    for k in b.kernels.values():
        if k.handle:
            RUNTIME.functions.remove(k.handle)
            k.handle = 0
    RUNTIME.binaries.remove(b.handle)
    sys.modules.pop(b.module.__name__, None)


def binary_get_function(binary, kernel_name) -> KernelFunction:
    """The kernel named `kernel_name` in a loaded binary; `.handle` is its int handle."""
    b = binary_of(binary)
    if not isinstance(kernel_name, str):
        raise InvalidValueError(f"kernel name must be a str, got {type(kernel_name).__name__}")
    func = b.kernels.get(kernel_name)
    if func is None:
        raise NpuError(f"{b.origin} has no kernel named {kernel_name!r}; it defines: "
                       f"{', '.join(sorted(b.kernels))}", C.ACL_ERROR_KERNEL_NOT_FOUND)
    function_handle(func)
    return func


def get_function_name(func, max_len: int = 1024) -> str:
    """The kernel's name; max_len (< 1024) must leave room for it and a terminating NUL."""
    f = function_of(func)
    if type(max_len) is not int or not 0 <= max_len < 1024:
        raise InvalidValueError(f"max_len must be in [0, 1024), got {max_len!r}")
    if len(f.name.encode()) + 1 > max_len:
        raise InvalidValueError(f"kernel name {f.name!r} needs {len(f.name.encode()) + 1} bytes; max_len is {max_len}")
    return f.name


def get_function_addr(func) -> tuple[int, int]:
    """(AI cube address, AI vector address) of a kernel: a stable identifier here, the same
    for both (a Python kernel runs on either)."""
    f = function_of(func)
    addr = id(f.fn.__code__)
    return addr, addr


def register_cpu_func(binary, func_name, kernel_name) -> KernelFunction:
    binary_of(binary)
    raise FeatureNotSupportedError("register_cpu_func: AI CPU kernels are not supported by the simulated NPU; "
                                   "write the kernel as an @kernel function")
