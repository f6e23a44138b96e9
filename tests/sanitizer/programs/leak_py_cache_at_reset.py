"""Seeded bug (leakcheck, Pythonic): arrays kept in a module-level cache when the device is
reset; the reset releases memory live objects still hold.

expect: leakcheck leak
"""
import numpy as np

import npurt

cache = [npurt.to_device(np.full(1024, i, np.float32)) for i in range(3)]
npurt.synchronize()
npurt.acl.rt.reset_device(0)                     # cache still holds the arrays
