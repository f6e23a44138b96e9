"""Seeded bug (racecheck, pyACL): a synchronous acl.rt.memcpy reads a device buffer that an
asynchronous copy on a stream is still writing (memcpy does not wait for streams).

expect: racecheck RAW hazard
"""
import numpy as np

import acl

N = 1 << 16
acl.init()
acl.rt.set_device(0)
stream, _ = acl.rt.create_stream()
dev, _ = acl.rt.malloc(N, 0)
pinned, _ = acl.rt.malloc_host(N)
acl.util.ptr_to_numpy(pinned, (N,), 2)[:] = 3
out = np.zeros(N, np.uint8)
acl.rt.memcpy_async(dev, N, pinned, N, 1, stream)                            # the stream writes dev
acl.rt.memcpy(acl.util.numpy_to_ptr(out), N, dev, N, 2)                      # the host reads it now
acl.rt.synchronize_stream(stream)
acl.rt.free(dev)
acl.rt.free_host(pinned)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
