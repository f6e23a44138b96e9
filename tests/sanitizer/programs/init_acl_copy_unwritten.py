"""Seeded bug (initcheck, pyACL): device memory copied back before anything was written to it.

expect: initcheck uninitialized read
"""
import numpy as np

import acl

N = 4096
acl.init()
acl.rt.set_device(0)
dev, _ = acl.rt.malloc(N, 0)
out = np.empty(N, np.uint8)
acl.rt.memcpy(acl.util.numpy_to_ptr(out), N, dev, N, 2)     # dev was never written
acl.rt.free(dev)
acl.rt.reset_device(0)
acl.finalize()
