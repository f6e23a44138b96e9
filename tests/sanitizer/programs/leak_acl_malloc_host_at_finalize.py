"""Seeded bug (leakcheck, pyACL): pinned host memory never freed before acl.finalize.

expect: leakcheck leak
"""
import acl

acl.init()
acl.rt.set_device(0)
host, _ = acl.rt.malloc_host(1 << 16)
acl.rt.reset_device(0)
acl.finalize()
