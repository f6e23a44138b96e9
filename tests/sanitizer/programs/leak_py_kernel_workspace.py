"""Seeded bug (leakcheck, Pythonic): a raw workspace for a custom kernel taken from the
runtime API and never freed (DeviceArrays free themselves; raw allocations do not).

expect: leakcheck leak
"""
import numpy as np

import npurt
from npurt.runtime import api
from npurt.runtime.kernel import launch


@npurt.kernel
def twice(ctx, x: npurt.GM, tmp: npurt.GM, n: np.int32):
    t = ctx.gm(tmp, np.float32, n, "w")
    np.multiply(ctx.gm(x, np.float32, n, "r"), 2, out=t)
    ctx.gm(x, np.float32, n, "w")[:] = t


x = npurt.ones((512,), np.float32)
workspace = api.malloc(x.nbytes)                 # never api.free(workspace)
launch(twice, 1, (x.ptr, workspace, x.size))
print(x.to_host()[:2])
