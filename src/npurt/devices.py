"""Devices for the Pythonic API: which device a thread uses, device-wide waits, memory counters.

Naming and semantics follow `torch.cuda`. The runtime initializes itself on first use, and a
thread that has no current context gets device 0 the first time it needs one (as a new
thread does in torch). Switching devices binds the device's default context to the thread;
the pyACL facade's `set_device` reference count is taken once per device, not per switch.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

from . import runtime as rt
from .runtime import PER_THREAD, RUNTIME, Context, InvalidDeviceError, bind, peek_context
from .runtime import constants as C


DeviceLike = "int | str | device | None"   # what a device parameter takes (None: the current device)


# ---------------------------------------------------------------- contexts
def thread_context() -> Context:
    """The calling thread's context, initializing the runtime and setting device 0 if needed."""
    ctx = peek_context()
    if ctx is not None:
        return ctx
    RUNTIME.ensure_initialized()
    _bind_device(0)
    return peek_context()


def current_runtime_device():
    """The runtime Device of the calling thread's context (device 0 in a new thread)."""
    ctx = PER_THREAD.context
    if ctx is not None and ctx.alive:
        return ctx.device
    return thread_context().device


def _bind_device(device_id: int) -> Context:
    """Make `device_id`'s default context current for this thread."""
    RUNTIME.ensure_initialized()
    device = RUNTIME.device(device_id_of(device_id))
    ctx = device.default_context
    if ctx is None or not ctx.alive or device.set_count <= 0:
        rt.set_device(device.id)  # first use of the device: counts one set_device reference
        return peek_context()
    bind(ctx)
    return ctx


def device_id_of(device_id) -> int:
    """The device id a device argument names: an int, "npu" (the current device), "npu:1",
    an npurt.device, or a torch.device of type "npu"."""
    if type(device_id) is int:
        return device_id if device_id >= 0 else _invalid(device_id)
    if isinstance(device_id, str) or hasattr(device_id, "type") and hasattr(device_id, "index"):
        index = device(device_id).index
        return current_device() if index is None else index
    if hasattr(device_id, "__index__") and not isinstance(device_id, bool):
        return device_id.__index__()
    rt.check_device_id(device_id)  # raises InvalidDeviceError with the visible range
    return device_id


def _invalid(device_id):
    RUNTIME.ensure_initialized()
    RUNTIME.device(device_id)  # raises InvalidDeviceError naming the visible range


def runtime_device(device=None):
    """The runtime Device for an id (None: the current device)."""
    if device is None:
        return thread_context().device
    RUNTIME.ensure_initialized()
    return RUNTIME.device(device_id_of(device))


@contextlib.contextmanager
def on_device(device_id: int):
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
def is_available() -> bool:
    """True if npurt can run work: its settings are valid and a device can be used."""
    try:
        return device_count() > 0
    except Exception:  # noqa: BLE001 - torch.npu.is_available answers, it never raises
        return False


def device_count() -> int:
    """Number of visible devices (NPURT_DEVICE_COUNT / ASCEND_RT_VISIBLE_DEVICES)."""
    RUNTIME.ensure_initialized()
    return rt.get_device_count()


def set_device(device) -> None:
    """Make `device` (an int, "npu:1", an npurt.device) the calling thread's current device."""
    _bind_device(device_id_of(device))


def current_device() -> int:
    """The calling thread's current device id (0 in a thread that has not chosen one)."""
    return thread_context().device.id


class device:
    """A device, as torch.device names one, and a context manager, as torch.npu.device is.

    `npurt.device("npu:1")`, `npurt.device("npu", 1)`, `npurt.device(1)`; `npurt.device("npu")`
    has no index and means the current device wherever a device is taken. Anywhere npurt
    takes a device it takes this, an int, such a string or a torch.device of type "npu".
    `with npurt.device(1): ...` runs the block on device 1 and restores the previous device
    (and context) afterwards; `device(None)` changes nothing.
    """

    __slots__ = ("type", "index", "_before")

    def __init__(self, type_or_index="npu", index: int | None = None):
        kind, idx = _parse(type_or_index, index)
        self.type, self.index, self._before = kind, idx, None

    def __repr__(self) -> str:
        return f"device(type='npu')" if self.index is None else f"device(type='npu', index={self.index})"

    def __str__(self) -> str:
        return "npu" if self.index is None else f"npu:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, device):
            return self.index == other.index
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("npu", self.index))

    def __enter__(self) -> "device":
        if self.index is not None:
            self._before = peek_context()
            _bind_device(self.index)
        return self

    def __exit__(self, *exc) -> None:
        if self.index is not None:
            bind(self._before)


def _parse(spec, index) -> tuple[str, int | None]:
    """("npu", index or None) from the forms device() takes; InvalidDeviceError otherwise."""
    if spec is None:
        return "npu", None
    if isinstance(spec, device):
        return "npu", spec.index
    if not isinstance(spec, str) and hasattr(spec, "type") and hasattr(spec, "index"):  # a torch.device
        spec, index = str(spec.type), spec.index
    if isinstance(spec, str):
        kind, _, num = spec.strip().partition(":")
        kind = kind.lower()
        if kind != "npu":
            hint = ("the host: keep host data in numpy arrays" if kind == "cpu" else
                    "not a device npurt simulates: npurt's devices are Ascend NPUs, 'npu' or 'npu:N'")
            raise InvalidDeviceError(f"device {spec!r} is {hint}")
        if num:
            if not num.isdigit():
                raise InvalidDeviceError(f"device {spec!r}: the index after 'npu:' must be a number")
            if index is not None:
                raise InvalidDeviceError(f"device {spec!r} already has an index; do not pass index={index}")
            index = int(num)
    elif index is None and (type(spec) is int or hasattr(spec, "__index__") and not isinstance(spec, bool)):
        spec, index = "npu", spec.__index__()
    else:
        raise InvalidDeviceError(f"a device is an int, 'npu', 'npu:N' or an npurt.device, got {spec!r}")
    if index is not None:
        if not hasattr(index, "__index__") or isinstance(index, bool) or index.__index__() < 0:
            raise InvalidDeviceError(f"device index must be a non-negative int, got {index!r}")
        index = index.__index__()
    return "npu", index


def synchronize(device: DeviceLike = None) -> None:
    """Wait for all work queued on every stream of `device` (default: the current device);
    raises the first failure one of them reported. With nothing queued anywhere on the
    device (and no failure to report, no tool listening, no capture) it returns at once."""
    ctx = peek_context()
    if device is None or (type(device) is int and ctx is not None and ctx.device.id == device):
        if ctx is None:
            ctx = thread_context()
        if not rt.HOOKS.active and ctx.device.drained():
            return
        rt.synchronize_device()
        return
    with on_device(device_id_of(device)):
        rt.synchronize_device()




# ---------------------------------------------------------------- memory
def mem_get_info(device: DeviceLike = None) -> tuple[int, int]:
    """(free, total) bytes of device memory, counting what the caching pool holds as free."""
    with on_device(runtime_device(device).id):
        return rt.get_mem_info(C.ACL_MEM_NORMAL)


def memory_stats(device: DeviceLike = None) -> dict:
    """Memory counters of a device under torch.cuda.memory_stats' names
    ("allocated_bytes.all.current", "reserved_bytes.all.peak", "allocation.all.allocated",
    "segment.all.current", "num_ooms", ...) and npurt's own (allocated_bytes,
    peak_allocated_bytes, reserved_bytes, active_blocks, pending_free_blocks, num_allocs,
    pool_hits, ...)."""
    own = rt.memory_stats(runtime_device(device))
    return {**torch_names_of(own), **own}


def torch_memory_stats(device: DeviceLike = None) -> dict:
    """The counters under torch's names only (what torch.npu.memory_stats reports)."""
    return torch_names_of(rt.memory_stats(runtime_device(device)))


def torch_names_of(own: dict) -> dict:
    """npurt's pool counters under torch.cuda.memory_stats' names: the one mapping, used by the
    Pythonic API and by torch.npu (the keys npurt can fill honestly)."""
    return {
        "allocated_bytes.all.current": own["allocated_bytes"], "allocated_bytes.all.peak": own["peak_allocated_bytes"],
        "active_bytes.all.current": own["allocated_bytes"], "active_bytes.all.peak": own["peak_allocated_bytes"],
        "reserved_bytes.all.current": own["reserved_bytes"], "reserved_bytes.all.peak": own["peak_reserved_bytes"],
        "allocation.all.current": own["active_blocks"], "allocation.all.allocated": own["num_allocs"],
        "allocation.all.freed": own["num_frees"],
        "segment.all.current": own["segment_maps"] - own["segment_unmaps"],
        "segment.all.allocated": own["segment_maps"], "segment.all.freed": own["segment_unmaps"],
        "num_device_alloc": own["segment_maps"], "num_device_free": own["segment_unmaps"],
        "num_ooms": own["num_ooms"], "num_alloc_retries": 0,
    }


def memory_summary(device: DeviceLike = None, abbreviated: bool = False) -> str:
    """A printable table of a device's memory counters (torch.cuda.memory_summary's role)."""
    dev = runtime_device(device)
    st = memory_stats(dev.id)
    mib = lambda n: f"{n / 2**20:,.1f} MiB"  # noqa: E731
    rows = [("allocated (live arrays and malloc)", mib(st["allocated_bytes"]), mib(st["peak_allocated_bytes"])),
            ("reserved (mapped by the caching pool)", mib(st["reserved_bytes"]), mib(st["peak_reserved_bytes"])),
            ("live allocations", f"{st['active_blocks']:,}", ""),
            ("freed, waiting for queued work", f"{st['pending_free_blocks']:,}", "")]
    if not abbreviated:
        rows += [("allocations (total / from the pool)", f"{st['num_allocs']:,} / {st['pool_hits']:,}", ""),
                 ("segments mapped / unmapped", f"{st['segment_maps']:,} / {st['segment_unmaps']:,}", ""),
                 ("out-of-memory errors", f"{st['num_ooms']:,}", "")]
    free, total = mem_get_info(dev.id)
    width = max(len(r[0]) for r in rows)
    lines = [f"npurt memory summary, device {dev.id} ({dev.spec.name}, {mib(total)}, {mib(free)} free)",
             f"  {'':<{width}}  {'current':>14}  {'peak':>14}"]
    lines += [f"  {name:<{width}}  {cur:>14}  {peak:>14}" for name, cur, peak in rows]
    return "\n".join(lines) + "\n"


def memory_allocated(device: DeviceLike = None) -> int:
    """Bytes held by live allocations (rounded to the pool's block sizes)."""
    return runtime_device(device).memory.stats()["allocated_bytes"]


def memory_reserved(device: DeviceLike = None) -> int:
    """Bytes the caching pool has mapped from the device (live plus cached)."""
    return runtime_device(device).memory.stats()["reserved_bytes"]


def max_memory_allocated(device: DeviceLike = None) -> int:
    """Peak of memory_allocated since start or the last reset_peak_memory_stats."""
    return runtime_device(device).memory.stats()["peak_allocated_bytes"]


def max_memory_reserved(device: DeviceLike = None) -> int:
    """Peak of memory_reserved since start or the last reset_peak_memory_stats."""
    return runtime_device(device).memory.stats()["peak_reserved_bytes"]


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    """Start peak tracking (allocated and reserved) again from the current values."""
    runtime_device(device).memory.reset_peak()


def empty_cache(device: DeviceLike = None) -> None:
    """Give cached, unused device memory back to the driver (memory still in use, or freed
    while queued work uses it, stays)."""
    rt.empty_cache(runtime_device(device))


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


def get_device_properties(device: DeviceLike = None) -> DeviceProperties:
    """Hardware facts of a device (default: the current one)."""
    dev = runtime_device(device)
    spec = dev.spec
    return DeviceProperties(
        name=spec.name, total_memory=dev.backend.usable, multi_processor_count=spec.aicore_num,
        vector_core_count=spec.vector_core_num, aicpu_count=spec.aicpu_num, l2_cache_size=spec.l2_size,
        memory_kind=spec.memory_kind, memory_bandwidth=spec.memory_bandwidth,
        host_link_bandwidth=spec.host_link_bandwidth, max_streams=dev.max_streams,
        max_events=dev.max_events, npu_arch=spec.npu_arch)


def get_device_name(device: DeviceLike = None) -> str:
    return runtime_device(device).spec.name
