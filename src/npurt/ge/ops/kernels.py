"""Operators run by kernels the application registers (acl.op.register_compile_func,
create_kernel, set_kernel_args, set_kernel_workspace_sizes), as GE's dynamic-kernel path
does (op_kernel_selector.cpp, op_kernel_registry.cpp, stream_executor.cpp).

For an op type with a compile function, `update_params` calls it with the call's descs and
attributes and a kernel desc; inside, the function picks a kernel (set_kernel_args: kernel
id, block dim, tiling bytes) and workspace sizes. The choice is kept for those descs and
attributes; `execute_v2` then launches the kernel with the arguments GE assembles: one
8-byte address per input, per output, per workspace (device memory npurt allocates), then
the tiling bytes. A kernel "binary" is a Python file of npurt @kernel functions (as for
acl.rt.binary_load_*): its GM parameters take those addresses and its scalar parameters the
tiling slots.

Codes: registering a compile function twice 100030, a kernel id twice 100031; an op type
with no compile function 100028; a kernel id the compile function picked that is not
registered 100029; engine types other than ACL_ENGINE_AICORE / ACL_ENGINE_VECTOR 100000.
"""
from __future__ import annotations

import struct

from ...runtime import fork_safe_lock
from ...runtime import (InvalidValueError, NpuError, binary_get_function, binary_load_from_data, constants as
                        C, free, launch_function as launch, malloc_on, stream_of)
from .. import constants as G

_selectors: dict[str, object] = {}
_kernels: dict[tuple[str, str], object] = {}
_chosen: dict[tuple, "KernelDesc"] = {}
_lock = fork_safe_lock()
MAX_WORKSPACES = 16


class KernelDesc:
    """aclopKernelDesc: what a compile function chose."""

    __slots__ = ("kernel_id", "block_dim", "args", "workspaces", "handle")

    def __init__(self):
        self.kernel_id, self.block_dim, self.args, self.workspaces, self.handle = "", 0, b"", [], 0


def register_compile_func(op_type: str, func) -> None:
    with _lock:
        if op_type in _selectors:
            raise NpuError(f"a compile function for {op_type!r} is already registered (unregister it first)",
                           C.ACL_ERROR_BIN_SELECTOR_ALREADY_REGISTERED)
        _selectors[op_type] = func


def unregister_compile_func(op_type: str) -> None:
    with _lock:
        _selectors.pop(op_type, None)
        for key in [k for k in _chosen if k[0] == op_type]:
            del _chosen[key]


def has_selector(op_type: str) -> bool:
    return op_type in _selectors


def create_kernel(op_type: str, kernel_id: str, kernel_name: str, source: bytes, engine_type: int) -> None:
    if engine_type not in (G.ACL_ENGINE_AICORE, G.ACL_ENGINE_VECTOR):
        raise InvalidValueError(f"engine_type must be ACL_ENGINE_AICORE (1) or ACL_ENGINE_VECTOR (2), got {engine_type}")
    with _lock:
        if (op_type, kernel_id) in _kernels:
            raise NpuError(f"kernel {kernel_id!r} of {op_type!r} is already registered",
                           C.ACL_ERROR_KERNEL_ALREADY_REGISTERED)
    func = binary_get_function(binary_load_from_data(source), kernel_name)
    with _lock:
        _kernels[(op_type, kernel_id)] = func


def set_kernel_args(desc: KernelDesc, kernel_id: str, block_dim: int, args: bytes) -> None:
    desc.kernel_id, desc.block_dim, desc.args = kernel_id, block_dim, bytes(args)


def set_workspace_sizes(desc: KernelDesc, sizes: list[int]) -> None:
    if len(sizes) > MAX_WORKSPACES:
        raise InvalidValueError(f"at most {MAX_WORKSPACES} workspaces, got {len(sizes)}")
    desc.workspaces = list(sizes)


def _key(op_type, in_descs, out_descs, attr_key) -> tuple:
    def one(d):
        return (d.data_type, tuple(d.dims), d.format, d.storage_format)
    return (op_type, tuple(one(d) for d in in_descs), tuple(one(d) for d in out_descs), attr_key)


def select(op_type: str, in_descs, out_descs, attr, call) -> KernelDesc:
    """Run the compile function (through `call(func, kernel_desc)`, which the facade supplies
    with handles) and keep its choice for these descs and attributes."""
    func = _selectors.get(op_type)
    if func is None:
        raise NpuError(f"no compile function is registered for {op_type!r} (acl.op.register_compile_func)",
                       C.ACL_ERROR_BIN_SELECTOR_NOT_REGISTERED)
    desc = KernelDesc()
    call(func, desc)
    if (op_type, desc.kernel_id) not in _kernels:
        raise NpuError(f"the compile function of {op_type!r} chose kernel {desc.kernel_id!r}, which is not "
                       "registered (acl.op.create_kernel)", C.ACL_ERROR_KERNEL_NOT_FOUND)
    with _lock:
        _chosen[_key(op_type, in_descs, out_descs, attr.key())] = desc
    return desc


def execute(op_type: str, in_descs, inputs, out_descs, outputs, attr, stream) -> int:
    desc = _chosen.get(_key(op_type, in_descs, out_descs, attr.key()))
    if desc is None:
        raise NpuError(f"{op_type} with these descs and attributes was not compiled: call acl.op.update_params "
                       "first (its compile function picks the kernel)", C.ACL_ERROR_OP_NOT_FOUND)
    func = _kernels[(op_type, desc.kernel_id)]
    s = stream_of(stream)
    workspaces = [malloc_on(s.device, size, C.ACL_MEM_MALLOC_HUGE_FIRST) for size in desc.workspaces]
    try:
        addresses = [b.data for b in inputs] + [b.data for b in outputs] + workspaces
        packed = struct.pack(f"<{len(addresses)}Q", *addresses) + desc.args
        return launch(func, desc.block_dim, packed, s)
    finally:
        for ws in workspaces:  # stream-ordered: reused only after the launch ran
            free(ws)
