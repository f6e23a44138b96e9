"""Seeded bug (memcheck, pyACL): free of an address inside an allocation instead of its start.

expect: memcheck illegal free
"""
import acl

acl.init()
acl.rt.set_device(0)
dev, _ = acl.rt.malloc(4096, 0)
acl.rt.free(dev + 1024)
acl.rt.free(dev)
acl.rt.reset_device(0)
acl.finalize()
