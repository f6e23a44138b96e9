"""Issue 18's latency targets on a shared machine: `python bench/paired_cpu.py [--rounds N]`.

`npurt bench` times wall clock, which other processes on a loaded machine inflate by several
times from one sample to the next. This script measures what the load disturbs much less:
the CPU time of the calling thread (`time.thread_time_ns`) per call, with the loops it
compares interleaved round by round in one process, so each ratio pairs samples taken
moments apart. The loops are the bench's: pyACL facade rows, their Pythonic rows, PoCL's
buffer create + release (when pyopencl is installed), and the Pythonic `c = a + b` on 4 KiB.
Enqueue loops stop the clock before their final synchronize, as the bench does; a worker's
CPU (running what was enqueued) is not the calling thread's and is not counted.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import npurt
from npurt import acl

CALLS = 2000


def _loops() -> dict:
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    rt, f32 = acl.rt, np.float32
    stream, _ = rt.create_stream()
    dev, _ = rt.malloc(64, 0)
    host, _ = rt.malloc_host(64)
    event, _ = rt.create_event()
    pstream, pevent = npurt.Stream(), npurt.Event()
    parr, phost = npurt.empty(16, f32), np.zeros(16, f32)
    a, b = npurt.empty(1024, f32), npurt.empty(1024, f32)
    a.copy_from_host(np.ones(1024, f32), stream=pstream)
    b.copy_from_host(np.ones(1024, f32), stream=pstream)
    pstream.synchronize()
    H2D = 1

    def timed(body, after=None):
        def loop():
            t0 = time.thread_time_ns()
            body()
            t = time.thread_time_ns() - t0
            if after is not None:
                after()
            return t / CALLS / 1000
        return loop

    def enqueue():
        for _ in range(CALLS):
            rt.memcpy_async(dev, 64, host, 64, H2D, stream)

    def roundtrip():
        for _ in range(CALLS):
            rt.memcpy_async(dev, 64, host, 64, H2D, stream)
            rt.synchronize_stream(stream)

    def event_sync():
        for _ in range(CALLS):
            rt.record_event(event, stream)
            rt.synchronize_event(event)

    def alloc_free():
        for _ in range(CALLS):
            p, _ = rt.malloc(4096, 0)
            rt.free(p)

    def py_enqueue():
        for _ in range(CALLS):
            parr.copy_from_host(phost, stream=pstream)

    def py_roundtrip():
        for _ in range(CALLS):
            parr.copy_from_host(phost, stream=pstream)
            pstream.synchronize()

    def py_event():
        for _ in range(CALLS):
            pevent.record(pstream)
            pevent.synchronize()

    def py_empty():
        for _ in range(CALLS):
            npurt.empty(1024, f32)

    def py_add():
        with npurt.stream(pstream):
            for _ in range(CALLS):
                c = a + b  # noqa: F841

    loops = {"enqueue_us": timed(enqueue, lambda: rt.synchronize_stream(stream)),
             "roundtrip_us": timed(roundtrip), "event_sync_us": timed(event_sync),
             "alloc_free_us": timed(alloc_free),
             "enqueue_py_us": timed(py_enqueue, pstream.synchronize),
             "roundtrip_py_us": timed(py_roundtrip), "event_sync_py_us": timed(py_event),
             "alloc_free_py_us": timed(py_empty), "elementwise_py_us": timed(py_add, pstream.synchronize)}
    try:
        import pyopencl as cl
    except ImportError:
        return loops
    ctx = cl.Context(cl.get_platforms()[0].get_devices())
    flags = cl.mem_flags.READ_WRITE

    def pocl():
        for _ in range(CALLS):
            cl.Buffer(ctx, flags, 4096).release()
    loops["alloc_free_pocl_us"] = timed(pocl)
    return loops


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31, help="interleaved samples of each loop")
    args = parser.parse_args()
    loops = _loops()
    for fn in loops.values():  # warm-up
        fn()
    samples = {k: [] for k in loops}
    for _ in range(args.rounds):
        for k, fn in loops.items():
            samples[k].append(fn())
    med = {k: statistics.median(v) for k, v in samples.items()}
    print(f"CPU time of the calling thread per call, medians of {args.rounds} interleaved samples of "
          f"{CALLS} calls (load average {' '.join(f'{x:.1f}' for x in __import__('os').getloadavg())})")
    for k, v in med.items():
        print(f"  {k:20s} {v:8.3f} us")
    pairs = [("enqueue_py_us", "enqueue_us", 2), ("roundtrip_py_us", "roundtrip_us", 2),
             ("event_sync_py_us", "event_sync_us", 2), ("alloc_free_py_us", "alloc_free_us", 2),
             ("alloc_free_us", "alloc_free_pocl_us", 1)]
    for num, den, target in pairs:
        if num in med and den in med:
            r = statistics.median(x / y for x, y in zip(samples[num], samples[den]))
            print(f"  {num} / {den}: {r:.2f} (target <= {target}: {'met' if r <= target else 'NOT met'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
