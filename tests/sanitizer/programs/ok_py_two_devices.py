"""Correct (Pythonic): an array computed on device 0 is moved to device 1 and used there,
with a host synchronize between the devices.

expect: nothing
"""
import numpy as np

import npurt

x = npurt.to_device(np.arange(4096, dtype=np.float32))
y = (x * 2).to(1)
npurt.synchronize(0)
with npurt.device(1):
    s = npurt.Stream()
    s.wait_stream(npurt.current_stream(1))
    with npurt.stream(s):
        z = y + 1
    got = z.to_host(stream=s)
print("device 1 result:", bool(got[10] == 21))
