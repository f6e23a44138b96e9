"""The process-wide runtime state: settings, driver, devices, handle tables, lifecycle.

There is one `RUNTIME`. `init()` reads the settings and creates the driver; devices are
created on first use; `finalize()` tears everything down so a later `init()` starts fresh.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections import deque

from .. import driver as drivers
from ..driver.shared import SharedDeviceError
from . import address
from .accel import forget_copy_windows
from . import constants as C
from .config import Settings
from .context import Context, bind, retire
from .device import Device
from .faults import FAULTS
from .forking import on_fork_child
from .errors import (InvalidDeviceError, InvalidValueError, NpuError,
                     SubscriptionError, SyncTimeoutError)
from .handles import table
from .hostmem import HostMemory
from .observers import HOOKS
from .scheduler import PARKED, Scheduler
from .watchdog import WATCHDOG
from .warn import LeakWarning, warn_user

log = logging.getLogger("npurt")

# reset/finalize: when queued work counts as stuck (then it is aborted; see Runtime._drain)
RESET_GRACE_S = 1.0  # no task retired for this long, of wall time and of the process's CPU time
RESET_IDLE_S = 5.0   # no task retired for this long of wall time, whatever the CPU did


def _stuck(pending: list, waited_s: float, cpu_s: float) -> bool:
    """Whether the pending work of a device being released is stuck, no task having retired
    for `waited_s` of wall time while the process used `cpu_s` of CPU time. Streams that all
    wait on a blocker (an event, a callback) are stuck after RESET_GRACE_S: nothing runs that
    could satisfy it. Work that runs, or waits for a worker, is stuck only once it has had
    RESET_GRACE_S of CPU time too (a kernel that spins forever): on a loaded machine the wall
    clock alone would drop slow work that the hardware completes. Work that sleeps (a kernel
    blocked in a C call with no timeout, a host function that never returns) is stuck after
    RESET_IDLE_S."""
    if waited_s < RESET_GRACE_S:
        return False
    if all(s.state is PARKED for s in pending):
        return True
    return cpu_s >= RESET_GRACE_S or waited_s >= RESET_IDLE_S


class ExceptionInfo:
    """What the exception-info callback learns about a failed task."""

    __slots__ = ("task_id", "stream_id", "thread_id", "device_id", "error_code", "message", "func", "args")

    def __init__(self, task_id, stream_id, thread_id, device_id, error_code, message, func=None, args=None):
        self.task_id, self.stream_id, self.thread_id = task_id, stream_id, thread_id
        self.device_id, self.error_code, self.message = device_id, error_code, message
        self.func = func    # the kernel of a failed launch (an AI core exception), else None
        self.args = args    # (device address, size) of that launch's packed arguments


class ReportQueue:
    """Callbacks waiting for one subscribed host thread to run them in process_report."""

    def __init__(self, device_id: int):
        self.device_id = device_id
        self.items: deque = deque()
        self.cond = threading.Condition()
        self.streams: set = set()


OP_TIMEOUT_INTERVAL_US = 4_294_967  # A2: 254 intervals = the 1091 s default AI Core timeout
OP_TIMEOUT_MAX_INTERVALS = 254


class Runtime:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.initialized = False
        self.init_count = 0
        self.finalized = False
        self.settings: Settings | None = None
        self.driver = None
        self.devices: list[Device | None] = []
        self.device_by_physical: dict[int, Device] = {}
        self.default_device: int | None = None
        self.config: dict = {}
        self.host = HostMemory()
        self.contexts = table("context")
        self.streams = table("stream")
        self.events = table("event")
        self.binaries = table("binary")
        self.functions = table("function")
        self.args = table("args")
        self.exception_infos = table("exception info")
        self.allocator_descs = table("allocator desc")
        self.stream_allocators: dict[int, tuple] = {}  # stream handle -> (desc handle, AllocatorDesc copy)
        self.exception_callback = None
        self.report_queues: dict[int, ReportQueue] = {}
        self.op_wait_timeout_s = 0
        self.op_execute_timeout_us = 0
        self.sys_params: dict[int, int] = {}
        self.device_limits: dict[int, int] = {}
        # clients holding device resources (the graph engine's loaded models) release them
        # here, before a device is reset or the runtime finalized: hook(device, reason)
        self.release_hooks: list = []
        # fn() run when the runtime forgets everything (finalize, a forked child): modules that
        # keep state of their own about runtime objects register here (kernel args in user memory)
        self.forget_hooks: list = []

    # ------------------------------------------------------------ lifecycle
    # Two flags, as CANN has two layers: `initialized` says the runtime is up (it starts
    # lazily on the first call that needs it, as CANN's runtime does; only acl.init's own
    # duties, such as the dump APIs, require acl.init), `init_count` counts acl.init
    # references (acl.cpp aclInitRefCount). `finalized` is acl.cpp's aclFinalizeFlag.
    def init(self, config_path: str | None = None) -> None:
        with self.lock:
            if self.init_count > 0:
                self.init_count += 1
                raise NpuError("acl.init was already called; this call only counted a reference "
                               "(the first call's configuration stays)", C.ACL_ERROR_REPEAT_INITIALIZE)
            config = _read_config(config_path)
            if not self.initialized:
                self._start()
            self.config = config
            default = config.get("defaultDevice", {}).get("default_device") if isinstance(
                config.get("defaultDevice"), dict) else None
            self.default_device = int(default) if default is not None and str(default).isdigit() else None
            self.init_count = 1
            self.finalized = False

    def _start(self) -> None:
        settings = Settings.from_env()
        spec = settings.spec()
        settings.apply_log_level()
        driver = drivers.open(settings.driver, spec, settings.physical_devices, settings.shared_namespace)
        try:  # map the visible devices' arenas now: copies resolve addresses by them
            for physical in settings.visible_devices:
                driver.device(physical)
        except SharedDeviceError as exc:
            driver.close()
            raise NpuError(f"cannot attach the shared simulated device: {exc}", C.ACL_ERROR_BAD_ALLOC) from None
        except OSError as exc:
            driver.close()
            raise NpuError(
                f"cannot map the simulated device memory: {len(settings.visible_devices)} device(s) of "
                f"{_size(spec.memory_bytes)} each, as address space reserved without RAM ({exc.strerror or exc}). "
                "The process's address space is limited (ulimit -v) or the kernel refuses overcommit: "
                "simulate less memory per device with NPURT_HBM_SIZE (e.g. NPURT_HBM_SIZE=2G) or fewer "
                "devices with NPURT_DEVICE_COUNT=1", C.ACL_ERROR_BAD_ALLOC) from None
        self.settings = settings
        Scheduler.hang_warning_s = settings.hang_warning_s  # the scheduler's waits warn after it
        self.config = {}
        self.default_device = None
        self.driver = driver
        self.devices = [None] * len(settings.visible_devices)
        self.device_by_physical = {}
        self.initialized = True
        for logical in range(len(self.devices)):
            self.device(logical)
        log.info("started: simulated %s, %d visible device(s) of %s each, %d worker thread(s) per device",
                 spec.name, len(settings.visible_devices), _size(spec.memory_bytes), settings.workers)

    def ensure_initialized(self) -> None:
        """Start the runtime if it is not up (without acl.init's configuration)."""
        if not self.initialized:
            with self.lock:
                if not self.initialized:
                    self._start()

    check_initialized = ensure_initialized  # the runtime has no init gate: it starts lazily

    def effective_op_execute_timeout_us(self) -> int:
        """The op execute timeout in effect, in microseconds: the setting rounded up to whole
        intervals, capped at 254 intervals; 0 (not set) means the maximum. A kernel launched
        without its own timeout that runs longer fails with ACL_ERROR_RT_AICORE_TIMEOUT."""
        if not self.initialized:  # (every kernel asks: no call when the runtime is up)
            self.ensure_initialized()
        limit = OP_TIMEOUT_INTERVAL_US * OP_TIMEOUT_MAX_INTERVALS
        wanted = self.op_execute_timeout_us
        if wanted == 0:
            return limit
        return min(-(-wanted // OP_TIMEOUT_INTERVAL_US) * OP_TIMEOUT_INTERVAL_US, limit)

    @property
    def acl_initialized(self) -> bool:
        """acl.init was called and not finalized (acl.cpp GetAclInitFlag)."""
        return self.init_count > 0

    def finalize(self, timeout_s: float = 30.0) -> None:
        """acl.finalize: tear down whatever is up. Only a finalize after a finalize (with no
        acl.init between) is refused (acl.cpp aclFinalizeImpl: aclFinalizeFlag)."""
        with self.lock:
            if self.finalized:
                raise NpuError("acl.finalize was called twice (no acl.init since the last finalize)",
                               C.ACL_ERROR_REPEAT_FINALIZE)
            self.finalized = True
            self.init_count = 0
            if not self.initialized:
                return
            for device in self.devices:
                if device is not None:
                    self._release_device(device, "acl.finalize", timeout_s)
                    device.scheduler.shutdown()
            if HOOKS.active:
                HOOKS.emit("runtime_finalize")
            log.info("finalized")
            self.host.release_all()
            self.driver.close()
            self._forget()

    def _forget(self) -> None:
        """Back to the uninitialized state (finalize, and a forked child)."""
        address.backends.clear()
        forget_copy_windows()  # what the C accelerator's copies learnt of the backends
        for binary in self.binaries.values():  # loaded kernel binaries are modules
            sys.modules.pop(getattr(getattr(binary, "module", None), "__name__", ""), None)
        for hook in list(self.forget_hooks):
            hook()
        for tbl in (self.contexts, self.streams, self.events, self.binaries, self.functions,
                    self.args, self.exception_infos, self.allocator_descs):
            tbl.clear()
        self.stream_allocators.clear()
        self.report_queues.clear()
        self.exception_callback = None
        # process-wide settings too: a later init() starts fresh
        self.op_wait_timeout_s = 0
        self.op_execute_timeout_us = 0
        self.sys_params = {}
        self.device_limits = {}
        self.devices = []
        self.device_by_physical = {}
        self.initialized = False
        self.init_count = 0
        bind(None)

    def reset_after_fork(self) -> None:
        """In a child of os.fork() (see forking.py): the parent's threads do not exist here
        and its locks may be held forever, so forget its runtime without waiting for or
        locking anything. Its objects are marked destroyed: using one is a clear error."""
        self.lock = threading.RLock()
        for stream in self.streams.values():
            stream.destroyed = True
        for event in self.events.values():
            event.destroyed = True
        for ctx in self.contexts.values():
            retire(ctx)
        for device in self.devices:
            if device is not None:
                device.scheduler.stopping = True
        self.host = HostMemory()  # the parent's pinned buffers stay mapped while referenced
        self.driver = None
        self.settings = None
        Scheduler.hang_warning_s = 0.0
        WATCHDOG.__init__()  # its thread is gone; a new one starts on first use
        self._forget()

    def finalize_reference(self) -> int:
        """acl.cpp aclFinalizeReferenceImpl: drop one acl.init reference, finalize at the last."""
        with self.lock:
            if self.init_count < 1:
                raise NpuError("finalize_reference without a matching acl.init", C.ACL_ERROR_REPEAT_FINALIZE)
            if self.init_count > 1:
                self.init_count -= 1
                return self.init_count
            self.finalized = False  # the last reference finalizes whatever came before
            self.finalize()
            return 0

    # ------------------------------------------------------------ devices
    def device(self, logical_id) -> Device:
        """The Device for a logical id, created on first use."""
        devices = self.devices
        if type(logical_id) is int and 0 <= logical_id < len(devices):
            dev = devices[logical_id]
            if dev is not None:
                return dev
        self.ensure_initialized()
        devices = self.devices
        if type(logical_id) is not int or not 0 <= logical_id < len(devices):
            raise InvalidDeviceError(
                f"device id {logical_id!r} is invalid: {len(devices)} device(s) are visible "
                f"(ids 0..{len(devices) - 1}); NPURT_DEVICE_COUNT and ASCEND_RT_VISIBLE_DEVICES set this")
        with self.lock:
            dev = devices[logical_id]
            if dev is None:
                physical = self.settings.visible_devices[logical_id]
                backend = self.driver.device(physical)
                address.backends[physical] = backend
                dev = Device(self, logical_id, backend)
                devices[logical_id] = dev
                self.device_by_physical[physical] = dev
            return dev

    def default_context(self, device: Device) -> Context:
        with device.lock:
            ctx = device.default_context
            if ctx is None or not ctx.alive:
                ctx = Context(device, is_default=True)
                ctx.handle = self.contexts.add(ctx)
                device.default_context = ctx
                device.contexts.add(ctx)
            return ctx

    def release_device(self, device: Device, reason: str) -> None:
        with self.lock:
            self._release_device(device, reason, 30.0)

    def _release_device(self, device: Device, reason: str, timeout_s: float) -> None:
        """Wait for the device's work (at most `timeout_s` in all), then free all it holds."""
        deadline = time.monotonic() + timeout_s
        with device.lock:  # no new streams in contexts that are going away
            for ctx in device.contexts:
                ctx.closing = True
        for hook in list(self.release_hooks):
            try:
                hook(device, reason)
            except Exception:  # noqa: BLE001 - a client's cleanup must not stop the release
                log.exception("npurt: a release hook failed during %s", reason)
        self._drain(device, reason, deadline)
        for ctx in list(device.contexts):
            retire(ctx)
            for stream in [ctx.default_stream, *ctx.streams]:
                if not stream.destroyed:
                    device.release_stream(stream)
            self.contexts.remove(ctx.handle)
        device.contexts.clear()
        device.default_context = None
        device.set_count = 0
        for event in list(device.events):
            event.destroyed = True
            self.events.remove(event.handle)
        device.events.clear()
        device.event_count = 0
        device.peer_access.clear()
        if HOOKS.active:
            HOOKS.emit("device_release", device=device, reason=reason)
        leaked = device.memory.release_all(reason)
        device.vmm.release_all()
        device.backend.reset()
        device.memory_released()
        FAULTS.on_reset(device.id)  # a device lost by an injected fault works again
        log.info("%s: device %d released (%d allocation(s) still live)", reason, device.id, len(leaked))
        if leaked:
            total = sum(b.requested for b in leaked)
            sample = ", ".join(f"0x{b.addr:x} ({b.requested} B)" for b in leaked[:5])
            warn_user(f"npurt: {reason} released {len(leaked)} device allocation(s) still in use "
                      f"on device {device.id} ({total} bytes): {sample}"
                      f"{' ...' if len(leaked) > 5 else ''}", LeakWarning)

    def _drain(self, device: Device, reason: str, deadline: float) -> None:
        """Wait for the device's queued work while it makes progress (until `deadline`).
        Work that makes none is stuck (a kernel that does not return, a wait on an event
        nobody records; see `_stuck`): running kernels are aborted with
        ACL_ERROR_RT_DEVICE_TASK_ABORT, as a hardware reset kills them, and the rest dropped.
        Slow work is not stuck: the tasks an NPU already holds complete (issue 24, item 9)."""
        streams = device.all_streams()
        progress, since, cpu_since = -1, time.monotonic(), time.process_time()
        while True:
            pending = [s for s in streams if s.completed_seq < s.enqueued_seq]
            if not pending:
                return
            now = time.monotonic()
            total = sum(s.completed_seq for s in streams)
            if total != progress:
                progress, since, cpu_since = total, now, time.process_time()
            elif now >= deadline or _stuck(pending, now - since, time.process_time() - cpu_since):
                log.warning("npurt: %s: %d stream(s) of device %d still had work that made no progress "
                            "for %.1f s; aborting it", reason, len(pending), device.id, now - since)
                for s in pending:
                    task = s.current
                    if task is not None and hasattr(task, "expire"):
                        task.expire(C.ACL_ERROR_RT_DEVICE_TASK_ABORT,
                                    f"was aborted by {reason}: it was still running when its device was reset")
                    s.abort()
                for s in pending:  # let the dropped tasks retire (a stuck host function may not)
                    try:
                        s.synchronize(timeout_ms=200, report_errors=False)
                    except NpuError:
                        pass
                return
            try:
                pending[0].synchronize(timeout_ms=100, report_errors=False)
            except SyncTimeoutError:
                pass
            except NpuError:
                pending[0].abort()

    # ------------------------------------------------------------ task failures
    def report_exception(self, stream, task, error) -> None:
        callback = self.exception_callback
        if callback is None:
            return
        func = args = None
        if getattr(task, "kind", None) == "kernel":
            func = task.func
            try:
                args = task.exception_args()
            except NpuError:  # no device memory left for them: the info goes without
                args = None
        info = ExceptionInfo(task.seq, stream.stream_id, threading.get_native_id(), stream.device.id,
                             error.code, error.message, func, args)
        handle = self.exception_infos.add(info)
        self.exception_infos.keep_newest(1024)  # bounded: infos are read during or soon after
        try:
            callback(handle)
        except BaseException:  # noqa: BLE001 - it runs inside the scheduler's bookkeeping: even
            # SystemExit must not leave a stream half-retired or kill a worker
            log.exception("npurt: the exception-info callback raised; ignored")

    # ------------------------------------------------------------ callback reports
    def report_queue(self, thread_id: int, device_id: int | None = None) -> ReportQueue | None:
        queue = self.report_queues.get(thread_id)
        if queue is None and device_id is not None:
            queue = self.report_queues[thread_id] = ReportQueue(device_id)
        return queue

    def current_report_queue(self) -> ReportQueue:
        for tid in (threading.get_ident(), threading.get_native_id()):
            queue = self.report_queues.get(tid)
            if queue is not None:
                return queue
        raise SubscriptionError("process_report: no stream is subscribed to this thread; call "
                                "subscribe_report(thread_id, stream) with this thread's id first",
                                C.ACL_ERROR_RT_THREAD_SUBSCRIBE)


def _size(nbytes: int) -> str:
    return f"{nbytes / 2**30:g} GiB" if nbytes >= 1 << 30 else f"{nbytes / 2**20:g} MiB"


def _read_config(path) -> dict:
    if path is None or path == "":
        return {}
    if not isinstance(path, str):
        raise InvalidValueError(f"acl.init config path must be a str, got {type(path).__name__}")
    if not os.path.isfile(path):
        raise NpuError(f"acl.init: config file {path!r} does not exist", C.ACL_ERROR_INVALID_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        config = json.loads(text) if text.strip() else {}
    except (OSError, ValueError) as exc:
        raise NpuError(f"acl.init: config file {path!r} is not valid JSON ({exc})", C.ACL_ERROR_PARSE_FILE) from None
    except RecursionError:
        raise NpuError(f"acl.init: config file {path!r} nests JSON too deeply to parse",
                       C.ACL_ERROR_PARSE_FILE) from None
    if not isinstance(config, dict):
        raise NpuError(f"acl.init: config file {path!r} must hold a JSON object", C.ACL_ERROR_PARSE_FILE)
    return config


RUNTIME = Runtime()

on_fork_child(RUNTIME.reset_after_fork)  # a forked child starts with a fresh, uninitialized runtime
