"""Device-to-device copies: synchronous (memcpy) and stream-ordered (memcpy_async), plus
a stream-ordered memset, checked by copying the results back."""
import acl
import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def to_host(dev, nbytes, dtype):
    out = np.empty(nbytes // np.dtype(dtype).itemsize, dtype)
    check("memcpy D2H", acl.rt.memcpy(acl.util.numpy_to_ptr(out), nbytes, dev, nbytes, ACL_MEMCPY_DEVICE_TO_HOST))
    return out


def main():
    check("acl.init", acl.init())
    check("set_device", acl.rt.set_device(0))
    stream, ret = acl.rt.create_stream()
    check("create_stream", ret)

    data = np.random.default_rng().integers(0, 1 << 30, 1 << 15, dtype=np.int32)
    nbytes = data.nbytes
    a, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)
    b, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)
    c, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)
    check("memcpy H2D", acl.rt.memcpy(a, nbytes, acl.util.numpy_to_ptr(data), nbytes, ACL_MEMCPY_HOST_TO_DEVICE))

    check("memcpy D2D", acl.rt.memcpy(b, nbytes, a, nbytes, ACL_MEMCPY_DEVICE_TO_DEVICE))
    print(f"sync D2D matches: {bool(np.array_equal(to_host(b, nbytes, np.int32), data))}")

    check("memset_async", acl.rt.memset_async(c, nbytes, 0, nbytes, stream))
    half = nbytes // 2
    check("memcpy_async D2D", acl.rt.memcpy_async(c, nbytes, b, half, ACL_MEMCPY_DEVICE_TO_DEVICE, stream))
    check("synchronize_stream", acl.rt.synchronize_stream(stream))
    out = to_host(c, nbytes, np.int32)
    n = len(data) // 2
    ok = bool(np.array_equal(out[:n], data[:n]) and not out[n:].any())
    print(f"async D2D (first half) + memset (second half) matches: {ok}")

    for ptr in (a, b, c):
        check("free", acl.rt.free(ptr))
    check("destroy_stream", acl.rt.destroy_stream(stream))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())


if __name__ == "__main__":
    main()
