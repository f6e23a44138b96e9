"""Seeded bug (memcheck, Pythonic): a kernel launched with the address of an array that was
already dropped (its memory went back to the pool).

expect: memcheck use after free
"""
import numpy as np

import npurt
from npurt.runtime.kernel import launch


@npurt.kernel
def scale(ctx, x: npurt.GM, n: np.int32):
    v = ctx.gm(x, np.float32, n)
    v *= 2


x = npurt.ones((1024,), np.float32)
ptr, n = x.ptr, x.size
npurt.synchronize()
del x                                            # the array is gone; ptr dangles
try:
    launch(scale, 1, (ptr, n))
except npurt.NpuError as exc:
    print("launch refused:", exc.code)
