"""The null driver: device addresses and memory accounting, but no memory and no execution.

`NullNpu` implements the whole driver contract (`npurt.driver.Driver`) with nothing behind
it: `map_pages` hands out page-aligned addresses in each device's window from the same
first-fit page allocator the simulated HBM uses (so capacity, committed bytes and
out-of-memory behave alike), `view` returns bytes of one scratch buffer that every address
shares (copies "succeed" and move nothing that can be read back), and the cores run no
kernel block (a one-block launch is the exception: the runtime runs it in the launching
thread without asking the cores). Two uses: tests of the contract (everything the runtime asks of the hardware
is in it, or the runtime breaks on this driver), and measuring the runtime's own overhead
(`NPURT_DRIVER=null`: what a call costs with no copy and no kernel body behind it).
"""
from __future__ import annotations

import itertools
import threading
from typing import Callable

import numpy as np

from .hbm import PageAllocator
from .layout import HOST_ALIAS_OFFSET, window_of
from .paged import PagedDevice
from .soc import SocSpec

_GENERATIONS = itertools.count()


class NullDevice(PagedDevice):
    """One device of the null driver: a window of addresses and their accounting (a page
    allocator with no memory behind it: PagedDevice's accounting, as the simulated device's)."""

    def __init__(self, physical_id: int, spec: SocSpec, generation: int = 0):
        self.physical_id = physical_id
        self.spec = spec
        window = window_of(physical_id)
        slot = 1 << max(spec.memory_bytes - 1, 1).bit_length()
        self.va_base = window + generation % max(HOST_ALIAS_OFFSET // slot, 1) * slot
        self.alias_base = window + HOST_ALIAS_OFFSET
        self.uuid = bytes((physical_id * 37 + i * 11 + 1) & 0xFF for i in range(16))
        self.arena = PageAllocator(spec.memory_bytes - spec.system_reserved)
        self._scratch = np.zeros(0, dtype=np.uint8)
        self._lock = threading.Lock()

    def view(self, va: int, nbytes: int) -> np.ndarray:
        """`nbytes` of the one scratch buffer every address shares: writable, never read back."""
        scratch = self._scratch
        if len(scratch) < nbytes:
            with self._lock:
                if len(self._scratch) < nbytes:
                    self._scratch = np.zeros(max(nbytes, 2 * len(self._scratch)), dtype=np.uint8)
                scratch = self._scratch
        return scratch[:nbytes]

    def host_buffer(self) -> None:
        """No memory stands behind the addresses: there is no host buffer of the device."""
        return None


class NullCores:
    """Cores that run nothing: a launch's blocks are accounted for (`launched`), not run."""

    def __init__(self, threads: int = 1):
        self.threads = threads
        self.launched = 0  # blocks handed to run() and dropped

    def lanes(self, n: int, cap: int | None = None) -> int:
        """The lanes a launch would use (ctx.core_id of its blocks), as the simulated cores count them."""
        return max(1, min(n, self.threads, cap or n))

    def run(self, n: int, body: Callable[[int], None], lane_hooks=None, lanes: int | None = None) -> None:
        self.launched += n

    def shutdown(self) -> None:
        pass


class NullNpu:
    """The null driver: the devices of one process, created on demand."""

    name = "null"

    def __init__(self, spec: SocSpec, physical_count: int):
        self.spec = spec
        self.physical_count = physical_count
        self.generation = next(_GENERATIONS)
        self._devices: dict[int, NullDevice] = {}
        self._lock = threading.Lock()
        self.cores = NullCores()

    def device(self, physical_id: int) -> NullDevice:
        with self._lock:
            dev = self._devices.get(physical_id)
            if dev is None:
                dev = self._devices[physical_id] = NullDevice(physical_id, self.spec, self.generation)
        return dev

    def close(self) -> None:
        for dev in self._devices.values():
            dev.reset()
        self._devices.clear()
        self.cores.shutdown()
