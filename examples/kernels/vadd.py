"""A kernel binary: the npurt counterpart of an Ascend C kernel object file.

Load it with `acl.rt.binary_load_from_file(path, [])` and look kernels up by name with
`acl.rt.binary_get_function(bin_handle, "vadd")`. Each kernel runs as `num_blocks` blocks;
every block handles its share of the `n` elements.
"""
import numpy as np

from npurt import GM, kernel


@kernel
def vadd(ctx, x: GM, y: GM, z: GM, n: np.int32):
    """z = x + y for n float32 elements."""
    lo, hi = ctx.block_range(n)
    xs = ctx.gm(x, np.float32, n)[lo:hi]
    ys = ctx.gm(y, np.float32, n)[lo:hi]
    zs = ctx.gm(z, np.float32, n)[lo:hi]
    np.add(xs, ys, out=zs)


@kernel
def scale(ctx, x: GM, y: GM, alpha: np.float32, n: np.int32):
    """y = alpha * x for n float32 elements."""
    lo, hi = ctx.block_range(n)
    np.multiply(ctx.gm(x, np.float32, n)[lo:hi], alpha, out=ctx.gm(y, np.float32, n)[lo:hi])
