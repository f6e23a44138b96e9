# A Python kernel binary (npurt's own kind), loaded from C by kernel_checks.cpp.
import numpy as np

from npurt import GM, kernel


@kernel
def pyadd(ctx, z: GM, x: GM, y: GM, n: np.uint32):
    lo, hi = ctx.block_range(n)
    ctx.gm(z, np.int32, n)[lo:hi] = ctx.gm(x, np.int32, n)[lo:hi] + ctx.gm(y, np.int32, n)[lo:hi]


@kernel
def where_blocks_run(ctx, out: GM):
    """out[block] = the simulated core running it * 1000 + block_num (resource limits from C)."""
    ctx.gm(out, np.int32, ctx.block_num)[ctx.block_idx] = ctx.core_id * 1000 + ctx.block_num
