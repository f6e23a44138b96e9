"""The small task objects that streams queue.

A task is validated when it is enqueued (so bad arguments fail at the call that made them)
and holds only addresses and sizes; it turns them into memory views when it runs. Tasks
that must wait (event waits, blocking callbacks) expose a `blocker()`: the scheduler parks
the stream on it instead of letting a worker sleep.
"""
from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Callable

import numpy as np

from . import address
from . import constants as C
from .inline import MAX_BYTES as INLINE_BYTES
from .scheduler import Blocker

if TYPE_CHECKING:
    from .stream import Stream


class Task:
    """Base of all tasks. `seq` is the task's sequence number within its stream."""

    __slots__ = ("seq", "stream", "_stack")
    kind = "task"
    error_code = C.ACL_ERROR_RT_INTERNAL_ERROR  # reported when run() raises
    may_block = False  # True for tasks whose blocker() the scheduler must ask first
    batchable = False  # a graph replay may run it inside one batch task (run() needs no stream state)
    cheap = False      # may run in the enqueuing thread on an idle stream (inline.py): never waits
    #                    for the host and takes microseconds; classes that can be set it per task
    trivial = False    # run() is bookkeeping (an event record or wait, a marker): a worker that
    #                    unparked another stream may run it before announcing that (scheduler.py)

    def blocker(self):
        """A blocker if the task cannot run yet, else None (only asked when may_block).

        See scheduler.Blocker: `register() -> bool` (False: satisfied meanwhile),
        `describe()`, and `fire()`, which whoever satisfies it calls."""
        return None

    def run(self) -> None:
        raise NotImplementedError

    def accesses(self) -> tuple:
        """The memory the task reads and writes when it runs, for tools: a tuple of
        (addr, nbytes, mode) with mode "r", "w" or "rw"; a strided access adds
        (width, pitch): rows of `width` bytes every `pitch` bytes from addr, nbytes the span.
        Kernels report their views as they run (mem_access) instead."""
        return ()

    def gated(self) -> bool:
        """True if the task may wait for something outside its stream's order before it can
        run or finish (an event or notify not yet recorded, the host, a report thread): no
        side effects, unlike blocker(). A synchronous copy does not wait for the work queued
        behind such a task (memops.await_writers)."""
        return self.may_block

    def writes(self, block, lo: int, hi: int) -> bool:
        """True if the task, when it runs, may write a byte of [lo, hi) of `block` (the
        allocation holding it): by default, what accesses() says it writes."""
        for access in self.accesses():
            addr, nbytes, mode = access[0], access[1], access[2]
            if "w" in mode and addr < hi and lo < addr + nbytes:
                return True
        return False

    def describe(self) -> str:
        return self.kind

    def details(self) -> dict:
        """What tools (the profiler) show about the task: "name" (a kernel's name, a copy's
        direction; default: the kind), "bytes" moved or set, "blocks", and any other plain
        values. Asked only when an observer wants it, never on the hot path."""
        return {}

    def capture_stack(self) -> None:
        self._stack = "".join(traceback.format_stack(limit=12)[:-3])

    @property
    def stack(self) -> str | None:
        """The enqueue stack (NPURT_TASK_STACKS=1), or None. A property because a class-level
        default would replace the slot's descriptor and make the slot read-only."""
        try:
            return self._stack
        except AttributeError:
            return None


class CopyTask(Task):
    """memcpy_async: copy `n` bytes from `src` to `dst` (host or device addresses)."""

    __slots__ = ("dst", "src", "n", "direction", "keep", "cheap")
    kind = "memcpy_async"
    batchable = True
    error_code = C.ACL_ERROR_RT_SYS_DMA

    def __init__(self, dst: int, src: int, n: int, direction: str, keep=None):
        self.dst, self.src, self.n, self.direction, self.keep = dst, src, n, direction, keep
        self.cheap = n <= INLINE_BYTES

    def run(self) -> None:
        address.copy(self.dst, self.src, self.n)

    def accesses(self) -> tuple:
        return (self.src, self.n, "r"), (self.dst, self.n, "w")

    def describe(self) -> str:
        return f"memcpy_async {self.direction} {self.n} B 0x{self.src:x} -> 0x{self.dst:x}"

    def details(self) -> dict:
        return {"name": f"memcpy_async {self.direction}", "bytes": self.n, "direction": self.direction}


class ArrayCopyTask(Task):
    """A copy between device memory at `dev` and a host numpy array (C-contiguous, `n`
    bytes) the task holds: the Pythonic API's copies. Holding the array, not its address,
    keeps it alive until the copy ran and spares the call the address look-up (numpy's
    `.ctypes.data` costs microseconds); tools get the address from accesses()."""

    __slots__ = ("dev", "arr", "n", "direction", "cheap")
    kind = "memcpy_async"
    batchable = True
    error_code = C.ACL_ERROR_RT_SYS_DMA

    def __init__(self, dev: int, arr: np.ndarray, n: int, direction: str):
        self.dev, self.arr, self.n, self.direction = dev, arr, n, direction
        self.cheap = n <= INLINE_BYTES

    def run(self) -> None:
        host = self.arr.reshape(-1).view(np.uint8)
        if self.direction == "H2D":  # (slice assignment: np.copyto's copy without its parsing)
            address.view(self.dev, self.n)[:] = host
        else:
            host[:] = address.view(self.dev, self.n)

    @property
    def keep(self) -> np.ndarray:
        """The host buffer the task holds (as CopyTask.keep: tools treat its use as asynchronous)."""
        return self.arr

    def _ends(self) -> tuple[int, int]:
        host = address.host_address(self.arr)
        return (host, self.dev) if self.direction == "H2D" else (self.dev, host)

    def accesses(self) -> tuple:
        src, dst = self._ends()
        return (src, self.n, "r"), (dst, self.n, "w")

    def describe(self) -> str:
        src, dst = self._ends()
        return f"memcpy_async {self.direction} {self.n} B 0x{src:x} -> 0x{dst:x}"

    def details(self) -> dict:
        return {"name": f"memcpy_async {self.direction}", "bytes": self.n, "direction": self.direction}


class Copy2dTask(Task):
    """memcpy2d_async: `height` rows of `width` bytes between pitched buffers."""

    __slots__ = ("dst", "dpitch", "src", "spitch", "width", "height", "direction", "keep")
    kind = "memcpy2d_async"
    batchable = True
    error_code = C.ACL_ERROR_RT_SYS_DMA

    def __init__(self, dst, dpitch, src, spitch, width, height, direction, keep=None):
        # keep: a host buffer object the task holds alive until it ran
        self.dst, self.dpitch, self.src, self.spitch = dst, dpitch, src, spitch
        self.width, self.height, self.direction, self.keep = width, height, direction, keep

    def run(self) -> None:
        copy2d(self.dst, self.dpitch, self.src, self.spitch, self.width, self.height)

    def accesses(self) -> tuple:
        if not (self.width and self.height):
            return ()
        h, w = self.height, self.width
        return ((self.src, self.spitch * (h - 1) + w, "r", w, self.spitch),
                (self.dst, self.dpitch * (h - 1) + w, "w", w, self.dpitch))

    def describe(self) -> str:
        return f"memcpy2d_async {self.direction} {self.height} rows x {self.width} B"

    def details(self) -> dict:
        return {"name": f"memcpy2d_async {self.direction}", "bytes": self.width * self.height,
                "direction": self.direction}


def copy2d(dst: int, dpitch: int, src: int, spitch: int, width: int, height: int) -> None:
    """Copy a pitched matrix with one strided numpy copy (releases the GIL)."""
    if width == 0 or height == 0:
        return
    dspan = dpitch * (height - 1) + width
    sspan = spitch * (height - 1) + width
    dview = np.lib.stride_tricks.as_strided(address.view(dst, dspan), (height, width), (dpitch, 1))
    sview = np.lib.stride_tricks.as_strided(address.view(src, sspan), (height, width), (spitch, 1))
    np.copyto(dview, sview)


class MemsetTask(Task):
    """memset_async: fill `n` bytes at `ptr` with the byte `value`."""

    __slots__ = ("ptr", "value", "n", "cheap")
    kind = "memset_async"
    batchable = True
    error_code = C.ACL_ERROR_RT_SYS_DMA

    def __init__(self, ptr: int, value: int, n: int):
        self.ptr, self.value, self.n = ptr, value, n
        self.cheap = n <= INLINE_BYTES

    def run(self) -> None:
        address.view(self.ptr, self.n).fill(self.value)

    def accesses(self) -> tuple:
        return ((self.ptr, self.n, "w"),)

    def describe(self) -> str:
        return f"memset_async {self.n} B at 0x{self.ptr:x} = 0x{self.value:02x}"

    def details(self) -> dict:
        return {"bytes": self.n}


class HostFuncTask(Task):
    """A Python function run in stream order on a scheduler worker (the generic task that
    kernels, reductions and Pythonic callbacks build on)."""

    __slots__ = ("fn", "args", "name")
    kind = "host_func"
    batchable = True
    error_code = C.ACL_ERROR_RT_AICPU_EXCEPTION

    def __init__(self, fn: Callable, args: tuple = (), name: str | None = None):
        self.fn, self.args = fn, args
        self.name = name or getattr(fn, "__qualname__", "function")

    def run(self) -> None:
        self.fn(*self.args)

    def gated(self) -> bool:
        return True  # a host function may wait for the host (a threading.Event, a sleep, I/O)

    def describe(self) -> str:
        return f"host function {self.name}"

    def details(self) -> dict:
        return {"name": self.name}


class NopTask(Task):
    """A task that does nothing (used as a marker)."""

    __slots__ = ()
    kind = "nop"
    trivial = True

    def run(self) -> None:
        pass


class StreamProgress(Blocker):
    """Blocker: stream `source` has retired task `seq`."""

    __slots__ = ("source", "seq")

    def __init__(self, source: "Stream", seq: int):
        self.source, self.seq = source, seq

    def register(self) -> bool:
        return self.source.watch(self.seq, self)

    def waits_for(self):
        return ("stream", self.source, self.seq)

    def describe(self) -> str:
        s = self.source
        return (f"stream {s.stream_id} (device {s.device.id}) to finish task #{self.seq}; "
                f"it has finished #{s.completed_seq} of {s.enqueued_seq}")
