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

backends: dict[int, object] = {}  # physical id -> DeviceBackend, filled by the runtime

_libc = ctypes.CDLL(None, use_errno=True)
_mincore = _libc.mincore
_mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
_PAGE = os.sysconf("SC_PAGE_SIZE")
_probe_vec = ctypes.create_string_buffer(1)


def is_device(addr: int) -> bool:
    return addr >= VA_BASE


def physical_device(addr: int) -> int:
    return (addr - VA_BASE) // DEVICE_WINDOW


def is_host_alias(addr: int) -> bool:
    """A device-side alias of registered host memory (host_register)."""
    return addr >= VA_BASE and (addr - VA_BASE) % DEVICE_WINDOW >= HOST_ALIAS_OFFSET


def host_view(addr: int, nbytes: int) -> np.ndarray:
    """uint8 view of host memory at a raw address (caller has validated the range)."""
    if nbytes == 0:
        return np.empty(0, np.uint8)
    return np.frombuffer((ctypes.c_ubyte * nbytes).from_address(addr), np.uint8)


def view(addr: int, nbytes: int) -> np.ndarray:
    """uint8 view of [addr, addr + nbytes) in whichever space `addr` lives."""
    if addr >= VA_BASE:
        return backends[(addr - VA_BASE) // DEVICE_WINDOW].view(addr, nbytes)
    return host_view(addr, nbytes)


def host_range_mapped(addr: int, nbytes: int) -> bool:
    """True if every page of [addr, addr + nbytes) is mapped in this process.

    Uses mincore(2), which fails with ENOMEM on unmapped pages: a cheap way to refuse a
    garbage host pointer with an error instead of a segmentation fault.
    """
    if addr <= 0 or addr + nbytes > HOST_LIMIT:
        return False
    start = addr - addr % _PAGE
    length = addr + max(nbytes, 1) - start
    # one byte of the result vector per page; probe first and last page only for big ranges
    pages = (length + _PAGE - 1) // _PAGE
    if pages <= 1:
        return _mincore(start, _PAGE, _probe_vec) == 0
    last = start + (pages - 1) * _PAGE
    if _mincore(start, _PAGE, _probe_vec) != 0 or _mincore(last, _PAGE, _probe_vec) != 0:
        return False
    if pages > 2:
        vec = ctypes.create_string_buffer(pages)
        if _mincore(start, pages * _PAGE, vec) != 0:
            return ctypes.get_errno() != errno.ENOMEM
    return True
