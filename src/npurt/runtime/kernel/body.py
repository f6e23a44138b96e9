"""Inside a kernel: what one block of a running launch sees (`KernelContext`).

`ctx.block_idx` / `ctx.block_num`, `ctx.block_range(n, align)` (the slice of range(n) a
block owns) and `ctx.gm(ptr, dtype, count, mode)`: a numpy view bounds-checked against the
live allocation holding `ptr` (or the host range behind a host_register alias). Anything
else (out of bounds, freed, host or unreachable device memory) raises `KernelMemoryError`.
"""
from __future__ import annotations

import numpy as np

from .. import constants as C, address
from ..dtypes import RESOLVED as _DTYPES, resolve as resolve_dtype
from ..errors import InvalidValueError, NpuError
from ..memops import dead_address_message
from ..memory import LIVE, PENDING, usable_size
from ..observers import HOOKS
from ..runtime import RUNTIME
from ..managed import MANAGED
from .function import _VA_BASE, _is_alias


# ---------------------------------------------------------------- inside a kernel
class KernelMemoryError(NpuError, IndexError):
    """A kernel accessed memory it may not (out of bounds, freed, host, another device)."""

    code = C.ACL_ERROR_RT_AICORE_EXCEPTION


_MODES = ("rw", "r", "w")


class KernelContext:
    """What one block of a running kernel sees: its index, the block count, `gm()`, and
    `core_id`, the simulated AI core running it (0 .. the cores the launch may use - 1: a
    device or stream resource limit confines a launch to that many; blocks beyond run in
    waves on the same cores, as on an NPU)."""

    __slots__ = ("block_idx", "block_num", "task", "device", "core_id")

    def __init__(self, block_idx: int, block_num: int, task: "KernelTask", device, core_id: int = 0):
        self.block_idx, self.block_num, self.task, self.device = block_idx, block_num, task, device
        self.core_id = core_id

    def block_range(self, n: int, align: int = 1) -> tuple[int, int]:
        """[lo, hi) of range(n) that this block handles when n is split evenly over the blocks
        (chunks are multiples of `align` except the last)."""
        nb = self.block_num
        chunk = -(-n // nb)
        if align > 1:
            chunk = -(-chunk // align) * align
        lo = min(n, (self.block_idx % nb) * chunk)
        return lo, min(n, lo + chunk)

    def gm(self, ptr, dtype, count, mode: str = "rw") -> np.ndarray:
        """A numpy view of `count` elements of `dtype` at global-memory address `ptr`
        (`count` may be a shape tuple). Raises KernelMemoryError unless the whole range lies
        inside one allocation this launch may use.

        `mode` declares what the kernel does with the view, as an Ascend C kernel's data
        copies do: "r" (an input: the view is read-only), "w" (an output: every element is
        written, none read first) or "rw" (the default: anything). Tools use it: the
        sanitizer treats an "rw" view as read and finds what was written by comparing."""
        if mode not in _MODES:
            raise KernelMemoryError(f"gm mode must be 'r', 'w' or 'rw', got {mode!r}")
        try:
            dt = _DTYPES[dtype]
        except (KeyError, TypeError):
            dt = resolve_dtype(dtype)
        if type(count) is int:
            n, shape = count, None
        elif isinstance(count, (tuple, list)):
            try:
                shape = tuple(int(d) for d in count)
            except (TypeError, ValueError):
                raise KernelMemoryError(f"gm shape must be ints, got {count!r}") from None
            n = -1 if any(d < 0 for d in shape) else int(np.prod(shape, dtype=np.int64))
        elif isinstance(count, np.integer):
            n, shape = int(count), None
        else:
            raise KernelMemoryError(f"gm count must be an int or a shape tuple, got {count!r}")
        if n < 0:
            raise KernelMemoryError(f"gm count must not be negative, got {count!r}")
        nbytes = n * dt.itemsize
        if type(ptr) is not int:
            if not isinstance(ptr, (int, np.integer)) or isinstance(ptr, bool):
                raise KernelMemoryError(f"gm needs an address int, got {type(ptr).__name__}")
            ptr = int(ptr)
        device = self.device
        block = device.memory.live.get(ptr)  # fast path: the start of a live allocation here
        if block is not None and ptr + nbytes <= block.addr + block.requested:
            # device memory, always writable: one array made (a kernel right after a big one
            # runs with cold caches, where each costs microseconds)
            arr = device.backend.typed_view(ptr, nbytes, dt)
        else:
            buf = self._view(ptr, nbytes)
            if mode != "r" and not buf.flags.writeable:
                raise self._refused("read_only", ptr, nbytes, device,
                                    f"gm(0x{ptr:x}, mode {mode!r}): host memory registered with "
                                    "ACL_HOST_REGISTER_READONLY is read-only for kernels; take it with mode 'r'")
            arr = buf.view(dt)
        if HOOKS.active:
            HOOKS.emit("mem_access", device=self.device, addr=ptr, nbytes=nbytes, task=self.task, mode=mode)
        if shape is not None:
            arr = arr.reshape(shape)
        if mode == "r":
            arr.flags.writeable = False
        return arr

    def _view(self, ptr: int, nbytes: int) -> np.ndarray:
        if ptr < _VA_BASE:
            if MANAGED:  # managed memory: the host's bytes are the device's
                managed = MANAGED.find(ptr, nbytes)
                if managed is not None:
                    return address.raw_host_view(ptr, nbytes)
            if ptr == 0:
                raise self._refused("invalid_address", ptr, nbytes, None,
                                    "gm(0): null pointer (an optional buffer that was not given?)")
            raise self._refused("invalid_address", ptr, nbytes, None,
                                f"gm(0x{ptr:x}): that is a host address; kernels reach device memory, "
                                "or host memory through its host_register device alias")
        device = RUNTIME.device_by_physical.get(address.physical_device(ptr))
        if device is None:
            raise self._refused("invalid_address", ptr, nbytes, None,
                                f"gm(0x{ptr:x}): the address belongs to no visible device")
        if device is not self.device and device.id not in self.device.peer_access:
            raise self._refused("invalid_address", ptr, nbytes, device,
                                f"gm(0x{ptr:x}): memory of device {device.id} is not reachable from "
                                f"device {self.device.id} (enable peer access first)")
        if _is_alias(ptr):
            try:
                host, rng = RUNTIME.host.alias_range(ptr, nbytes)
            except InvalidValueError as exc:
                raise self._refused("out_of_bounds", ptr, nbytes, device,
                                    f"gm(0x{ptr:x}, {nbytes} bytes): {exc.message}") from None
            view = address.host_view(host, nbytes)
            if rng.readonly:  # registered ACL_HOST_REGISTER_READONLY: the device only reads it
                view.flags.writeable = False
            return view
        memory = device.memory
        block = memory.live.get(ptr)
        if block is None:
            block = memory.find(ptr)
            if block is None or not self._usable(block):
                raise self._refused("invalid_address" if block is None else "use_after_free", ptr, nbytes,
                                    device, f"gm: {dead_address_message(device, ptr, block, 'kernel')}")
        elif block.state != LIVE and not self._usable(block):
            raise self._refused("use_after_free", ptr, nbytes, device,
                                f"gm: {dead_address_message(device, ptr, block, 'kernel')}")
        end = block.addr + usable_size(block)  # the padding ACL gives every allocation
        if ptr + nbytes > end:
            raise self._refused(
                "out_of_bounds", ptr, nbytes, device,
                f"gm(0x{ptr:x}, {nbytes} bytes) runs past the end of its allocation (0x{block.addr:x}, "
                f"{block.requested} bytes requested, {end - block.addr} usable) by {ptr + nbytes - end} bytes")
        view = device.backend.view(ptr, nbytes)
        if block.segment is None and getattr(block, "readonly", False):  # VMM memory mapped read-only
            view.flags.writeable = False
        return view

    def _refused(self, kind: str, ptr: int, nbytes: int, device, message: str) -> "KernelMemoryError":
        if HOOKS.active:
            HOOKS.emit("mem_error", kind=kind, addr=ptr, nbytes=nbytes, device=device, message=message,
                       task=self.task)
        return KernelMemoryError(message)

    def _usable(self, block) -> bool:
        """LIVE, or freed (PENDING) while this launch, which uses it, was queued."""
        if block.state == LIVE:
            return True
        if block.state == PENDING:
            task = self.task
            uses = block.uses
            return bool(uses) and uses.get(task.stream, 0) >= task.seq
        return False
