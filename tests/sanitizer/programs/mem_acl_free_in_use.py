"""Seeded bug (memcheck, pyACL): acl.rt.free of a buffer an asynchronous copy still writes.
On an NPU aclrtFree does not wait: the memory can be handed out again under the copy.

expect: memcheck illegal free
"""
import acl

N = 1 << 16
acl.init()
acl.rt.set_device(0)
stream, _ = acl.rt.create_stream()
pinned, _ = acl.rt.malloc_host(N)
dev, _ = acl.rt.malloc(N, 0)
acl.rt.memcpy_async(dev, N, pinned, N, 1, stream)
acl.rt.free(dev)                                 # no synchronize_stream before the free
acl.rt.synchronize_stream(stream)
acl.rt.free_host(pinned)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
