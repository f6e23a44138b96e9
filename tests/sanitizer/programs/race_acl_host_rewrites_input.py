"""Seeded bug (racecheck, pyACL): one pinned staging buffer reused for every batch. The host
fills it for batch i+1 while the asynchronous copy of batch i may still read it.

expect: racecheck WAR hazard
"""
import numpy as np

import acl

N = 4096
acl.init()
acl.rt.set_device(0)
stream, _ = acl.rt.create_stream()
staging, _ = acl.rt.malloc_host(N * 4)
view = acl.util.ptr_to_numpy(staging, (N,), 11)
devs = [acl.rt.malloc(N * 4, 0)[0] for _ in range(3)]
for i, dev in enumerate(devs):
    view[:] = np.float32(i)                                      # rewrites the buffer the last copy reads
    acl.rt.memcpy_async(dev, N * 4, staging, N * 4, 1, stream)   # no synchronize before the next rewrite
acl.rt.synchronize_stream(stream)
for dev in devs:
    acl.rt.free(dev)
acl.rt.free_host(staging)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
