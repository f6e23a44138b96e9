"""Virtual memory management on the simulated NPU: physical memory objects and the address
window they are mapped into (what the real driver's halMemCreate / halMemMap do).

Each device's memory is followed, in its device address window (layout.py), by a *VMM window*
three times its (power-of-two) size: device addresses reserved with aclrtReserveMemAddress lie
in it. Its host side is one PROT_NONE mapping of that size (MAP_NORESERVE: it costs no RAM),
reserved on the device's first aclrtReserveMemAddress (a process that never uses VMM pays
no address space for it: ulimit -v), placed right after the memory's host mapping where that
space is still free (simulated.py), so device
addresses of the window translate to host addresses by a subtraction, and a reserved page
that nothing is mapped onto faults for anything (a native kernel included) that touches it.

Physical memory (aclrtMallocPhysical) is a memfd of its own: mapping it is an
mmap(MAP_SHARED | MAP_FIXED) of that file onto a page range of the window, so one physical
object can be mapped at several device addresses, and another process that opens the same
file (an imported shareable handle) sees the same bytes. Unmapping puts a PROT_NONE page
range back. Its size is taken from the arena's page allocator, so it counts against the
device's capacity as any allocation does (get_mem_info sees it).
"""
from __future__ import annotations

import ctypes
import mmap
import os

import numpy as np

_libc = ctypes.CDLL(None, use_errno=True)
_mmap = _libc.mmap
_mmap.restype = ctypes.c_void_p
_mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_mprotect = _libc.mprotect
_mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)

MAP_FIXED = 0x10
PROT_NONE = 0
MAP_NORESERVE = 0x4000
_FAILED = ctypes.c_void_p(-1).value


def _check(result, what: str) -> None:
    if result in (None, _FAILED) or result == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def protect_none(host_addr: int, size: int) -> None:
    """Make [host_addr, host_addr + size) inaccessible (the window's reserved state)."""
    _check(_mprotect(host_addr, size, PROT_NONE), "mprotect of the VMM window")


def map_file(host_addr: int, size: int, fd: int, offset: int, writable: bool = True) -> None:
    """Map `size` bytes of file `fd` from `offset` at exactly `host_addr`, shared."""
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    _check(_mmap(host_addr, size, prot, mmap.MAP_SHARED | MAP_FIXED, fd, offset), "mapping physical memory")


def unmap_range(host_addr: int, size: int) -> None:
    """Put an inaccessible, unbacked page range at [host_addr, host_addr + size) (the
    physical pages mapped there stay with their file)."""
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED
    _check(_mmap(host_addr, size, PROT_NONE, flags, -1, 0), "unmapping physical memory")


def set_protection(host_addr: int, size: int, readable: bool, writable: bool) -> None:
    """aclrtMemSetAccess on the host side of a mapped range."""
    prot = (mmap.PROT_READ if readable else 0) | (mmap.PROT_WRITE if writable else 0)
    _check(_mprotect(host_addr, size, prot), "mprotect of mapped physical memory")


def reserve(size: int) -> int:
    """`size` bytes of inaccessible, unbacked address space wherever the kernel puts them."""
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE
    got = _mmap(None, size, PROT_NONE, flags, -1, 0)
    _check(got, "reserving address space")
    return got


def release(addr: int, size: int) -> None:
    _check(_munmap(addr, size), "releasing address space")


class VmmWindow:
    """The host side of a device's VMM window: `size` bytes of inaccessible address space, at
    `at` (a range the caller reserved with `reserve`) or wherever the kernel puts it."""

    def __init__(self, size: int, at: int | None = None):
        self.size = size
        self.host_address = reserve(size) if at is None else at
        self.mem = as_array(self.host_address, size)  # never printed or scanned: mostly PROT_NONE

    def clear(self) -> None:
        """Put every page back to the reserved state (mappings of physical memory go)."""
        unmap_range(self.host_address, self.size)

    def close(self) -> None:
        """Give the address space back (the device is closed: nothing may touch it again)."""
        if self.host_address:
            release(self.host_address, self.size)
            self.host_address = 0


def as_array(addr: int, size: int) -> np.ndarray:
    """A uint8 array over host memory [addr, addr + size) (nothing is touched)."""
    return np.frombuffer((ctypes.c_ubyte * size).from_address(addr), np.uint8)


class PhysicalMemory:
    """One physical allocation: a memfd of `size` bytes (its pages cost RAM once touched).
    `owner_offset` is where the arena's page allocator accounts for it (None for an import:
    the exporting process accounts for it)."""

    def __init__(self, size: int, fd: int | None = None, name: str = "npurt-physical"):
        self.size = size
        if fd is None:
            fd = os.memfd_create(name, os.MFD_CLOEXEC)
            try:
                os.ftruncate(fd, size)
            except OSError:
                os.close(fd)
                raise
        self.fd = fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def open_physical(pid: int, fd: int, size: int) -> PhysicalMemory:
    """The physical memory another process `pid` holds as its file descriptor `fd` (how an
    imported shareable handle reaches the exporter's pages: /proc/<pid>/fd/<fd>)."""
    new = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDWR | os.O_CLOEXEC)
    if os.fstat(new).st_size < size:
        os.close(new)
        raise OSError(0, "the shared physical memory is smaller than its record says")
    return PhysicalMemory(size, new)


MAP_FIXED_NOREPLACE = 0x100000
_munmap = _libc.munmap
_munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)


def map_anonymous_near(hint: int, size: int, accessible: bool = True) -> int | None:
    """Readable, writable (or, not `accessible`, inaccessible) unbacked host memory of `size`
    bytes exactly at `hint` (never over an existing mapping); None when something is there."""
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE
    prot = mmap.PROT_READ | mmap.PROT_WRITE if accessible else PROT_NONE
    got = _mmap(hint, size, prot, flags, -1, 0)
    if got in (None, _FAILED):
        return None
    if got != hint:  # a kernel before 4.17 ignores MAP_FIXED_NOREPLACE and treats it as a hint
        _munmap(got, size)
        return None
    return got


def unmap_anonymous(addr: int, size: int) -> None:
    _check(_munmap(addr, size), "munmap of managed memory")


def plug_gaps_above(addr: int, min_size: int) -> list[tuple[int, int]]:
    """Fill every unmapped gap of at least `min_size` bytes above `addr` (up to the top of the
    mmap area) with inaccessible reservations, so that the next mapping of that size goes into
    the highest gap below them; the reservations made, for `unplug`."""
    spans = []
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = line.split(None, 1)[0].split("-")
            spans.append((int(lo, 16), int(hi, 16)))
    spans.sort()
    plugs = []
    for (_, end), (start, _) in zip(spans, spans[1:]):
        if end >= addr and start - end >= min_size:
            got = map_anonymous_near(end, start - end, accessible=False)
            if got is not None:
                plugs.append((got, start - end))
    return plugs


def unplug(plugs: list[tuple[int, int]]) -> None:
    for addr, size in plugs:
        release(addr, size)
