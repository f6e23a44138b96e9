"""Asynchronous copies on a stream with page-locked host buffers (acl.rt.malloc_host).

memcpy_async only enqueues the copy; synchronize_stream waits for it. Page-locked host
memory makes the copy truly asynchronous (ordinary pageable memory would make the call
wait). Both addresses must be 64-byte aligned, which malloc and malloc_host guarantee.
"""
import acl
import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
NPY_FLOAT32 = 11  # NumPy type number, as acl.util.ptr_to_numpy takes it


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def main():
    check("acl.init", acl.init())
    check("set_device", acl.rt.set_device(0))
    stream, ret = acl.rt.create_stream()
    check("create_stream", ret)

    n = 1 << 18
    nbytes = n * 4
    host_in, ret = acl.rt.malloc_host(nbytes)
    check("malloc_host", ret)
    host_out, ret = acl.rt.malloc_host(nbytes)
    check("malloc_host", ret)
    dev, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)

    src = acl.util.ptr_to_numpy(host_in, (n,), NPY_FLOAT32)  # a view of the pinned buffer
    src[:] = np.arange(n, dtype=np.float32)

    batches = 4
    chunk = nbytes // batches
    for i in range(batches):  # enqueue everything, then wait once
        off = i * chunk
        check("memcpy_async H2D", acl.rt.memcpy_async(dev + off, nbytes - off, host_in + off, chunk,
                                                      ACL_MEMCPY_HOST_TO_DEVICE, stream))
    check("memcpy_async D2H", acl.rt.memcpy_async(host_out, nbytes, dev, nbytes, ACL_MEMCPY_DEVICE_TO_HOST,
                                                  stream))
    status, ret = acl.rt.stream_query(stream)
    check("stream_query", ret)
    check("synchronize_stream", acl.rt.synchronize_stream(stream))
    status, ret = acl.rt.stream_query(stream)
    check("stream_query", ret)
    print(f"{batches + 1} async copies done, stream status {status} (0 = complete)")

    out = acl.util.ptr_to_numpy(host_out, (n,), NPY_FLOAT32)
    print(f"async round trip matches: {bool(np.array_equal(out, src))}")

    del src, out  # views of the pinned buffers: drop them before freeing
    check("free", acl.rt.free(dev))
    check("free_host", acl.rt.free_host(host_in))
    check("free_host", acl.rt.free_host(host_out))
    check("destroy_stream", acl.rt.destroy_stream(stream))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())


if __name__ == "__main__":
    main()
