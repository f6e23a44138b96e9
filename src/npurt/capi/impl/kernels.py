"""Kernel binaries and launches (acl_rt.h: aclrtBinaryLoadFromFile ... aclrtLaunchKernel*,
the aclrtKernelArgs* builder) and npurt's native launch entry point, over the runtime's
kernel operations.

A binary is what the runtime loads: a shared object of native kernels built by npurt's
`ascendc_fatbin_library` (see npurt.runtime.native) or a Python file of @kernel functions;
binary, function and args handles are the runtime's ints, the same the pyACL facade hands
out. `npurtLaunchNativeKernel` is what `kernel<<<blocks, l2ctrl, stream>>>(args...)`
compiles to with npurt's toolchain.
"""
from __future__ import annotations

import ctypes
import struct

import numpy as np

from ... import runtime as rt
from ..cstructs import c_string, launch_cfg, load_options, place_holders
from ..registry import c_function
from ._common import note_task, null, stream_of


def _stream(handle):
    return rt.stream_of(stream_of(handle))


def _out(p, name: str, value) -> int:
    if not p:
        raise null(name)
    p[0] = value
    return 0


@c_function("npurtLaunchNativeKernel")
def npurtLaunchNativeKernel(name, kernel, trampoline, kinds, blockDim, stream, slots, count):
    kinds_s = c_string(kinds, "kinds")
    if len(kinds_s) != count:
        raise rt.InvalidValueError(f"kernel {c_string(name, 'name')!r}: {count} arguments for {len(kinds_s)} parameters")
    if count and not slots:
        raise null("slots")
    packed = struct.pack(f"<{count}Q", *(slots[i] for i in range(count)))
    note_task(rt.launch_native(c_string(name, "name"), kernel, trampoline, kinds_s, blockDim, _stream(stream),
                               packed))
    return 0


@c_function("aclrtBinaryLoadFromFile")
def aclrtBinaryLoadFromFile(binPath, options, binHandle):
    if not binHandle:
        raise null("binHandle")
    return _out(binHandle, "binHandle", rt.binary_load_from_file(c_string(binPath, "binPath"),
                                                                  load_options(options)).handle)


@c_function("aclrtBinaryLoadFromData")
def aclrtBinaryLoadFromData(data, length, options, binHandle):
    if not data:
        raise null("data")
    if not binHandle:
        raise null("binHandle")
    return _out(binHandle, "binHandle", rt.binary_load_from_data(data, length, load_options(options)).handle)


@c_function("aclrtCreateBinary")
def aclrtCreateBinary(data, dataLen):
    if not data:
        raise null("data")
    return rt.create_binary(data, dataLen).handle


@c_function("aclrtDestroyBinary")
def aclrtDestroyBinary(binary):
    rt.destroy_binary(binary)
    return 0


@c_function("aclrtBinaryLoad")
def aclrtBinaryLoad(binary, binHandle):
    if not binHandle:
        raise null("binHandle")
    return _out(binHandle, "binHandle", rt.binary_load(binary).handle)


@c_function("aclrtBinaryUnLoad")
def aclrtBinaryUnLoad(binHandle):
    rt.binary_unload(binHandle)
    return 0


@c_function("aclrtBinaryGetFunction")
def aclrtBinaryGetFunction(binHandle, kernelName, funcHandle):
    if not funcHandle:
        raise null("funcHandle")
    return _out(funcHandle, "funcHandle", rt.binary_get_function(binHandle, c_string(kernelName, "kernelName")).handle)


@c_function("aclrtRegisterCpuFunc")
def aclrtRegisterCpuFunc(handle, funcName, kernelName, funcHandle):
    rt.binary_of(handle)
    raise rt.FeatureNotSupportedError("aclrtRegisterCpuFunc: AI CPU kernels are not supported by the simulated "
                                      "NPU; write the kernel in Ascend C (npurt's ascendc_library) or as a Python "
                                      "@kernel function")


@c_function("aclrtGetFunctionName")
def aclrtGetFunctionName(funcHandle, maxLen, name):
    if not name:
        raise null("name")
    text = rt.get_function_name(funcHandle, maxLen).encode()
    ctypes.memmove(name, text + b"\0", len(text) + 1)
    return 0


@c_function("aclrtFunctionGetBinary")
def aclrtFunctionGetBinary(funcHandle, binHandle):
    func = rt.function_of(funcHandle)
    if func.binary is None:
        raise rt.InvalidValueError(f"kernel {func.name!r} was not loaded from a kernel binary")
    return _out(binHandle, "binHandle", func.binary.handle)


@c_function("aclrtGetFunctionAddr")
def aclrtGetFunctionAddr(funcHandle, aicAddr, aivAddr):
    aic, aiv = rt.get_function_addr(funcHandle)
    _out(aicAddr, "aicAddr", aic)
    return _out(aivAddr, "aivAddr", aiv)


@c_function("aclrtLaunchKernel")
def aclrtLaunchKernel(funcHandle, numBlocks, argsData, argsSize, stream):
    note_task(rt.launch_kernel(funcHandle, numBlocks, argsData, argsSize, _stream(stream)))
    return 0


@c_function("aclrtLaunchKernelV2")
def aclrtLaunchKernelV2(funcHandle, numBlocks, argsData, argsSize, cfg, stream):
    note_task(rt.launch_kernel(funcHandle, numBlocks, argsData, argsSize, _stream(stream), launch_cfg(cfg)))
    return 0


@c_function("aclrtLaunchKernelWithConfig")
def aclrtLaunchKernelWithConfig(funcHandle, numBlocks, stream, cfg, argsHandle, reserve):
    note_task(rt.launch_kernel_with_config(funcHandle, numBlocks, _stream(stream), launch_cfg(cfg), argsHandle,
                                           reserve or None))
    return 0


@c_function("aclrtLaunchKernelWithHostArgs")
def aclrtLaunchKernelWithHostArgs(funcHandle, numBlocks, stream, cfg, hostArgs, argsSize, placeHolderArray,
                                  placeHolderNum):
    if not hostArgs:
        raise null("hostArgs")
    holders = place_holders(placeHolderArray, placeHolderNum)
    note_task(rt.launch_kernel_with_host_args(funcHandle, numBlocks, _stream(stream), launch_cfg(cfg), hostArgs,
                                              argsSize, holders, len(holders)))
    return 0


def _slot_size(annotation) -> int:
    if annotation is rt.GM:
        return 8
    if annotation in (int, float):
        return 8
    if annotation is bool:
        return 1
    return np.dtype(annotation).itemsize


@c_function("aclrtLaunchKernelWithArgsArray")
def aclrtLaunchKernelWithArgsArray(func, numBlocks, stream, cfg, args):
    """`func`: a function handle, or the address of a native kernel npurt has met (a <<<>>>
    launch of it, or a loaded binary holding it); `args`: one host pointer per parameter."""
    kernel = rt.RUNTIME.functions.lookup(func) if func else None
    if kernel is None:
        kernel = rt.native_kernel_at(func) if func else None
    if kernel is None:
        raise rt.InvalidValueError(f"func 0x{func:x} is neither a function handle (aclrtBinaryGetFunction) nor a "
                                   "kernel npurt has met (launch it once with <<<>>>, or load its binary)")
    params = kernel.params
    if params and not args:
        raise null("args")
    raw = b""
    for i, (name, annotation) in enumerate(params):  # args: void ** arrives as a uintptr_t *
        pointer = args[i]
        if not pointer:
            raise null(f"args[{i}] ({name})")
        raw += ctypes.string_at(pointer, _slot_size(annotation)).ljust(8, b"\0")
    note_task(rt.launch(kernel, numBlocks, raw, _stream(stream), cfg=launch_cfg(cfg)))
    return 0


@c_function("aclrtKernelArgsInit")
def aclrtKernelArgsInit(funcHandle, argsHandle):
    if not argsHandle:
        raise null("argsHandle")
    return _out(argsHandle, "argsHandle", rt.kernel_args_init(funcHandle).handle)


@c_function("aclrtKernelArgsInitByUserMem")
def aclrtKernelArgsInitByUserMem(funcHandle, argsHandle, userHostMem, actualArgsSize):
    rt.kernel_args_init_by_user_mem(funcHandle, argsHandle, userHostMem, actualArgsSize)
    return 0


@c_function("aclrtKernelArgsGetMemSize")
def aclrtKernelArgsGetMemSize(funcHandle, userArgsSize, actualArgsSize):
    return _out(actualArgsSize, "actualArgsSize", rt.kernel_args_get_mem_size(funcHandle, userArgsSize))


@c_function("aclrtKernelArgsGetHandleMemSize")
def aclrtKernelArgsGetHandleMemSize(funcHandle, memSize):
    return _out(memSize, "memSize", rt.kernel_args_get_handle_mem_size(funcHandle))


@c_function("aclrtKernelArgsAppend")
def aclrtKernelArgsAppend(argsHandle, param, paramSize, paramHandle):
    if not param:
        raise null("param")
    handle = rt.kernel_args_append(argsHandle, param, paramSize)
    if paramHandle:
        paramHandle[0] = handle
    return 0


@c_function("aclrtKernelArgsAppendPlaceHolder")
def aclrtKernelArgsAppendPlaceHolder(argsHandle, paramHandle):
    if not paramHandle:
        raise null("paramHandle")
    return _out(paramHandle, "paramHandle", rt.kernel_args_append_place_holder(argsHandle))


@c_function("aclrtKernelArgsGetPlaceHolderBuffer")
def aclrtKernelArgsGetPlaceHolderBuffer(argsHandle, paramHandle, dataSize, bufferAddr):
    if not bufferAddr:
        raise null("bufferAddr")
    return _out(bufferAddr, "bufferAddr", rt.kernel_args_get_place_holder_buffer(argsHandle, paramHandle, dataSize))


@c_function("aclrtKernelArgsParaUpdate")
def aclrtKernelArgsParaUpdate(argsHandle, paramHandle, param, paramSize):
    if not param:
        raise null("param")
    rt.kernel_args_para_update(argsHandle, paramHandle, param, paramSize)
    return 0


@c_function("aclrtKernelArgsFinalize")
def aclrtKernelArgsFinalize(argsHandle):
    rt.kernel_args_finalize(argsHandle)
    return 0
