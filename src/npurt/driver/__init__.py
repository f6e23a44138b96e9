"""Driver layer: the hardware npurt runs on.

The runtime talks to hardware only through the small interface below. Today there is one
implementation, the simulated NPU made of host RAM and CPU cores (`SimulatedNpu`). A driver
for real accelerators would implement the same methods (device memory mapping by pages, a
host-visible view for copies, a pool of cores for kernel blocks) without the runtime changing.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from .simulated import VA_BASE, SimulatedDevice, SimulatedNpu, device_of_address
from .soc import DEFAULT_SOC, SOCS, SocSpec, soc_by_name


class DeviceBackend(Protocol):
    physical_id: int
    spec: SocSpec
    va_base: int
    alias_base: int

    def map_pages(self, size: int, page: int) -> int | None: ...
    def unmap_pages(self, va: int, size: int, page: int) -> None: ...
    def view(self, va: int, nbytes: int) -> np.ndarray: ...
    def reset(self) -> None: ...


class Driver(Protocol):
    name: str
    spec: SocSpec
    physical_count: int

    def device(self, physical_id: int) -> DeviceBackend: ...
    def close(self) -> None: ...


__all__ = [
    "DEFAULT_SOC", "SOCS", "SocSpec", "soc_by_name", "SimulatedNpu", "SimulatedDevice",
    "VA_BASE", "device_of_address", "Driver", "DeviceBackend",
]
