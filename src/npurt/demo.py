"""`npurt demo`: a small inference pipeline that shows what a runtime does.

A two-layer MLP (matmul -> gelu -> matmul -> softmax) runs over a few batches. Input
batches sit in pinned (page-locked) host memory. A *copy stream* moves batch i+1 to the
device while a *compute stream* works on batch i; events order the two:

    copy stream:     [wait "slot free"] H2D batch i -> record "batch i ready"
    compute stream:  wait "batch i ready" -> x@W1 -> gelu -> record "slot free"
                     -> @W2 -> softmax -> D2H into pinned output

Two device input buffers alternate (double buffering). Timing events on both streams give
the timeline; the same work on one stream gives the no-overlap baseline. The result is
checked against numpy; the exit status is non-zero if it does not match.
"""
from __future__ import annotations

import os
import time

import numpy as np

# default problem: a few MiB per batch, so that copies are visible next to the compute
BATCH, D_IN, HIDDEN, CLASSES = 1024, 2048, 16, 16
DEFAULT_BATCHES = 8
ROUNDS = 2
RTOL, ATOL = 1e-4, 1e-6


def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def reference(x: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """The same MLP in float64 numpy (gelu: the tanh approximation the kernel uses)."""
    logits = _gelu(x.astype(np.float64) @ w1) @ w2
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class _Batch:
    """Timing events of one batch."""

    def __init__(self, npurt):
        ev = lambda: npurt.Event(enable_timing=True)  # noqa: E731
        self.copy_start, self.copy_end, self.compute_start, self.compute_end = ev(), ev(), ev(), ev()
        self.slot_free = npurt.Event()


def _run(npurt, host_in, outs, w1, w2, copy, compute):
    """Queue the whole pipeline; copy and compute may be the same stream (baseline)."""
    ops = npurt.ops
    slots = [npurt.empty(host_in[0].shape) for _ in range(2)]
    batches = []
    for i, host in enumerate(host_in):
        b = _Batch(npurt)
        slot = slots[i % 2]
        if i >= 2:
            copy.wait_event(batches[i - 2].slot_free)   # do not overwrite a buffer still in use
        b.copy_start.record(copy)
        slot.copy_from_host(host, stream=copy)
        b.copy_end.record(copy)
        compute.wait_event(b.copy_end)                  # the batch is on the device
        with npurt.stream(compute):
            b.compute_start.record()
            h = ops.gelu(slot @ w1)
            b.slot_free.record()
            probs = ops.softmax(h @ w2)
            probs.copy_to_host(out=outs[i], blocking=False)
            b.compute_end.record()
        batches.append(b)
    compute.synchronize()
    copy.synchronize()
    return batches


def _timeline(batches, width: int = 64) -> tuple[list[str], dict]:
    t0 = batches[0].copy_start
    spans = {"copy": [], "compute": []}
    for i, b in enumerate(batches):
        spans["copy"].append((i, t0.elapsed_time(b.copy_start), t0.elapsed_time(b.copy_end)))
        spans["compute"].append((i, t0.elapsed_time(b.compute_start), t0.elapsed_time(b.compute_end)))
    end = max(e for rows in spans.values() for _, _, e in rows) or 1e-9
    lines = []
    for name, rows in spans.items():
        cells = [" "] * width
        for i, s, e in rows:
            a = min(int(s / end * width), width - 1)
            while a < width - 1 and cells[a] != " ":  # a short span right after another
                a += 1
            for c in range(a, max(a + 1, min(int(round(e / end * width)), width))):
                cells[c] = str(i % 10)
        lines.append(f"  {name:<8}|{''.join(cells)}|")
    busy = {k: sum(e - s for _, s, e in rows) for k, rows in spans.items()}
    return lines, {"span": end, **busy, "rows": spans}


def main(batches: int | None = None, quiet: bool = False, profile: str | None = None) -> int:
    """Run the demo; returns the exit status (0: results match numpy). With `profile`, the
    run is profiled and the trace, the summaries and summary.txt are written there."""
    import npurt

    n = DEFAULT_BATCHES if batches is None else int(batches)
    if n < 1:
        print("npurt demo: --batches must be at least 1")
        return 2
    prof = None
    if profile is not None:
        try:
            prof = npurt.profiler.profile(profile).start()  # checks the directory before any work
        except npurt.NpuError as exc:
            print(f"npurt demo: {exc.message}")
            return 2
    try:
        return _main(npurt, n, quiet, prof)
    finally:
        if prof is not None and prof.running:
            prof.stop()


def _main(npurt, n: int, quiet: bool, prof) -> int:
    rng_name = npurt.profiler.range  # a named range on the profile's timeline (no-op without one)
    say = (lambda *a: None) if quiet else print
    rng = np.random.default_rng()
    props = npurt.get_device_properties(0)
    npurt.set_device(0)

    # host side: inputs in pinned memory, weights on the device
    host_in = []
    for _ in range(n):
        buf = npurt.empty_pinned((BATCH, D_IN), np.float32)
        buf[...] = rng.standard_normal((BATCH, D_IN), dtype=np.float32)
        host_in.append(buf)
    w1_h = (rng.standard_normal((D_IN, HIDDEN)) / np.sqrt(D_IN)).astype(np.float32)
    w2_h = (rng.standard_normal((HIDDEN, CLASSES)) / np.sqrt(HIDDEN) * 3).astype(np.float32)
    w1, w2 = npurt.to_device(w1_h), npurt.to_device(w2_h)
    outs = [npurt.empty_pinned((BATCH, CLASSES), np.float32) for _ in range(n)]

    copy_stream, compute_stream = npurt.Stream(), npurt.Stream()
    compute_stream.wait_stream(npurt.current_stream())  # the weights were uploaded on the default stream
    say(f"npurt demo: MLP inference ({BATCH}x{D_IN} -> {HIDDEN} -> {CLASSES}, matmul+gelu+matmul+softmax) "
        f"over {n} batches")
    say(f"  device 0: simulated {props.name}, {props.multi_processor_count} AI cores; copy stream "
        f"{copy_stream.stream_id}, compute stream {compute_stream.stream_id}; inputs in pinned host memory "
        f"({BATCH * D_IN * 4 / 2**20:.0f} MiB per batch)")

    # warm-up: first-use costs (worker threads, pool segments, BLAS buffers per thread) must
    # not count against either variant; then the best of two rounds of each
    with rng_name("warm-up"):
        _run(npurt, host_in[:2], outs[:2], w1, w2, copy_stream, compute_stream)
        _run(npurt, host_in[:2], outs[:2], w1, w2, compute_stream, compute_stream)
    one_stream_ms = two_stream_ms = float("inf")
    for r in range(ROUNDS):
        t = time.perf_counter()
        with rng_name(f"one stream, round {r + 1}"):
            _run(npurt, host_in, outs, w1, w2, compute_stream, compute_stream)
        one_stream_ms = min(one_stream_ms, (time.perf_counter() - t) * 1e3)
        for o in outs:
            o.fill(np.nan)  # the checked results must come from the two-stream run
        npurt.reset_peak_memory_stats()
        t = time.perf_counter()
        with rng_name(f"two streams, round {r + 1}"):
            recs = _run(npurt, host_in, outs, w1, w2, copy_stream, compute_stream)
        two_stream_ms = min(two_stream_ms, (time.perf_counter() - t) * 1e3)

    lines, tl = _timeline(recs)
    say("\n  batch  H2D on copy stream        compute + D2H on compute stream   (ms from the first copy)")
    for (i, cs, ce), (_, ks, ke) in zip(tl["rows"]["copy"], tl["rows"]["compute"]):
        say(f"  {i:>5}  {cs:7.2f} -> {ce:7.2f}  ({ce - cs:5.2f})   {ks:7.2f} -> {ke:7.2f}  ({ke - ks:5.2f})")
    say(f"\n  timeline ({tl['span']:.1f} ms across, digits are batch numbers):")
    for line in lines:
        say(line)

    overlap = tl["copy"] + tl["compute"] - tl["span"]
    say(f"\n  busy time: copies {tl['copy']:.1f} ms + compute {tl['compute']:.1f} ms = "
        f"{tl['copy'] + tl['compute']:.1f} ms; device span {tl['span']:.1f} ms")
    if overlap > 0.05 * tl["copy"]:
        say(f"  overlap: {overlap:.1f} ms of copying ran while the compute stream was busy "
            f"({min(100.0, 100 * overlap / max(tl['copy'], 1e-9)):.0f}% of the copy time hidden)")
    else:
        say("  overlap: none measured this run (copies and compute did not run at the same time)")
    say(f"  wall time (best of {ROUNDS}): two streams {two_stream_ms:.1f} ms, one stream {one_stream_ms:.1f} ms "
        f"({one_stream_ms / max(two_stream_ms, 1e-9):.2f}x)")
    say(f"  note: the simulated DMA engines and AI cores share this host's {os.cpu_count()} CPU cores (and "
        "numpy's BLAS threads), so overlap shortens the wall time only while cores are idle; "
        "timings on a shared host are noisy")
    stats = npurt.memory_stats()
    say(f"  device memory: peak {stats['peak_allocated_bytes'] / 2**20:.1f} MiB, "
        f"{stats['num_allocs']} allocations of which {stats['pool_hits']} served from the caching pool")

    if prof is not None:
        prof.stop()
        _say_profile(say, prof, f"two streams, round {ROUNDS}", overlap)

    got = np.stack(outs).astype(np.float64)
    want = np.stack([reference(x, w1_h, w2_h) for x in host_in])
    err = float(np.max(np.abs(got - want)))
    ok = bool(np.allclose(got, want, rtol=RTOL, atol=ATOL))
    verdict = "PASS" if ok else "FAIL"
    print(f"npurt demo: {verdict}: {n} batches, result matches numpy (max abs error {err:.2e}, "
          f"rtol {RTOL}, atol {ATOL})" if ok else
          f"npurt demo: {verdict}: result differs from numpy (max abs error {err:.2e}, rtol {RTOL}, atol {ATOL})")
    return 0 if ok else 1


def _say_profile(say, prof, step: str, overlap_ms: float) -> None:
    """Where the profile went, and its overlap figure for the round the demo reports beside
    the demo's own (tests/test_profiler_entry_points.py reads this line and checks that the
    two agree)."""
    head, rows = prof.tables["overlap"]
    col = head.index("Overlapped(us)")
    measured = [float(r[col]) / 1e3 for r in rows if r[1] == step]
    say(f"\n  profile: {len(prof.timeline.tasks)} tasks written to {prof.out_dir} (msprof.json: open it in "
        "https://ui.perfetto.dev; `npurt plot` draws it)")
    if measured:
        say(f"  profile: streams overlapped {measured[-1]:.1f} ms in '{step}' (overlap.csv); the demo measured "
            f"{overlap_ms:.1f} ms with events")


if __name__ == "__main__":
    import sys
    sys.exit(main())
