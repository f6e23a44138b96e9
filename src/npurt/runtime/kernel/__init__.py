"""Kernels: Python functions that run on the simulated NPU's AI cores.

A kernel is a function marked with `@kernel` whose parameters after `ctx` are annotated
`GM` (a global-memory address: an int) or a numpy scalar type::

    @kernel
    def vadd(ctx, x: GM, y: GM, z: GM, n: np.int32):
        lo, hi = ctx.block_range(n)
        xs, ys, zs = (ctx.gm(p, np.float32, n)[lo:hi] for p in (x, y, z))
        np.add(xs, ys, out=zs)

Packed arguments (what launch_kernel reads from device memory and the kernel_args_*
builder produces) give every parameter one 8-byte little-endian slot in signature order,
the value in the low bytes: three GM and one np.int32 parameter take 32 bytes. The packing
struct is built once, by the decorator, so a launch costs one struct.pack.

A launch is one task of its stream. When it runs, `num_blocks` instances of the kernel run
on the driver's core pool in parallel (numpy releases the GIL, so blocks doing array work
overlap on host cores); each sees `ctx.block_idx` and `ctx.block_num`, as Ascend C's
GetBlockIdx/GetBlockNum. The next task of the stream starts after every block finished.

Kernels reach memory only through `ctx.gm(ptr, dtype, count)` (count may be a shape): a
numpy view bounds-checked against the live allocation holding `ptr` (an allocation freed
while the launch was queued stays readable by it: frees are stream-ordered), or against the
registered host range behind a host_register alias. Out-of-bounds, use-after-free, host or
unreachable-device accesses raise; nothing reads memory it should not. When an observer is
registered, every gm() reports a "mem_access" event. `ctx.block_range(n, align=1)` is the
slice of range(n) a block owns when n is split evenly (by block_idx modulo block_num).

At enqueue, every GM argument must be 0 (a null pointer, e.g. an optional buffer; gm(0)
raises) or a live device address of the stream's device (or of a peer it may access), or a
registered host alias; the launch records that it uses those allocations, so freeing one
while the launch is queued does not let a new malloc reuse it before the kernel ran.

Error codes (decisions, as the real runtime's docs rarely name one):

| situation | code |
| --- | --- |
| args_size differs from the kernel's packed size, a value that does not fit its parameter, num_blocks outside [1, max_block_dim], a GM argument that is not a live device address, a bad launch config | ACL_ERROR_INVALID_PARAM 100000 |
| launching something that is not a kernel | ACL_ERROR_RT_INVALID_DEVICE_FUNCTION 107044 |
| an exception in a kernel block, including an out-of-bounds or freed-memory access | ACL_ERROR_RT_AICORE_EXCEPTION 507015 (at the next synchronize) |
| a native kernel's trap (npurt.runtime.native) | ACL_ERROR_RT_VECTOR_CORE_EXCEPTION 507035 on SoCs with vector cores, else 507015 |
| a kernel that ran longer than its timeout (launch cfg TIMEOUT / TIMEOUT_US, else the op execute timeout in effect: set_op_execute_timeout*, default 1091 s) | ACL_ERROR_RT_AICORE_TIMEOUT 507014 (after it finished: Python code cannot be pre-empted) |

Launch config attributes (ACL_RT_LAUNCH_KERNEL_ATTR_*): BLOCKDIM_OFFSET adds to every
block's `block_idx` (block_num stays num_blocks); TIMEOUT (s) / TIMEOUT_US (µs), 0 = never;
SCHEM_MODE 0 or 1 (1, "wait for all cores", needs num_blocks <= the AI core count);
ENGINE_TYPE AIC (0) or AIV (1); DYN_UBUF_SIZE 0..192 KiB (the A2 unified buffer);
BLOCK_TASK_PREFETCH, DATA_DUMP, ENABLE_PROFILING 0 or 1 (accepted, no effect here).
"""
from __future__ import annotations

# The rooms of the kernel model; this package re-exports their names (npurt.runtime.kernel.X).
from .function import (MAX_PARAMS, SLOT, UB_SIZE, _VA_BASE, _is_alias, GM, KernelFunction, _parse_params, kernel, function_of, function_handle)  # noqa: F401
from .body import (KernelMemoryError, _MODES, KernelContext)  # noqa: F401
from .task import (_BlockFailure, KernelTask, _default_timeout_ns)  # noqa: F401
from .operations import (check_blocks, gm_blocks, _slow_gm_block, enqueue_launch, parse_cfg, launch, launch_kernel, check_args_size, stage_on_device, free_staged, launch_kernel_with_host_args, set_kernel_task_params)  # noqa: F401
from ..address import host_bytes  # noqa: F401,E402 - it lived here
from ..dtypes import resolve as resolve_dtype  # noqa: F401,E402 - the one dtype table
