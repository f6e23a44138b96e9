"""Seeded bug (memcheck, pyACL): a copy of 16 bytes more than the allocation's requested
size. The allocation's padding (sizes are rounded up to 32 bytes plus 32) would let an NPU
survive it silently.

expect: memcheck illegal access|illegal write
"""
import acl

N = 1000
acl.init()
acl.rt.set_device(0)
stream, _ = acl.rt.create_stream()
dev, _ = acl.rt.malloc(N, 0)
pinned, _ = acl.rt.malloc_host(N + 16)
acl.rt.memcpy_async(dev, N + 16, pinned, N + 16, 1, stream)   # dest_max says N + 16: wrong
acl.rt.synchronize_stream(stream)
acl.rt.free(dev)
acl.rt.free_host(pinned)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
