"""The launch task: `KernelTask` runs a kernel's blocks on the driver's cores when it
reaches the head of its stream, under the watchdog's deadline (the launch's timeout, else
the op execute timeout in effect), and turns a block's exception into the AI core error
naming the kernel and the block.
"""
from __future__ import annotations

import time

import numpy as np

from .. import constants as C, address
from ..errors import NpuError, TaskError
from ..forking import fork_safe_lock
from ..observers import HOOKS
from ..runtime import RUNTIME
from ..scheduler import TLS, thread_token
from ..tasks import Task
from ..watchdog import WATCHDOG, abort_bodies, enter_body, leave_body
from .body import KernelContext
from .function import KernelFunction


# ---------------------------------------------------------------- the launch task
class _BlockFailure(Exception):
    def __init__(self, block_idx: int, exc: BaseException):
        super().__init__(block_idx, exc)
        self.block_idx, self.exc = block_idx, exc


class KernelTask(Task):
    """One kernel launch: `num_blocks` instances of `func` over the device's AI cores."""

    __slots__ = ("func", "num_blocks", "values", "args_ptr", "offset", "timeout_ns", "threads", "aborted",
                 "cheap", "attrs", "holders")
    kind = "kernel"
    error_code = C.ACL_ERROR_RT_AICORE_EXCEPTION

    def __init__(self, func: KernelFunction, num_blocks: int, values, args_ptr: int = 0,
                 offset: int = 0, timeout_ns: int | None = None):
        self.func, self.num_blocks, self.values, self.args_ptr = func, num_blocks, values, args_ptr
        self.offset, self.timeout_ns = offset, timeout_ns
        self.threads: list[int] = []  # threads inside the kernel body (see watchdog.enter_body)
        self.aborted = False
        self.cheap = False  # set by enqueue_launch for a small built-in launch (inline.py)
        self.attrs = None  # the launch config's {attr id: value} (parse_cfg), None without one
        self.holders = ()  # the allocations its pointer arguments point into (set by enqueue_launch)

    def describe(self) -> str:
        return f"kernel {self.func.name} ({self.num_blocks} block{'s' if self.num_blocks != 1 else ''})"

    def details(self) -> dict:
        func = self.func
        name = func.name
        if func.label is not None and self.values is not None:  # e.g. "relu" for the unary kernel
            try:
                name = func.label(self.values)
            except Exception:  # noqa: BLE001 - a label is cosmetic
                pass
        return {"name": name, "kernel": func.name, "blocks": self.num_blocks}

    def accesses(self) -> tuple:
        # the packed args launch_kernel reads from device memory; the views report themselves
        return ((self.args_ptr, self.func.args_size, "r"),) if self.values is None else ()

    def writes(self, block, lo: int, hi: int) -> bool:
        # a kernel's views report themselves only as they run: before that, each allocation
        # a pointer argument points into counts as written (as the sanitizer counts it),
        # except through a native kernel's pointers to const (native.py: kind R, "r")
        modes = getattr(self.func, "pointer_modes", None)
        values = self.values
        if modes is not None and values is not None:
            start, end = block.addr, block.addr + block.size
            for slot, mode in zip(self.func.gm_slots, modes):
                if mode != "r" and start <= values[slot] < end:
                    return True
            return False
        for holder in self.holders:
            if holder is block:
                return True
        return False

    def run(self) -> None:
        func = self.func
        values = self.values
        if values is None:  # the args live in device memory: read them now, as the AI core does
            values = func.struct.unpack(address.view(self.args_ptr, func.args_size).tobytes())
        fn = func.fn
        n = self.num_blocks
        offset = self.offset
        device = self.stream.device
        timeout = self.timeout_ns
        if timeout is None:
            timeout = self.timeout_ns = _default_timeout_ns()
        start = time.perf_counter_ns()
        if timeout:  # the watchdog aborts the kernel at its deadline (see expire)
            WATCHDOG.watch(self, time.monotonic() + timeout / 1e9)
        try:
            if n == 1:  # inline: no hand-off to another thread
                ident = enter_body(self)
                try:
                    fn(KernelContext(offset, 1, self, device), *values)
                except Exception as exc:  # noqa: BLE001 - becomes the AI core exception
                    raise self._failure(offset, exc) from exc
                finally:
                    leave_body(self, ident)
            else:
                cores = RUNTIME.driver.cores
                lanes = cores.lanes(n, self.core_budget())  # block i runs on core i % lanes

                def body(i: int) -> None:
                    idx = offset + i
                    try:
                        fn(KernelContext(idx, n, self, device, i % lanes), *values)
                    except Exception as exc:  # noqa: BLE001
                        raise _BlockFailure(idx, exc) from exc

                try:
                    cores.run(n, body, self._lane_hooks(), lanes=lanes)
                except _BlockFailure as failure:
                    raise self._failure(failure.block_idx, failure.exc) from failure.exc
        finally:
            if timeout:
                WATCHDOG.unwatch(self)
        elapsed = time.perf_counter_ns() - start
        if timeout and elapsed > timeout:
            raise NpuError(f"kernel {func.name!r} ran {elapsed / 1e6:.3f} ms, longer than its timeout of "
                           f"{timeout / 1e6:.3f} ms (AI core timeout)", C.ACL_ERROR_RT_AICORE_TIMEOUT)

    def _lane_hooks(self):
        """What each core-pool lane does around its blocks: count as inside the kernel body
        (so an abort reaches it) and run as the launching thread (so a block that
        synchronizes this stream is refused as the launching thread would be)."""
        token = thread_token()

        def enter():
            saved, TLS.token = TLS.token, token
            return saved, enter_body(self)

        def leave(state):
            TLS.token = state[0]
            leave_body(self, state[1])

        return enter, leave, lambda: abort_bodies(self)

    def expire(self, code: int = C.ACL_ERROR_RT_AICORE_TIMEOUT, why: str = "") -> bool:
        """Abort the kernel if it is still running (the watchdog at its deadline, or a device
        reset): fail and retire it, raise KernelAborted in the threads running its blocks, and
        hand its stream to the workers, which go on with the next task (a worker stuck in the
        kernel leaves the pool; a new one takes its place). True if it was running."""
        s = self.stream
        me = thread_token()
        if s.current is not self:  # test and set, no call in between: the owner checks
            return False           # s.runner right after clearing s.current
        owner = s.runner
        s.runner = me
        s.current = None
        try:
            abort_bodies(self)
            if not why:
                why = (f"did not finish within its timeout of {self.timeout_ns / 1e6:.3f} ms and was aborted "
                       "at its deadline (AI core timeout; set_op_execute_timeout_us, or the launch config's "
                       "ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT)")
            where = f"stream {s.stream_id} (device {s.device.id}) task #{self.seq} {self.describe()}"
            error = TaskError(f"{where} {why}; the stream went on with its next task", code, where)
            if HOOKS.active:
                HOOKS.emit("task_finished", task=self, error=error)
            s.fail(self, error)
            s.completed_seq = self.seq
            s.notify_retired()
        finally:
            s.scheduler.release(s, me)
            if getattr(owner, "worker", False):
                s.scheduler.retire_worker(owner)
        return True

    def _failure(self, block_idx: int, exc: BaseException) -> NpuError:
        msg = exc.message if isinstance(exc, NpuError) else f"{type(exc).__name__}: {exc}"
        # a native kernel's trap carries the code its SoC reports (native.KernelTrap)
        code = getattr(exc, "aicore_code", C.ACL_ERROR_RT_AICORE_EXCEPTION)
        return NpuError(f"kernel {self.func.name!r} failed in block {block_idx} of {self.num_blocks}: {msg}", code)


    def core_budget(self) -> int | None:
        """The cores this launch may use: its stream's resource limit of the kernel's core
        type, else its device's, else None (all). A native kernel is a vector kernel on a SoC
        with vector cores (the code its trap reports says so too); the others run on the cube
        (AI) cores."""
        s = self.stream
        device = s.device
        kind = 1 if getattr(self.func, "vector_kernel", False) and device.spec.vector_core_num else 0
        own = s.res_limits
        if own and kind in own:
            return own[kind]
        return device.res_limits.get(kind)

    def exception_args(self) -> tuple[int, int]:
        """(device address, size) of the launch's packed arguments, for the exception info
        (aclrtGetArgsFromExceptionInfo): the device args of aclrtLaunchKernel as they are; a
        launch whose args came from the host has them copied to device memory now, as the
        NPU's args pool holds them (the last few are kept, see _EXCEPTION_ARGS)."""
        func = self.func
        if self.values is None:
            return self.args_ptr, func.args_size
        packed = func.struct.pack(*self.values) if func.args_size else b""
        if not packed:
            return 0, 0
        device = self.stream.device
        addr = device.memory.malloc(len(packed), C.ACL_MEM_MALLOC_HUGE_FIRST)
        device.backend.view(addr, len(packed))[:] = np.frombuffer(packed, np.uint8)
        with _EXCEPTION_ARGS_LOCK:
            _EXCEPTION_ARGS.append((device, addr))
            old = _EXCEPTION_ARGS.pop(0) if len(_EXCEPTION_ARGS) > _EXCEPTION_ARGS_KEPT else None
        if old is not None:
            try:
                old[0].memory.free(old[1])
            except NpuError:
                pass  # its device was reset meanwhile
        return addr, len(packed)


# args staged for exception infos: kept while an exception callback may still read them
_EXCEPTION_ARGS: list = []
_EXCEPTION_ARGS_KEPT = 16
_EXCEPTION_ARGS_LOCK = fork_safe_lock()


def _release_exception_args(device, reason) -> None:
    """A device reset or finalize frees the args staged on it (they are the runtime's, not the
    program's: no leak to report)."""
    with _EXCEPTION_ARGS_LOCK:
        mine = [entry for entry in _EXCEPTION_ARGS if entry[0] is device]
        _EXCEPTION_ARGS[:] = [entry for entry in _EXCEPTION_ARGS if entry[0] is not device]
    for _, addr in mine:
        try:
            device.memory.free(addr)
        except NpuError:
            pass


RUNTIME.release_hooks.append(_release_exception_args)


def _default_timeout_ns() -> int:
    """The op execute timeout (set_op_execute_timeout*) for launches that carry none."""
    return RUNTIME.effective_op_execute_timeout_us() * 1000
