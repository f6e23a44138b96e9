"""Seeded bug (racecheck, Pythonic): the seed's torch_npu snippet in npurt form. a and b
are made on the default stream; the matmul runs on stream_compute and the copy of a on
stream_copy, and neither waits for the default stream.

expect: racecheck RAW hazard
"""
import numpy as np

import npurt

rng = np.random.default_rng(0)
a = npurt.to_device(rng.standard_normal((256, 256)).astype(np.float32))   # default stream
b = npurt.to_device(rng.standard_normal((256, 256)).astype(np.float32))
stream_compute, stream_copy = npurt.Stream(), npurt.Stream()
with npurt.stream(stream_compute):
    c = a @ b                                    # reads a and b: no wait for the default stream
with npurt.stream(stream_copy):
    d = a.to_host()                              # reads a on a third stream
stream_compute.synchronize()
