"""Address spaces: telling host from device addresses and turning either into bytes.

Device addresses are >= VA_BASE (above the 47-bit host user space); the driver encodes the
physical device in them. This module keeps the table physical id -> driver device so a
task can turn an address into a numpy view when it runs, without holding views (which
would cost ~100 bytes per queued task).
"""
from __future__ import annotations

import ctypes
import errno
import os

from typing import TYPE_CHECKING

import numpy as np

from ..driver.layout import DEVICE_WINDOW, HOST_ALIAS_OFFSET, VA_BASE
from .accel import SPEEDUPS
from .errors import InvalidValueError, as_int, fork_hint
from .memory import LIVE, note_use, usable_size
from .observers import HOOKS

if TYPE_CHECKING:
    from .runtime import Runtime
    from .stream import Stream

HOST_LIMIT = 1 << 47  # user-space host addresses are below this

_c_char_from_buffer, _addressof = ctypes.c_char.from_buffer, ctypes.addressof
_data_address = getattr(SPEEDUPS, "data_address", None)


def host_address(arr: np.ndarray) -> int:
    """The address of a numpy array's first element. Through the buffer protocol (a few
    hundred ns; in C with the accelerator, any array, else for a writable C-contiguous one);
    numpy's `__array_interface__` and `.ctypes.data`, the only other ways, build objects and
    cost microseconds (tens with cold caches, as a kernel right after a big one has them)."""
    if _data_address is not None:
        try:
            return _data_address(arr)
        except (TypeError, ValueError, BufferError):  # no buffer (a dtype numpy exports none for)
            return arr.__array_interface__["data"][0]
    try:
        return _addressof(_c_char_from_buffer(arr))
    except (TypeError, ValueError, BufferError):  # read-only, not contiguous, or empty
        return arr.__array_interface__["data"][0]

backends: dict[int, object] = {}  # physical id -> DeviceBackend, filled by the runtime

_libc = ctypes.CDLL(None, use_errno=True)
_madvise = _libc.madvise
_madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_mincore = _libc.mincore
_mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
_PAGE = os.sysconf("SC_PAGE_SIZE")
_probe_vec = ctypes.create_string_buffer(1)
MADV_POPULATE_READ, MADV_POPULATE_WRITE = 22, 23  # Linux 5.14+

# malloc_host memory, set by the runtime's HostMemory: views of it go through its mapping
host_memory = None

def is_device(addr: int) -> bool:
    return addr >= VA_BASE


def physical_device(addr: int) -> int:
    return (addr - VA_BASE) // DEVICE_WINDOW


def is_host_alias(addr: int) -> bool:
    """A device-side alias of registered host memory (host_register)."""
    return addr >= VA_BASE and (addr - VA_BASE) % DEVICE_WINDOW >= HOST_ALIAS_OFFSET


def host_view(addr: int, nbytes: int) -> np.ndarray:
    """uint8 view of host memory at a raw address (the caller has validated the range).

    Memory from malloc_host is viewed through its mapping object: while the view lives,
    free_host cannot unmap the pages under it (the unmap waits for the view), and a view of
    memory already unmapped is an error instead of a segmentation fault."""
    if nbytes == 0:
        return np.empty(0, np.uint8)
    host = host_memory
    if host is not None and host.starts:
        rng = host.ranges.get(addr) or host.containing(addr)
        if rng is not None and rng.mm is not None:
            return rng.view(addr, nbytes)
    return raw_host_view(addr, nbytes)


def raw_host_view(addr: int, nbytes: int) -> np.ndarray:
    """uint8 view of host memory the runtime does not own (the caller has probed it)."""
    return np.frombuffer((ctypes.c_ubyte * nbytes).from_address(addr), np.uint8)


def view(addr: int, nbytes: int) -> np.ndarray:
    """uint8 view of [addr, addr + nbytes) in whichever space `addr` lives."""
    if addr >= VA_BASE:
        return backends[(addr - VA_BASE) // DEVICE_WINDOW].view(addr, nbytes)
    return host_view(addr, nbytes)


def typed_view(addr: int, nbytes: int, dtype: np.dtype) -> np.ndarray:
    """`view(addr, nbytes).view(dtype)`, through the driver's shorter way for device memory
    (a kernel's operands: one array made instead of two)."""
    if addr >= VA_BASE:
        return backends[(addr - VA_BASE) >> 40].typed_view(addr, nbytes, dtype)
    return host_view(addr, nbytes).view(dtype)


def copy(dst: int, src: int, nbytes: int) -> None:
    """Copy [src, src + nbytes) to [dst, dst + nbytes) in whichever spaces they live (the
    caller has validated both ranges): within one device by the driver's `copy_within`
    (a tiny memcpy_async's run is mostly making views), else through two views."""
    if dst >= VA_BASE and src >= VA_BASE:
        physical = (dst - VA_BASE) >> 40
        if physical == (src - VA_BASE) >> 40:
            backends[physical].copy_within(dst, src, nbytes)
            return
    view(dst, nbytes)[:] = view(src, nbytes)


# ---------------------------------------------------------------- probing host memory
# A host pointer from the user may be garbage, freed, read-only (np.memmap(mode="r"), code)
# or PROT_NONE (guard pages). Touching such memory from numpy kills the process, so every
# host range the runtime does not own is probed first. madvise(MADV_POPULATE_READ/WRITE)
# asks the kernel to fault the range in as a read (write) would: it fails (ENOMEM, EINVAL,
# EFAULT) on unmapped pages, on pages without that permission and on pages that would raise
# SIGBUS (a file mapping past its end), for every mapping the range spans, and costs a page
# table walk (the copy then finds the pages present). Kernels before 5.14 lack it: there
# mincore(2) checks that the range is mapped and process_vm_readv/writev check the
# permission of its first and last page.

def host_readable(addr: int, nbytes: int) -> bool:
    """True if every byte of [addr, addr + nbytes) can be read (at least one byte is probed)."""
    return _probe(addr, nbytes, MADV_POPULATE_READ)


def host_writable(addr: int, nbytes: int) -> bool:
    """True if every byte of [addr, addr + nbytes) can be written."""
    return _probe(addr, nbytes, MADV_POPULATE_WRITE)


def _probe(addr: int, nbytes: int, advice: int) -> bool:
    if type(addr) is not int or addr <= 0 or addr + nbytes > HOST_LIMIT:
        return False
    start = addr - addr % _PAGE
    length = addr + max(nbytes, 1) - start
    if _populate_works:
        while True:
            if _madvise(start, length, advice) == 0:
                return True
            if ctypes.get_errno() != errno.EINTR:
                return False
    return _probe_fallback(start, length, advice == MADV_POPULATE_WRITE)


def _mapped(start: int, length: int) -> bool:
    """mincore(2) fails with ENOMEM on unmapped pages."""
    pages = (length + _PAGE - 1) // _PAGE
    if pages <= 1:
        return _mincore(start, _PAGE, _probe_vec) == 0
    vec = ctypes.create_string_buffer(pages)
    return _mincore(start, pages * _PAGE, vec) == 0 or ctypes.get_errno() != errno.ENOMEM


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _probe_fallback(start: int, length: int, write: bool) -> bool:
    if not _mapped(start, length):
        return False
    last = start + length - 1
    pages = [start] if last - last % _PAGE == start else [start, last - last % _PAGE]
    scratch = ctypes.create_string_buffer(len(pages))
    remote = (_IoVec * len(pages))(*[_IoVec(p, 1) for p in pages])
    if write:  # write each probed byte back onto itself (the copy overwrites it anyway)
        fn, local = _libc.process_vm_writev, remote
    else:
        fn, local = _libc.process_vm_readv, (_IoVec * 1)(_IoVec(ctypes.addressof(scratch), len(pages)))
    try:
        done = fn(os.getpid(), local, len(local), remote, len(pages), 0)
    except OSError:
        return True  # not even this probe is possible: trust the mapping
    return done == len(pages) or (done < 0 and ctypes.get_errno() in (errno.ENOSYS, errno.EPERM))


def _populate_supported() -> bool:
    buf = ctypes.create_string_buffer(2 * _PAGE)
    start = ctypes.addressof(buf) + _PAGE - ctypes.addressof(buf) % _PAGE
    return _madvise(start, _PAGE, MADV_POPULATE_READ) == 0


_populate_works = _populate_supported()


# ---------------------------------------------------------------- resolution
# The one place an address becomes the allocation that holds it: copies, kernels, the graph
# engine, media, collectives, torch and the Pythonic arrays all resolve through `resolve`.
_VA_BASE = VA_BASE


class Span:
    """A located address: host (device is None) or device memory, and what holds it."""

    __slots__ = ("addr", "device", "block", "pinned")

    def __init__(self, addr, device, block, pinned):
        self.addr, self.device, self.block, self.pinned = addr, device, block, pinned

    def describe(self) -> str:
        if self.device is None:
            return f"0x{self.addr:x} is {'pinned' if self.pinned else 'pageable'} host memory"
        return f"0x{self.addr:x} is device memory of device {self.device.id}"


def _quick(rt: "Runtime", addr, nbytes: int):
    """(device, block) for the start of a live device block, (None, range) for the start of
    a pinned host range, or None: the common cases, decided without building messages."""
    if type(addr) is not int:
        return None
    if addr >= _VA_BASE:
        device = rt.device_by_physical.get((addr - _VA_BASE) >> 40)
        if device is not None:
            block = device.memory.live.get(addr)
            if block is not None and nbytes <= block.requested:
                return device, block
        return None
    rng = rt.host.ranges.get(addr)
    if rng is not None and nbytes <= rng.size and not rng.readonly:
        return None, rng
    return None


def locate(rt: "Runtime", addr, nbytes: int, role: str, trusted: bool = False) -> Span:
    """Find where [addr, addr + nbytes) lives; a clear error if it is not usable memory.
    `trusted`: a host range the caller holds a buffer object for is not probed."""
    quick = _quick(rt, addr, nbytes)
    if quick is not None:
        return Span(addr, quick[0], quick[1], True)
    return _locate(rt, addr, nbytes, role, trusted)


def _locate(rt: "Runtime", addr, nbytes: int, role: str, trusted: bool = False) -> Span:
    if type(addr) is not int:
        addr = as_int(addr, f"the {role} address")
    if addr >= VA_BASE:
        device = rt.device_by_physical.get(physical_device(addr))
        if device is None:
            raise refused("invalid_address", addr, nbytes, None,
                          f"the {role} address 0x{addr:x} belongs to no visible device")
        if is_host_alias(addr):
            raise refused("invalid_address", addr, nbytes, device,
                          f"the {role} address 0x{addr:x} is the device alias of registered host memory; "
                          "it is for device code (kernel arguments) only. Copy from or to the host pointer itself")
        memory = device.memory
        block = memory.live.get(addr)
        if block is None:
            block = memory.find(addr)
            if block is None or block.state != LIVE:
                kind = "invalid_address" if block is None and addr not in memory.released else "use_after_free"
                raise refused(kind, addr, nbytes, device, dead_address_message(device, addr, block, role))
        usable = usable_size(block)
        if block.segment is None and block.state == LIVE and getattr(block, "readonly", False) and role in _WRITTEN:
            raise refused("read_only", addr, nbytes, device,
                          f"the {role} address 0x{addr:x} lies in memory mapped read-only "
                          "(aclrtMemSetAccess ACL_RT_MEM_ACCESS_FLAGS_READ); it cannot be written")
        if addr + nbytes > block.addr + usable:
            raise refused("out_of_bounds", addr, nbytes, device,
                          f"{nbytes} bytes at the {role} address 0x{addr:x} run past the end of its allocation "
                          f"(0x{block.addr:x}, {block.requested} bytes requested, {usable} usable) by "
                          f"{addr + nbytes - block.addr - usable} bytes")
        return Span(addr, device, block, True)
    if addr <= 0:
        raise refused("invalid_address", addr, nbytes, None,
                      f"the {role} address is {'null' if addr == 0 else 'negative'}")
    try:
        rng = rt.host.find(addr, nbytes)
    except InvalidValueError as exc:  # starts in a pinned range, runs past its end
        raise refused("out_of_bounds", addr, nbytes, None, exc.message) from None
    write = role in _WRITTEN
    if rng is None and rt.host.closing and rt.host.freed(addr, nbytes) is not None:
        raise refused("use_after_free", addr, nbytes, None,
                      f"the {role} address 0x{addr:x} lies in host memory freed with free_host (npurt still maps "
                      "it while a queued copy finishes; then it is unmapped): use after free")
    if rng is not None:
        if write and rng.readonly:
            raise refused("read_only", addr, nbytes, None,
                          f"the {role} address 0x{addr:x} lies in host memory registered with "
                          "ACL_HOST_REGISTER_READONLY; it cannot be written")
    elif not trusted and not (host_writable if write else host_readable)(addr, nbytes):
        what = "writable" if write else "readable"
        also = "read-only memory (np.memmap(mode='r'), a constant), " if write else ""
        raise refused("invalid_address", addr, nbytes, None,
                      f"the {role} address 0x{addr:x} (+{nbytes} bytes) is not mapped, {what} host memory in "
                      f"this process: a stale pointer, a freed buffer, {also}a guard page, or a number that "
                      "is not an address")
    return Span(addr, None, rng, rng is not None)


_WRITTEN = ("destination", "memset")  # roles whose memory the operation writes


def refused(kind: str, addr, nbytes: int, device, message: str, task=None) -> InvalidValueError:
    """The error for a refused memory operation, told to observers first (mem_error)."""
    if HOOKS.active:
        HOOKS.emit("mem_error", kind=kind, addr=addr, nbytes=nbytes, device=device, message=message, task=task)
    return InvalidValueError(message)


def dead_address_message(device, addr: int, block, role: str) -> str:
    released = device.memory.released.get(addr)
    if released:
        return f"the {role} address 0x{addr:x} was released by {released}"
    if block is None:
        vmm = device.vmm
        why = vmm.describe_unmapped(addr) if vmm.base <= addr < vmm.end else None
        if why is not None:
            return f"the {role} address {why}"
        return f"the {role} address 0x{addr:x} is not inside any allocation of device {device.id}{fork_hint()}"
    return f"the {role} address 0x{addr:x} lies in device memory that was freed (use after free)"


resolve = locate
"""`resolve(rt, addr, nbytes, role, trusted=False) -> Span`: the published name of `locate`."""


def record_use(span: Span, stream: "Stream", seq: int) -> None:
    """note_use for a located address (stream-ordered free of what it lies in)."""
    note_use(span.block, stream, seq)


# ---------------------------------------------------------------- host data
def host_bytes(data, size, what: str) -> bytes:
    """A copy of `size` bytes of host data given as a host address or a bytes-like object."""
    if isinstance(data, (bytes, bytearray, memoryview, np.ndarray)):
        if isinstance(data, np.ndarray):
            data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        raw = memoryview(data).cast("B")
        if size is None:
            size = len(raw)
        if type(size) is not int or not 0 <= size <= len(raw):
            raise InvalidValueError(f"{what}: size {size!r} exceeds the {len(raw)} bytes given")
        return bytes(raw[:size])
    if type(data) is not int or isinstance(data, bool):
        raise InvalidValueError(f"{what} must be a host address int or bytes, got {type(data).__name__}")
    if type(size) is not int or size < 0:
        raise InvalidValueError(f"{what}: size must be a non-negative int, got {size!r}")
    if data >= VA_BASE:
        raise InvalidValueError(f"{what} 0x{data:x} is a device address; host memory is expected here")
    if size and (data <= 0 or not host_readable(data, size)):
        raise InvalidValueError(f"{what} 0x{data:x} (+{size} bytes) is not readable host memory")
    return host_view(data, size).tobytes() if size else b""
