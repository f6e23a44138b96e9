"""`npurt demo`: what a runtime is for, in under a minute.

Part 1, a pipeline. Batches wait in pinned host memory. A *copy stream* moves batch i+1 to
the device (one DMA engine) while a *compute stream* runs a kernel on batch i (one AI core);
events order the two, and a ring of three device buffers is reused only once the kernel that
read a buffer is done:

    copy stream:     [wait "buffer free"] H2D batch i -> record "batch i ready"
    compute stream:  wait "batch i ready" -> score kernel -> record "buffer free" -> D2H scores
                     (the timing events bracket each stream's tasks of a batch)

The stages are balanced as a pipeline designer balances them: the kernel (a stack of
elementwise layers, then a sum per row) gets as many layers as make it take about as long as
one copy, calibrated in this run. The same work on one stream is the baseline, timed back to
back with the two-stream run in each round; the speed-up is the median of the rounds' ratios
(the host is shared: a burst of load spoils a round, not the figure). Beside it the demo prints the best this workload can get on this host: the ideal
from the two stages' times, and what two plain threads doing the same copies and the same
arithmetic reach with no runtime at all. The scores are checked against numpy.

Part 2, bugs. Small programs with the bugs real NPUs punish with crashes, corrupted numbers
or hangs run on npurt, and the demo prints npurt's report for each.

The exit status is 0 only if the scores match numpy and every bug was reported.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

import numpy as np

import npurt

from ..progress import progress as progress_of
from ..kernel import GM, kernel
from .demo_bugs import run_all

ROWS, COLS = 1024, 2048          # one batch: 8 MiB of float32
DEFAULT_BATCHES = 24
ROUNDS = 5                       # rounds of one stream then two; the speed-up is the median ratio
BUFFERS = 3                      # device buffers in the ring
MAX_LAYERS = 64
CHUNK_ROWS = 64                  # the kernel works in cache-sized pieces (256 KiB)
RTOL, ATOL = 1e-4, 1e-3
PROGRESS_MIN = 64                # runs with at least this many batches show progress (on a terminal)
HOST_BATCHES = 32                # distinct input batches in pinned memory (256 MiB at most)


# ---------------------------------------------------------------- the workload
def _score_rows(x, w, b, out) -> None:
    """out[r] = sum over c of the layers relu(h * w[l] + b[l]) applied to x (float32)."""
    if not w.shape[0]:
        np.sum(x, axis=1, out=out)
        return
    h = np.empty((CHUNK_ROWS, x.shape[1]), np.float32)
    for r0 in range(0, x.shape[0], CHUNK_ROWS):
        r1 = min(r0 + CHUNK_ROWS, x.shape[0])
        part, src = h[:r1 - r0], x[r0:r1]
        for layer in range(w.shape[0]):
            np.multiply(src, w[layer], out=part)
            np.add(part, b[layer], out=part)
            np.maximum(part, 0, out=part)
            src = part
        np.sum(part, axis=1, out=out[r0:r1])


def reference(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The scores in float64 numpy."""
    h = x.astype(np.float64)
    for layer in range(w.shape[0]):
        h = np.maximum(h * w[layer] + b[layer], 0)
    return h.sum(axis=1)


@kernel
def score(ctx, x: GM, w: GM, b: GM, out: GM, rows: np.int64, cols: np.int64, layers: np.int64):
    """Scores of this block's rows (see _score_rows)."""
    lo, hi = ctx.block_range(rows)
    X = ctx.gm(x, np.float32, (rows, cols), "r")[lo:hi]
    W = ctx.gm(w, np.float32, (layers, cols), "r")
    B = ctx.gm(b, np.float32, (layers, cols), "r")
    _score_rows(X, W, B, ctx.gm(out, np.float32, rows, "w")[lo:hi])


class _Batch:
    """The events of one batch: timing on both streams, and the buffer-free marker."""

    def __init__(self, npurt):
        ev = lambda: npurt.Event(enable_timing=True)  # noqa: E731
        self.copy_start, self.copy_end, self.compute_start, self.compute_end = ev(), ev(), ev(), ev()
        self.free = npurt.Event()


class _Pipeline:
    """Everything on the device, and one run of the pipeline on a pair of streams."""

    def __init__(self, npurt, host_in, outs, layers_w, layers_b):
        self.npurt, self.host_in, self.outs = npurt, host_in, outs    # batch i reads host_in[i % len]
        self.rows, self.cols = host_in[0].shape
        self.w, self.b = npurt.to_device(layers_w), npurt.to_device(layers_b)
        self.buffers = [npurt.empty((self.rows, self.cols)) for _ in range(BUFFERS)]
        self.scores = [npurt.empty(self.rows) for _ in range(BUFFERS)]
        self.copy, self.compute = npurt.Stream(), npurt.Stream()
        npurt.synchronize()  # the weights were uploaded on the default stream

    def run(self, layers: int, two_streams: bool = True, copies: bool = True, kernels: bool = True,
            batches: int | None = None, progress=None) -> tuple[float, list]:
        """Queue the pipeline and wait for it; returns (seconds, the batches' events)."""
        npurt = self.npurt
        copy = self.copy if two_streams else self.compute
        compute = self.compute
        n = len(self.outs) if batches is None else batches
        events = []
        t0 = time.perf_counter()
        for i in range(n):
            ev, j = _Batch(npurt), i % BUFFERS
            if i >= BUFFERS:
                copy.wait_event(events[i - BUFFERS].free)     # never overwrite a buffer still being read
            ev.copy_start.record(copy)
            if copies:
                self.buffers[j].copy_from_host(self.host_in[i % len(self.host_in)], stream=copy)
            ev.copy_end.record(copy)
            compute.wait_event(ev.copy_end)                  # the batch is on the device
            ev.compute_start.record(compute)
            if kernels:
                score[1, compute](self.buffers[j], self.w, self.b, self.scores[j], self.rows, self.cols, layers)
            ev.free.record(compute)
            if kernels:
                self.scores[j].copy_to_host(out=self.outs[i], stream=compute, blocking=False)
            ev.compute_end.record(compute)
            events.append(ev)
            if progress is not None and (i + 1) % 8 == 0:
                ev.compute_end.synchronize()                # keeps the queue (and the bar) honest
                progress(i + 1, "running")
        compute.synchronize()
        copy.synchronize()
        return time.perf_counter() - t0, events

    def balance(self) -> tuple[int, float, float]:
        """(layers, copy ms, kernel ms per batch): the depth whose kernel takes about one copy.
        Stage times are medians of the batches' event spans on one stream (the device's own
        clock, not the host's enqueue)."""
        n = min(8, len(self.host_in))

        def stages(layers: int) -> tuple[float, float]:
            spans = _spans(self.run(layers, two_streams=False, batches=n)[1])
            return tuple(float(np.median([e - s for s, e in spans[k]])) for k in ("copy", "compute"))
        copy_ms, k0 = stages(0)
        k1 = stages(1)[1]
        layers = int(max(0, min(MAX_LAYERS, round((copy_ms - k0) / max(k1 - k0, 1e-6)))))
        copy_ms, kernel_ms = stages(layers)
        return layers, copy_ms, kernel_ms


def _threads_limit(host_in, w, b, repeats: int = ROUNDS) -> float:
    """What this host gives the same copies and the same arithmetic on two plain Python threads
    over one, with no runtime: the most overlap the machine allows this mix."""
    dst = np.empty((ROWS, COLS), np.float32)
    out = np.empty(ROWS, np.float32)

    def copies():
        for x in host_in:
            np.copyto(dst, x)

    def kernels():
        for x in host_in:
            _score_rows(x, w, b, out)

    ratios = []
    for _ in range(repeats):   # paired rounds and their median, as for the streams
        t = time.perf_counter()
        copies()
        kernels()
        one = time.perf_counter() - t
        t = time.perf_counter()
        threads = [threading.Thread(target=f) for f in (copies, kernels)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        ratios.append(one / (time.perf_counter() - t))
    return float(np.median(ratios))


# ---------------------------------------------------------------- reporting
def _load() -> str:
    """The host's load, which bounds the overlap: on a busy host the two streams' threads
    wait for cores that other programs hold."""
    try:
        return f"load average {os.getloadavg()[0]:.1f}, "
    except OSError:  # not every platform reports it
        return ""


def _spans(events) -> dict:
    t0 = events[0].copy_start
    return {"copy": [(t0.elapsed_time(e.copy_start), t0.elapsed_time(e.copy_end)) for e in events],
            "compute": [(t0.elapsed_time(e.compute_start), t0.elapsed_time(e.compute_end)) for e in events]}


def _overlap(a: list, b: list) -> float:
    """Milliseconds during which an interval of `a` and one of `b` both ran (the intervals of
    one stream never overlap each other, so this sums the pairwise intersections)."""
    return sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)


def _timeline(spans: dict, width: int = 64) -> list[str]:
    end = max(e for rows in spans.values() for _, e in rows) or 1e-9
    lines = []
    for name, rows in spans.items():
        cells = [" "] * width
        for i, (s, e) in enumerate(rows):
            a = min(int(s / end * width), width - 1)
            while a < width - 1 and cells[a] != " ":  # a short span right after another
                a += 1
            for c in range(a, max(a + 1, min(int(round(e / end * width)), width))):
                cells[c] = str(i % 10)
        lines.append(f"    {name:<8}|{''.join(cells)}|")
    right = f"{end:.1f} ms"
    lines.append(f"    {'':<8} 0 ms{right.rjust(width - 3)}")      # the time axis under the rows
    return lines


def main(batches: int | None = None, quiet: bool = False, profile: str | None = None) -> int:
    """Run the demo; returns the exit status (0: the scores match numpy and every bug was
    reported). With `profile`, the run is profiled and the trace, the summaries and
    summary.txt are written there."""
    n = DEFAULT_BATCHES if batches is None else int(batches)
    if n < 1:
        print("npurt demo: --batches must be at least 1", file=sys.stderr)
        return 2
    prof = None
    if profile is not None:
        try:
            prof = npurt.profiler.profile(profile).start()  # checks the directory before any work
        except npurt.NpuError as exc:
            print(f"npurt demo: {exc.message}", file=sys.stderr)
            return 2
    try:
        return _main(npurt, n, quiet, prof)
    finally:
        if prof is not None and prof.running:
            prof.stop()


def _main(npurt, n: int, quiet: bool, prof) -> int:
    say = (lambda *a: None) if quiet else print
    rng_name = npurt.profiler.range  # a named range on the profile's timeline (no-op without one)
    rng = np.random.default_rng()
    npurt.set_device(0)
    props = npurt.get_device_properties(0)
    host_in = []   # long runs cycle through HOST_BATCHES distinct inputs (bounded pinned memory)
    for _ in range(min(n, HOST_BATCHES)):
        buf = npurt.empty_pinned((ROWS, COLS), np.float32)
        buf[...] = rng.standard_normal((ROWS, COLS), dtype=np.float32)
        host_in.append(buf)
    outs = [npurt.empty_pinned(ROWS, np.float32) for _ in range(n)]
    w_all = rng.uniform(0.5, 1.5, (MAX_LAYERS, COLS)).astype(np.float32)
    b_all = rng.uniform(-0.1, 0.1, (MAX_LAYERS, COLS)).astype(np.float32)
    pipe = _Pipeline(npurt, host_in, outs, w_all, b_all)
    say(f"npurt demo: a two-stage pipeline on a simulated {props.name} ({props.multi_processor_count} AI cores, "
        f"{props.total_memory / 2**30:.0f} GiB {'HBM' if 'HBM' in props.memory_kind else 'DDR'})")
    say(f"  {n} batches of {ROWS}x{COLS} float32 ({ROWS * COLS * 4 >> 20} MiB each) in pinned host memory. The "
        f"copy stream moves batch i+1 to the device\n  while the compute stream runs a kernel on batch i; events "
        f"order them; {BUFFERS} device buffers in a ring.")

    with rng_name("warm-up"):  # first-use costs (threads, pool segments) must count against neither variant
        pipe.run(1, batches=min(n, BUFFERS))
        pipe.run(1, two_streams=False, batches=min(n, BUFFERS))
        layers, copy_ms, kernel_ms = pipe.balance()
    say(f"  balanced stages: a copy takes {copy_ms:.1f} ms; the kernel ({_layers_text(layers)}) takes "
        f"{kernel_ms:.1f} ms (calibrated in this run)")
    bar = contextlib.ExitStack()
    shown = bar.enter_context(progress_of(f"npurt demo: {n} batches", total=n)) \
        if not quiet and n >= PROGRESS_MIN else None

    def progress(done: int, what: str) -> None:
        if shown is not None:
            shown.update(description=f"npurt demo: batches, {what}", completed=done)
    # each round times the two variants back to back, and the speed-up is the median of the
    # rounds' ratios: a burst of load from other programs spoils one round, not the figure
    ones, twos = [], []
    for r in range(ROUNDS):
        with rng_name(f"one stream, round {r + 1}"):
            ones.append(pipe.run(layers, two_streams=False)[0])
        for o in outs:
            o.fill(np.nan)  # the checked scores must come from a two-stream run
        npurt.reset_peak_memory_stats()
        with rng_name(f"two streams, round {r + 1}"):
            secs, events = pipe.run(layers, progress=progress if r == ROUNDS - 1 else None)
        twos.append(secs)
    bar.close()

    spans = _spans(events)
    copy_busy = sum(e - s for s, e in spans["copy"])
    span = max(e for rows in spans.values() for _, e in rows)
    overlap = _overlap(spans["copy"], spans["compute"])
    say(f"\n  timeline of the last two-stream round ({span:.1f} ms across; digits are batch numbers):")
    for line in _timeline(spans):
        say(line)
    say(f"  per batch (median): copy {np.median([e - s for s, e in spans['copy']]):.2f} ms, compute "
        f"{np.median([e - s for s, e in spans['compute']]):.2f} ms; {overlap:.1f} ms of copying ran while "
        f"the compute stream was busy ({min(100.0, 100 * overlap / max(copy_busy, 1e-9)):.0f}% hidden)")
    ideal = (copy_ms + kernel_ms) / max(copy_ms, kernel_ms)
    limit = _threads_limit(host_in, w_all[:layers], b_all[:layers])
    speedup = float(np.median(np.divide(ones, twos)))
    say(f"\n  speed-up, two streams over one (median of {ROUNDS} rounds): {speedup:.2f}x  (one stream "
        f"{np.median(ones) * 1e3:.0f} ms, two streams {np.median(twos) * 1e3:.0f} ms)")
    say(f"  the best this workload gets here: {ideal:.2f}x if the stages overlapped perfectly; {limit:.2f}x for the "
        f"same copies and arithmetic\n  on two plain threads with no runtime (this host: {os.cpu_count()} CPU cores, "
        f"{_load()}shared by the simulated DMA engines and AI cores)")
    stats = npurt.memory_stats()
    say(f"  device memory: peak {stats['peak_allocated_bytes'] / 2**20:.1f} MiB; {stats['num_allocs']} allocations, "
        f"{stats['pool_hits']} served from the caching pool")

    if prof is not None:
        prof.stop()
        _say_profile(say, prof, f"two streams, round {ROUNDS}", overlap)

    got = np.stack(outs).astype(np.float64)
    want = np.stack([reference(x, w_all[:layers], b_all[:layers]) for x in host_in])
    want = want[np.arange(n) % len(host_in)]
    err = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1.0))) if got.size else 0.0
    ok = bool(np.allclose(got, want, rtol=RTOL, atol=ATOL))

    say("\nnpurt demo: finding bugs. Each program below is wrong: on an NPU it crashes, corrupts data, hangs or works "
        "by accident.")
    found = run_all(say)
    bugs = "bug programs not run under the sanitizer" if found is None else \
        f"{len(found)} of {len(found)} bugs reported"
    found = found or []

    if ok and all(found):
        print(f"npurt demo: PASS: {n} batches, scores match numpy (max relative error {err:.1e}); "
              f"{bugs}; {overlap_verdict(speedup, limit)}")
        return 0
    why = [] if ok else [f"scores differ from numpy (max relative error {err:.1e}, rtol {RTOL}, atol {ATOL})"]
    if not all(found):
        why.append(f"{found.count(False)} bug(s) went unreported")
    print(f"npurt demo: FAIL: {'; '.join(why)}")
    return 1


def _layers_text(layers: int) -> str:
    if layers == 0:
        return "a sum per row: the copy is already as long as the smallest kernel"
    return f"{layers} layer{'s' if layers != 1 else ''}, then a sum per row"


def overlap_verdict(speedup: float, threads: float) -> str:
    """The overlap result in words: a figure below 1 is never shown bare beside PASS."""
    if threads < 1:
        return (f"overlap cannot pay here: two plain threads reach {threads:.2f}x; npurt {speedup:.2f}x "
                "(the host's cores are busy; on an idle host both are above 1)")
    if speedup < 1:
        return f"speed-up {speedup:.2f}x, below the {threads:.2f}x two plain threads reach on this host"
    return f"speed-up {speedup:.2f}x (threads reach {threads:.2f}x)"


def _say_profile(say, prof, step: str, overlap_ms: float) -> None:
    """Where the profile went, and its overlap figure for the round the demo reports beside
    the demo's own (tests/tools/test_profiler_entry_points.py reads this line and checks that the
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
    sys.exit(main())
