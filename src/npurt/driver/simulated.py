"""The simulated NPU: devices made of host RAM (an HBM arena each) and host CPU cores.

Device virtual addresses live above the 47-bit host user space, so no host pointer can be
mistaken for one:  va = VA_BASE + (physical_id << 40) + offset. Translation is a subtraction.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from .hbm import HbmArena
from .soc import SocSpec

VA_BASE = 1 << 48
DEVICE_WINDOW = 1 << 40
HOST_ALIAS_OFFSET = 1 << 39  # inside each device window: aliases of registered host memory


def device_of_address(va: int) -> int:
    """Physical device whose window holds `va` (-1 for host addresses)."""
    if va < VA_BASE:
        return -1
    return (va - VA_BASE) >> 40


class SimulatedDevice:
    """One simulated NPU: its SoC facts, its memory arena and its address window."""

    def __init__(self, physical_id: int, spec: SocSpec):
        if spec.memory_bytes >= HOST_ALIAS_OFFSET:
            raise ValueError(f"{spec.name}: capacity does not fit the device address window")
        self.physical_id = physical_id
        self.spec = spec
        self.va_base = VA_BASE + physical_id * DEVICE_WINDOW
        self.alias_base = self.va_base + HOST_ALIAS_OFFSET
        self.arena = HbmArena(spec.memory_bytes)
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
        return self.arena.mem[offset:offset + nbytes]

    def reset(self) -> None:
        self.arena.release_all()


class CorePool:
    """Host threads that play the AI cores: runs the blocks of one kernel in parallel.

    The calling thread runs a share of the blocks itself, so a one-block launch never hands
    work to another thread. numpy releases the GIL, so blocks doing array work overlap.
    """

    def __init__(self, threads: int | None = None):
        self.threads = threads or max(1, os.cpu_count() or 1)
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def run(self, n: int, body: Callable[[int], None]) -> None:
        """Run body(i) for i in range(n); returns when all have finished. The first exception
        (lowest block index) is re-raised after every lane has stopped."""
        lanes = min(n, self.threads)
        if lanes <= 1:
            for i in range(n):
                body(i)
            return
        pool = self._pool or self._start()
        futures = [pool.submit(self._lane, body, lane, lanes, n) for lane in range(1, lanes)]
        errors = [self._lane(body, 0, lanes, n)]
        errors += [f.result() for f in futures]
        errors = [e for e in errors if e is not None]
        if errors:
            raise min(errors, key=lambda e: getattr(e, "block_idx", 0))

    @staticmethod
    def _lane(body, lane, lanes, n):
        try:
            for i in range(lane, n, lanes):
                body(i)
        except BaseException as exc:  # noqa: BLE001 - handed to the launching thread
            return exc
        return None

    def _start(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads - 1 or 1, thread_name_prefix="npurt-aicore")
            return self._pool

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


class SimulatedNpu:
    """The driver: the simulated devices of one process, created on demand."""

    name = "simulated"

    def __init__(self, spec: SocSpec, physical_count: int):
        self.spec = spec
        self.physical_count = physical_count
        self._devices: dict[int, SimulatedDevice] = {}
        self._lock = threading.Lock()
        self.cores = CorePool()

    def device(self, physical_id: int) -> SimulatedDevice:
        dev = self._devices.get(physical_id)
        if dev is None:
            with self._lock:
                dev = self._devices.get(physical_id)
                if dev is None:
                    dev = self._devices[physical_id] = SimulatedDevice(physical_id, self.spec)
        return dev

    def close(self) -> None:
        for dev in self._devices.values():
            dev.reset()
        self._devices.clear()
        self.cores.shutdown()
