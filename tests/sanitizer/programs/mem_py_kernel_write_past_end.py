"""Seeded bug (memcheck, Pythonic): an off-by-one output view: the kernel writes one element
past the end of its output array.

expect: memcheck illegal access|illegal write
"""
import numpy as np

import npurt
from npurt.runtime.kernel import launch


@npurt.kernel
def prefix(ctx, x: npurt.GM, out: npurt.GM, n: np.int32):
    o = ctx.gm(out, np.float32, n + 1, "w")      # n + 1: one past the end
    o[1:] = np.cumsum(ctx.gm(x, np.float32, n, "r"))
    o[0] = 0


x = npurt.ones((255,), np.float32)
out = npurt.empty((255,), np.float32)
launch(prefix, 1, (x.ptr, out.ptr, x.size))
try:
    npurt.synchronize()
except npurt.NpuError as exc:
    print("the kernel failed:", exc.code)
