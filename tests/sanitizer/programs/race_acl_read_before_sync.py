"""Seeded bug (racecheck, pyACL): the host reads the result buffer of an asynchronous
device-to-host copy before synchronizing the stream.

expect: racecheck RAW hazard
"""
import acl

N = 1 << 16
acl.init()
acl.rt.set_device(0)
stream, _ = acl.rt.create_stream()
dev, _ = acl.rt.malloc(N, 0)
result, _ = acl.rt.malloc_host(N)
acl.rt.memset(dev, N, 9, N)
acl.rt.memcpy_async(result, N, dev, N, 2, stream)
data = acl.util.ptr_to_bytes(result, N)          # too early: the copy may not have run
acl.rt.synchronize_stream(stream)
acl.rt.free(dev)
acl.rt.free_host(result)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
