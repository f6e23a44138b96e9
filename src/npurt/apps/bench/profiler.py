"""What profiling costs: the same workload with the profiler collecting and without.

profiler_overhead is a two-stream pipeline through the pyACL facade (batch i copied host
to device on a copy stream while the compute stream runs gelu on an earlier batch and
copies it back; events order the streams: the demo's shape), timed with a profile
collecting everything (tasks, host API calls, allocations, markers) over the same pipeline
with none, alternately, the ratio's median reported (target <= 1.3). Only the workload is
timed: building the timeline and writing files happen after it, as in a real run.
profiler_tiny_task_us is what collection adds to one tiny copy + synchronize_stream, the
worst case (the runtime's own cost there is a few microseconds).
"""
from __future__ import annotations

import gc

import numpy as np

from .harness import Profile, Stat, clock
from .metrics import D2D, D2H, H2D, TINY, Session, check, ops_launch, host_array, value
from ...runtime import RUNTIME
from ...tools import profiler   # its Profile collects; harness.Profile is the benchmark's sizes


def measure(s: Session, p: Profile) -> dict[str, Stat]:
    rt = s.acl.rt
    B, batches = p.overlap_batch_bytes, p.overlap_batches
    n = B // 4
    host = s.malloc_host(B * batches)
    host_array(host, B * batches, np.float32)[:] = np.random.default_rng().random(n * batches, dtype=np.float32)
    back = s.malloc_host(B * batches)
    d_in = [s.malloc(B) for _ in range(2)]
    d_out = [s.malloc(B) for _ in range(2)]
    copy = value(rt.create_stream(), "create_stream")
    events = [value(rt.create_event(), "create_event") for _ in range(4)]
    ready, done = events[:2], events[2:]
    compute = s.stream
    compute_obj = RUNTIME.streams.get(compute)
    launch = ops_launch

    def pipeline() -> None:
        for i in range(batches):
            j = i % 2
            if i >= 2:
                rt.stream_wait_event(copy, done[j])
            rt.memcpy_async(d_in[j], B, host + i * B, B, H2D, copy)
            rt.record_event(ready[j], copy)
            rt.stream_wait_event(compute, ready[j])
            launch.elementwise("gelu", d_out[j], d_in[j], None, n, np.float32, stream=compute_obj)
            rt.memcpy_async(back + i * B, B, d_out[j], B, D2H, compute)
            rt.record_event(done[j], compute)
        check(rt.synchronize_stream(compute), "synchronize_stream")
        check(rt.synchronize_stream(copy), "synchronize_stream")

    def tiny(calls: int) -> None:
        for _ in range(calls):
            rt.memcpy_async(s.dev_b, TINY, s.dev_a, TINY, D2D, compute)
            rt.synchronize_stream(compute)

    def timed(fn, profiled: bool) -> float:
        prof = profiler.Profile().start() if profiled else None
        try:
            t0 = clock()
            fn()
            return clock() - t0
        finally:
            if prof is not None:
                prof.stop()

    try:
        for _ in range(p.warmup):
            timed(pipeline, False)
            timed(pipeline, True)
        gc.collect()
        ratios, tiny_us = [], []
        calls = max(100, p.latency_calls // 4)
        for i in range(p.overlap_repeats):
            order = (False, True) if i % 2 else (True, False)
            t = {flag: timed(pipeline, flag) for flag in order}
            ratios.append(t[True] / t[False])
            t = {flag: timed(lambda: tiny(calls), flag) for flag in order}
            tiny_us.append((t[True] - t[False]) / calls * 1e6)
        return {"profiler_overhead": Stat.of(ratios), "profiler_tiny_task_us": Stat.of(tiny_us)}
    finally:
        for e in events:
            rt.destroy_event(e)
        rt.destroy_stream(copy)
