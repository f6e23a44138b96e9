"""The simulated NPU: devices made of host RAM (an HBM arena each) and host CPU cores.

The default driver. Its addresses follow `layout.py` (the device window of each physical
device); its memory is an arena per device, its AI cores a `CorePool` of host threads. The
arena is shared with the other processes of a namespace (`SharedHbmArena`, shared.py: one
device, as on hardware) or private to the process (`HbmArena`).
"""
from __future__ import annotations

import itertools
import resource
import threading

import numpy as np

from .cores import CorePool
from .hbm import HbmArena
from .shared import SharedHbmArena, namespace_dir
from .paged import PagedDevice
from .layout import DEVICE_WINDOW, HOST_ALIAS_OFFSET, VA_BASE, device_of_address, window_of  # noqa: F401
from .soc import SocSpec
from . import vmm
from .vmm import VmmWindow

_GENERATIONS = itertools.count()  # driver instances of this process (see SimulatedDevice)


def hold_window_space() -> bool:
    """Whether a device keeps its VMM window's address space reserved from its start: yes
    unless the process's address space is limited (RLIMIT_AS, ulimit -v), where a process that
    never uses VMM must not pay for it."""
    return resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY


class SimulatedDevice(PagedDevice):
    """One simulated NPU: its SoC facts, its memory arena and its address window (the
    accounting of its pages: PagedDevice's, as the null device's).

    `generation` (one per driver instance) moves the arena inside the lower half of the
    window, so that a device address kept from an earlier driver (before a finalize and a new
    init, or from the parent of a forked process) never points into memory allocated now. A
    shared device takes the place its first process chose: addresses are equal in every process.
    `namespace` (None: a private device) names the shared device's group of processes."""

    def __init__(self, physical_id: int, spec: SocSpec, generation: int = 0, namespace: str | None = None):
        if 4 * spec.memory_bytes > HOST_ALIAS_OFFSET:
            raise ValueError(f"{spec.name}: capacity does not fit the device address window")
        self.physical_id = physical_id
        self.spec = spec
        window = window_of(physical_id)
        half = 1 << max(spec.memory_bytes - 1, 1).bit_length()  # a power of two >= the capacity
        # the memory, then its VMM window (addresses reserved with aclrtReserveMemAddress): three
        # times the memory, so that reserved ranges larger than the memory fit (an expandable pool
        # reserves twice the memory: freed address space never blocks it while bytes are free)
        window_size = 3 * half
        # Placements step by the memory's size and go DOWN one step per driver instance (the first
        # at the bottom, the next at the top): a stale address of an earlier instance's memory then
        # lies outside the live memory (below it, or above it in this instance's VMM window where
        # nothing answers for it unless mapped) and is caught, for placements - 1 instances (a
        # 64 GiB device: 5 placements; 512 MiB: thousands).
        placements = max(HOST_ALIAS_OFFSET // half - 3, 1)
        place = -generation % placements  # 0, then from the top down
        self.shared = namespace is not None
        # Host placement: the VMM window should go right after the arena's memory, so that one host
        # array spans both (host_buffer: torch's views of device memory reach mapped VMM memory
        # too). The arena is steered into a hole of exactly its size at the bottom of a reservation
        # big enough for both; the rest of that reservation stays held for the window
        # (_hold_window_space) unless the address space is limited (ulimit -v), where the window's
        # host side is reserved only on first use (ensure_vmm_window: a process that never uses
        # VMM pays no address space for it) and goes next to the memory if that space is still
        # free. Where the reservation cannot be made at all, the arena goes wherever the kernel
        # puts it.
        try:
            region = vmm.reserve(half + window_size)
        except OSError:
            region, plugs = None, []
        else:
            vmm.release(region, spec.memory_bytes)  # the hole: exactly the memory's size
            plugs = vmm.plug_gaps_above(region + half + window_size, spec.memory_bytes)  # the hole: the highest fit
        try:
            if self.shared:
                self.arena = SharedHbmArena(namespace_dir(namespace), physical_id, spec.memory_bytes,
                                            spec.system_reserved, place)
                place = self.arena.va_slot
            else:
                self.arena = HbmArena(spec.memory_bytes, spec.system_reserved)
            self.va_base = window + place * half
            self.alias_base = window + HOST_ALIAS_OFFSET
        finally:
            vmm.unplug(plugs)
            held = self._hold_window_space(region, half, window_size) if region is not None else None
        self._held = held
        # the VMM window: device addresses [vmm_base, vmm_base + vmm_size), stable from here on;
        # its host mapping (driver/vmm.py) comes with the first reservation
        self.vmm_base, self.vmm_size = self.va_base + half, window_size
        self.vmm: VmmWindow | None = None
        self.adjacent = False  # (known once the window is reserved)
        self._gap = None
        self._window_lock = threading.Lock()
        self._half = half
        self._typed: dict = {}  # dtype -> the memory as one array of it (typed_view)
        self.uuid = bytes((physical_id * 37 + i * 11) & 0xFF for i in range(16))

    def _hold_window_space(self, region: int, half: int, window_size: int) -> tuple[int, int] | None:
        """Keep the address space after the memory (its tail up to `half`, then the window)
        reserved until the window's first use, or give the steering reservation back.

        Released, that space is free for the next mapping of any thread (a thread stack, a numpy
        buffer), and the window could then not go next to the memory: torch's views of reserved
        ranges would fail at random. Held, it costs address space only; so it is held unless the
        process's address space is limited (ulimit -v), where the window is reserved lazily and
        placed next to the memory only if that space is still free (best effort)."""
        memory = self.spec.memory_bytes
        arena = getattr(self, "arena", None)  # (None: the arena could not be made)
        rest = half - memory + window_size  # the steering reservation's part after the memory
        if arena is not None and arena.host_address == region and hold_window_space():
            return region + memory, rest
        vmm.release(region + memory, rest)
        return None

    def ensure_vmm_window(self) -> VmmWindow:
        """The host side of the VMM window, reserved now if it is not yet: right after the
        memory where that address space is free (`adjacent`), else wherever the kernel puts
        it. OSError (ENOMEM under ulimit -v) if the process has no address space left."""
        window = self.vmm
        if window is not None:
            return window
        with self._window_lock:
            if self.vmm is not None:
                return self.vmm
            half, size, memory = self._half, self.vmm_size, self.spec.memory_bytes
            if self._held is not None:  # the space after the memory was kept for the window
                self._held = None
                self._gap = self.arena.host_address + memory if memory < half else None
                self.adjacent = True
                self.vmm = VmmWindow(size, at=self.arena.host_address + half)
                return self.vmm
            at = vmm.map_anonymous_near(self.arena.host_address + half, size, accessible=False)
            gap = None
            if at is not None and memory < half:  # keep the gap between memory and window reserved
                gap = vmm.map_anonymous_near(self.arena.host_address + memory, half - memory, accessible=False)
                if gap is None:
                    vmm.release(at, size)
                    at = None
            self.adjacent, self._gap = at is not None, gap
            self.vmm = VmmWindow(size, at=at)  # at None: reserve anywhere (OSError if it cannot)
            return self.vmm

    def view(self, va: int, nbytes: int) -> np.ndarray:
        """Host-visible uint8 view of device memory [va, va + nbytes) (the simulator's DMA)."""
        offset = va - self.va_base
        if offset >= self._half:  # an address of the VMM window
            offset -= self._half
            return self.ensure_vmm_window().mem[offset:offset + nbytes]
        return self.arena.mem[offset:offset + nbytes]

    def copy_within(self, dst: int, src: int, nbytes: int) -> None:
        """A device-to-device copy: one slice assignment of the memory when neither end lies
        in the VMM window (numpy copies overlapping ranges correctly, releasing the GIL for
        large ones as np.copyto does); two frames and two views fewer than `view` twice."""
        base, half = self.va_base, self._half
        d, s = dst - base, src - base
        if d < half and s < half:
            mem = self.arena.mem
            mem[d:d + nbytes] = mem[s:s + nbytes]
        else:
            self.view(dst, nbytes)[:] = self.view(src, nbytes)

    def copy_window(self):
        """(va_base, limit, memory): addresses in [va_base, va_base + limit) are
        memory[va - va_base] (the addresses copy_within copies with one slice assignment),
        for the C accelerator's small copies (a memmove instead)."""
        return self.va_base, self._half, self.arena.mem

    def typed_view(self, va: int, nbytes: int, dtype) -> np.ndarray:
        """`view(va, nbytes).view(dtype)` as one slice of the memory viewed as `dtype` (made
        once per dtype): one array made instead of two, for kernels' operands (an address of
        the VMM window, or one not a multiple of the item size from the base, takes view)."""
        offset = va - self.va_base
        size = dtype.itemsize
        if offset < self._half and not offset % size:
            typed = self._typed.get(dtype)
            if typed is None:
                mem = self.arena.mem
                typed = self._typed[dtype] = mem[:len(mem) - len(mem) % size].view(dtype)
            i = offset // size
            return typed[i:i + nbytes // size]
        return self.view(va, nbytes).view(dtype)

    def vmm_host(self, va: int) -> int:
        """The host address behind device address `va` of the VMM window."""
        return self.ensure_vmm_window().host_address + (va - self.vmm_base)

    def host_buffer(self) -> np.ndarray:
        """The whole device memory as one host-visible uint8 array; index 0 is `va_base`. When
        the VMM window lies right after the memory on the host too (the usual case), the array
        spans it too: index vmm_base - va_base + k is vmm_base + k."""
        if self.adjacent:
            return vmm.as_array(self.arena.host_address, self._half + self.vmm_size)
        return self.arena.mem

    def close(self) -> None:
        """Release every page and let go of the memory (a shared device: detach from it)."""
        self.arena.release_all()
        if self._held is not None:
            vmm.release(*self._held)
            self._held = None
        if self.vmm is not None:
            self.vmm.close()
        if self._gap:
            vmm.release(self._gap, self._half - self.spec.memory_bytes)
            self._gap = None
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
