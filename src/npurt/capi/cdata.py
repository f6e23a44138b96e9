"""Reading and writing the C program's memory from an implementation.

`ffi` is the embedded module's cffi FFI (it knows the spec's structs), set by
`npurt.capi.entry.start` before any C function runs. The helpers take addresses as ints, the
wire form of every pointer argument.
"""
from __future__ import annotations

import functools

from ..runtime import InvalidValueError as _InvalidValue, NpuError, constants as _C
from .spec import eval_c_int, load

ffi = None  # set by entry.start


def _null(name: str) -> NpuError:
    return NpuError(f"{name} is NULL", _C.ACL_ERROR_INVALID_PARAM)


@functools.lru_cache(maxsize=1)
def _values() -> dict[str, int]:
    values: dict[str, int] = {}
    for body in load().headers.values():
        for item in body["items"]:
            if item["kind"] in ("macro", "const"):
                try:
                    values[item["name"]] = eval_c_int(item["value"], values)
                except Exception:  # noqa: BLE001, S112 - a string or cast macro
                    continue
            elif item["kind"] == "enum":
                nxt = 0
                for name, value in item["members"]:
                    nxt = eval_c_int(value, values) if value is not None else nxt
                    values[name] = nxt
                    nxt += 1
    return values


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


class Opaque:
    """Handles to Python objects for C types the program only holds pointers to
    (acltdtDataset *, acltdtQueueAttr *, ...): each handle is the address of a small block of
    memory npurt allocated, so handles are unique real pointers, and a stale or foreign one is
    recognised (`get` raises the runtime's InvalidValueError naming the kind expected)."""

    def __init__(self, kind: str):
        self.kind = kind
        self._objects: dict[int, tuple[object, object]] = {}

    def new(self, obj) -> int:
        block = ffi.new("char[8]")
        addr = int(ffi.cast("uintptr_t", block))
        self._objects[addr] = (obj, block)
        return addr

    def get(self, addr: int, name: str):
        if not addr:
            raise _null(name)
        got = self._objects.get(addr)
        if got is None:
            raise _InvalidValue(f"{name} (0x{addr:x}) is not a live {self.kind}")
        return got[0]

    def free(self, addr: int, name: str):
        obj = self.get(addr, name)
        del self._objects[addr]
        return obj


def enum_values() -> dict[str, int]:
    """Every enum member, constant and integer macro of the spec by name."""
    return _values()
