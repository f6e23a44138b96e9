"""Seeded bug (leakcheck, Pythonic): a numpy buffer registered so a kernel can use it through
its device alias, never unregistered.

expect: leakcheck leak
"""
import numpy as np

import npurt
from npurt.runtime import api
from npurt.runtime.kernel import launch


@npurt.kernel
def bump(ctx, x: npurt.GM, n: np.int32):
    v = ctx.gm(x, np.int32, n)
    v += 1


buf = np.zeros(2 * 4096, np.uint8)
base = (buf.ctypes.data + 4095) // 4096 * 4096
view = np.frombuffer((np.ctypeslib.as_ctypes_type(np.uint8) * 4096).from_address(base), np.int32)
npurt.set_device(0)
alias = api.host_register(base, 4096)            # never api.host_unregister(base)
launch(bump, 1, (alias, 1024))
npurt.synchronize()
print(view[:4])
