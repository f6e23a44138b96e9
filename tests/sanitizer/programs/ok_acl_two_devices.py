"""Correct (pyACL): data moves from device 0 to device 1 (peer access), each step ordered by
an event or a synchronize.

expect: nothing
"""
import acl

N = 1 << 16
acl.init()
acl.rt.set_device(1)
s1, _ = acl.rt.create_stream()
dev1, _ = acl.rt.malloc(N, 0)
acl.rt.set_device(0)
acl.rt.device_enable_peer_access(1, 0)
s0, _ = acl.rt.create_stream()
dev0, _ = acl.rt.malloc(N, 0)
host, _ = acl.rt.malloc_host(N)
acl.util.ptr_to_numpy(host, (N,), 2)[:] = 7
acl.rt.memcpy_async(dev0, N, host, N, 1, s0)
acl.rt.synchronize_stream(s0)
acl.rt.memcpy_async(dev1, N, dev0, N, 3, s0)                  # device 0 -> device 1
done, _ = acl.rt.create_event()
acl.rt.record_event(done, s0)
acl.rt.synchronize_event(done)
acl.rt.set_device(1)
acl.rt.memcpy_async(host, N, dev1, N, 2, s1)
acl.rt.synchronize_stream(s1)
print("device 1 holds the data:", bool((acl.util.ptr_to_numpy(host, (N,), 2) == 7).all()))
acl.rt.free(dev1)
acl.rt.destroy_stream(s1)
acl.rt.reset_device(1)
acl.rt.set_device(0)
acl.rt.destroy_event(done)
acl.rt.free(dev0)
acl.rt.free_host(host)
acl.rt.destroy_stream(s0)
acl.rt.reset_device(0)
acl.rt.reset_device(0)
acl.finalize()
