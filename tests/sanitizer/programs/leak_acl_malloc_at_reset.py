"""Seeded bug (leakcheck, pyACL): a device buffer never freed before reset_device.

expect: leakcheck leak
"""
import acl

acl.init()
acl.rt.set_device(0)
keep, _ = acl.rt.malloc(1 << 20, 0)
tmp, _ = acl.rt.malloc(4096, 0)
acl.rt.free(tmp)                                 # keep is never freed
acl.rt.reset_device(0)
acl.finalize()
