"""Seeded bug (racecheck, Pythonic): two streams fill the same array with no event between
them; which value wins depends on timing.

expect: racecheck WAW hazard
"""
import numpy as np

import npurt

x = npurt.zeros((1 << 14,), np.float32)
s1, s2 = npurt.Stream(), npurt.Stream()
s1.wait_stream(npurt.current_stream())
s2.wait_stream(npurt.current_stream())
x.fill(1.0, stream=s1)
x.fill(2.0, stream=s2)                           # no s2.wait_event(...) after s1's fill
npurt.synchronize()
print(x.to_host()[:4])
