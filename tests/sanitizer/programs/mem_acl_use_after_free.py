"""Seeded bug (memcheck, pyACL): a copy from a buffer after it was freed.

expect: memcheck use after free
"""
import numpy as np

import acl

N = 4096
acl.init()
acl.rt.set_device(0)
dev, _ = acl.rt.malloc(N, 0)
acl.rt.memset(dev, N, 1, N)
acl.rt.free(dev)
out = np.zeros(N, np.uint8)
acl.rt.memcpy(acl.util.numpy_to_ptr(out), N, dev, N, 2)      # dev is gone
acl.rt.reset_device(0)
acl.finalize()
