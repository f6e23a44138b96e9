"""Seeded bug (leakcheck, pyACL): a buffer allocated per batch and never freed; the script
ends without reset or finalize (the leaks are reported at exit, grouped by line).

expect: leakcheck leak
"""
import acl

acl.init()
acl.rt.set_device(0)
for batch in range(5):
    buf, _ = acl.rt.malloc(4096, 0)
    acl.rt.memset(buf, 4096, batch, 4096)        # ... used, then forgotten
