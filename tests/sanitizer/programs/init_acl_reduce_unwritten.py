"""Seeded bug (initcheck, pyACL): reduce_async accumulates a source buffer nobody filled.

expect: initcheck uninitialized read
"""
import acl

N = 4096
ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_FLOAT = 10, 0
acl.init()
acl.rt.set_device(0)
stream, _ = acl.rt.create_stream()
dst, _ = acl.rt.malloc(N, 0)
src, _ = acl.rt.malloc(N, 0)
acl.rt.memset(dst, N, 0, N)
acl.rt.reduce_async(dst, src, N, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_FLOAT, stream, 0)  # src unwritten
acl.rt.synchronize_stream(stream)
acl.rt.free(dst)
acl.rt.free(src)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
