"""Seeded bug (memcheck, Pythonic): a kernel whose view is 8 elements longer than the array
it is given.

expect: memcheck illegal access|illegal read
"""
import numpy as np

import npurt
from npurt.runtime.kernel import launch


@npurt.kernel
def total(ctx, x: npurt.GM, out: npurt.GM, n: np.int32):
    ctx.gm(out, np.float32, 1, "w")[0] = ctx.gm(x, np.float32, n + 8, "r").sum()   # n + 8: off the end


x = npurt.ones((1000,), np.float32)
out = npurt.empty((1,), np.float32)
s = npurt.current_stream()
launch(total, 1, (x.ptr, out.ptr, x.size), stream=s.runtime_stream)
try:
    s.synchronize()
except npurt.NpuError as exc:
    print("the kernel failed:", exc.code)
