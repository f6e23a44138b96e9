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

import numpy as np

from ..driver.simulated import DEVICE_WINDOW, HOST_ALIAS_OFFSET, VA_BASE

HOST_LIMIT = 1 << 47  # user-space host addresses are below this

_c_char_from_buffer, _addressof = ctypes.c_char.from_buffer, ctypes.addressof


def host_address(arr: np.ndarray) -> int:
    """The address of a numpy array's first element. Through the buffer protocol for a
    writable C-contiguous array (a few hundred ns); numpy's `__array_interface__` and
    `.ctypes.data`, the only other ways, build objects and cost microseconds."""
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
