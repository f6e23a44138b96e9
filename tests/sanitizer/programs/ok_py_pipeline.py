"""Correct (Pythonic): the demo's pattern on a small scale. Weights made on the default
stream are waited for; batches go up on a copy stream, compute waits for each batch's
event, results come back into pinned memory.

expect: nothing
"""
import numpy as np

import npurt

rng = np.random.default_rng(1)
w = npurt.to_device(rng.standard_normal((64, 8)).astype(np.float32))
copy, compute = npurt.Stream(), npurt.Stream()
compute.wait_stream(npurt.current_stream())
inputs = [npurt.empty_pinned((128, 64)) for _ in range(4)]
outs = [npurt.empty_pinned((128, 8)) for _ in range(4)]
for i, buf in enumerate(inputs):
    buf[...] = rng.standard_normal((128, 64))
    with npurt.stream(copy):
        x = npurt.to_device(buf)
        ready = copy.record_event()
    compute.wait_event(ready)
    with npurt.stream(compute):
        npurt.ops.softmax(x @ w).copy_to_host(out=outs[i], blocking=False)
compute.synchronize()
print("rows sum to 1:", all(np.allclose(o.sum(axis=1), 1, atol=1e-5) for o in outs))
