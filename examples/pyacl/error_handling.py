"""Errors the pyACL way: every call returns a code, acl.get_recent_err_msg() says what
went wrong, acl.rt.get_last_error() / peek_at_last_error() report the thread's latest
code, and an exception-info callback hears about tasks that fail on the device."""
import struct

import acl

ACL_SUCCESS = 0
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_RT_AICORE_EXCEPTION = 507015
ACL_RT_THREAD_LEVEL = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1

# a kernel binary given as data: this kernel reads past the end of its buffer
FAULTY_BINARY = b'''
import numpy as np
from npurt import GM, kernel

@kernel
def overread(ctx, x: GM, n: np.int32):
    ctx.gm(x, np.float32, n + 1024)  # 1024 elements too many
'''

failures = []


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def on_exception(info):
    failures.append((acl.rt.get_error_code_from_exception_info(info),
                     acl.rt.get_stream_id_from_exception_info(info)))


def main():
    check("acl.init", acl.init())
    print(f"second acl.init returns ACL_ERROR_REPEAT_INITIALIZE: {acl.init() == 100002}")
    check("set_device", acl.rt.set_device(0))

    # 1. a bad argument: the code, then the message (reading it clears it)
    ptr, ret = acl.rt.malloc(0, ACL_MEM_MALLOC_HUGE_FIRST)
    print(f"malloc(0) returns ACL_ERROR_INVALID_PARAM: {ret == ACL_ERROR_INVALID_PARAM}")
    print(f"recent error message names the call: {'acl.rt.malloc' in acl.get_recent_err_msg()}")
    print(f"peek keeps the code: {acl.rt.peek_at_last_error(ACL_RT_THREAD_LEVEL) == ret}")
    print(f"get_last_error returns then clears it: "
          f"{acl.rt.get_last_error(ACL_RT_THREAD_LEVEL) == ret and acl.rt.get_last_error(ACL_RT_THREAD_LEVEL) == 0}")

    # 2. a device failure: reported at synchronize and to the exception-info callback
    check("set_exception_info_callback", acl.rt.set_exception_info_callback(on_exception))
    stream, ret = acl.rt.create_stream()
    check("create_stream", ret)
    stream_id, ret = acl.rt.stream_get_id(stream)
    check("stream_get_id", ret)
    binary, ret = acl.rt.binary_load_from_data(acl.util.bytes_to_ptr(FAULTY_BINARY), len(FAULTY_BINARY), [])
    check("binary_load_from_data", ret)
    func, ret = acl.rt.binary_get_function(binary, "overread")
    check("binary_get_function", ret)
    x, ret = acl.rt.malloc(4096, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)
    args = struct.pack("<Qi4x", x, 1024)
    args_dev, ret = acl.rt.malloc(len(args), ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)
    check("memcpy", acl.rt.memcpy(args_dev, len(args), acl.util.bytes_to_ptr(args), len(args),
                                  ACL_MEMCPY_HOST_TO_DEVICE))
    print(f"launch is accepted (async): {acl.rt.launch_kernel(func, 4, args_dev, len(args), stream) == 0}")
    ret = acl.rt.synchronize_stream(stream)
    print(f"synchronize_stream reports the AI core exception: {ret == ACL_ERROR_RT_AICORE_EXCEPTION}")
    print(f"message names the kernel: {'overread' in acl.get_recent_err_msg()}")
    print(f"exception callback saw it: {bool(failures) and failures[0] == (ACL_ERROR_RT_AICORE_EXCEPTION, stream_id)}")

    check("set_exception_info_callback", acl.rt.set_exception_info_callback(None))
    check("binary_unload", acl.rt.binary_unload(binary))
    for p in (x, args_dev):
        check("free", acl.rt.free(p))
    check("destroy_stream", acl.rt.destroy_stream(stream))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())
    print(f"finalize twice returns ACL_ERROR_REPEAT_FINALIZE: {acl.finalize() == 100037}")


if __name__ == "__main__":
    main()
