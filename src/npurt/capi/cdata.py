"""Reading and writing the C program's memory from an implementation.

`ffi` is the embedded module's cffi FFI (it knows the spec's structs), set by
`npurt.capi.entry.start` before any C function runs. The helpers take addresses as ints, the
wire form of every pointer argument.
"""
from __future__ import annotations

ffi = None  # set by entry.start


def string(addr: int) -> str | None:
    """The NUL-terminated C string at `addr` (None for NULL)."""
    if not addr:
        return None
    return ffi.string(ffi.cast("char *", addr)).decode("utf-8", "replace")


def struct(ctype: str, addr: int):
    """The struct at `addr` as a cffi pointer (`struct("aclrtPtrAttributes *", p).pageSize`)."""
    return ffi.cast(ctype, addr)


def write(addr: int, data: bytes) -> None:
    ffi.memmove(ffi.cast("char *", addr), data, len(data))


def read(addr: int, size: int) -> bytes:
    return bytes(ffi.buffer(ffi.cast("char *", addr), size))


def array(ctype: str, addr: int, count: int) -> list:
    """`count` elements of C type `ctype` at `addr`, as a list."""
    return list(ffi.cast(ctype + " *", addr)[0:count])


def kept_string(owner: dict, key, text: str) -> int:
    """The address of a NUL-terminated copy of `text`, kept alive in `owner[key]` (the C API
    returns `const char *` that the caller does not free)."""
    buf = ffi.new("char[]", text.encode("utf-8", "replace"))
    owner[key] = buf
    return int(ffi.cast("uintptr_t", buf))
