"""acl.rt kernel loading and launch (aclrtBinaryLoadFromFile, aclrtLaunchKernel, the
aclrtKernelArgs* builder).

A kernel binary is a Python file of `@kernel` functions (`from npurt import kernel, GM`)
where CANN loads an Ascend C `.o`; see npurt.runtime.binary and npurt.runtime.kernel for
the rules and their error codes. Binary, function and args handles are ints.
"""
from __future__ import annotations

from .. import runtime as api  # the runtime's operations: its published surface
from ._wrap import Group, Raise, stream_of

rt = Group("acl.rt")


def _options(options):
    """binary load options / launch config as the real wrapper takes them: a list."""
    if not isinstance(options, list):
        raise Raise(ValueError("argument 2 only support the format of list"))
    return options


# ---------------------------------------------------------------- binaries and functions
@rt.one(0, args="sO", message="acl.rt.binary_load_from_file args parse failed!")
def binary_load_from_file(bin_path, options):
    """Load a kernel binary (a Python file of @kernel functions); `options` a list or []."""
    return api.binary_load_from_file(bin_path, _options(options)).handle


@rt.one(0, args="kkO", message="acl.rt.binary_load_from_data args parse failed!")
def binary_load_from_data(mem_addr, length, options):
    """Load a kernel binary from `length` bytes of host memory at `mem_addr`."""
    return api.binary_load_from_data(mem_addr, length, _options(options)).handle


@rt.value(0, args="kk")
def create_binary(data, data_len):
    """Binary data to load later with binary_load; returns its handle (no ret)."""
    return api.create_binary(data, data_len).handle


@rt.ret(args="k")
def destroy_binary(binary):
    api.destroy_binary(binary)


@rt.one(0, args="k")
def binary_load(binary):
    return api.binary_load(binary).handle


@rt.ret(args="k")
def binary_unload(bin_handle):
    """Unload a binary; its function handles become stale (queued launches still run)."""
    api.binary_unload(bin_handle)


@rt.one(0, args="ks")
def binary_get_function(bin_handle, kernel_name):
    return api.binary_get_function(bin_handle, kernel_name).handle


@rt.one(0, args="kss", message="acl.rt.register_cpu_func args parse failed!")
def register_cpu_func(bin_handle, func_name, kernel_name):
    """AI CPU kernels do not exist here: ACL_ERROR_RT_FEATURE_NOT_SUPPORT."""
    if not func_name or not kernel_name:
        raise Raise(ValueError("argument 2 or 3 must not be empty"))
    return api.register_cpu_func(bin_handle, func_name, kernel_name).handle


@rt.many(0, 0, args="k", message="acl.rt.get_function_addr args parse failed!")
def get_function_addr(func_handle):
    return api.get_function_addr(func_handle)


@rt.one("", args="kI", message="acl.rt.get_function_name args parse failed!")
def get_function_name(func_handle, max_len):
    if max_len >= 1024:
        raise Raise(ValueError("maxLen should be less than 1024"))
    return api.get_function_name(func_handle, max_len)


# ---------------------------------------------------------------- kernel args builder
@rt.one(0, args="k")
def kernel_args_init(func_handle):
    return api.kernel_args_init(func_handle).handle


@rt.ret(args="kkkk")
def kernel_args_init_by_user_mem(func_handle, args_handle, user_host_mem, actual_args_size):
    api.kernel_args_init_by_user_mem(func_handle, args_handle, user_host_mem, actual_args_size)


@rt.one(0, args="kk")
def kernel_args_get_mem_size(func_handle, user_args_size):
    return api.kernel_args_get_mem_size(func_handle, user_args_size)


@rt.one(0, args="k")
def kernel_args_get_handle_mem_size(func_handle):
    return api.kernel_args_get_handle_mem_size(func_handle)


@rt.one(0, args="kkk")
def kernel_args_append(args_handle, param, param_size):
    """Append the next parameter: `param` is the host address of its value."""
    return api.kernel_args_append(args_handle, param, param_size)


@rt.one(0, args="k")
def kernel_args_append_place_holder(args_handle):
    return api.kernel_args_append_place_holder(args_handle)


@rt.one(0, args="kkk")
def kernel_args_get_place_holder_buffer(args_handle, param_handle, data_size):
    return api.kernel_args_get_place_holder_buffer(args_handle, param_handle, data_size)


@rt.ret(args="kkkk")
def kernel_args_para_update(args_handle, param_handle, param, param_size):
    api.kernel_args_para_update(args_handle, param_handle, param, param_size)


@rt.ret(args="k")
def kernel_args_finalize(args_handle):
    api.kernel_args_finalize(args_handle)


# ---------------------------------------------------------------- launches
# the hot path: the runtime operation itself
launch_kernel = rt.ret(args="kIkkT", names="func_handle num_blocks args_data args_size stream", hot=True)(
    api.launch_kernel)


@rt.ret(args="kIkOkk")
def launch_kernel_with_config(func_handle, num_blocks, stream, cfg, args_handle, reserve):
    """Launch with a finalized kernel_args_* block; `cfg` a list of {"id", "value"} or []."""
    api.launch_kernel_with_config(func_handle, num_blocks, stream_of(stream, True), _options(cfg), args_handle,
                                      reserve)


# not in the real module's method table (C API only); the format follows the C signature
@rt.ret(args="kIkOkkOk")
def launch_kernel_with_host_args(func_handle, num_blocks, stream, cfg, host_args_ptr, host_args_size,
                                 place_holder_list, place_holder_num):
    """Launch with packed arguments in host memory (copied at this call)."""
    api.launch_kernel_with_host_args(func_handle, num_blocks, stream_of(stream, True), cfg, host_args_ptr,
                                         host_args_size, place_holder_list, place_holder_num)


__all__ = [*rt.names]
