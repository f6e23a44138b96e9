"""Devices for the Pythonic API: which device a thread uses, device-wide waits, memory counters.

Naming and semantics follow `torch.cuda`. The runtime initializes itself on first use, and a
thread that has no current context gets device 0 the first time it needs one (as a new
thread does in torch). Switching devices binds the device's default context to the thread;
the pyACL facade's `set_device` reference count is taken once per device, not per switch.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

from .runtime import api as rt
from .runtime.context import Context, _thread, bind, peek_context
from .runtime.runtime import RUNTIME


# ---------------------------------------------------------------- contexts
def _context() -> Context:
    """The calling thread's context, initializing the runtime and setting device 0 if needed."""
    ctx = peek_context()
    if ctx is not None:
        return ctx
    RUNTIME.ensure_initialized()
    _bind_device(0)
    return peek_context()


def _current_device():
    """The runtime Device of the calling thread's context (device 0 in a new thread)."""
    ctx = _thread.context
    if ctx is not None and ctx.alive:
        return ctx.device
    return _context().device


def _bind_device(device_id: int) -> Context:
    """Make `device_id`'s default context current for this thread."""
    RUNTIME.ensure_initialized()
    device = RUNTIME.device(_check_id(device_id))
    ctx = device.default_context
    if ctx is None or not ctx.alive or device.set_count <= 0:
        rt.set_device(device.id)  # first use of the device: counts one set_device reference
        return peek_context()
    bind(ctx)
    return ctx


def _check_id(device_id) -> int:
    if hasattr(device_id, "__index__") and not isinstance(device_id, bool):
        return device_id.__index__()
    rt.check_device_id(device_id)  # raises InvalidDeviceError with the visible range
    return device_id


def _device_obj(device=None):
    """The runtime Device for an id (None: the current device)."""
    if device is None:
        return _context().device
    RUNTIME.ensure_initialized()
    return RUNTIME.device(_check_id(device))


@contextlib.contextmanager
def _bound(device_id: int):
    """Run a block with `device_id`'s default context current, then restore the caller's
    context (used to allocate or create objects on a device other than the current one)."""
    before = peek_context()
    if before is not None and before.device.id == device_id:
        yield before
        return
    ctx = _bind_device(device_id)
    try:
        yield ctx
    finally:
        bind(before)


# ---------------------------------------------------------------- devices
def device_count() -> int:
    """Number of visible devices (NPURT_DEVICE_COUNT / ASCEND_RT_VISIBLE_DEVICES)."""
    RUNTIME.ensure_initialized()
    return rt.get_device_count()


def set_device(device: int) -> None:
    """Make `device` the calling thread's current device."""
    _bind_device(device)


def current_device() -> int:
    """The calling thread's current device id (0 in a thread that has not chosen one)."""
    return _context().device.id


class device:
    """Context manager: `with npurt.device(1): ...` runs the block on device 1 and restores
    the previous device (and context) afterwards. `device(None)` changes nothing."""

    def __init__(self, device_id: int | None):
        self.device_id = device_id
        self._before: Context | None = None

    def __enter__(self) -> "device":
        if self.device_id is not None:
            self._before = peek_context()
            _bind_device(self.device_id)
        return self

    def __exit__(self, *exc) -> None:
        if self.device_id is not None:
            bind(self._before)


def synchronize(device: int | None = None) -> None:
    """Wait for all work queued on every stream of `device` (default: the current device);
    raises the first failure one of them reported."""
    if device is None:
        _context()
        rt.synchronize_device()
        return
    with _bound(_check_id(device)):
        rt.synchronize_device()


# ---------------------------------------------------------------- memory
def mem_get_info(device: int | None = None) -> tuple[int, int]:
    """(free, total) bytes of device memory, counting what the caching pool holds as free."""
    from .runtime import constants as C
    with _bound(_device_obj(device).id):
        return rt.get_mem_info(C.ACL_MEM_NORMAL)


def memory_stats(device: int | None = None) -> dict:
    """The runtime's memory counters for a device (allocated_bytes, peak_allocated_bytes,
    reserved_bytes, active_blocks, pending_free_blocks, num_allocs, pool_hits, ...)."""
    return rt.memory_stats(_device_obj(device))


def memory_allocated(device: int | None = None) -> int:
    """Bytes held by live allocations (rounded to the pool's block sizes)."""
    return _device_obj(device).memory.stats()["allocated_bytes"]


def memory_reserved(device: int | None = None) -> int:
    """Bytes the caching pool has mapped from the device (live plus cached)."""
    return _device_obj(device).memory.stats()["reserved_bytes"]


def max_memory_allocated(device: int | None = None) -> int:
    """Peak of memory_allocated since start or the last reset_peak_memory_stats."""
    return _device_obj(device).memory.stats()["peak_allocated_bytes"]


def reset_peak_memory_stats(device: int | None = None) -> None:
    """Start peak tracking again from the current allocation."""
    _device_obj(device).memory.reset_peak()


def empty_cache(device: int | None = None) -> None:
    """Give cached, unused device memory back to the driver (memory still in use, or freed
    while queued work uses it, stays)."""
    rt.empty_cache(_device_obj(device))


# ---------------------------------------------------------------- properties
@dataclass(frozen=True)
class DeviceProperties:
    """What `get_device_properties` reports (torch-style names where torch has one)."""

    name: str
    total_memory: int
    multi_processor_count: int   # AI cores: the kernel launch's block-parallel units
    vector_core_count: int
    aicpu_count: int
    l2_cache_size: int
    memory_kind: str
    memory_bandwidth: float      # bytes/s
    host_link_bandwidth: float   # bytes/s
    max_streams: int
    max_events: int
    npu_arch: int


def get_device_properties(device: int | None = None) -> DeviceProperties:
    """Hardware facts of a device (default: the current one)."""
    dev = _device_obj(device)
    spec = dev.spec
    return DeviceProperties(
        name=spec.name, total_memory=dev.backend.arena.usable, multi_processor_count=spec.aicore_num,
        vector_core_count=spec.vector_core_num, aicpu_count=spec.aicpu_num, l2_cache_size=spec.l2_size,
        memory_kind=spec.memory_kind, memory_bandwidth=spec.memory_bandwidth,
        host_link_bandwidth=spec.host_link_bandwidth, max_streams=dev.max_streams,
        max_events=dev.max_events, npu_arch=spec.npu_arch)


def get_device_name(device: int | None = None) -> str:
    return _device_obj(device).spec.name
