"""Correct (Pythonic): a user kernel with undeclared views ("rw") writes zeros into fresh
memory; copying the result back is not an uninitialized read (the sanitizer finds what such
a view wrote).

expect: nothing
"""
import numpy as np

import npurt
from npurt.runtime.kernel import launch


@npurt.kernel
def clamp_negative(ctx, x: npurt.GM, out: npurt.GM, n: np.int32):
    lo, hi = ctx.block_range(n)
    np.minimum(ctx.gm(x, np.float32, n)[lo:hi], 0, out=ctx.gm(out, np.float32, n)[lo:hi])


x = npurt.to_device(np.arange(4096, dtype=np.float32))     # all >= 0: every output is 0
out = npurt.empty((4096,), np.float32)
launch(clamp_negative, 4, (x.ptr, out.ptr, x.size))
print("all zero:", not out.to_host().any())
