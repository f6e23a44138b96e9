"""Correct (Pythonic): temporaries dropped on one stream are reused by the pool for arrays
on another stream; the stream-ordered free makes that safe.

expect: nothing
"""
import numpy as np

import npurt

a, b = npurt.Stream(), npurt.Stream()
host = np.ones(1 << 14, np.float32)
total = 0.0
for i in range(6):
    s = a if i % 2 else b
    with npurt.stream(s):
        t = npurt.to_device(host) * float(i)     # temporaries freed at once, reused next round
        total += float(t.sum().item())
print("total:", total)
