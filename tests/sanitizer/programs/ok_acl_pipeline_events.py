"""Correct (pyACL): a two-stream pipeline with double-buffered pinned input. The copy stream
uploads batch i while the compute stream works on batch i-1; events order every hand-over,
and the host refills a staging buffer only after the copy that read it completed.

expect: nothing
"""
import numpy as np

import acl

N, BATCHES = 1 << 14, 6
ACL_EVENT_SYNC = 1
acl.init()
acl.rt.set_device(0)
copy, _ = acl.rt.create_stream()
compute, _ = acl.rt.create_stream()
staging = [acl.rt.malloc_host(N * 4)[0] for _ in range(2)]
views = [acl.util.ptr_to_numpy(p, (N,), 11) for p in staging]
dev_in = [acl.rt.malloc(N * 4, 0)[0] for _ in range(2)]
dev_out, _ = acl.rt.malloc(N * 4, 0)
result, _ = acl.rt.malloc_host(N * 4)
uploaded = [acl.rt.create_event()[0] for _ in range(2)]
consumed = [acl.rt.create_event()[0] for _ in range(2)]
total = 0.0
for i in range(BATCHES):
    slot = i % 2
    if i >= 2:
        acl.rt.synchronize_event(uploaded[slot])             # the copy that read this staging buffer is done
        acl.rt.stream_wait_event(copy, consumed[slot])       # and compute is done with the device buffer
    views[slot][:] = np.float32(i)
    acl.rt.memcpy_async(dev_in[slot], N * 4, staging[slot], N * 4, 1, copy)
    acl.rt.record_event(uploaded[slot], copy)
    acl.rt.stream_wait_event(compute, uploaded[slot])
    acl.rt.memcpy_async(dev_out, N * 4, dev_in[slot], N * 4, 3, compute)
    acl.rt.record_event(consumed[slot], compute)
    acl.rt.memcpy_async(result, N * 4, dev_out, N * 4, 2, compute)
    acl.rt.synchronize_stream(compute)
    total += float(acl.util.ptr_to_numpy(result, (N,), 11)[0])
print("pipeline sum matches:", total == sum(range(BATCHES)))
acl.rt.synchronize_stream(copy)
for e in uploaded + consumed:
    acl.rt.destroy_event(e)
for p in dev_in + [dev_out]:
    acl.rt.free(p)
for p in staging + [result]:
    acl.rt.free_host(p)
acl.rt.destroy_stream(copy)
acl.rt.destroy_stream(compute)
acl.rt.reset_device(0)
acl.finalize()
