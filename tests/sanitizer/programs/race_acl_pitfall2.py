"""Seeded bug (racecheck, pyACL): the seed's pitfall 2, two streams sharing memory without an
event. Stream 1 fills the device buffer, stream 2 copies it back at the same time; the
reader gets "half-new, half-old" data on an NPU.

expect: racecheck RAW hazard
"""
import numpy as np

import acl

N = 1 << 20
acl.init()
acl.rt.set_device(0)
writer, _ = acl.rt.create_stream()
reader, _ = acl.rt.create_stream()
dev, _ = acl.rt.malloc(N, 0)
host_in, _ = acl.rt.malloc_host(N)
host_out, _ = acl.rt.malloc_host(N)
acl.util.ptr_to_numpy(host_in, (N,), 2)[:] = np.arange(N) % 251

acl.rt.memcpy_async(dev, N, host_in, N, 1, writer)     # stream 1 writes dev
acl.rt.memcpy_async(host_out, N, dev, N, 2, reader)    # stream 2 reads dev: nothing orders it after the write

acl.rt.synchronize_stream(writer)
acl.rt.synchronize_stream(reader)
for p in (host_in, host_out):
    acl.rt.free_host(p)
acl.rt.free(dev)
acl.rt.destroy_stream(writer)
acl.rt.destroy_stream(reader)
acl.rt.reset_device(0)
acl.finalize()
