"""The simulated NPU: devices made of host RAM (an HBM arena each) and host CPU cores.

The default driver. Its addresses follow `layout.py` (the device window of each physical
device); its memory is an arena per device, its AI cores a `CorePool` of host threads. The
arena is shared with the other processes of a namespace (`SharedHbmArena`, shared.py: one
device, as on hardware) or private to the process (`HbmArena`).
"""
from __future__ import annotations

import itertools
import threading

import numpy as np

from .cores import CorePool
from .hbm import HbmArena
from .shared import SharedHbmArena, namespace_dir
from .layout import DEVICE_WINDOW, HOST_ALIAS_OFFSET, VA_BASE, device_of_address, window_of  # noqa: F401
from .soc import SocSpec
from .vmm import VmmWindow

_GENERATIONS = itertools.count()  # driver instances of this process (see SimulatedDevice)


class SimulatedDevice:
    """One simulated NPU: its SoC facts, its memory arena and its address window.

    `generation` (one per driver instance) moves the arena inside the lower half of the
    window, so that a device address kept from an earlier driver (before a finalize and a new
    init, or from the parent of a forked process) never points into memory allocated now. A
    shared device takes the place its first process chose: addresses are equal in every process.
    `namespace` (None: a private device) names the shared device's group of processes."""

    def __init__(self, physical_id: int, spec: SocSpec, generation: int = 0, namespace: str | None = None):
        if 2 * spec.memory_bytes > HOST_ALIAS_OFFSET:
            raise ValueError(f"{spec.name}: capacity does not fit the device address window")
        self.physical_id = physical_id
        self.spec = spec
        window = window_of(physical_id)
        half = 1 << max(spec.memory_bytes - 1, 1).bit_length()  # a power of two >= the capacity
        slot = 2 * half  # the memory, then its VMM window (addresses reserved with aclrtReserveMemAddress)
        place = generation % max(HOST_ALIAS_OFFSET // slot, 1)
        self.shared = namespace is not None
        if self.shared:
            self.arena = SharedHbmArena(namespace_dir(namespace), physical_id, spec.memory_bytes,
                                        spec.system_reserved, place)
            place = self.arena.va_slot
        else:
            self.arena = HbmArena(spec.memory_bytes, spec.system_reserved)
        self.va_base = window + place * slot
        self.alias_base = window + HOST_ALIAS_OFFSET
        # the VMM window: device addresses [vmm_base, vmm_base + vmm_size), a host mapping of its
        # own where physical memory is mapped (driver/vmm.py); inaccessible where nothing is
        self.vmm = VmmWindow(half)
        self.vmm_base, self.vmm_size = self.va_base + half, half
        self.uuid = bytes((physical_id * 37 + i * 11) & 0xFF for i in range(16))

    def map_pages(self, size: int, page: int) -> int | None:
        """Reserve page-granular device memory; its device VA, or None when full."""
        offset = self.arena.map_pages(size, page)
        return None if offset is None else self.va_base + offset

    def unmap_pages(self, va: int, size: int, page: int) -> None:
        self.arena.unmap_pages(va - self.va_base, size, page)

    def view(self, va: int, nbytes: int) -> np.ndarray:
        """Host-visible uint8 view of device memory [va, va + nbytes) (the simulator's DMA)."""
        offset = va - self.va_base
        if offset >= self.vmm_size:  # an address of the VMM window
            offset -= self.vmm_size
            return self.vmm.mem[offset:offset + nbytes]
        return self.arena.mem[offset:offset + nbytes]

    def vmm_host(self, va: int) -> int:
        """The host address behind device address `va` of the VMM window."""
        return self.vmm.host_address + (va - self.vmm_base)

    def host_buffer(self) -> np.ndarray:
        """The whole device memory as one host-visible uint8 array; index 0 is `va_base`."""
        return self.arena.mem

    # accounting (the arena's page allocator)
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
        self.arena.release_all()

    def close(self) -> None:
        """Release every page and let go of the memory (a shared device: detach from it)."""
        self.arena.release_all()
        self.vmm.close()
        if self.shared:
            self.arena.close()


class SimulatedNpu:
    """The driver: the simulated devices of one process, created on demand."""

    name = "simulated"

    def __init__(self, spec: SocSpec, physical_count: int, namespace: str | None = None):
        self.spec = spec
        self.namespace = namespace  # None: private devices
        self.physical_count = physical_count
        self.generation = next(_GENERATIONS)
        self._devices: dict[int, SimulatedDevice] = {}
        self._lock = threading.Lock()
        self.cores = CorePool()

    def device(self, physical_id: int) -> SimulatedDevice:
        dev = self._devices.get(physical_id)
        if dev is None:
            with self._lock:
                dev = self._devices.get(physical_id)
                if dev is None:
                    dev = self._devices[physical_id] = SimulatedDevice(
                        physical_id, self.spec, self.generation, self.namespace)
        return dev

    def close(self) -> None:
        for dev in self._devices.values():
            dev.close()
        self._devices.clear()
        self.cores.shutdown()
