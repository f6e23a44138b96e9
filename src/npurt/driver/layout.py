"""The device virtual address layout: where device memory lives in the one 64-bit space.

Device virtual addresses live above the 47-bit host user space, so no host pointer can be
mistaken for one. Each physical device owns a window of DEVICE_WINDOW bytes:

    va = VA_BASE + (physical_id << 40) + offset

The lower half of a window holds the device's memory (a driver may place its arena anywhere
in it); the upper half, from HOST_ALIAS_OFFSET, holds the device-side aliases of registered
host memory (host_register). Translation is a subtraction; nothing here touches memory.
"""
from __future__ import annotations

VA_BASE = 1 << 48
DEVICE_WINDOW = 1 << 40
HOST_ALIAS_OFFSET = 1 << 39  # inside each device window: aliases of registered host memory


def window_of(physical_id: int) -> int:
    """The first address of a physical device's window."""
    return VA_BASE + physical_id * DEVICE_WINDOW


def physical_of(va: int) -> int:
    """Physical device whose window holds `va` (-1 for host addresses)."""
    if va < VA_BASE:
        return -1
    return (va - VA_BASE) >> 40


device_of_address = physical_of  # the older name


def is_alias(va: int) -> bool:
    """Whether `va` is a device-side alias of registered host memory."""
    return va >= VA_BASE and (va - VA_BASE) % DEVICE_WINDOW >= HOST_ALIAS_OFFSET
