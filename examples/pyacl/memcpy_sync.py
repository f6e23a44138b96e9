"""Synchronous copies: host -> device -> host with acl.rt.memcpy, and a check of the data.

acl.rt.memcpy is immediate: it copies in the calling thread and returns when done.
"""
import acl
import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def main():
    check("acl.init", acl.init())
    check("set_device", acl.rt.set_device(0))

    host_in = np.random.default_rng().standard_normal(1 << 16).astype(np.float32)
    nbytes = host_in.nbytes
    dev_ptr, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)

    # host -> device from the numpy buffer's address
    check("memcpy H2D", acl.rt.memcpy(dev_ptr, nbytes, acl.util.numpy_to_ptr(host_in), nbytes,
                                      ACL_MEMCPY_HOST_TO_DEVICE))
    # device -> host into a fresh array
    host_out = np.zeros_like(host_in)
    check("memcpy D2H", acl.rt.memcpy(acl.util.numpy_to_ptr(host_out), nbytes, dev_ptr, nbytes,
                                      ACL_MEMCPY_DEVICE_TO_HOST))
    print(f"copied {nbytes} bytes host -> device -> host")
    print(f"data matches: {bool(np.array_equal(host_in, host_out))}")

    # the same through bytes, as newer pyACL samples do
    data = host_in[:16].tobytes()
    check("memcpy H2D (bytes)", acl.rt.memcpy(dev_ptr, nbytes, acl.util.bytes_to_ptr(data), len(data),
                                              ACL_MEMCPY_HOST_TO_DEVICE))
    host_buf, ret = acl.rt.malloc_host(len(data))
    check("malloc_host", ret)
    check("memcpy D2H (pinned)", acl.rt.memcpy(host_buf, len(data), dev_ptr, len(data),
                                               ACL_MEMCPY_DEVICE_TO_HOST))
    print(f"bytes round trip matches: {acl.util.ptr_to_bytes(host_buf, len(data)) == data}")

    check("free_host", acl.rt.free_host(host_buf))
    check("free", acl.rt.free(dev_ptr))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())


if __name__ == "__main__":
    main()
