"""A custom kernel launched from a kernel binary file.

Where CANN loads an Ascend C kernel object (.o), npurt loads a Python file of @kernel
functions: ../kernels/vadd.py. The flow is pyACL's:

1. binary_load_from_file -> binary_get_function (by kernel name)
2. pack the arguments, one 8-byte slot per parameter, into device memory
3. launch_kernel(func, num_blocks, args_dev, args_size, stream), synchronize, check
4. the same kernel family through the kernel_args_* builder and launch_kernel_with_config
"""
import os
import struct

import acl
import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
KERNEL_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels", "vadd.py")
NUM_BLOCKS = 8


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def upload(array):
    dev, ret = acl.rt.malloc(array.nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)
    check("memcpy H2D", acl.rt.memcpy(dev, array.nbytes, acl.util.numpy_to_ptr(array), array.nbytes,
                                      ACL_MEMCPY_HOST_TO_DEVICE))
    return dev


def download(dev, like):
    out = np.empty_like(like)
    check("memcpy D2H", acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, dev, out.nbytes,
                                      ACL_MEMCPY_DEVICE_TO_HOST))
    return out


def main():
    check("acl.init", acl.init())
    check("set_device", acl.rt.set_device(0))
    stream, ret = acl.rt.create_stream()
    check("create_stream", ret)

    binary, ret = acl.rt.binary_load_from_file(KERNEL_FILE, [])
    check("binary_load_from_file", ret)
    vadd, ret = acl.rt.binary_get_function(binary, "vadd")
    check("binary_get_function", ret)
    name, ret = acl.rt.get_function_name(vadd, 64)
    check("get_function_name", ret)
    print(f"loaded kernel {name!r} from {os.path.basename(KERNEL_FILE)}")

    rng = np.random.default_rng()
    n = 100_000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    x_dev, y_dev = upload(x), upload(y)
    z_dev, ret = acl.rt.malloc(x.nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)

    # vadd(x: GM, y: GM, z: GM, n: int32): four 8-byte slots, in device memory
    args = struct.pack("<QQQi4x", x_dev, y_dev, z_dev, n)
    args_dev, ret = acl.rt.malloc(len(args), ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc args", ret)
    check("memcpy args", acl.rt.memcpy(args_dev, len(args), acl.util.bytes_to_ptr(args), len(args),
                                       ACL_MEMCPY_HOST_TO_DEVICE))
    check("launch_kernel", acl.rt.launch_kernel(vadd, NUM_BLOCKS, args_dev, len(args), stream))
    check("synchronize_stream", acl.rt.synchronize_stream(stream))
    z = download(z_dev, x)
    print(f"vadd over {NUM_BLOCKS} blocks matches numpy: {bool(np.allclose(z, x + y))}")

    # scale(x: GM, y: GM, alpha: float32, n: int32) built with the kernel_args_* functions
    scale, ret = acl.rt.binary_get_function(binary, "scale")
    check("binary_get_function", ret)
    kargs, ret = acl.rt.kernel_args_init(scale)
    check("kernel_args_init", ret)
    values = [struct.pack("<Q", z_dev), struct.pack("<Q", y_dev), struct.pack("<f", 0.5), struct.pack("<i", n)]
    for value in values:  # each parameter: the host address of its value, and its size
        _, ret = acl.rt.kernel_args_append(kargs, acl.util.bytes_to_ptr(value), len(value))
        check("kernel_args_append", ret)
    check("kernel_args_finalize", acl.rt.kernel_args_finalize(kargs))
    check("launch_kernel_with_config", acl.rt.launch_kernel_with_config(scale, NUM_BLOCKS, stream, [], kargs, 0))
    check("synchronize_stream", acl.rt.synchronize_stream(stream))
    half = download(y_dev, x)
    print(f"scale via kernel_args matches numpy: {bool(np.allclose(half, 0.5 * (x + y)))}")

    check("binary_unload", acl.rt.binary_unload(binary))
    for ptr in (x_dev, y_dev, z_dev, args_dev):
        check("free", acl.rt.free(ptr))
    check("destroy_stream", acl.rt.destroy_stream(stream))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())


if __name__ == "__main__":
    main()
