"""The kernel_args_* builder: packed kernel arguments assembled one parameter at a time.

Flow (as in pyACL): kernel_args_init (or _init_by_user_mem) -> kernel_args_append /
kernel_args_append_place_holder (+ kernel_args_get_place_holder_buffer), in parameter
order -> kernel_args_finalize -> launch_kernel_with_config. kernel_args_para_update
rewrites an appended parameter; finalize again before the next launch.

Every parameter takes one 8-byte slot (the value in its low bytes, zero padded), so the
packed block of a kernel is 8 x its parameter count. A placeholder is a GM parameter whose
value the runtime supplies at launch: the data written into its placeholder buffer (host
memory the runtime owns) is copied to device memory and that address goes into the slot.

Handles: a KernelArgs made by kernel_args_init gets an int handle from RUNTIME.args; one
made by kernel_args_init_by_user_mem is known by the address of the user's handle memory.
A parameter handle encodes (args serial, slot index), so it needs no table.
"""
from __future__ import annotations

import itertools

import numpy as np

from . import address
from .errors import InvalidHandleError, InvalidValueError
from .address import host_bytes
from .api import stream_of
from .kernel import GM, SLOT, KernelFunction, enqueue_launch, free_staged, function_of, stage_on_device
from .runtime import RUNTIME

HANDLE_MEM_SIZE = 64         # bytes of user memory kernel_args_init_by_user_mem needs for a handle
PLACEHOLDER_ADVISED = 2048   # the docs advise placeholder data below 2 KB (not enforced)
_PARAM_TAG = 0xA2 << 40

_serials = itertools.count(1)
_by_user_mem: dict[int, "KernelArgs"] = {}   # handle-memory address -> args


class KernelArgs:
    """The argument block of one kernel under construction."""

    def __init__(self, func: KernelFunction, mem: np.ndarray | None = None):
        self.func = func
        self.serial = next(_serials) & 0xFFFFFFFF
        self.mem = mem if mem is not None else np.zeros(func.args_size, np.uint8)
        self.appended = 0
        self.holders: dict[int, np.ndarray | None] = {}  # slot -> placeholder buffer
        self.finalized = False
        self.handle = 0
        self.user_addr = 0  # user memory the block lives in, when npurt cannot keep it alive

    def __repr__(self) -> str:
        state = "finalized" if self.finalized else f"{self.appended}/{len(self.func.params)} appended"
        return f"<npurt kernel args for {self.func.name} ({state})>"

    # ------------------------------------------------------------ params
    def param_handle(self, slot: int) -> int:
        return _PARAM_TAG | (self.serial << 8) | slot

    def slot_of(self, param) -> int:
        if type(param) is not int or param & (0xFF << 40) != _PARAM_TAG or (param >> 8) & 0xFFFFFFFF != self.serial:
            raise InvalidHandleError(f"{param!r} is not a parameter handle of these kernel args "
                                     f"(kernel {self.func.name!r})")
        slot = param & 0xFF
        if slot >= self.appended:
            raise InvalidHandleError(f"parameter handle {param:#x} names slot {slot}, which was not appended")
        return slot

    def write(self, slot: int, value: bytes) -> None:
        name, ann = self.func.params[slot]
        if not 1 <= len(value) <= SLOT:
            raise InvalidValueError(f"kernel {self.func.name!r} parameter {name!r}: param_size must be 1..8 "
                                    f"bytes (each parameter takes one 8-byte slot), got {len(value)}")
        start = slot * SLOT
        self.mem[start:start + SLOT] = 0
        self.mem[start:start + len(value)] = np.frombuffer(value, np.uint8)
        self.finalized = False

    # ------------------------------------------------------------ launch
    def launch_image(self) -> tuple[bytes, list[tuple[int, bytes]]]:
        """(packed args, [(slot, placeholder data)]) of a finalized block."""
        if not self.finalized:
            raise InvalidValueError(f"kernel args for {self.func.name!r} are not finalized: call "
                                    "kernel_args_finalize (again after kernel_args_para_update)")
        raw = self.mem[:self.func.args_size].tobytes()
        holders = [(slot, buf.tobytes()) for slot, buf in sorted(self.holders.items())]
        return raw, holders


def args_of(args) -> KernelArgs:
    """KernelArgs from itself, its handle, or the user handle memory it was built in."""
    if isinstance(args, KernelArgs):
        return args
    if type(args) is int:
        found = _by_user_mem.get(args)
        if found is not None:
            if found.user_addr and not address.host_writable(found.user_addr, found.func.args_size):
                del _by_user_mem[args]
                raise InvalidHandleError(f"the user memory of kernel args 0x{args:x} (at "
                                         f"0x{found.user_addr:x}) is no longer mapped and writable: it was freed")
            return found
        obj = RUNTIME.args.get(args)  # raises a clear InvalidHandleError
        if isinstance(obj, KernelArgs):
            return obj
    raise InvalidHandleError(f"expected kernel args (kernel_args_init) or their handle, got {args!r}")


def _value_bytes(param, param_size) -> bytes:
    """The bytes of a parameter value: a host address + size (pyACL), or bytes / a numpy scalar."""
    if isinstance(param, np.generic):
        param = param.tobytes()
    return host_bytes(param, param_size, "kernel parameter")


# ---------------------------------------------------------------- runtime operations
def kernel_args_init(func) -> KernelArgs:
    """A new, empty argument block for `func` (registered with an int handle)."""
    RUNTIME.check_initialized()
    a = KernelArgs(function_of(func))
    a.handle = RUNTIME.args.add(a)
    return a


def kernel_args_get_mem_size(func, user_args_size: int) -> int:
    """Bytes of user memory an argument block needs: every parameter padded to 8 bytes
    (the larger of 8 x parameters and user_args_size rounded up to 8)."""
    f = function_of(func)
    if type(user_args_size) is not int or user_args_size < 0:
        raise InvalidValueError(f"user_args_size must be a non-negative int, got {user_args_size!r}")
    return max(f.args_size, (user_args_size + SLOT - 1) // SLOT * SLOT)


def kernel_args_get_handle_mem_size(func) -> int:
    """Bytes of user memory kernel_args_init_by_user_mem needs for the handle itself."""
    function_of(func)
    return HANDLE_MEM_SIZE


def kernel_args_init_by_user_mem(func, args_handle: int, user_host_mem: int, actual_args_size: int) -> KernelArgs:
    """An argument block built in user host memory: `args_handle` is user memory of
    kernel_args_get_handle_mem_size bytes (its address becomes the handle), the packed args
    live in `user_host_mem` (actual_args_size bytes, from kernel_args_get_mem_size)."""
    RUNTIME.check_initialized()
    f = function_of(func)
    for what, addr, size in (("args_handle", args_handle, HANDLE_MEM_SIZE),
                             ("user_host_mem", user_host_mem, actual_args_size)):
        if type(addr) is not int or not 0 < addr < address.VA_BASE:
            raise InvalidValueError(f"kernel_args_init_by_user_mem: {what} must be a host address, got {addr!r}")
        if type(size) is int and size > 0 and not address.host_writable(addr, size):
            raise InvalidValueError(f"kernel_args_init_by_user_mem: {what} 0x{addr:x} (+{size} bytes) is not "
                                    "writable host memory")
    if type(actual_args_size) is not int or actual_args_size < f.args_size:
        raise InvalidValueError(f"actual_args_size {actual_args_size!r} is smaller than the {f.args_size} "
                                f"bytes kernel {f.name!r} needs (see kernel_args_get_mem_size)")
    rng = RUNTIME.host.find(user_host_mem, f.args_size)
    if rng is not None and rng.mm is not None:
        # malloc_host memory: a view of the mapping keeps it mapped even after free_host
        offset = user_host_mem - rng.addr
        mem = np.frombuffer(rng.mm, np.uint8)[offset:offset + f.args_size]
    else:
        mem = address.raw_host_view(user_host_mem, f.args_size)
    mem[:] = 0
    a = KernelArgs(f, mem)
    a.handle = args_handle
    a.user_addr = user_host_mem if rng is None else 0  # memory we cannot keep alive: re-probe it
    _by_user_mem[args_handle] = a
    return a


def forget_user_mem() -> None:
    """Drop every argument block built in user memory (the runtime finalizes)."""
    _by_user_mem.clear()


RUNTIME.forget_hooks.append(forget_user_mem)


def kernel_args_append(args, param, param_size: int | None = None) -> int:
    """Append the next parameter's value (host address + size, or bytes); its param handle."""
    a = args_of(args)
    slot = _next_slot(a)
    a.write(slot, _value_bytes(param, param_size))
    a.appended += 1
    return a.param_handle(slot)


def kernel_args_append_place_holder(args) -> int:
    """Append a placeholder for the next parameter, which must be a GM pointer: the runtime
    puts the device address of the placeholder's data there at launch."""
    a = args_of(args)
    slot = _next_slot(a)
    name, ann = a.func.params[slot]
    if ann is not GM:
        raise InvalidValueError(f"kernel {a.func.name!r} parameter {name!r} is not a GM pointer; only "
                                "pointer parameters can be placeholders")
    a.holders[slot] = None
    a.appended += 1
    a.finalized = False
    return a.param_handle(slot)


def kernel_args_get_place_holder_buffer(args, param: int, data_size: int) -> int:
    """Host address of a runtime-owned buffer of `data_size` bytes for a placeholder's data
    (it lives as long as the args; write the data before launching)."""
    a = args_of(args)
    slot = a.slot_of(param)
    if slot not in a.holders:
        raise InvalidValueError(f"parameter {param:#x} is not a placeholder (use kernel_args_append_place_holder)")
    if type(data_size) is not int or data_size <= 0:
        raise InvalidValueError(f"placeholder data_size must be a positive int, got {data_size!r}")
    buf = a.holders[slot]
    if buf is None or buf.size != data_size:
        new = np.zeros(data_size, np.uint8)
        if buf is not None:
            keep = min(buf.size, data_size)
            new[:keep] = buf[:keep]
        a.holders[slot] = buf = new
    return buf.ctypes.data


def kernel_args_para_update(args, param: int, value, param_size: int | None = None) -> None:
    """Rewrite an appended parameter's value; finalize again before launching."""
    a = args_of(args)
    slot = a.slot_of(param)
    if slot in a.holders:
        raise InvalidValueError(f"parameter {param:#x} is a placeholder; write its buffer instead")
    a.write(slot, _value_bytes(value, param_size))


def kernel_args_finalize(args) -> None:
    """Check the block is complete (every parameter appended, every placeholder has data)."""
    a = args_of(args)
    f = a.func
    if a.appended != len(f.params):
        missing = ", ".join(n for n, _ in f.params[a.appended:])
        raise InvalidValueError(f"kernel {f.name!r} takes {len(f.params)} parameters; "
                                f"{a.appended} were appended (missing: {missing})")
    empty = [f.params[s][0] for s, buf in a.holders.items() if buf is None]
    if empty:
        raise InvalidValueError(f"placeholder parameter(s) {', '.join(empty)} have no data: call "
                                "kernel_args_get_place_holder_buffer and write it")
    f.struct.unpack(a.mem[:f.args_size].tobytes())  # every slot decodes
    a.finalized = True


def _next_slot(a: KernelArgs) -> int:
    if a.appended >= len(a.func.params):
        raise InvalidValueError(f"kernel {a.func.name!r} takes {len(a.func.params)} parameters; all are "
                                "appended already (use kernel_args_para_update to change one)")
    return a.appended


# ---------------------------------------------------------------- launching with built args
def launch_kernel_with_config(func, num_blocks: int, stream, cfg, args, reserve=None) -> int:
    """acl.rt.launch_kernel_with_config: launch with a finalized kernel_args_* block."""
    f = function_of(func)
    s = stream_of(stream)
    if reserve not in (None, 0):
        raise InvalidValueError("launch_kernel_with_config: reserve must be 0")
    a = args_of(args)
    if a.func is not f:
        raise InvalidValueError(f"these kernel args were built for kernel {a.func.name!r}, not {f.name!r}")
    raw, holders = a.launch_image()
    if not holders:
        return enqueue_launch(f, num_blocks, s, f.struct.unpack(raw), cfg=cfg)
    addr, offsets = stage_on_device(s, [data for _, data in holders])
    try:
        values = list(f.struct.unpack(raw))
        for (slot, _), off in zip(holders, offsets):
            values[slot] = addr + off
        staged = s.device.memory.live[addr]
        return enqueue_launch(f, num_blocks, s, tuple(values), extra_blocks=[staged], cfg=cfg)
    finally:
        free_staged(s, addr)
