"""Launching kernels: the checks at enqueue, the launch config, and the launch operations.

`enqueue_launch` validates a launch (block count, every GM argument a live address of the
stream's device or a peer's, or a host alias) and enqueues one `KernelTask`, whose holders
are the allocations it uses (stream-ordered free). `parse_cfg` reads the ACL launch config
attributes. `launch`, `launch_kernel` and `launch_kernel_with_host_args` are the runtime
operations behind aclrtLaunchKernel* (launch_kernel_with_config, which takes a kernel_args_*
block, is with that builder): they resolve the stream (`stream_of`), so this module sits
with the operations (api/), above the rest of the kernel model.
"""
from __future__ import annotations

import numpy as np

from .. import constants as C, address
from ..api import stream_of
from ..address import host_bytes  # noqa: F401 - re-exported (it moved to address.py)
from .. import graph_edit
from ..graph import _node_text
from ..errors import InvalidValueError, NpuError, ParamInvalidError
from ..inline import MAX_BYTES as INLINE_BYTES
from ..memops import dead_address_message, locate, refused
from ..memory import LIVE, usable_size
from ..observers import HOOKS
from ..runtime import RUNTIME
from ..stream import Stream, enqueue_task
from ..managed import MANAGED
from .function import KernelFunction, SLOT, UB_SIZE, _VA_BASE, _is_alias, function_of
from .task import KernelTask


# ---------------------------------------------------------------- validation at enqueue
def check_blocks(num_blocks, device, offset: int = 0) -> int:
    if type(num_blocks) is int and 1 <= num_blocks <= 32 and not offset:  # every SoC allows 32
        return num_blocks
    limit = device.spec.max_block_dim
    if type(num_blocks) is not int:
        if isinstance(num_blocks, (int, np.integer)) and not isinstance(num_blocks, bool):
            num_blocks = int(num_blocks)
        else:
            raise InvalidValueError(f"num_blocks must be an int, got {type(num_blocks).__name__}")
    if not 1 <= num_blocks <= limit or num_blocks + offset > limit:
        raise InvalidValueError(f"num_blocks must be in [1, {limit}] (the device's block dimension limit"
                                f"{', block offset included' if offset else ''}), got {num_blocks}")
    return num_blocks


def gm_blocks(func: KernelFunction, values: tuple, device, extents=None) -> list:
    """The allocations the GM arguments point into; an error for any that is not a live
    device address reachable from `device` (0, a null pointer, is allowed and skipped).
    `extents` (bytes per GM parameter, in order) also checks each range fits its allocation."""
    blocks = []
    live = device.memory.live
    for j, i in enumerate(func.gm_slots):
        ptr = values[i]
        block = live.get(ptr)  # fast path: the start of a live allocation of this device
        if block is None:
            if ptr == 0:
                continue
            block = _slow_gm_block(func, i, ptr, device)
            if block is None:  # a host_register alias: checked when the kernel runs
                continue
        if extents is not None and ptr + extents[j] > block.addr + block.requested and (
                ptr + extents[j] > block.addr + usable_size(block)):
            end = block.addr + usable_size(block)
            raise refused(
                "out_of_bounds", ptr, extents[j], device,
                f"kernel {func.name!r} argument {func.params[i][0]!r}: {extents[j]} bytes at 0x{ptr:x} run past "
                f"the end of its allocation (0x{block.addr:x}, {block.requested} bytes requested, "
                f"{end - block.addr} usable) by {ptr + extents[j] - end} bytes")
        blocks.append(block)
    return blocks


def _slow_gm_block(func: KernelFunction, i: int, ptr: int, device):
    name = func.params[i][0]
    if ptr < _VA_BASE:
        managed = MANAGED.find(ptr) if MANAGED else None
        if managed is not None:  # managed memory: the same pointer on the host and the device
            return managed
        raise refused("invalid_address", ptr, 0, None,
                      f"kernel {func.name!r} argument {name!r} = 0x{ptr:x} is a host address; "
                      "GM arguments must be device memory (malloc) or the device alias of "
                      "registered host memory (host_register)")
    owner = RUNTIME.device_by_physical.get(address.physical_device(ptr))
    if owner is None:
        raise refused("invalid_address", ptr, 0, None,
                      f"kernel {func.name!r} argument {name!r} = 0x{ptr:x} belongs to no visible device")
    if owner is not device and owner.id not in device.peer_access:
        raise InvalidValueError(f"kernel {func.name!r} argument {name!r} = 0x{ptr:x} is memory of "
                                f"device {owner.id}, but the launch runs on device {device.id} "
                                "(enable peer access, or launch on a stream of that device)")
    if _is_alias(ptr):
        try:
            RUNTIME.host.alias_target(ptr, 1)
        except InvalidValueError:
            raise refused("invalid_address", ptr, 0, owner,
                          f"kernel {func.name!r} argument {name!r} = 0x{ptr:x} is not inside "
                          "a registered host range's device alias (unregistered?)") from None
        return None
    memory = owner.memory
    block = memory.live.get(ptr) or memory.find(ptr)
    if block is None or block.state != LIVE or ptr >= block.addr + usable_size(block):
        if block is not None and block.state == LIVE:
            kind = "out_of_bounds"
            why = f"the address is past the end of the allocation at 0x{block.addr:x} ({block.requested} bytes)"
        else:
            kind = "invalid_address" if block is None and ptr not in memory.released else "use_after_free"
            why = dead_address_message(owner, ptr, block, "argument")
        raise refused(kind, ptr, 0, owner,
                      f"kernel {func.name!r} argument {name!r} is not a live device address: {why}")
    return block


def enqueue_launch(func: KernelFunction, num_blocks: int, stream, values, *, args_ptr: int = 0,
                   extra_blocks=(), cfg=None, extents=None) -> int:
    """Validate and enqueue one launch (values: canonical tuple, or None to read the packed
    args from device memory at `args_ptr` when the task runs)."""
    device = stream.device
    offset, timeout_ns, attrs = parse_cfg(cfg, num_blocks, device) if cfg else (0, None, None)
    num_blocks = check_blocks(num_blocks, device, offset)
    blocks = gm_blocks(func, values, device, extents) if values is not None else []
    if extra_blocks:
        blocks.extend(extra_blocks)
    task = KernelTask(func, num_blocks, values, args_ptr, offset, timeout_ns)
    if cfg:
        task.attrs = attrs
    if blocks:
        task.holders = blocks
    if func.inline_ok and num_blocks == 1 and extents is not None and sum(extents) <= INLINE_BYTES:
        task.cheap = True
    if enqueue_task is not None and 0 < len(blocks) <= 4:  # Stream.enqueue's common case in C
        return enqueue_task(stream, task, *blocks)
    return stream.enqueue(task, holders=blocks)


# ---------------------------------------------------------------- launch config

def parse_cfg(cfg, num_blocks, device) -> tuple[int, int | None, dict]:
    """(block offset, timeout in ns or None, {attr: value} as given) from a launch config: a
    list of {"id": attr, "value": v} dicts (pyACL's aclrtLaunchKernelCfg) or a dict {attr: v}.
    The task keeps the attributes for aclmdlRIKernelTaskGetAttribute (graph_edit.py)."""
    if isinstance(cfg, dict):
        items = list(cfg.items())
    elif isinstance(cfg, (list, tuple)):
        items = []
        for entry in cfg:
            if not isinstance(entry, dict) or "id" not in entry or "value" not in entry:
                raise InvalidValueError(f"launch config entries must be {{'id': attr, 'value': v}} dicts, "
                                        f"got {entry!r}")
            items.append((entry["id"], entry["value"]))
    else:
        raise InvalidValueError(f"launch config must be a list of {{'id', 'value'}} dicts, got {type(cfg).__name__}")
    offset, timeout_ns, attrs = 0, None, {}
    for attr, value in items:
        if isinstance(value, dict) and len(value) == 1:  # a value union given by member name
            value = next(iter(value.values()))
        attrs[attr] = value
        if type(value) is not int or value < 0:
            raise InvalidValueError(f"launch config attribute {attr!r} needs a non-negative int value, "
                                    f"got {value!r}")
        if attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET:
            offset = value
        elif attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT:
            timeout_ns = value * 1_000_000_000
        elif attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US:
            timeout_ns = value * 1000
        elif attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE:
            if value not in (C.ACL_RT_ENGINE_TYPE_AIC, C.ACL_RT_ENGINE_TYPE_AIV):
                raise InvalidValueError(f"ENGINE_TYPE must be ACL_RT_ENGINE_TYPE_AIC (0) or "
                                        f"ACL_RT_ENGINE_TYPE_AIV (1), got {value}")
        elif attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE:
            if value not in (0, 1):
                raise InvalidValueError(f"SCHEM_MODE must be 0 (start when any core is free) or 1 (wait "
                                        f"for all cores), got {value}")
            cores = device.spec.aicore_num
            if value == 1 and type(num_blocks) is int and num_blocks > cores:
                raise InvalidValueError(f"SCHEM_MODE 1 starts all blocks at once, so num_blocks ({num_blocks}) "
                                        f"must not exceed the {cores} AI cores of {device.spec.name}")
        elif attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE:
            if value > UB_SIZE:
                raise InvalidValueError(f"DYN_UBUF_SIZE {value} exceeds the {UB_SIZE}-byte unified buffer")
        elif attr in (C.ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH, C.ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP,
                      C.ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING):
            if value not in (0, 1):
                raise InvalidValueError(f"launch config attribute {attr} is a switch: 0 or 1, got {value}")
        else:
            raise InvalidValueError(f"unknown launch config attribute id {attr!r} "
                                    "(see aclrtLaunchKernelAttrId: 1..9)")
    return offset, timeout_ns, attrs


# ---------------------------------------------------------------- runtime operations
def launch(func, num_blocks: int, args=(), stream=None, cfg=None, extents=None, canonical: bool = False) -> int:
    """Launch a kernel with host-side args (a tuple of values, or the packed bytes) on
    `stream` (None: the current context's default stream). Returns the task's sequence
    number. The Pythonic API and the built-in ops launch through here. `extents`, bytes
    per GM parameter in order, makes the enqueue also check each buffer is large enough.
    `canonical`: the caller guarantees `args` is a tuple of exact ints (and floats) that fit
    their parameters, so they are not packed and unpacked to check them."""
    f = func if type(func) is KernelFunction else function_of(func)
    s = stream if type(stream) is Stream and not stream.destroyed else stream_of(stream)
    return enqueue_launch(f, num_blocks, s, args if canonical else f.values(args), cfg=cfg, extents=extents)


def launch_kernel(func, num_blocks: int, args_ptr: int, args_size: int, stream=None, cfg=None) -> int:
    """acl.rt.launch_kernel: the packed args are in device memory at `args_ptr` and are read
    when the task runs (so a memcpy_async earlier on the stream may fill them). `cfg`, a
    launch config, is aclrtLaunchKernelV2's.

    Stream-ordered free covers the args buffer and, best effort, the GM pointers it holds at
    this call: a pointer written into the args later (by a queued copy) is not protected, so
    freeing its allocation before the launch ran lets a new malloc reuse it."""
    f = function_of(func)
    s = stream_of(stream)
    check_args_size(f, args_size)
    span = locate(RUNTIME, args_ptr, args_size, "kernel args")
    if span.device is None:
        raise InvalidValueError(f"launch_kernel args_data 0x{span.addr:x} is host memory; it must be device "
                                "memory holding the packed args (copy them there first), or use "
                                "launch_kernel_with_host_args")
    blocks = [span.block]
    try:  # best effort: the GM arguments the buffer holds now, to keep them from reuse
        now = f.struct.unpack(address.view(span.addr, args_size).tobytes())
        blocks += gm_blocks(f, now, s.device)
    except NpuError:
        pass  # the args may be written later in stream order; ctx.gm checks every access
    return enqueue_launch(f, num_blocks, s, None, args_ptr=span.addr, extra_blocks=blocks, cfg=cfg)


def check_args_size(f: KernelFunction, args_size) -> None:
    if type(args_size) is not int or args_size != f.args_size:
        raise InvalidValueError(f"args_size {args_size!r} does not match kernel {f.name!r}, which takes "
                                f"{f.args_size} bytes ({len(f.params)} parameters, 8 bytes each)")


def stage_on_device(stream, chunks: list[bytes]) -> tuple[int, list[int]]:
    """Copy host data chunks into one temporary device allocation (64-byte aligned pieces).
    Returns (address, offsets). The caller frees it after enqueueing the task that uses it
    (the free is stream-ordered, so the memory lives until that task ran)."""
    offsets, total = [], 0
    for chunk in chunks:
        offsets.append(total)
        total += (len(chunk) + 63) // 64 * 64 or 64
    device = stream.device
    addr = device.memory.malloc(total, C.ACL_MEM_MALLOC_HUGE_FIRST)
    if HOOKS.active:
        HOOKS.emit("mem_alloc", device=device, addr=addr, size=total, managed=True)
    view = device.backend.view(addr, total)
    if HOOKS.active:
        HOOKS.emit("host_access", addr=addr, nbytes=total, mode="w", what="kernel argument staging")
    for chunk, off in zip(chunks, offsets):
        view[off:off + len(chunk)] = np.frombuffer(chunk, np.uint8)
    return addr, offsets


def free_staged(stream, addr: int) -> None:
    device = stream.device
    if HOOKS.active:
        block = device.memory.live.get(addr)
        HOOKS.emit("mem_free", device=device, addr=addr, size=block.requested if block else 0, managed=True,
                   uses=dict(block.uses or {}) if block else {})
    device.memory.free(addr)


def launch_kernel_with_host_args(func, num_blocks: int, stream, cfg, host_args, args_size,
                                 place_holders=None, place_holder_num: int = 0) -> int:
    """acl.rt.launch_kernel_with_host_args: the packed args are in host memory (copied at
    this call). Each placeholder {"addrOffset", "dataOffset"} makes the runtime copy the
    host data from dataOffset on to the device and patch its address into the argument
    slot at addrOffset; args_size then covers the args and that data."""
    f = function_of(func)
    s = stream_of(stream)
    place_holders = list(place_holders or [])
    if type(place_holder_num) is not int or place_holder_num != len(place_holders):
        raise InvalidValueError(f"place_holder_num ({place_holder_num!r}) must equal the length of the "
                                f"placeholder list ({len(place_holders)})")
    if not place_holders:
        check_args_size(f, args_size)
    elif type(args_size) is not int or args_size < f.args_size:
        raise InvalidValueError(f"args_size {args_size!r} is smaller than kernel {f.name!r}'s "
                                f"{f.args_size} bytes of arguments")
    raw = host_bytes(host_args, args_size, "host_args")
    if not place_holders:
        return enqueue_launch(f, num_blocks, s, f.struct.unpack(raw), cfg=cfg)
    slots, data_offsets = [], []
    for ph in place_holders:
        if not isinstance(ph, dict) or "addrOffset" not in ph or "dataOffset" not in ph:
            raise InvalidValueError(f"placeholders are {{'addrOffset', 'dataOffset'}} dicts, got {ph!r}")
        a, d = ph["addrOffset"], ph["dataOffset"]
        if type(a) is not int or a % SLOT or not 0 <= a < f.args_size or (a // SLOT) not in f.gm_slots:
            raise InvalidValueError(f"placeholder addrOffset {a!r} is not the offset of a GM parameter slot "
                                    f"of kernel {f.name!r} (multiples of 8 below {f.args_size})")
        if type(d) is not int or not f.args_size <= d < args_size:
            raise InvalidValueError(f"placeholder dataOffset {d!r} must point into the data after the "
                                    f"{f.args_size} bytes of arguments (below args_size {args_size})")
        slots.append(a // SLOT)
        data_offsets.append(d)
    base = f.args_size
    addr, _ = stage_on_device(s, [raw[base:]])
    try:
        values = list(f.struct.unpack(raw[:base]))
        for slot, d in zip(slots, data_offsets):
            values[slot] = addr + (d - base)
        staged = s.device.memory.live[addr]
        return enqueue_launch(f, num_blocks, s, tuple(values), extra_blocks=[staged], cfg=cfg)
    finally:
        free_staged(s, addr)


# ---------------------------------------------------------------- captured kernel tasks
def set_kernel_task_params(task: "graph_edit.ModelTask", func, num_blocks: int, args: int, args_size: int,
                           host_args: bool = False, cfg=None, group=None, op_info: bytes | None = None) -> None:
    """aclmdlRITaskSetParams of a kernel task (UpdateKernelParams, kernel_utils.cc): a new
    function, packed args, launch config and numBlocks, applied by update_graph. `args`: the
    address of `args_size` bytes of packed args, in device memory read at each replay
    (host_args False, isHostArgs 0) or host memory copied now (host_args True); `cfg` as a
    launch's (None: the defaults); `group` must be None (a task group is not set here);
    `op_info`: the shape info aclmdlRITaskGetParams returns (None or empty clears it).
    Errors: ACL_ERROR_RT_PARAM_INVALID for a task that is not a kernel, a group, null args or
    args_size 0, a bad config; an unknown function handle's own error."""
    task = graph_edit.model_task_of(task)
    _lane, kind, payload = task.node()
    if task.task_type() != graph_edit.TASK_KERNEL:
        raise ParamInvalidError(f"set_kernel_task_params: task {task.handle:#x} ({_node_text(kind, payload)}) is "
                                "not a kernel task (check it with aclmdlRITaskGetType)")
    if group is not None:
        raise ParamInvalidError("set_kernel_task_params: params->taskGrp must be NULL")
    f = function_of(func)
    if not args:
        raise ParamInvalidError("set_kernel_task_params: params->kernelTaskParams.args is NULL")
    if type(args_size) is not int or args_size <= 0:
        raise ParamInvalidError(f"set_kernel_task_params: params->kernelTaskParams.argsSize ({args_size!r}) must "
                                "be greater than 0")
    check_args_size(f, args_size)
    device = task.graph.device
    offset, timeout_ns, attrs = parse_cfg(cfg, num_blocks, device) if cfg else (0, None, None)
    num_blocks = check_blocks(num_blocks, device, offset)
    if host_args:  # copied now, as the runtime copies host args into the task
        span = locate(RUNTIME, args, args_size, "kernel args")
        values = f.struct.unpack(address.view(span.addr, args_size).tobytes()[:f.args_size])
        new = KernelTask(f, num_blocks, values, 0, offset, timeout_ns)
        held = gm_blocks(f, values, device)
    else:
        span = locate(RUNTIME, args, args_size, "kernel args")
        if span.device is None:
            raise ParamInvalidError(f"set_kernel_task_params: args 0x{span.addr:x} is host memory but isHostArgs "
                                    "is 0 (device args are read at each replay)")
        new = KernelTask(f, num_blocks, None, span.addr, offset, timeout_ns)
        held = [span.block]
    new.attrs = attrs
    task.graph.pending_updates[task.index] = ("kernel", (new, tuple(held), bytes(op_info) if op_info else None))
