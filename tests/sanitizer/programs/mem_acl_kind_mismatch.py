"""Seeded bug (memcheck, pyACL): a device-to-host copy passed as ACL_MEMCPY_HOST_TO_DEVICE.

expect: memcheck memcpy kind mismatch
"""
import numpy as np

import acl

N = 4096
acl.init()
acl.rt.set_device(0)
dev, _ = acl.rt.malloc(N, 0)
acl.rt.memset(dev, N, 1, N)
out = np.zeros(N, np.uint8)
acl.rt.memcpy(acl.util.numpy_to_ptr(out), N, dev, N, 1)      # the addresses say DEVICE_TO_HOST (2)
acl.rt.free(dev)
acl.rt.reset_device(0)
acl.finalize()
