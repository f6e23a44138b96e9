"""Seeded bug (memcheck, pyACL): the same allocation freed twice (the second free's ret code
is ignored, as scripts often do).

expect: memcheck double free
"""
import acl

acl.init()
acl.rt.set_device(0)
dev, _ = acl.rt.malloc(4096, 0)
acl.rt.memset(dev, 4096, 0, 4096)
acl.rt.free(dev)
acl.rt.free(dev)
acl.rt.reset_device(0)
acl.finalize()
