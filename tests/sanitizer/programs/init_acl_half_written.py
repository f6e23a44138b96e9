"""Seeded bug (initcheck, pyACL): only the first half of a buffer is uploaded, all of it is
copied back.

expect: initcheck uninitialized read
"""
import acl

N = 8192
acl.init()
acl.rt.set_device(0)
stream, _ = acl.rt.create_stream()
dev, _ = acl.rt.malloc(N, 0)
pinned, _ = acl.rt.malloc_host(N)
acl.util.ptr_to_numpy(pinned, (N,), 2)[:] = 5
acl.rt.memcpy_async(dev, N, pinned, N // 2, 1, stream)       # the first half only
acl.rt.memcpy_async(pinned, N, dev, N, 2, stream)            # all of it back
acl.rt.synchronize_stream(stream)
acl.rt.free(dev)
acl.rt.free_host(pinned)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
