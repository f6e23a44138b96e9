"""The runtime's operations as plain Python functions that raise `NpuError`s.

This is the one place where the rules live; the pyACL facade (`npurt.acl`) turns these
into return codes and int handles, the Pythonic API (`npurt`) wraps them in objects.
Streams, events and contexts are passed as objects; `None` as a stream means the current
context's default stream.
"""
from __future__ import annotations

import threading
import time

from . import address, memops
from . import constants as C
from .context import Context, _thread, bind, current_context, peek_context
from .device import Device
from .errors import (ContextError, InvalidDeviceError,
                     InvalidHandleError, InvalidValueError, NpuError, ResourceExhaustedError,
                     SubscriptionError, SyncTimeoutError)
from .event import Event
from .memory import HUGE1G_PAGE, HUGE_PAGE, LIVE, NORMAL_PAGE
from .observers import HOOKS
from .runtime import RUNTIME
from .scheduler import Blocker, task_error
from .stream import Stream
from .tasks import HostFuncTask, Task

rt = RUNTIME


# ================================================================ init / finalize
def init(config_path: str | None = None) -> None:
    """Initialize the runtime (acl.init). A second call raises REPEAT_INITIALIZE (100002)
    after counting a reference."""
    rt.init(config_path)


def finalize() -> None:
    """Tear everything down (acl.finalize): waits for queued work, frees all memory."""
    rt.finalize()


def finalize_reference() -> int:
    """Drop one init reference; finalizes when none is left. Returns the references left."""
    return rt.finalize_reference()


def ensure_initialized() -> None:
    rt.ensure_initialized()


# ================================================================ devices
def get_device_count() -> int:
    rt.check_initialized()
    return len(rt.devices)


def set_device(device_id: int) -> None:
    """Make `device_id` the calling thread's device: bind its default context (created on
    first use; reference counted per device)."""
    device = rt.device(device_id)
    ctx = rt.default_context(device)
    with device.lock:
        device.set_count += 1
    bind(ctx)


def get_device() -> int:
    return current_context().device.id


def current_device() -> Device:
    return current_context().device


def reset_device(device_id: int) -> None:
    """Drop one set_device reference; at zero, wait for the device's work and free all it
    holds (memory, streams, events, contexts)."""
    device = rt.device(device_id)
    with device.lock:
        if device.set_count <= 0:
            raise InvalidValueError(f"reset_device({device_id}): the device is not set (set_device was "
                                    "not called, or every reference was already reset)")
        device.set_count -= 1
        if device.set_count:
            return
    _unbind_if_current(device)
    rt.release_device(device, f"reset_device({device_id})")


def reset_device_force(device_id: int) -> None:
    """Release the device whatever the set_device count."""
    device = rt.device(device_id)
    if device.set_count <= 0 and device.default_context is None:
        raise InvalidValueError(f"reset_device_force({device_id}): the device is not set")
    _unbind_if_current(device)
    rt.release_device(device, f"reset_device_force({device_id})")


def _unbind_if_current(device: Device) -> None:
    ctx = peek_context()
    if ctx is not None and ctx.device is device:
        bind(None)


def get_soc_name() -> str:
    rt.check_initialized()
    return rt.driver.spec.name


def get_run_mode() -> int:
    rt.check_initialized()
    return C.ACL_HOST


def synchronize_device(timeout_ms: int = -1) -> None:
    """Wait for every stream of the current device; then raise the first stream failure
    (the failures of other streams stay on them for their own synchronize)."""
    device = current_context().device
    deadline = None if timeout_ms is None or timeout_ms < 0 else time.monotonic() + timeout_ms / 1000
    if HOOKS.active:
        HOOKS.emit("host_sync", what="device", obj=device)
    streams = device.all_streams()
    for stream in streams:
        left = -1 if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
        try:
            stream.synchronize(timeout_ms=left, report_errors=False)
        except SyncTimeoutError as exc:
            raise SyncTimeoutError(f"synchronize_device timed out after {timeout_ms} ms: {exc.message}") from None
    for stream in streams:
        stream.raise_error()


def get_device_info(device_id: int, attr: int) -> int:
    spec = rt.device(device_id).spec
    values = {
        C.ACL_DEV_ATTR_AICPU_CORE_NUM: spec.aicpu_num,
        C.ACL_DEV_ATTR_AICORE_CORE_NUM: spec.aicore_num,
        C.ACL_DEV_ATTR_CUBE_CORE_NUM: spec.aicore_num,
        C.ACL_DEV_ATTR_VECTOR_CORE_NUM: spec.vector_core_num,
        C.ACL_DEV_ATTR_LOCAL_MEM_PER_VECTOR_CORE: 192 * 1024,
        C.ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE: spec.memory_bytes,
        C.ACL_DEV_ATTR_L2_CACHE_SIZE: spec.l2_size,
        C.ACL_DEV_ATTR_PHY_CHIP_ID: rt.settings.visible_devices[device_id],
        C.ACL_DEV_ATTR_NPU_ARCH: spec.npu_arch,
        C.ACL_DEV_ATTR_HD_CONNECT_TYPE: 0,
        C.ACL_DEV_ATTR_DEVICE_FORM_FACTOR: 3,
        C.ACL_DEV_ATTR_IS_VIRTUAL: 0,
        C.ACL_DEV_ATTR_CUST_OP_PRIVILEGE: 0,
    }
    zero_attrs = {C.ACL_DEV_ATTR_WARP_SIZE, C.ACL_DEV_ATTR_MAX_THREAD_PER_VECTOR_CORE,
                  C.ACL_DEV_ATTR_MAX_GRID_DIM_X, C.ACL_DEV_ATTR_MAX_GRID_DIM_Y, C.ACL_DEV_ATTR_MAX_GRID_DIM_Z,
                  C.ACL_DEV_ATTR_MAX_BLOCK_PER_GRID, C.ACL_DEV_ATTR_MAX_THREADS_PER_BLOCK,
                  C.ACL_DEV_ATTR_MAX_BLOCK_DIM_X, C.ACL_DEV_ATTR_MAX_BLOCK_DIM_Y, C.ACL_DEV_ATTR_MAX_BLOCK_DIM_Z,
                  C.ACL_DEV_ATTR_SMP_ID, C.ACL_DEV_ATTR_SUPER_POD_DEVICE_ID, C.ACL_DEV_ATTR_SUPER_POD_SERVER_ID,
                  C.ACL_DEV_ATTR_SUPER_POD_ID, C.ACL_DEV_ATTR_MAINBOARD_ID, C.ACL_DEV_ATTR_SUPER_POD_CHASSIS_ID}
    if attr in values:
        return values[attr]
    if attr in zero_attrs:
        return 0  # SIMT / super-pod attributes: not present on this SoC
    raise InvalidValueError(f"unknown device attribute {attr!r} (see aclrtDevAttr)")


def device_can_access_peer(device_id: int, peer_id: int) -> int:
    rt.device(device_id), rt.device(peer_id)
    if device_id == peer_id:
        raise InvalidValueError("device_can_access_peer needs two different device ids")
    return 1  # simulated devices of one process share one host: peers always reachable


def device_enable_peer_access(peer_id: int, flag: int = 0) -> None:
    device = current_context().device
    peer = rt.device(peer_id)
    if flag != 0:
        raise InvalidValueError(f"device_enable_peer_access: flag must be 0, got {flag!r}")
    if peer is device:
        raise InvalidValueError("device_enable_peer_access: the peer must differ from the current device")
    device.peer_access.add(peer.id)


def device_disable_peer_access(peer_id: int) -> None:
    device = current_context().device
    peer = rt.device(peer_id)
    if peer is device:
        raise InvalidValueError("device_disable_peer_access: the peer must differ from the current device")
    if peer.id not in device.peer_access:
        raise InvalidValueError(f"peer access from device {device.id} to device {peer.id} is not enabled")
    device.peer_access.discard(peer.id)


def device_peer_access_status(device_id: int, peer_id: int) -> int:
    return int(rt.device(peer_id).id in rt.device(device_id).peer_access)


# ================================================================ contexts
def create_context(device_id: int) -> Context:
    """An explicit context on `device_id`, made current for the calling thread."""
    device = rt.device(device_id)
    ctx = Context(device, is_default=False)
    ctx.handle = rt.contexts.add(ctx)
    with device.lock:
        device.contexts.add(ctx)
    bind(ctx)
    return ctx


def destroy_context(ctx: Context) -> None:
    if ctx.is_default:
        raise InvalidValueError("the default context of a device cannot be destroyed; use reset_device")
    if not ctx.alive:
        raise InvalidHandleError("this context was already destroyed")
    device = ctx.device
    for stream in [ctx.default_stream, *ctx.streams]:
        try:
            stream.synchronize(report_errors=False)
        except NpuError:
            stream.abort()
        device.release_stream(stream)
    ctx.alive = False
    with device.lock:
        device.contexts.discard(ctx)
    rt.contexts.remove(ctx.handle)
    if peek_context() is None:
        bind(None)


def set_context(ctx: Context) -> None:
    if not ctx.alive:
        raise ContextError(f"cannot set a destroyed context (device {ctx.device.id}); create a new one")
    bind(ctx)


def get_context() -> Context:
    return current_context()


def get_primary_ctx_state(device_id: int) -> tuple[int, int]:
    """(active, flags) of the device's default context."""
    ctx = rt.device(device_id).default_context
    return int(ctx is not None and ctx.alive), 0


# ================================================================ streams
def stream_of(stream: Stream | None) -> Stream:
    """`stream`, or the current context's default stream for None."""
    if stream is None:
        return current_context().default_stream
    if type(stream) is not Stream:
        raise InvalidHandleError(f"expected a stream (or None for the default stream), got "
                                 f"{type(stream).__name__}")
    if stream.destroyed:
        raise InvalidHandleError(f"stream {stream.stream_id} was destroyed")
    return stream


def create_stream(priority: int = 0, flags: int = 0) -> Stream:
    """A new stream in the current context."""
    if type(priority) is not int or type(flags) is not int or flags < 0:
        raise InvalidValueError(f"stream priority and flags must be ints (flags >= 0), got {priority!r}, {flags!r}")
    ctx = current_context()
    return ctx.device.new_stream(ctx, priority, flags)


def destroy_stream(stream: Stream, force: bool = False) -> None:
    """Destroy a stream. Without `force` its queued work runs first (errors from it are not
    reported); with `force` queued work is dropped."""
    if type(stream) is not Stream:
        raise InvalidHandleError(f"expected a stream, got {type(stream).__name__}")
    if stream.is_default:
        raise InvalidValueError("a default stream cannot be destroyed; it lives as long as its context")
    if stream.destroyed:
        raise InvalidHandleError(f"stream {stream.stream_id} was already destroyed")
    ctx = peek_context()
    if ctx is not stream.context:
        raise ContextError(f"stream {stream.stream_id} belongs to another context; make that context "
                           "current (set_context) before destroying it", C.ACL_ERROR_RT_STREAM_CONTEXT)
    if force:
        stream.abort()
    else:
        stream.synchronize(report_errors=False)
    stream.device.release_stream(stream)


def synchronize_stream(stream: Stream | None, timeout_ms: int = -1) -> None:
    _check_timeout(timeout_ms)
    stream_of(stream).synchronize(timeout_ms=timeout_ms)


def stream_query(stream: Stream | None) -> int:
    """ACL_STREAM_STATUS_COMPLETE (0) or ACL_STREAM_STATUS_NOT_READY (1)."""
    done = stream_of(stream).query()
    return C.ACL_STREAM_STATUS_COMPLETE if done else C.ACL_STREAM_STATUS_NOT_READY


def stream_abort(stream: Stream | None) -> None:
    stream_of(stream).abort()


def set_stream_failure_mode(stream: Stream | None, mode: int) -> None:
    stream_of(stream).set_failure_mode(mode)


def get_stream_available_num() -> int:
    device = current_context().device
    return device.max_streams - device.stream_count


def set_stream_attribute(stream: Stream | None, attr: int, value: dict) -> None:
    s = stream_of(stream)
    if not isinstance(value, dict):
        raise InvalidValueError("the stream attribute value must be a dict (aclrtStreamAttrValue)")
    if attr == C.ACL_STREAM_ATTR_FAILURE_MODE:
        if s.is_default:
            raise InvalidValueError("the failure mode of a default stream cannot be set through "
                                    "set_stream_attribute; use set_stream_failure_mode")
        s.set_failure_mode(_attr_value(value, "failureMode"))
    elif attr == C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK:
        s.attributes["overflowSwitch"] = int(bool(_attr_value(value, "overflowSwitch")))
    elif attr == C.ACL_STREAM_ATTR_USER_CUSTOM_TAG:
        s.attributes["userCustomTag"] = _attr_value(value, "userCustomTag") & 0xFFFFFFFF
    elif attr == C.ACL_STREAM_ATTR_PRIORITY:
        prio = _attr_value(value, "streamPriority")
        s.priority = min(max(prio, 0), 7)
    else:
        raise InvalidValueError(f"unknown or read-only stream attribute {attr!r}")


def get_stream_attribute(stream: Stream | None, attr: int) -> dict:
    s = stream_of(stream)
    if attr == C.ACL_STREAM_ATTR_FAILURE_MODE:
        return {"failureMode": s.failure_mode}
    if attr == C.ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK:
        return {"overflowSwitch": s.attributes["overflowSwitch"]}
    if attr == C.ACL_STREAM_ATTR_USER_CUSTOM_TAG:
        return {"userCustomTag": s.attributes["userCustomTag"]}
    if attr == C.ACL_STREAM_ATTR_PRIORITY:
        return {"streamPriority": s.priority}
    raise InvalidValueError(f"unknown stream attribute {attr!r}")


def _attr_value(value: dict, key: str) -> int:
    v = value.get(key)
    if type(v) is not int:
        raise InvalidValueError(f"stream attribute value needs an int under {key!r}, got {value!r}")
    return v


def _check_timeout(timeout_ms) -> None:
    if type(timeout_ms) is not int or timeout_ms < -1:
        raise InvalidValueError(f"timeout must be -1 (wait forever), 0 (poll) or a positive number of "
                                f"milliseconds, got {timeout_ms!r}")


def launch_host_func(stream: Stream | None, fn, *args, name: str | None = None) -> int:
    """Run fn(*args) on a device worker in stream order (the generic host-function task)."""
    if not callable(fn):
        raise InvalidValueError(f"launch_host_func needs a callable, got {type(fn).__name__}")
    return stream_of(stream).enqueue(HostFuncTask(fn, args, name))


def enqueue(stream: Stream | None, task: Task) -> int:
    """Append a prepared task to a stream (used by kernels and built-in ops)."""
    return stream_of(stream).enqueue(task)


# ================================================================ events
def create_event(flags: int | None = None, ex: bool = False) -> Event:
    """A new event on the current device. `flags=None` is create_event(): usable for
    waits and timing but not reset_event. With flags (ACL_EVENT_*): SYNC allows waits and
    reset, TIME_LINE allows timing. `ex` gives create_event_ex_with_flag semantics."""
    device = current_context().device
    if flags is None:
        timing = sync = True
        resettable = False
        counted = True
    else:
        known = (C.ACL_EVENT_SYNC | C.ACL_EVENT_CAPTURE_STREAM_PROGRESS | C.ACL_EVENT_TIME_LINE
                 | C.ACL_EVENT_DEVICE_USE_ONLY | C.ACL_EVENT_EXTERNAL | C.ACL_EVENT_IPC)
        if type(flags) is not int or flags <= 0 or flags & ~known:
            raise InvalidValueError(f"event flags {flags!r} are not a non-empty combination of ACL_EVENT_SYNC "
                                    "(0x1), ACL_EVENT_CAPTURE_STREAM_PROGRESS (0x2), ACL_EVENT_TIME_LINE (0x8)")
        sync = bool(flags & C.ACL_EVENT_SYNC)
        timing = bool(flags & C.ACL_EVENT_TIME_LINE)
        resettable = sync and not ex
        counted = sync and not ex
    with device.lock:
        if counted:
            if device.event_count >= device.max_events:
                raise ResourceExhaustedError(
                    f"device {device.id} has no event left ({device.max_events} in use); destroy events "
                    "you no longer need", C.ACL_ERROR_RT_NO_EVENT_RESOURCE)
            device.event_count += 1
    event = Event(device, flags or 0, timing=timing, sync=sync, resettable=resettable, ex=ex, counted=counted)
    event.handle = rt.events.add(event)
    device.events.add(event)
    return event


def destroy_event(event: Event) -> None:
    """Destroy an event; never blocks (queued records of it still complete)."""
    _live(event)
    event.destroyed = True
    device = event.device
    with device.lock:
        if event.counted:
            device.event_count -= 1
        device.events.discard(event)
    rt.events.remove(event.handle)


def _live(event: Event) -> Event:
    if type(event) is not Event:
        raise InvalidHandleError(f"expected an event, got {type(event).__name__}")
    if event.destroyed:
        raise InvalidHandleError(f"event {event.event_id} was destroyed")
    return event


def record_event(event: Event, stream: Stream | None) -> int:
    s = stream_of(stream)
    seq = _live(event).record_on(s)
    if HOOKS.active:
        HOOKS.emit("event_record", event=event, stream=s, seq=seq)
    return seq


def stream_wait_event(stream: Stream | None, event: Event) -> int:
    s = stream_of(stream)
    seq = _live(event).wait_on(s)
    if HOOKS.active:
        HOOKS.emit("event_wait", event=event, stream=s, seq=seq)
    return seq


def reset_event(event: Event, stream: Stream | None) -> int:
    return _live(event).reset_on(stream_of(stream))


def query_event_status(event: Event) -> int:
    """ACL_EVENT_RECORDED_STATUS_COMPLETE (1) or _NOT_READY (0)."""
    done = _live(event).is_complete()
    return C.ACL_EVENT_RECORDED_STATUS_COMPLETE if done else C.ACL_EVENT_RECORDED_STATUS_NOT_READY


def query_event(event: Event) -> int:
    """Deprecated query: ACL_EVENT_STATUS_COMPLETE (0) or _NOT_READY (1)."""
    if _live(event).ex:
        raise InvalidValueError("query_event cannot be used with create_event_ex_with_flag events; "
                                "use query_event_status")
    return C.ACL_EVENT_STATUS_COMPLETE if event.is_complete() else C.ACL_EVENT_STATUS_NOT_READY


def query_event_wait_status(event: Event) -> int:
    """ACL_EVENT_WAIT_STATUS_COMPLETE (0) once the latest stream_wait_event on it finished."""
    if not _live(event).resettable:
        raise InvalidValueError("query_event_wait_status needs an event from "
                                "create_event_with_flag(ACL_EVENT_SYNC)")
    return C.ACL_EVENT_WAIT_STATUS_COMPLETE if event.wait_status_complete() else C.ACL_EVENT_WAIT_STATUS_NOT_READY


def synchronize_event(event: Event, timeout_ms: int = -1) -> None:
    _check_timeout(timeout_ms)
    if HOOKS.active:
        HOOKS.emit("host_sync", what="event", obj=event)
    _live(event).synchronize(timeout_ms)


def event_elapsed_time(start: Event, end: Event) -> float:
    """Milliseconds between two completed events' records."""
    return _live(start).elapsed_ms(_live(end))


def event_get_timestamp(event: Event) -> int:
    """Completion time of the event's record in microseconds since its device started."""
    ev = _live(event)
    return (ev.timestamp_ns() - ev.device.boot_ns) // 1000


def get_event_avail_num() -> int:
    device = current_context().device
    return device.max_events - device.event_count


# ================================================================ device memory
def malloc(size: int, policy: int = C.ACL_MEM_MALLOC_HUGE_FIRST, align32: bool = False) -> int:
    """Allocate device memory on the current device; a 64-byte aligned device address."""
    ctx = _thread.context
    if ctx is None or not ctx.alive:
        ctx = current_context()
    if HOOKS.active:
        return malloc_on(ctx.device, size, policy, align32)
    return ctx.device.memory.malloc(size, policy, align32)  # the hot path: one call less


def malloc_on(device: Device, size: int, policy: int = C.ACL_MEM_MALLOC_HUGE_FIRST,
              align32: bool = False) -> int:
    """malloc on a given device, whatever the calling thread's current context."""
    addr = device.memory.malloc(size, policy, align32)
    if HOOKS.active:
        HOOKS.emit("mem_alloc", device=device, addr=addr, size=size)
    return addr


def free(ptr: int) -> None:
    """Free device memory (any device; the address says which). Stream-ordered: memory that
    queued work still uses is reused only after that work has finished."""
    if type(ptr) is int and ptr >= address.VA_BASE:  # fast path: a device address
        device = rt.device_by_physical.get((ptr - address.VA_BASE) >> 40)
        if device is not None and not HOOKS.active:
            device.memory.free(ptr)
            return
    device = _device_of(ptr, "free")
    if HOOKS.active:
        block = device.memory.live.get(ptr)
        HOOKS.emit("mem_free", device=device, addr=ptr, size=block.requested if block else 0)
    device.memory.free(ptr)


def _device_of(ptr, call: str) -> Device:
    rt.check_initialized()
    if type(ptr) is not int:
        raise InvalidValueError(f"{call} expects a device address int, got {type(ptr).__name__}")
    if ptr < address.VA_BASE:
        if ptr == 0:
            raise InvalidValueError(f"{call}: null pointer")
        raise InvalidValueError(f"{call}(0x{ptr:x}): that is a host address; device memory comes from "
                                "malloc, host memory from malloc_host is freed with free_host")
    device = rt.device_by_physical.get(address.physical_device(ptr))
    if device is None:
        raise InvalidValueError(f"{call}(0x{ptr:x}): the address belongs to no visible device")
    return device


def get_mem_info(attr: int) -> tuple[int, int]:
    """(free, total) bytes of the current device for an aclrtMemAttr; (0, 0) for memory
    kinds this SoC does not have."""
    device = current_context().device
    arena = device.backend.arena
    kind = device.spec.memory_kind
    hbm = {C.ACL_HBM_MEM, C.ACL_HBM_MEM_HUGE, C.ACL_HBM_MEM_NORMAL, C.ACL_HBM_MEM_P2P_HUGE,
           C.ACL_HBM_MEM_P2P_NORMAL, C.ACL_HBM_MEM_HUGE1G, C.ACL_HBM_MEM_P2P_HUGE1G}
    ddr = {C.ACL_DDR_MEM, C.ACL_DDR_MEM_HUGE, C.ACL_DDR_MEM_NORMAL, C.ACL_DDR_MEM_P2P_HUGE,
           C.ACL_DDR_MEM_P2P_NORMAL}
    auto = set(range(C.ACL_MEM_NORMAL, C.ACL_MEM_P2P_HUGE1G + 1))
    if type(attr) is not int or attr not in hbm | ddr | auto:
        raise InvalidValueError(f"unknown memory attribute {attr!r} (see aclrtMemAttr)")
    if attr in ddr and kind == "HBM":
        return 0, 0
    names = {C.ACL_HBM_MEM_HUGE: HUGE_PAGE, C.ACL_HBM_MEM_P2P_HUGE: HUGE_PAGE, C.ACL_DDR_MEM_HUGE: HUGE_PAGE,
             C.ACL_DDR_MEM_P2P_HUGE: HUGE_PAGE, C.ACL_MEM_HUGE: HUGE_PAGE, C.ACL_MEM_P2P_HUGE: HUGE_PAGE,
             C.ACL_HBM_MEM_HUGE1G: HUGE1G_PAGE, C.ACL_HBM_MEM_P2P_HUGE1G: HUGE1G_PAGE,
             C.ACL_MEM_HUGE1G: HUGE1G_PAGE, C.ACL_MEM_P2P_HUGE1G: HUGE1G_PAGE}
    page = names.get(attr, NORMAL_PAGE)
    with device.memory.lock:  # bins may gain entries concurrently
        cached = sum(b.size for pool in device.memory.pools.values()
                     for lst in list(pool.bins.values()) for b in list(lst))
    free = arena.free_bytes + cached
    return free // page * page, arena.capacity


def empty_cache(device: Device | None = None) -> None:
    """Give the caching pool's unused segments back to the driver (and the OS)."""
    (device or current_context().device).memory.empty_cache()


def memory_stats(device: Device | None = None) -> dict:
    return (device or current_context().device).memory.stats()


def pointer_get_attributes(ptr: int) -> dict:
    """Where `ptr` lives: {"location": {"id", "type"}, "pageSize", "rsv"} plus npurt extras
    ("allocation": start of the allocation holding it, "size": its size)."""
    rt.check_initialized()
    if type(ptr) is not int:
        raise InvalidValueError(f"pointer_get_attributes expects an int address, got {type(ptr).__name__}")
    if ptr >= address.VA_BASE:
        device = rt.device_by_physical.get(address.physical_device(ptr))
        if device is None:
            raise InvalidValueError(f"0x{ptr:x} belongs to no visible device")
        if address.is_host_alias(ptr):
            return {"location": {"id": device.id, "type": C.ACL_MEM_LOCATION_TYPE_DEVICE},
                    "pageSize": 4096, "rsv": 0, "allocation": ptr, "size": 0}
        block = device.memory.find(ptr)
        if block is None or block.state != LIVE:
            raise InvalidValueError(memops.dead_address_message(device, ptr, block, "queried"))
        return {"location": {"id": device.id, "type": C.ACL_MEM_LOCATION_TYPE_DEVICE},
                "pageSize": block.segment.page, "rsv": 0, "allocation": block.addr, "size": block.requested}
    if ptr <= 0:
        raise InvalidValueError("pointer_get_attributes: null or negative address")
    rng = rt.host.find(ptr)
    if rng is None:
        return {"location": {"id": 0, "type": C.ACL_MEM_LOCATION_TYPE_UNREGISTERED},
                "pageSize": 4096, "rsv": 0, "allocation": 0, "size": 0}
    return {"location": {"id": 0, "type": C.ACL_MEM_LOCATION_TYPE_HOST},
            "pageSize": 4096, "rsv": 0, "allocation": rng.addr, "size": rng.size}


# ================================================================ host memory
def malloc_host(size: int) -> int:
    """Page-locked (here: its own page-aligned mapping) host memory; a usable host pointer."""
    rt.check_initialized()
    return rt.host.malloc(size)


def free_host(ptr: int) -> None:
    rt.check_initialized()
    rt.host.free(ptr)


def host_register(ptr: int, size: int, flags: int = C.ACL_HOST_REGISTER_MAPPED) -> int:
    """Mark an existing host range as pinned; returns its device-side alias (for kernels)."""
    device = current_context().device
    if flags not in (C.ACL_HOST_REGISTER_MAPPED, C.ACL_HOST_REGISTER_IOMEMORY, C.ACL_HOST_REGISTER_READONLY,
                     C.ACL_HOST_REG_MAPPED, C.ACL_HOST_REG_PINNED, C.ACL_HOST_REG_MAPPED | C.ACL_HOST_REG_PINNED):
        raise InvalidValueError(f"unknown host registration type {flags!r}")
    return rt.host.register(ptr, size, device, flags).alias


def host_unregister(ptr: int) -> None:
    rt.check_initialized()
    rt.host.unregister(ptr)


def host_get_device_pointer(ptr: int, flag: int = 0) -> int:
    rt.check_initialized()
    if flag != 0:
        raise InvalidValueError("host_get_device_pointer: flag must be 0")
    rng = rt.host.ranges.get(ptr) if type(ptr) is int else None
    if rng is None or not rng.registered:
        rng = rt.host._find(ptr, 1) if type(ptr) is int else None
        if rng is None or not rng.registered:
            raise InvalidValueError(f"0x{ptr:x} is not registered host memory" if type(ptr) is int
                                    else "host_get_device_pointer expects an int address")
    return rng.alias + (ptr - rng.addr)


# ================================================================ copies and sets
def memcpy(dst: int, dest_max: int, src: int, count: int, kind: int) -> None:
    rt.check_initialized()
    memops.memcpy(rt, dst, dest_max, src, count, kind)


def memcpy_async(dst: int, dest_max: int, src: int, count: int, kind: int, stream: Stream | None,
                 require_aligned: bool = True, keep=None) -> int:
    if type(stream) is not Stream or stream.destroyed:  # None, a wrong object, destroyed
        stream = stream_of(stream)
    return memops.memcpy_async(rt, dst, dest_max, src, count, kind, stream, require_aligned, keep)


def memcpy2d(dst, dpitch, src, spitch, width, height, kind) -> None:
    rt.check_initialized()
    memops.memcpy2d(rt, dst, dpitch, src, spitch, width, height, kind)


def memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream: Stream | None) -> None:
    s = stream_of(stream)
    memops.memcpy2d(rt, dst, dpitch, src, spitch, width, height, kind, stream=s,
                    allowed=(memops.H2D, memops.D2H, memops.D2D))


def memset(ptr: int, max_count: int, value: int, count: int) -> None:
    rt.check_initialized()
    memops.memset(rt, ptr, max_count, value, count)


def memset_async(ptr: int, max_count: int, value: int, count: int, stream: Stream | None) -> int:
    if type(stream) is not Stream or stream.destroyed:  # None, a wrong object, destroyed
        stream = stream_of(stream)
    return memops.memset_async(rt, ptr, max_count, value, count, stream)


# ================================================================ host callbacks
class _CallbackItem(Blocker):
    """A posted launch_callback; for ACL_CALLBACK_BLOCK also what its stream parks on."""

    __slots__ = ("fn", "user_data", "done", "error", "lock", "stream", "task", "parked")

    def __init__(self, fn, user_data, stream):
        self.fn, self.user_data, self.stream = fn, user_data, stream
        self.done = False
        self.error = None
        self.waiter = None
        self.parked = False
        self.lock = threading.Lock()
        self.task = None

    def register(self) -> bool:  # blocker protocol (see Task.blocker)
        with self.lock:
            if self.done:
                return False
            self.parked = True
            return True

    def describe(self) -> str:
        return (f"host callback {getattr(self.fn, '__qualname__', self.fn)!s} to be run by the thread "
                "that calls process_report")

    def finish(self, error) -> None:
        with self.lock:
            self.done = True
            self.error = error
            parked = self.parked
        if parked:
            self.fire()


class CallbackTask(Task):
    """launch_callback: posts fn(user_data) to the stream's subscribed report thread; with
    ACL_CALLBACK_BLOCK the stream waits until that thread has run it."""

    __slots__ = ("item", "block", "queue", "posted")
    kind = "launch_callback"
    may_block = True
    error_code = C.ACL_ERROR_RT_AICPU_EXCEPTION

    def __init__(self, item: _CallbackItem, block: bool, queue):
        self.item, self.block, self.queue, self.posted = item, block, queue, False
        item.task = self

    def blocker(self):
        if not self.posted:
            self.posted = True
            queue = self.queue
            with queue.cond:
                queue.items.append(self.item)
                queue.cond.notify()
        if self.block and not self.item.done:
            return self.item
        return None

    def run(self) -> None:
        if self.block and self.item.error is not None:
            raise self.item.error

    def describe(self) -> str:
        return f"launch_callback {getattr(self.item.fn, '__qualname__', self.item.fn)!s}"


def subscribe_report(thread_id: int, stream: Stream | None) -> None:
    s = stream_of(stream)
    if type(thread_id) is not int:
        raise InvalidValueError(f"subscribe_report: thread id must be an int, got {type(thread_id).__name__}")
    if s.subscriber is not None:
        raise SubscriptionError(f"stream {s.stream_id} is already subscribed to thread {s.subscriber}",
                                C.ACL_ERROR_REPEAT_SUBSCRIBE)
    queue = rt.report_queue(thread_id, s.device.id)
    if queue.device_id != s.device.id:
        raise SubscriptionError(f"thread {thread_id} already serves streams of device {queue.device_id}; a "
                                "report thread serves one device", C.ACL_ERROR_RT_THREAD_SUBSCRIBE)
    queue.streams.add(s)
    s.subscriber = thread_id


def unsubscribe_report(thread_id: int, stream: Stream | None) -> None:
    s = stream_of(stream)
    if s.subscriber != thread_id:
        raise SubscriptionError(f"stream {s.stream_id} is not subscribed to thread {thread_id}",
                                C.ACL_ERROR_RT_STREAM_SUBSCRIBE)
    queue = rt.report_queue(thread_id)
    s.subscriber = None
    if queue is not None:
        queue.streams.discard(s)
        if not queue.streams and not queue.items:
            rt.report_queues.pop(thread_id, None)


def launch_callback(fn, user_data, block_type: int, stream: Stream | None) -> int:
    s = stream_of(stream)
    if not callable(fn):
        raise InvalidValueError(f"launch_callback needs a callable, got {type(fn).__name__}")
    if block_type not in (C.ACL_CALLBACK_NO_BLOCK, C.ACL_CALLBACK_BLOCK):
        raise InvalidValueError(f"block type must be ACL_CALLBACK_NO_BLOCK (0) or ACL_CALLBACK_BLOCK (1), "
                                f"got {block_type!r}")
    if s.subscriber is None:
        raise SubscriptionError(f"stream {s.stream_id} has no report thread: call "
                                "subscribe_report(thread_id, stream) before launch_callback")
    queue = rt.report_queue(s.subscriber)
    item = _CallbackItem(fn, user_data, s)
    return s.enqueue(CallbackTask(item, block_type == C.ACL_CALLBACK_BLOCK, queue))


def process_report(timeout_ms: int) -> None:
    """Run the callbacks posted to the calling thread, waiting up to `timeout_ms` (-1:
    forever) for the first. Raises REPORT_TIMEOUT (507012) if none came."""
    rt.check_initialized()
    if type(timeout_ms) is not int or timeout_ms < -1 or timeout_ms == 0:
        raise InvalidValueError(f"process_report timeout must be -1 or a positive number of ms, got {timeout_ms!r}")
    queue = rt.current_report_queue()
    with queue.cond:
        if not queue.items:
            queue.cond.wait_for(lambda: bool(queue.items), None if timeout_ms < 0 else timeout_ms / 1000)
        items = list(queue.items)
        queue.items.clear()
    if not items:
        raise NpuError(f"process_report: no callback arrived within {timeout_ms} ms", C.ACL_ERROR_RT_REPORT_TIMEOUT)
    for item in items:
        error = None
        try:
            item.fn(item.user_data)
        except Exception as exc:  # noqa: BLE001 - becomes the stream's failure
            error = exc
        if error is not None and not item.task.block:
            item.stream.fail(item.task, task_error(item.task, error))
        item.finish(error)


# ================================================================ execution control
def set_op_wait_timeout(timeout_s: int) -> None:
    """Seconds after which a stream_wait_event issued from now on gives up (0: never). The
    timeout fails the waiting stream with ACL_ERROR_RT_WAIT_TIMEOUT at its next synchronize."""
    rt.check_initialized()
    if type(timeout_s) is not int or timeout_s < 0:
        raise InvalidValueError(f"op wait timeout must be a non-negative int of seconds, got {timeout_s!r}")
    rt.op_wait_timeout_s = timeout_s


def set_op_execute_timeout_us(timeout_us: int) -> None:
    """Default kernel execution timeout in microseconds for launches that carry none (0: none)."""
    rt.check_initialized()
    if type(timeout_us) is not int or timeout_us < 0:
        raise InvalidValueError(f"op execute timeout must be a non-negative int, got {timeout_us!r}")
    rt.op_execute_timeout_us = timeout_us


# ================================================================ device queries and settings
# (added for the pyACL facade: queries and process/context settings that do no device work)
OP_TIMEOUT_INTERVAL_US = 4_294_967  # A2: 254 intervals = the 1091 s default AI Core timeout
OP_TIMEOUT_MAX_INTERVALS = 254


def set_ts_device(ts_id: int) -> None:
    """Choose the task scheduler (ACL_TS_ID_*). One scheduler serves every engine here, so
    the choice changes nothing, as on SoCs that only have the AI Core scheduler."""
    rt.check_initialized()
    if type(ts_id) is not int or ts_id not in (C.ACL_TS_ID_AICORE, C.ACL_TS_ID_AIVECTOR, C.ACL_TS_ID_RESERVED):
        raise InvalidValueError(f"ts_id must be ACL_TS_ID_AICORE (0), ACL_TS_ID_AIVECTOR (1) or "
                                f"ACL_TS_ID_RESERVED (2), got {ts_id!r}")


def get_device_capability(device_id: int, feature: int) -> int:
    """1 if the device supports an aclrtDevFeatureType feature; the simulated SoC has none."""
    rt.device(device_id)
    if type(feature) is not int or feature not in (C.ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV,
                                                   C.ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV):
        raise InvalidValueError(f"unknown device feature {feature!r} (see aclrtDevFeatureType)")
    return 0


def get_hardware_info(device_id: int, info: int) -> int:
    """acl.get_device_capability: AI Core count, vector core count or L2 size (aclDeviceInfo)."""
    spec = rt.device(device_id).spec
    values = {C.ACL_DEVICE_INFO_AI_CORE_NUM: spec.aicore_num,
              C.ACL_DEVICE_INFO_VECTOR_CORE_NUM: spec.vector_core_num,
              C.ACL_DEVICE_INFO_L2_SIZE: spec.l2_size}
    if type(info) is not int or info not in values:
        raise InvalidValueError(f"unknown device info {info!r}: use ACL_DEVICE_INFO_AI_CORE_NUM (0), "
                                "ACL_DEVICE_INFO_VECTOR_CORE_NUM (1) or ACL_DEVICE_INFO_L2_SIZE (2)")
    return values[info]


def get_device_utilization_rate(device_id: int) -> dict:
    """aclrtUtilizationInfo. Compute utilization is not sampled here (-1, "unsupported");
    memory utilization is the percentage of device memory in use."""
    device = rt.device(device_id)
    arena = device.backend.arena
    used = arena.capacity - arena.free_bytes
    return {"cube_utilization": -1, "vector_utilization": -1, "aicpu_utilization": -1,
            "memory_utilization": used * 100 // arena.capacity, "utilization_extend": 0}


def query_device_status(device_id: int) -> int:
    rt.device(device_id)
    return C.ACL_RT_DEVICE_STATUS_NORMAL


def set_device_sat_mode(mode: int) -> None:
    """Float overflow mode of the current device (recorded; numpy arithmetic is always inf/nan)."""
    device = current_context().device
    if type(mode) is not int or mode not in (C.ACL_RT_OVERFLOW_MODE_SATURATION, C.ACL_RT_OVERFLOW_MODE_INFNAN):
        raise InvalidValueError(f"overflow mode must be ACL_RT_OVERFLOW_MODE_SATURATION (0) or "
                                f"ACL_RT_OVERFLOW_MODE_INFNAN (1), got {mode!r}")
    device.sat_mode = mode


def get_device_sat_mode() -> int:
    return current_context().device.sat_mode


def device_get_stream_priority_range() -> tuple[int, int]:
    """(least, greatest) stream priority: 7 and 0."""
    rt.check_initialized()
    from .stream import HIGHEST_PRIORITY, LOWEST_PRIORITY
    return LOWEST_PRIORITY, HIGHEST_PRIORITY


def get_devices_topo(device_id: int, other_id: int) -> int:
    """Link between two devices (ACL_RT_DEVS_TOPOLOGY_* bits): simulated devices of one
    server are reported as HCCS-connected, as the NPUs of an A2 server are."""
    rt.device(device_id), rt.device(other_id)
    if device_id == other_id:
        raise InvalidValueError("get_devices_topo needs two different device ids")
    return C.ACL_RT_DEVS_TOPOLOGY_HCCS


def get_logic_dev_id_by_user_dev_id(user_id: int) -> int:
    """The driver (physical) id behind a user (visible, ASCEND_RT_VISIBLE_DEVICES) id."""
    rt.device(user_id)
    return rt.settings.visible_devices[user_id]


def get_user_dev_id_by_logic_dev_id(logic_id: int) -> int:
    rt.check_initialized()
    visible = rt.settings.visible_devices
    if type(logic_id) is not int or logic_id not in visible:
        raise InvalidDeviceError(f"device {logic_id!r} is not visible to this process "
                                 f"(ASCEND_RT_VISIBLE_DEVICES maps user ids to {visible})")
    return visible.index(logic_id)


def device_get_uuid(device_id: int) -> dict:
    """{"bytes": 16 characters}: a stable id derived from the SoC and the physical device."""
    import uuid
    device = rt.device(device_id)
    raw = uuid.uuid5(uuid.NAMESPACE_OID, f"npurt/{device.spec.name}/{device.backend.physical_id}").bytes
    return {"bytes": raw.decode("latin-1")}


def device_get_bare_tgid() -> int:
    import os
    rt.check_initialized()
    return os.getpid()


_DEVICE_LIMITS = {  # aclrtDeviceLimit -> (default, low (exclusive for SIMD stack), high, granule)
    C.ACL_RT_DEV_LIMIT_SIMD_STACK_SIZE: (32768, 32768, 192 * 1024, 16 * 1024),
    C.ACL_RT_DEV_LIMIT_SIMD_PRINTF_FIFO_SIZE_PER_CORE: (32768, 1024, 64 << 20, 8),
}


def device_set_limit(limit: int, value: int) -> None:
    """Process-wide device limit (takes effect at the next device setup, as in ACL). Only
    the SIMD limits exist on the simulated SoCs; SIMT ones are FEATURE_NOT_SUPPORT."""
    rt.check_initialized()
    spec = _device_limit(limit)
    if type(value) is not int or value < 0:
        raise InvalidValueError(f"device limit value must be a non-negative int, got {value!r}")
    default, low, high, granule = spec
    if limit == C.ACL_RT_DEV_LIMIT_SIMD_STACK_SIZE:
        if not low < value <= high:
            raise InvalidValueError(f"SIMD stack size must be in (32 KiB, 192 KiB], got {value}")
        value = (value + granule - 1) // granule * granule
    elif not low <= value <= high or value % granule:
        raise InvalidValueError(f"SIMD printf FIFO size must be a multiple of 8 in [1 KiB, 64 MiB], got {value}")
    rt.device_limits[limit] = value


def device_get_limit(limit: int) -> int:
    rt.check_initialized()
    default = _device_limit(limit)[0]
    return rt.device_limits.get(limit, default)


def _device_limit(limit):
    if limit in (C.ACL_RT_DEV_LIMIT_SIMT_STACK_SIZE, C.ACL_RT_DEV_LIMIT_SIMT_DVG_WARP_STACK_SIZE,
                 C.ACL_RT_DEV_LIMIT_SIMT_PRINTF_FIFO_SIZE):
        from .errors import FeatureNotSupportedError
        raise FeatureNotSupportedError(f"device limit {limit} is a SIMT limit; the simulated SoC has no SIMT units")
    spec = _DEVICE_LIMITS.get(limit) if type(limit) is int else None
    if spec is None:
        raise InvalidValueError(f"unknown device limit {limit!r} (see aclrtDeviceLimit)")
    return spec


_SYS_PARAM_OPTS = (C.ACL_OPT_DETERMINISTIC, C.ACL_OPT_ENABLE_DEBUG_KERNEL, C.ACL_OPT_STRONG_CONSISTENCY,
                   C.ACL_OPT_ENABLE_KERNEL_EARLY_START)


def _check_sys_param(opt, value=0) -> None:
    if type(opt) is not int or opt not in _SYS_PARAM_OPTS:
        raise InvalidValueError(f"unknown system parameter option {opt!r} (see aclSysParamOpt)")
    if type(value) is not int:
        raise InvalidValueError(f"system parameter value must be an int, got {value!r}")


def set_sys_param_opt(opt: int, value: int) -> None:
    """Process-wide option (last call wins)."""
    rt.check_initialized()
    _check_sys_param(opt, value)
    rt.sys_params[opt] = value


def get_sys_param_opt(opt: int) -> int:
    """The process-wide option; 0 when never set."""
    rt.check_initialized()
    _check_sys_param(opt)
    return rt.sys_params.get(opt, 0)


def ctx_set_sys_param_opt(opt: int, value: int) -> None:
    """Option of the current context (last call wins)."""
    ctx = current_context()
    _check_sys_param(opt, value)
    ctx.sys_params[opt] = value


def ctx_get_sys_param_opt(opt: int) -> int:
    """The current context's option; SYSPARAMOPT_NOT_SET (107021) when never set there."""
    ctx = current_context()
    _check_sys_param(opt)
    if opt not in ctx.sys_params:
        raise NpuError(f"system parameter option {opt} was never set in this context "
                       "(ctx_set_sys_param_opt first)", C.ACL_ERROR_RT_SYSPARAMOPT_NOT_SET)
    return ctx.sys_params[opt]


def get_op_timeout_interval() -> int:
    """Granule of op execute timeouts, in microseconds."""
    rt.check_initialized()
    return OP_TIMEOUT_INTERVAL_US


def effective_op_execute_timeout_us() -> int:
    """The op execute timeout in effect, in microseconds: the setting rounded up to whole
    intervals, capped at 254 intervals; 0 (not set) means the maximum. A kernel launched
    without its own timeout that runs longer fails with ACL_ERROR_RT_AICORE_TIMEOUT once it
    has finished (a running kernel body is Python code and cannot be preempted)."""
    rt.check_initialized()
    limit = OP_TIMEOUT_INTERVAL_US * OP_TIMEOUT_MAX_INTERVALS
    wanted = rt.op_execute_timeout_us
    if wanted == 0:
        return limit
    return min(-(-wanted // OP_TIMEOUT_INTERVAL_US) * OP_TIMEOUT_INTERVAL_US, limit)


def get_overflow_status(output_addr: int, output_size: int, stream: Stream | None) -> int:
    """Stream-ordered: write the device's 64-byte float overflow status to `output_addr`.
    numpy kernels never raise the hardware overflow flag, so the status is all zeros."""
    if output_size != 64:
        raise InvalidValueError(f"get_overflow_status: output_size must be 64, got {output_size!r}")
    if type(output_addr) is not int or not address.is_device(output_addr):
        raise InvalidValueError("get_overflow_status: the output buffer must be device memory from malloc")
    return memset_async(output_addr, output_size, 0, output_size, stream)


def reset_overflow_status(stream: Stream | None) -> None:
    stream_of(stream)  # nothing to clear: the status is always zero (see get_overflow_status)


def check_device_range(ptr: int, size: int, call: str) -> None:
    """A clear error unless [ptr, ptr + size) lies in one live allocation (mem_flush, cmo)."""
    rt.check_initialized()
    if type(size) is not int or size <= 0:
        raise InvalidValueError(f"{call}: size must be a positive int, got {size!r}")
    if type(ptr) is not int or not address.is_device(ptr):
        raise InvalidValueError(f"{call}: expects a device address from malloc, got {ptr!r}")
    memops.locate(rt, ptr, size, call)


def cmo_async(src: int, size: int, cmo_type: int, stream: Stream | None) -> None:
    """Cache prefetch hint: validated, and a no-op (the simulated device has no cache to warm)."""
    stream_of(stream)  # validates the stream
    if cmo_type != C.ACL_RT_CMO_TYPE_PREFETCH:
        raise InvalidValueError(f"cmo_async supports only ACL_RT_CMO_TYPE_PREFETCH (0), got {cmo_type!r}")
    check_device_range(src, size, "cmo_async")


def check_malloc_config(cfg, host: bool = False) -> None:
    """Validate an aclrtMallocConfig dict ({} or {"attrs": [{"attr", "value"}], "numAttrs"})."""
    if cfg is None or cfg == {}:
        return
    if not isinstance(cfg, dict):
        raise InvalidValueError(f"the malloc config must be a dict (aclrtMallocConfig), got {type(cfg).__name__}")
    attrs = cfg.get("attrs", [])
    if not isinstance(attrs, list) or not all(isinstance(a, dict) for a in attrs):
        raise InvalidValueError("malloc config 'attrs' must be a list of {'attr': ..., 'value': {...}} dicts")
    if "numAttrs" in cfg and cfg["numAttrs"] != len(attrs):
        raise InvalidValueError(f"malloc config numAttrs ({cfg['numAttrs']!r}) does not match the "
                                f"{len(attrs)} attrs given")
    for item in attrs:
        attr, value = item.get("attr"), item.get("value", {})
        if attr not in (C.ACL_RT_MEM_ATTR_RSV, C.ACL_RT_MEM_ATTR_MODULE_ID, C.ACL_RT_MEM_ATTR_DEVICE_ID,
                        C.ACL_RT_MEM_ATTR_VA_FLAG):
            raise InvalidValueError(f"unknown malloc attribute {attr!r} (see aclrtMallocAttrType)")
        if attr == C.ACL_RT_MEM_ATTR_DEVICE_ID and not host:
            dev = value.get("deviceId") if isinstance(value, dict) else None
            if dev != current_context().device.id:
                raise InvalidValueError(f"malloc config deviceId {dev!r} must be the current device "
                                        f"({current_context().device.id})")


def malloc_with_cfg(size: int, policy: int, cfg) -> int:
    current_context()
    check_malloc_config(cfg)
    return malloc(size, policy)


def malloc_host_with_cfg(size: int, cfg) -> int:
    rt.check_initialized()
    check_malloc_config(cfg, host=True)
    return malloc_host(size)


# ================================================================ misc
def set_exception_info_callback(fn) -> None:
    if fn is not None and not callable(fn):
        raise InvalidValueError("set_exception_info_callback needs a callable or None")
    rt.check_initialized()
    rt.exception_callback = fn


def exception_info(handle: int):
    return rt.exception_infos.get(handle)


def device_by_id(device_id: int) -> Device:
    return rt.device(device_id)


def check_device_id(device_id) -> None:
    if type(device_id) is not int:
        raise InvalidDeviceError(f"device id must be an int, got {type(device_id).__name__}")
    rt.device(device_id)


__all__ = [name for name in dir() if not name.startswith("_")]

