"""acl.rt kernel loading and launch (aclrtBinaryLoadFromFile, aclrtLaunchKernel, the
aclrtKernelArgs* builder).

A kernel binary is a Python file of `@kernel` functions (`from npurt import kernel, GM`)
where CANN loads an Ascend C `.o`; see npurt.runtime.binary and npurt.runtime.kernel for
the rules and their error codes. Binary, function and args handles are ints.
"""
from __future__ import annotations

from ..runtime import binary as _binary
from ..runtime import kernel as _kernel
from ..runtime import kernel_args as _args
from ._wrap import Group, fail, stream_of
from ._wrap import stream_lookup as _stream_lookup

rt = Group("acl.rt")
_streams = _kernel.RUNTIME.streams
_launch_kernel = _kernel.launch_kernel


# ---------------------------------------------------------------- binaries and functions
@rt.one(0)
def binary_load_from_file(bin_path, options):
    """Load a kernel binary (a Python file of @kernel functions); `options` a list or []."""
    return _binary.binary_load_from_file(bin_path, options).handle


@rt.one(0)
def binary_load_from_data(mem_addr, length, options):
    """Load a kernel binary from `length` bytes of host memory at `mem_addr` (or bytes)."""
    return _binary.binary_load_from_data(mem_addr, length, options).handle


@rt.value(0)
def create_binary(data, data_len):
    """Binary data to load later with binary_load; returns its handle (no ret)."""
    return _binary.create_binary(data, data_len).handle


@rt.ret
def destroy_binary(binary):
    _binary.destroy_binary(binary)


@rt.one(0)
def binary_load(binary):
    return _binary.binary_load(binary).handle


@rt.ret
def binary_unload(bin_handle):
    """Unload a binary; its function handles become stale (queued launches still run)."""
    _binary.binary_unload(bin_handle)


@rt.one(0)
def binary_get_function(bin_handle, kernel_name):
    return _binary.binary_get_function(bin_handle, kernel_name).handle


@rt.one(0)
def register_cpu_func(bin_handle, func_name, kernel_name):
    """AI CPU kernels do not exist here: ACL_ERROR_RT_FEATURE_NOT_SUPPORT."""
    return _binary.register_cpu_func(bin_handle, func_name, kernel_name).handle


@rt.many(0, 0)
def get_function_addr(func_handle):
    return _binary.get_function_addr(func_handle)


@rt.one(None)
def get_function_name(func_handle, max_len):
    return _binary.get_function_name(func_handle, max_len)


# ---------------------------------------------------------------- kernel args builder
@rt.one(0)
def kernel_args_init(func_handle):
    return _args.kernel_args_init(func_handle).handle


@rt.ret
def kernel_args_init_by_user_mem(func_handle, args_handle, user_host_mem, actual_args_size):
    _args.kernel_args_init_by_user_mem(func_handle, args_handle, user_host_mem, actual_args_size)


@rt.one(0)
def kernel_args_get_mem_size(func_handle, user_args_size):
    return _args.kernel_args_get_mem_size(func_handle, user_args_size)


@rt.one(0)
def kernel_args_get_handle_mem_size(func_handle):
    return _args.kernel_args_get_handle_mem_size(func_handle)


@rt.one(0)
def kernel_args_append(args_handle, param, param_size):
    """Append the next parameter: `param` is the host address of its value (or bytes)."""
    return _args.kernel_args_append(args_handle, param, param_size)


@rt.one(0)
def kernel_args_append_place_holder(args_handle):
    return _args.kernel_args_append_place_holder(args_handle)


@rt.one(0)
def kernel_args_get_place_holder_buffer(args_handle, param_handle, data_size):
    return _args.kernel_args_get_place_holder_buffer(args_handle, param_handle, data_size)


@rt.ret
def kernel_args_para_update(args_handle, param_handle, param, param_size):
    _args.kernel_args_para_update(args_handle, param_handle, param, param_size)


@rt.ret
def kernel_args_finalize(args_handle):
    _args.kernel_args_finalize(args_handle)


# ---------------------------------------------------------------- launches
def launch_kernel(func_handle, num_blocks, args_data, args_size, stream):
    """Run `num_blocks` blocks of a kernel on `stream`; `args_data` is device memory holding
    the packed arguments (8 bytes per parameter), read when the launch runs."""
    try:
        _launch_kernel(func_handle, num_blocks, args_data, args_size,
                       (_stream_lookup(stream) or _streams.get(stream)) if stream else None)
        return 0
    except Exception as exc:
        return fail(exc, "acl.rt.launch_kernel")


@rt.ret
def launch_kernel_with_config(func_handle, num_blocks, stream, cfg, args_handle, reserve):
    """Launch with a finalized kernel_args_* block; `cfg` a list of {"id", "value"} or []."""
    _kernel.launch_kernel_with_config(func_handle, num_blocks, stream_of(stream), cfg, args_handle, reserve)


@rt.ret
def launch_kernel_with_host_args(func_handle, num_blocks, stream, cfg, host_args_ptr, host_args_size,
                                 place_holder_list, place_holder_num):
    """Launch with packed arguments in host memory (copied at this call)."""
    _kernel.launch_kernel_with_host_args(func_handle, num_blocks, stream_of(stream), cfg, host_args_ptr,
                                         host_args_size, place_holder_list, place_holder_num)


__all__ = [*rt.names, "launch_kernel"]
