"""Driver layer: the hardware npurt runs on. It imports nothing of npurt above it.

The runtime talks to hardware only through the contract below: a `Driver` opens
`DeviceBackend`s (page-granular device memory at device addresses, a host-visible view of
it for copies, its accounting) and owns the `Cores` that run kernel blocks; `layout.py` is
the address layout every driver follows. Two drivers implement it: the simulated NPU made of
host RAM and CPU cores (`SimulatedNpu`, the default) and the null driver (`NullNpu`:
addresses and accounting, no memory and no execution). A driver for real accelerators would
implement the same contract without the runtime changing. `open(name, spec, count)` makes one.
"""
from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import numpy as np

from .cores import CorePool
from .layout import DEVICE_WINDOW, HOST_ALIAS_OFFSET, VA_BASE, device_of_address, is_alias, physical_of
from .null import NullNpu
from .simulated import SimulatedDevice, SimulatedNpu
from .soc import DEFAULT_SOC, SOCS, SocSpec, soc_by_name


@runtime_checkable
class DeviceBackend(Protocol):
    """One device: memory at device addresses and what it costs."""
    physical_id: int
    spec: SocSpec
    va_base: int        # first address of the device's memory (layout.py's window, lower half)
    alias_base: int     # first address of the host-memory aliases (upper half)
    uuid: bytes         # 16 bytes, stable for the device

    def map_pages(self, size: int, page: int) -> int | None:
        """Reserve page-granular memory; its device address, or None when full."""
    def unmap_pages(self, va: int, size: int, page: int) -> None: ...
    def view(self, va: int, nbytes: int) -> np.ndarray:
        """Host-visible uint8 view of [va, va + nbytes) (the caller has checked the range)."""
    def copy_within(self, dst: int, src: int, nbytes: int) -> None:
        """Copy nbytes between two checked ranges of this device (PagedDevice: via view)."""
    def typed_view(self, va: int, nbytes: int, dtype) -> np.ndarray:
        """view(va, nbytes).view(dtype) (PagedDevice: exactly that)."""
    def host_buffer(self) -> np.ndarray | None:
        """The whole memory as one uint8 host array (index 0 is va_base), or None."""
    def reset(self) -> None:
        """Release every page (device reset, finalize)."""
    # accounting
    usable: int           # bytes the runtime may allocate
    committed_bytes: int  # bytes mapped now
    free_bytes: int       # usable - committed
    def largest_free(self, page: int) -> int: ...


@runtime_checkable
class Cores(Protocol):
    """The cores that run a kernel's blocks."""
    threads: int

    def lanes(self, n: int, cap: int | None = None) -> int:
        """How many lanes (cores) `run` uses for n blocks, at most `cap` (a resource limit)."""
    def run(self, n: int, body: Callable[[int], None], lane_hooks=None, lanes: int | None = None) -> None:
        """body(i) for i in range(n), on at most `lanes` lanes in parallel; returns when all
        have finished."""
    def shutdown(self) -> None: ...


@runtime_checkable
class Driver(Protocol):
    name: str
    spec: SocSpec
    physical_count: int
    generation: int   # one per driver instance of the process
    cores: Cores

    def device(self, physical_id: int) -> DeviceBackend: ...
    def close(self) -> None: ...


DRIVERS = {"simulated": SimulatedNpu, "null": NullNpu}


def open(name: str, spec: SocSpec, physical_count: int,  # noqa: A001 - the driver's verb
         namespace: str | None = None) -> Driver:
    """A new driver instance by name ("simulated" or "null"). `namespace`: the simulated
    devices are shared with the other processes of that namespace (shared.py); None, or the
    null driver: private to this process."""
    try:
        cls = DRIVERS[name]
    except KeyError:
        raise ValueError(f"unknown driver {name!r}: one of {', '.join(sorted(DRIVERS))}") from None
    if cls is SimulatedNpu:
        return cls(spec, physical_count, namespace)
    return cls(spec, physical_count)


__all__ = [
    "DEFAULT_SOC", "SOCS", "SocSpec", "soc_by_name", "SimulatedNpu", "SimulatedDevice", "NullNpu", "CorePool",
    "VA_BASE", "DEVICE_WINDOW", "HOST_ALIAS_OFFSET", "device_of_address", "physical_of", "is_alias",
    "Driver", "DeviceBackend", "Cores", "DRIVERS", "open",
]
