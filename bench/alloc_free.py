"""The malloc + free figure of issue 2: `python bench/alloc_free.py [--calls N] [--size BYTES]`.

Times acl.rt.malloc + acl.rt.free of a cached block (the caching pool's fast path: the block
is reused every time) through the pyACL facade, and numpy's np.empty + drop of the same size
as the host reference, in the same run. Medians of 31 samples of N calls, after warm-up.
"""
from __future__ import annotations

import argparse

import numpy as np

from npurt import acl
from npurt.bench.harness import clock, per_call_us
from npurt.bench.report import fmt_stat
from npurt.runtime import constants as C


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000, help="calls per sample")
    parser.add_argument("--size", type=int, default=4096, help="bytes per allocation")
    args = parser.parse_args()
    n, size = args.calls, args.size
    ret = acl.init()
    assert ret == 0, ret
    assert acl.rt.set_device(0) == 0
    malloc, free, policy = acl.rt.malloc, acl.rt.free, C.ACL_MEM_MALLOC_HUGE_FIRST

    def npurt_loop(calls):
        t0 = clock()
        for _ in range(calls):
            ptr, _ret = malloc(size, policy)
            free(ptr)
        return clock() - t0

    def numpy_loop(calls):
        empty, u8 = np.empty, np.uint8
        t0 = clock()
        for _ in range(calls):
            empty(size, u8)
        return clock() - t0

    ours = per_call_us(npurt_loop, n, 31, 2)
    ref = per_call_us(numpy_loop, n, 31, 2)
    print(f"acl.rt.malloc + acl.rt.free, {size} B, cached: {fmt_stat(ours)} us (median [min-max])")
    print(f"np.empty + drop, {size} B (host reference):   {fmt_stat(ref)} us")
    print(f"target (issue 2): <= 1 us median -> {'met' if ours.median <= 1 else 'NOT met'}")
    acl.rt.reset_device(0)
    acl.finalize()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
