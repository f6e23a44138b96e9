"""Seeded bug (leakcheck, pyACL): a host buffer registered with host_register and never
unregistered.

expect: leakcheck leak
"""
import numpy as np

import acl

acl.init()
acl.rt.set_device(0)
buf = np.zeros(3 * 4096, np.uint8)
base = (acl.util.numpy_to_ptr(buf) + 4095) // 4096 * 4096
alias, _ = acl.rt.host_register(base, 4096, 0)
acl.rt.reset_device(0)
acl.finalize()
