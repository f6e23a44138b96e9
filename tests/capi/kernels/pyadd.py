# A Python kernel binary (npurt's own kind), loaded from C by kernel_checks.cpp.
import numpy as np

from npurt import GM, kernel


@kernel
def pyadd(ctx, z: GM, x: GM, y: GM, n: np.uint32):
    lo, hi = ctx.block_range(n)
    ctx.gm(z, np.int32, n)[lo:hi] = ctx.gm(x, np.int32, n)[lo:hi] + ctx.gm(y, np.int32, n)[lo:hi]
