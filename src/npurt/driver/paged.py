"""PagedDevice: what every device backend of a driver shares, its memory's accounting.

A device hands out page-granular memory from one page source, its `arena` (offsets from 0: an
`HbmArena` of private host memory, a `SharedHbmArena` shared by the processes of a namespace,
or for the null driver a bare `PageAllocator`, the same bookkeeping with no memory behind it),
at device addresses `va_base + offset`. Capacity, committed bytes, the largest free range and
running out therefore behave alike on every driver; only what stands behind an address (`view`,
`host_buffer`) differs, and that each driver says itself.
"""
from __future__ import annotations

import numpy as np

from .hbm import PageAllocator


class PagedDevice:
    """The DeviceBackend accounting (npurt.driver.DeviceBackend), delegated to `self.arena`."""

    arena: PageAllocator   # set by the subclass: where the device's pages come from
    va_base: int           # the device address of the arena's offset 0

    def map_pages(self, size: int, page: int) -> int | None:
        """Reserve page-granular device memory; its device address, or None when full."""
        offset = self.arena.map_pages(size, page)
        return None if offset is None else self.va_base + offset

    def unmap_pages(self, va: int, size: int, page: int) -> None:
        self.arena.unmap_pages(va - self.va_base, size, page)

    def copy_within(self, dst: int, src: int, nbytes: int) -> None:
        """Copy [src, src + nbytes) to [dst, dst + nbytes), both on this device (the caller
        has checked the ranges; they may overlap): through two views, unless the driver has
        a shorter way."""
        self.view(dst, nbytes)[:] = self.view(src, nbytes)

    def typed_view(self, va: int, nbytes: int, dtype) -> np.ndarray:
        """`view(va, nbytes).view(dtype)`, unless the driver has a shorter way."""
        return self.view(va, nbytes).view(dtype)

    @property
    def usable(self) -> int:
        return self.arena.usable

    @property
    def committed_bytes(self) -> int:
        return self.arena.committed_bytes

    @property
    def free_bytes(self) -> int:
        return self.arena.free_bytes

    def largest_free(self, page: int) -> int:
        return self.arena.largest_free(page)

    def reset(self) -> None:
        """Every page back (a device reset, a finalize)."""
        self.arena.release_all()
