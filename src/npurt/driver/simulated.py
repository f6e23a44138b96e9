"""The simulated NPU: devices made of host RAM (an HBM arena each) and host CPU cores.

Device virtual addresses live above the 47-bit host user space, so no host pointer can be
mistaken for one:  va = VA_BASE + (physical_id << 40) + offset. Translation is a subtraction.
"""
from __future__ import annotations

import itertools
import os
import queue
import threading
from typing import Callable

import numpy as np

from .hbm import HbmArena
from .soc import SocSpec

_GENERATIONS = itertools.count()  # driver instances of this process (see SimulatedDevice)
VA_BASE = 1 << 48
DEVICE_WINDOW = 1 << 40
HOST_ALIAS_OFFSET = 1 << 39  # inside each device window: aliases of registered host memory


def device_of_address(va: int) -> int:
    """Physical device whose window holds `va` (-1 for host addresses)."""
    if va < VA_BASE:
        return -1
    return (va - VA_BASE) >> 40


class SimulatedDevice:
    """One simulated NPU: its SoC facts, its memory arena and its address window.

    `generation` (one per driver instance) moves the arena inside the lower half of the
    window, so that a device address kept from an earlier driver (before a finalize and a new
    init, or from the parent of a forked process) never points into memory allocated now."""

    def __init__(self, physical_id: int, spec: SocSpec, generation: int = 0):
        if spec.memory_bytes >= HOST_ALIAS_OFFSET:
            raise ValueError(f"{spec.name}: capacity does not fit the device address window")
        self.physical_id = physical_id
        self.spec = spec
        window = VA_BASE + physical_id * DEVICE_WINDOW
        slot = 1 << max(spec.memory_bytes - 1, 1).bit_length()  # a power of two >= the capacity
        self.va_base = window + generation % (HOST_ALIAS_OFFSET // slot) * slot
        self.alias_base = window + HOST_ALIAS_OFFSET
        self.arena = HbmArena(spec.memory_bytes, spec.system_reserved)
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


class _Job:
    """One lane handed to the core pool. Whoever sets `taken` first (a pool thread, or the
    launching thread that would rather run it itself) runs it; `done` is released after."""

    __slots__ = ("args", "taken", "done", "result")

    def __init__(self, args):
        self.args, self.taken, self.result = args, False, None
        self.done = threading.Lock()
        self.done.acquire()


class CorePool:
    """Host threads that play the AI cores: runs the blocks of one kernel in parallel.

    The calling thread runs a share of the blocks itself, so a one-block launch never hands
    work to another thread. numpy releases the GIL, so blocks doing array work overlap. A lane
    that no pool thread has taken by the time the caller finished its own share (the pool is
    busy, e.g. with a kernel that does not return) runs in the caller too, so one stuck kernel
    never blocks another. Pool threads are daemons: a stuck one never delays interpreter exit.
    """

    def __init__(self, threads: int | None = None):
        self.threads = threads or max(1, os.cpu_count() or 1)
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._pool: list[threading.Thread] = []
        self._lock = threading.Lock()

    def run(self, n: int, body: Callable[[int], None], lane_hooks=None) -> None:
        """Run body(i) for i in range(n); returns when all have finished. The first exception
        (lowest block index) is re-raised after every lane has stopped. `lane_hooks` is an
        optional (enter, leave, stop): enter() -> state runs before each lane in its thread,
        leave(state) after it; stop() when the caller is interrupted (KeyboardInterrupt)
        while other lanes run, which are then waited for (a second interrupt ends the wait)."""
        lanes = min(n, self.threads)
        if lanes <= 1:
            self._lane(body, 0, 1, n, lane_hooks, True)
            return
        if len(self._pool) < lanes - 1:
            self._start(lanes - 1)
        jobs = []
        for lane in range(1, lanes):
            job = _Job((body, lane, lanes, n, lane_hooks, False))
            jobs.append(job)
            self._jobs.put(job)
        try:
            errors = [self._lane(body, 0, lanes, n, lane_hooks, True)]
            for job in jobs:
                if not job.taken:  # test and set: no pool thread has started it, run it here
                    job.taken = True
                    try:
                        errors.append(self._lane(*job.args[:5], True))
                    finally:
                        job.done.release()
            for job in jobs:
                job.done.acquire()
                errors.append(job.result)
        except KeyboardInterrupt:  # the caller is a host thread: stop the other lanes, wait for them
            for job in jobs:
                if not job.taken:
                    job.taken = True
                    job.done.release()
            if lane_hooks is not None:
                lane_hooks[2]()
            for job in jobs:
                job.done.acquire()  # a second Ctrl-C ends this wait
            raise
        errors = [e for e in errors if e is not None]
        if errors:
            raise min(errors, key=lambda e: getattr(e, "block_idx", 0))

    @staticmethod
    def _lane(body, lane, lanes, n, hooks, caller):
        """Run one lane; an exception is returned (pool threads) or, for the calling thread,
        returned unless it is an interrupt of that thread (raised)."""
        state = hooks[0]() if hooks is not None else None
        try:
            for i in range(lane, n, lanes):
                body(i)
        except KeyboardInterrupt:
            if caller:
                raise
            return KeyboardInterrupt()
        except BaseException as exc:  # noqa: BLE001 - handed to the launching thread
            return exc
        finally:
            if hooks is not None:
                hooks[1](state)
        return None

    def _thread_loop(self) -> None:
        jobs = self._jobs
        while True:
            job = jobs.get()
            if job is None:
                return
            if job.taken:  # the launching thread ran it already
                continue
            job.taken = True  # test and set (no call since the test)
            try:
                job.result = self._lane(*job.args)
            finally:
                job.done.release()

    def _start(self, count: int) -> None:
        with self._lock:
            while len(self._pool) < count:
                t = threading.Thread(target=self._thread_loop, daemon=True,
                                     name=f"npurt-aicore{len(self._pool) + 1}")
                self._pool.append(t)
                t.start()

    def shutdown(self) -> None:
        with self._lock:
            for _ in self._pool:
                self._jobs.put(None)
            self._pool = []


class SimulatedNpu:
    """The driver: the simulated devices of one process, created on demand."""

    name = "simulated"

    def __init__(self, spec: SocSpec, physical_count: int):
        self.spec = spec
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
                    dev = self._devices[physical_id] = SimulatedDevice(physical_id, self.spec, self.generation)
        return dev

    def close(self) -> None:
        for dev in self._devices.values():
            dev.reset()
        self._devices.clear()
        self.cores.shutdown()
