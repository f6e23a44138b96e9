"""The latency figures again through the Pythonic API (npurt.Stream, npurt.Event,
npurt.DeviceArray), shown beside the pyACL ones in the table (not in the JSON), each with
its ratio to the pyACL row (report.derived), and `c = a + b` on 4 KiB arrays.

The tiny task is a 64-byte host -> device copy into a DeviceArray on a stream: the Pythonic
API keeps the host array alive until the copy has run, so it stays asynchronous.
"""
from __future__ import annotations

import numpy as np

import npurt

from .harness import Profile, Stat, clock, per_call_us


def measure(session, p: Profile) -> dict[str, Stat]:
    if not hasattr(npurt, "Stream"):
        raise RuntimeError("the Pythonic API (npurt.Stream, npurt.Event, npurt.empty) is not available")
    stream = npurt.Stream()
    dev = npurt.empty(16, np.float32)       # 64 bytes
    host = np.zeros(16, np.float32)
    event = npurt.Event()
    copy, synchronize = dev.copy_from_host, stream.synchronize
    record, wait = event.record, event.synchronize
    empty, f32 = npurt.empty, np.float32
    copy(host, stream=stream)
    synchronize()

    def enqueue(n):
        t0 = clock()
        for _ in range(n):
            copy(host, stream=stream)
        t = clock() - t0
        synchronize()
        return t

    def roundtrip(n):
        t0 = clock()
        for _ in range(n):
            copy(host, stream=stream)
            synchronize()
        return clock() - t0

    def event_sync(n):
        t0 = clock()
        for _ in range(n):
            record(stream)
            wait()
        return clock() - t0

    def alloc_free(n):
        t0 = clock()
        for _ in range(n):
            empty(1024, f32)  # 4 KiB, dropped at once: freed
        return clock() - t0

    a, b = npurt.empty(1024, f32), npurt.empty(1024, f32)  # 4 KiB each
    a.copy_from_host(np.ones(1024, f32), stream=stream)
    b.copy_from_host(np.ones(1024, f32), stream=stream)

    def elementwise(n):  # c = a + b in a loop: each result dropped when c is rebound
        with npurt.stream(stream):
            t0 = clock()
            for _ in range(n):
                c = a + b  # noqa: F841
            t = clock() - t0
        synchronize()
        return t

    def elementwise_sync(n):  # the same add, each followed by a synchronize of its stream
        with npurt.stream(stream):
            t0 = clock()
            for _ in range(n):
                c = a + b  # noqa: F841
                synchronize()
            return clock() - t0

    calls, reps, warm = p.latency_calls, p.latency_repeats, p.warmup
    try:
        figures = {"enqueue_py_us": per_call_us(enqueue, calls, reps, warm),
                   "roundtrip_py_us": per_call_us(roundtrip, calls, reps, warm),
                   "event_sync_py_us": per_call_us(event_sync, calls, reps, warm),
                   "alloc_free_py_us": per_call_us(alloc_free, calls, reps, warm),
                   "elementwise_py_us": per_call_us(elementwise, calls, reps, warm),
                   "elementwise_sync_py_us": per_call_us(elementwise_sync, calls, reps, warm)}
        with npurt.stream(stream):
            if not np.array_equal((a + b).to_host(), np.full(1024, 2, f32)):
                raise RuntimeError("the Pythonic a + b gave a wrong result")
        return figures
    finally:
        synchronize()
        del dev
