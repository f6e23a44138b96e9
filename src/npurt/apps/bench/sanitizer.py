"""What the sanitizer costs: the demo's workload with every tool on over the same with none.

sanitizer_overhead runs the demo's pipeline (`npurt.apps.demo._Pipeline`: pinned input batches
copied up on a copy stream, a scoring kernel of one elementwise layer on a compute stream,
events between them, scores copied back into pinned memory) alternately with a sanitizer
enabled (race, mem, init, leak, sync) and without; the ratio's median is reported (target
<= 3). Only the pipeline is timed; the end-of-run checks happen after it. The batch has the
demo's width and up to its rows (fewer in --quick).
"""
from __future__ import annotations

import gc

import numpy as np

import npurt

from .. import demo
from ...tools.sanitizer import Sanitizer
from .harness import Profile, Stat, clock


def measure(s, p: Profile) -> dict[str, Stat]:
    rows = max(16, min(demo.ROWS, p.overlap_batch_bytes // (demo.COLS * 4)))
    batches = max(2, min(demo.DEFAULT_BATCHES, p.overlap_batches))
    rng = np.random.default_rng(0)
    host_in = []
    for _ in range(batches):
        buf = npurt.empty_pinned((rows, demo.COLS), np.float32)
        buf[...] = rng.standard_normal((rows, demo.COLS), dtype=np.float32)
        host_in.append(buf)
    outs = [npurt.empty_pinned(rows, np.float32) for _ in range(batches)]
    w = rng.uniform(0.5, 1.5, (1, demo.COLS)).astype(np.float32)
    b = rng.uniform(-0.1, 0.1, (1, demo.COLS)).astype(np.float32)
    pipe = demo._Pipeline(npurt, host_in, outs, w, b)   # uploads the weights and synchronizes

    def timed(sanitized: bool) -> float:
        san = Sanitizer("all", echo=False).enable() if sanitized else None
        try:
            t0 = clock()
            pipe.run(1)
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
