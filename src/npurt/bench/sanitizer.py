"""What the sanitizer costs: the demo's workload with every tool on over the same with none.

sanitizer_overhead runs the demo's pipeline (`npurt.demo._run`: pinned input batches copied
up on a copy stream, matmul -> gelu -> matmul -> softmax on a compute stream, events between
them, results copied back into pinned memory) alternately with a sanitizer enabled (race,
mem, init, leak, sync) and without; the ratio's median is reported (target <= 3). Only the
pipeline is timed; the end-of-run checks happen after it. The batch has the demo's width
and up to its rows (fewer in --quick).
"""
from __future__ import annotations

import gc

import numpy as np

from .harness import Profile, Stat, clock


def measure(s, p: Profile) -> dict[str, Stat]:
    import npurt
    from .. import demo
    from ..tools.sanitizer import Sanitizer
    rows = max(16, min(demo.BATCH, p.overlap_batch_bytes // (demo.D_IN * 4)))
    batches = max(2, min(demo.DEFAULT_BATCHES, p.overlap_batches))
    rng = np.random.default_rng(0)
    host_in = []
    for _ in range(batches):
        buf = npurt.empty_pinned((rows, demo.D_IN), np.float32)
        buf[...] = rng.standard_normal((rows, demo.D_IN), dtype=np.float32)
        host_in.append(buf)
    outs = [npurt.empty_pinned((rows, demo.CLASSES), np.float32) for _ in range(batches)]
    w1 = npurt.to_device((rng.standard_normal((demo.D_IN, demo.HIDDEN)) / 45).astype(np.float32))
    w2 = npurt.to_device(rng.standard_normal((demo.HIDDEN, demo.CLASSES)).astype(np.float32))
    copy, compute = npurt.Stream(), npurt.Stream()
    compute.wait_stream(npurt.current_stream())

    def timed(sanitized: bool) -> float:
        san = Sanitizer("all", echo=False).enable() if sanitized else None
        try:
            t0 = clock()
            demo._run(npurt, host_in, outs, w1, w2, copy, compute)
            return clock() - t0
        finally:
            if san is not None:
                san.disable()
                if san.reports:  # the demo is correct: a report here is a sanitizer bug
                    raise RuntimeError("the sanitizer reported errors in the demo's pipeline:\n"
                                       + "\n".join(r.text() for r in san.reports))

    for _ in range(p.warmup):
        timed(False)
        timed(True)
    gc.collect()
    ratios = []
    for i in range(p.overlap_repeats):
        order = (False, True) if i % 2 else (True, False)
        t = {flag: timed(flag) for flag in order}
        ratios.append(t[True] / t[False])
    return {"sanitizer_overhead": Stat.of(ratios)}
