"""Seeded bug (racecheck, Pythonic): npurt.to_device of a numpy array is asynchronous (the
copy reads the array when it runs); the host overwrites the array before the stream has
passed the copy.

expect: racecheck WAR hazard
"""
import numpy as np

import npurt

host = np.ones(1 << 16, np.float32)
s = npurt.Stream()
x = npurt.to_device(host, stream=s)
host[:] = 0.0                                    # too early: s may not have copied it yet
s.synchronize()
