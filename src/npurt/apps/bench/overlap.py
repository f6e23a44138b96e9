"""The copy/compute overlap figures: a two-stream pipeline (copy stream, compute stream, a ring
of device buffers ordered by events) against one stream and against two plain threads running
the same kernel body in the same order, and where the compute stream loses time
(handoff.py). Split out of metrics.py: one concept, and the largest of the measurements."""
from __future__ import annotations

import os

import numpy as np

from ...ops import launch as ops_launch
from ...ops.kernels import PAGE, gelu_into, half_a_page_from
from ...runtime import RUNTIME, address
from .handoff import compute_idle
from .harness import Profile, Stat, clock, paired, sample
from .metrics import D2H, H2D, AclCallError, Session, stream_object, check, host_array, value

OVERLAP_BUFFERS = 3  # device buffers in the ring: the copy may run up to 2 batches ahead
GELU_PAIRS = 41  # gelu_ratio's pairs at least: a 4 ms memory-bound pair moves by +-5 % (+-30 % on some) of these VMs
HANDOFF_RUNS = 15  # compute_idle's runs at least: one slow wake-up moves a run's share by 1-3 %
OVERLAP_OP = "gelu"  # compute-bound; a memory-bound kernel would share the copy's memory bandwidth


def measure_overlap(s: Session, p: Profile) -> dict[str, Stat]:
    """A pipeline over a ring of OVERLAP_BUFFERS device buffers: batch i is copied host ->
    device (memcpy_async from pinned memory) while earlier batches are computed (gelu, one
    block: one AI core, as the copy is one DMA engine). Two streams ordered by events,
    against the same calls on one stream; overlap_speedup = one-stream time / two-stream time.

    The stages are balanced as a pipeline designer would balance them: each batch copies
    `overlap_batch_bytes`, and the kernel runs gelu over as many of the batch's elements as
    take about as long as the copy (calibrated in this run: `overlap_kernel_fraction`).
    overlap_ideal is what perfect overlap of the measured mix would give,
    (copies + kernels) / max(copies, kernels), from the copies alone and the kernels alone on
    one stream in the same run. overlap_threads_limit is what this machine gives the same
    copies and the same formula on two plain threads, with no runtime at all."""
    launch = ops_launch
    rt = s.acl.rt
    B, batches = p.overlap_batch_bytes, p.overlap_batches
    n = B // 4
    host = s.malloc_host(B * batches)
    host_array(host, B * batches, np.float32)[:] = np.random.default_rng().random(n * batches, dtype=np.float32)
    d_in = [s.malloc(B) for _ in range(OVERLAP_BUFFERS)]
    d_out = [s.malloc(B) for _ in range(OVERLAP_BUFFERS)]
    copy_h = value(rt.create_stream(), "create_stream")
    events = [value(rt.create_event(), "create_event") for _ in range(2 * OVERLAP_BUFFERS)]
    try:
        def pipeline(copy_stream: int, compute_stream: int, m: int, copies: bool = True,
                     kernels: bool = True, marks: tuple | None = None) -> float:
            # marks (compute_idle's): a ready, start and done event per batch instead of the ring's
            ready, done = (marks[0], marks[2]) if marks else (events[:OVERLAP_BUFFERS], events[OVERLAP_BUFFERS:])
            ring = len(ready)
            compute_obj = RUNTIME.streams.get(compute_stream)
            t0 = clock()
            for i in range(batches):
                j = i % OVERLAP_BUFFERS
                if i >= OVERLAP_BUFFERS:  # buffer j is free once the kernel that last read it is done
                    rt.stream_wait_event(copy_stream, done[(i - OVERLAP_BUFFERS) % ring])
                if copies:
                    rt.memcpy_async(d_in[j], B, host + i * B, B, H2D, copy_stream)
                rt.record_event(ready[i % ring], copy_stream)
                rt.stream_wait_event(compute_stream, ready[i % ring])
                if marks:
                    rt.record_event(marks[1][i], compute_stream)
                if kernels:
                    launch.elementwise(OVERLAP_OP, d_out[j], d_in[j], None, m, np.float32, stream=compute_obj,
                                       num_blocks=1)
                rt.record_event(done[i % ring], compute_stream)
            check(rt.synchronize_stream(compute_stream), "synchronize_stream")
            check(rt.synchronize_stream(copy_stream), "synchronize_stream")
            return clock() - t0

        one = s.stream
        # calibrate: elements of gelu that take as long as one batch's copy
        c0 = sample(lambda: pipeline(one, one, n, kernels=False), 3, 1).median
        k0 = sample(lambda: pipeline(one, one, n, copies=False), 3, 1).median
        m = max(1024, min(n, int(n * c0 / k0)) // 1024 * 1024)
        res = paired(lambda: pipeline(one, one, m), lambda: pipeline(copy_h, one, m), p.overlap_repeats, p.warmup)
        copies = sample(lambda: pipeline(one, one, m, kernels=False), p.overlap_repeats, 1)
        kernels = sample(lambda: pipeline(one, one, m, copies=False), p.overlap_repeats, 1)
        c, k = copies.median, kernels.median
        ideal = (c + k) / max(c, k)
        frac = m / n
        threads = _overlap_with_threads(host_array(host, B * batches, np.float32), n, m, batches,
                                        p.overlap_repeats)
        switches = switches_per_batch(lambda: pipeline(copy_h, one, m), batches, p.overlap_repeats)
        gelu = _gelu_ratio(s, d_in[0], d_out[0], m, p.overlap_repeats, p.warmup)
        idle, handoff = compute_idle(lambda marks: pipeline(copy_h, one, m, marks=marks), rt, batches,
                                     max(p.overlap_repeats, HANDOFF_RUNS))
        return {"overlap_compute_idle_pct": idle, "overlap_handoff_us": handoff,
                "overlap_speedup": res.ratio, **threads, "overlap_switches_per_batch": switches,
                "overlap_one_stream_ms": res.reference_s.scaled(1e3),
                "overlap_two_streams_ms": res.subject_s.scaled(1e3), "overlap_copies_ms": copies.scaled(1e3),
                "overlap_kernels_ms": kernels.scaled(1e3), "overlap_ideal": Stat(ideal, ideal, ideal, 1),
                "overlap_kernel_fraction": Stat(frac, frac, frac, 1), "gelu_ratio": gelu}
    finally:
        for ev in events:
            rt.destroy_event(ev)
        rt.destroy_stream(copy_h)


def plain_gelu(x: np.ndarray, y: np.ndarray, t: np.ndarray) -> None:
    """y = gelu(x) as anyone would write it in numpy: the tanh approximation in its sigmoid
    form, a cache-sized chunk at a time through the scratch chunk t, float32."""
    for i in range(0, len(x), len(t)):
        xs, ys = x[i:i + len(t)], y[i:i + len(t)]
        tt = t[:len(xs)]
        np.multiply(xs, xs, out=tt)
        tt *= 0.044715
        tt += 1.0
        tt *= xs
        tt *= -1.5957691216057308
        np.exp(tt, out=tt)
        tt += 1.0
        np.divide(xs, tt, out=ys)


def _gelu_ratio(s: Session, d_in: int, d_out: int, m: int, repeats: int, warmup: int) -> Stat:
    """Built-in gelu (one block, launch + synchronize) over the plain numpy formula on the
    same m float32 elements in the same memory (the plain formula reads d_in and writes d_out
    through host views of the simulated device's memory), timed alternately: > 1 means the
    kernel is slower. The same memory, because where an array's pages lie moves the formula's
    time by 5-20 % between processes on these VMs (host arrays of >= 4 MiB get transparent huge
    pages through numpy's madvise, or not; the device's shared memory is on 4 KiB pages), which
    is no property of the kernel. The formula's scratch chunk is placed as the kernel places
    its own (half a page from the input, modulo the page: `half_a_page_from`), its best case; a
    plain np.empty chunk 16 bytes past a page start made it 11 % slower (4K aliasing against
    the page-aligned input), which would flatter the kernel. Each pair gives one time ratio (the inverse of `paired`'s
    speed ratio, so the median of an odd count and the range carry over exactly)."""
    launch = ops_launch
    x = np.random.default_rng().standard_normal(m).astype(np.float32)
    check(s.acl.rt.memcpy(d_in, x.nbytes, x.ctypes.data, x.nbytes, H2D), "memcpy H2D")  # the same elements
    xs = address.view(d_in, x.nbytes).view(np.float32)   # ... in the same memory as the kernel's
    ys = address.view(d_out, x.nbytes).view(np.float32)
    y, t = np.empty_like(x), half_a_page_from(xs, np.empty((1 << 16) + PAGE, np.float32), 1 << 16)
    stream, sync = stream_object(s), s.acl.rt.synchronize_stream
    with np.errstate(over="ignore"):
        plain = lambda: plain_gelu(xs, ys, t)  # noqa: E731

        def subject() -> None:
            launch.elementwise("gelu", d_out, d_in, None, m, np.float32, stream=stream, num_blocks=1)
            check(sync(s.stream), "synchronize_stream after gelu")

        plain_gelu(x, y, t)  # the expected values, on host arrays
        subject()
        got = np.empty_like(x)
        check(s.acl.rt.memcpy(got.ctypes.data, got.nbytes, d_out, got.nbytes, D2H), "memcpy D2H")
        if not np.allclose(got, y, rtol=1e-5, atol=1e-6):
            raise AclCallError("the gelu kernel disagrees with the plain numpy formula")
        speed = paired(plain, subject, max(repeats, GELU_PAIRS), warmup).ratio
    return Stat(1 / speed.median, 1 / speed.hi, 1 / speed.lo, speed.n)


def _overlap_with_threads(src: np.ndarray, n: int, m: int, batches: int, repeats: int) -> dict[str, Stat]:
    """The machine's own limit for this work mix: the same copies (np.copyto) and the same
    gelu kernel body npurt runs (npurt.ops.kernels.gelu_into), on two plain Python threads
    against one, no runtime involved.

    `overlap_threads_limit` runs them as the streams do: a ring of OVERLAP_BUFFERS buffers,
    kernel i reads what copy i wrote and starts once it is done, copy i reuses the buffer
    kernel i - OVERLAP_BUFFERS read and starts once that is done (a threading.Event per
    hand-off). Against one thread doing copy i, kernel i in turn, no pipeline of N batches
    can beat about 2N / (N + 1) when the stages are balanced (the first kernel waits for the
    first copy, the last copy waits for nothing), so this, not the unordered figure, is what
    the streams can reach. `overlap_threads_unordered` is the older figure: the copies on one
    thread and the kernels on another, with no order between them (N / (N + 1) above what a
    pipeline can do). `overlap_threads_switches_per_batch`: the process's voluntary context
    switches per batch in the two-thread pipeline (Linux; the hand-offs a futex costs)."""
    import threading
    ring = [np.empty(n, np.float32) for _ in range(OVERLAP_BUFFERS)]
    outs = [np.empty(m, np.float32) for _ in range(OVERLAP_BUFFERS)]
    x = np.random.default_rng().random(n, dtype=np.float32)
    y = np.empty_like(x)
    dst = ring[0]

    def copy(i: int) -> None:
        np.copyto(ring[i % OVERLAP_BUFFERS], src[i * n:(i + 1) * n])

    def kernel(i: int) -> None:
        gelu_into(outs[i % OVERLAP_BUFFERS], ring[i % OVERLAP_BUFFERS][:m])

    def one_thread() -> None:
        for i in range(batches):
            copy(i)
            kernel(i)

    def two_threads() -> None:
        ready = [threading.Event() for _ in range(batches)]
        done = [threading.Event() for _ in range(batches)]

        def copies() -> None:
            for i in range(batches):
                if i >= OVERLAP_BUFFERS:
                    done[i - OVERLAP_BUFFERS].wait()
                copy(i)
                ready[i].set()

        th = threading.Thread(target=copies)
        th.start()
        for i in range(batches):
            ready[i].wait()
            kernel(i)
            done[i].set()
        th.join()

    def unordered_copies() -> None:
        for i in range(batches):
            np.copyto(dst, src[i * n:(i + 1) * n])

    def unordered_kernels() -> None:
        for _ in range(batches):
            gelu_into(y[:m], x[:m])

    def unordered_both() -> None:
        th = threading.Thread(target=unordered_copies)
        th.start()
        unordered_kernels()
        th.join()

    limit = paired(one_thread, two_threads, repeats, 1).ratio
    unordered = paired(lambda: (unordered_copies(), unordered_kernels()), unordered_both, repeats, 1).ratio
    return {"overlap_threads_limit": limit, "overlap_threads_unordered": unordered,
            "overlap_threads_switches_per_batch": switches_per_batch(two_threads, batches, repeats)}


def switches_per_batch(run, batches: int, repeats: int) -> Stat:
    """The voluntary context switches of all of this process's threads during run(), per
    batch (each is a thread that blocked: a futex wait for a wake-up or for the GIL); NaN
    where /proc does not say."""
    counts = []
    for _ in range(repeats):
        before = voluntary_switches()
        run()
        after = voluntary_switches()
        if before is None or after is None:
            return Stat(float("nan"), float("nan"), float("nan"), 0)
        counts.append((after - before) / batches)
    return Stat.of(counts)


def voluntary_switches() -> int | None:
    """The sum of voluntary_ctxt_switches over this process's threads (Linux /proc), or None."""
    total = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        total += int(line.split()[1])
                        break
        except OSError:  # the thread ended meanwhile
            continue
    return total


# ================================================================ many streams, memory per task
