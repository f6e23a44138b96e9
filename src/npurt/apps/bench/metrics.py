"""npurt's figures, measured through the APIs users call: the pyACL facade (`npurt.acl`).

Each `measure_*` function takes a `Session` (an initialized runtime with device 0 set and a
few buffers) and the run's `Profile`, and returns {figure id: Stat} (ids as in report.SPECS).
Timed loops call the facade functions directly, as a user's loop would; return codes are
checked on the warm-up and after each loop, not inside it (a check per call would time
Python's `if`, not the runtime).
"""
from __future__ import annotations

import ctypes
import os
import tracemalloc

import numpy as np

from ... import acl, memory_stats
from ...ops import launch as ops_launch
from ...ops.kernels import gelu_into
from ...runtime import RUNTIME, constants as C
from .handoff import compute_idle
from .harness import Profile, Stat, c_heap_bytes, clock, paired, per_call_us, rss_bytes, sample

TINY = 64  # bytes of a tiny copy: the smallest 64-byte aligned copy memcpy_async accepts
H2D, D2H, D2D = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST, C.ACL_MEMCPY_DEVICE_TO_DEVICE
POLICY = C.ACL_MEM_MALLOC_HUGE_FIRST
# the benchmarks' kernel binary: a .py file loaded by path, as a pyACL script loads an Ascend C .o
KERNEL_BINARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels.py")


class AclCallError(RuntimeError):
    """A facade call returned an error code during a benchmark."""


def check(ret, what: str) -> None:
    if ret != 0:
        raise AclCallError(f"{what} returned {ret}: {acl.get_recent_err_msg()}")


def value(pair, what: str):
    out, ret = pair
    check(ret, what)
    return out


def host_array(ptr: int, nbytes: int, dtype=np.uint8) -> np.ndarray:
    """numpy view of host memory from malloc_host (to fill it and to time np.copyto on it)."""
    raw = np.frombuffer((ctypes.c_ubyte * nbytes).from_address(ptr), np.uint8)
    return raw.view(dtype)


class Session:
    """acl.init + set_device(0) with the stream limit raised for the many-streams figure, a
    stream and two small device buffers; torn down in reverse on exit."""

    def __init__(self, profile: Profile):
        self.profile = profile
        self.acl = acl
        self._undo: list = []
        self._env_before: str | None = None
        self.owns_runtime = True

    def __enter__(self) -> "Session":
        acl = self.acl
        need = self.profile.streams + 64
        self._env_before = os.environ.get("NPURT_MAX_STREAMS")
        if self._env_before is None or int(self._env_before, 0) < need:
            os.environ["NPURT_MAX_STREAMS"] = str(need)  # read by acl.init
        ret = acl.init()
        if ret == C.ACL_ERROR_REPEAT_INITIALIZE:
            self.owns_runtime = False  # the caller initialized it; we only counted a reference
        elif ret != 0:
            self._restore_env()
            check(ret, "acl.init")
        try:
            check(acl.rt.set_device(0), "acl.rt.set_device(0)")
            self._undo.append(lambda: acl.rt.reset_device(0))
            self.stream = value(acl.rt.create_stream(), "acl.rt.create_stream")
            self._undo.append(lambda: acl.rt.destroy_stream(self.stream))
            self.dev_a = self.malloc(4096)
            self.dev_b = self.malloc(4096)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def malloc(self, nbytes: int) -> int:
        ptr = value(self.acl.rt.malloc(nbytes, POLICY), f"acl.rt.malloc({nbytes})")
        self._undo.append(lambda: self.acl.rt.free(ptr))
        return ptr

    def malloc_host(self, nbytes: int) -> int:
        ptr = value(self.acl.rt.malloc_host(nbytes), f"acl.rt.malloc_host({nbytes})")
        self._undo.append(lambda: self.acl.rt.free_host(ptr))
        return ptr

    def sync(self, stream=None) -> None:
        check(self.acl.rt.synchronize_stream(self.stream if stream is None else stream), "synchronize_stream")

    def __exit__(self, *exc) -> None:
        while self._undo:
            self._undo.pop()()
        if self.owns_runtime:
            self.acl.finalize()
        else:
            self.acl.finalize_reference()
        self._restore_env()

    def _restore_env(self) -> None:
        if self._env_before is None:
            os.environ.pop("NPURT_MAX_STREAMS", None)
        else:
            os.environ["NPURT_MAX_STREAMS"] = self._env_before


# ================================================================ latencies
def measure_latency(s: Session, p: Profile) -> dict[str, Stat]:
    """enqueue_us, roundtrip_us, event_sync_us, alloc_free_us and the bare-call floor."""
    rt = s.acl.rt
    stream, dst, src = s.stream, s.dev_b, s.dev_a
    memcpy_async, synchronize_stream = rt.memcpy_async, rt.synchronize_stream
    record_event, synchronize_event = rt.record_event, rt.synchronize_event
    malloc, free = rt.malloc, rt.free
    check(memcpy_async(dst, TINY, src, TINY, D2D, stream), "memcpy_async")
    s.sync()

    def bare(*args):
        return 0

    def py_call(n):  # the floor: a Python call with the same six arguments
        t0 = clock()
        for _ in range(n):
            bare(dst, TINY, src, TINY, D2D, stream)
        return clock() - t0

    def enqueue(n):
        t0 = clock()
        for _ in range(n):
            memcpy_async(dst, TINY, src, TINY, D2D, stream)
        t = clock() - t0
        check(synchronize_stream(stream), "synchronize_stream")
        return t

    def roundtrip(n):
        t0 = clock()
        for _ in range(n):
            memcpy_async(dst, TINY, src, TINY, D2D, stream)
            synchronize_stream(stream)
        t = clock() - t0
        check(synchronize_stream(stream), "synchronize_stream")
        return t

    event = value(rt.create_event(), "acl.rt.create_event")
    try:
        check(record_event(event, stream), "record_event")
        check(synchronize_event(event), "synchronize_event")

        def event_sync(n):
            t0 = clock()
            for _ in range(n):
                record_event(event, stream)
                synchronize_event(event)
            return clock() - t0

        def alloc_free(n):
            t0 = clock()
            for _ in range(n):
                ptr, _ret = malloc(4096, POLICY)
                free(ptr)
            return clock() - t0

        check(free(value(malloc(4096, POLICY), "malloc")), "free")
        calls, reps, warm = p.latency_calls, p.latency_repeats, p.warmup
        return {
            "py_call_us": per_call_us(py_call, calls, reps, warm),
            "enqueue_us": per_call_us(enqueue, calls, reps, warm),
            "roundtrip_us": per_call_us(roundtrip, calls, reps, warm),
            "event_sync_us": per_call_us(event_sync, calls, reps, warm),
            "alloc_free_us": per_call_us(alloc_free, calls, reps, warm),
        }
    finally:
        rt.destroy_event(event)


def measure_empty_kernel(s: Session, p: Profile) -> dict[str, Stat]:
    """Launch of an empty kernel + synchronize_stream, through a kernel binary (a .py file)
    loaded with acl.rt.binary_load_from_file, as a pyACL script launches an Ascend C kernel."""
    rt = s.acl.rt
    binary = value(rt.binary_load_from_file(KERNEL_BINARY, []), "binary_load_from_file")
    try:
        func = value(rt.binary_get_function(binary, "empty"), "binary_get_function")
        args = s.malloc(64)  # the packed arguments: none, but launch_kernel wants a device buffer
        stream, launch, synchronize_stream = s.stream, rt.launch_kernel, rt.synchronize_stream
        check(launch(func, 1, args, 0, stream), "launch_kernel")
        s.sync()

        def empty(n):
            t0 = clock()
            for _ in range(n):
                launch(func, 1, args, 0, stream)
                synchronize_stream(stream)
            return clock() - t0

        return {"empty_kernel_us": per_call_us(empty, max(10, p.latency_calls // 4), p.latency_repeats, p.warmup)}
    finally:
        rt.binary_unload(binary)


# ================================================================ copies
def measure_copies(s: Session, p: Profile) -> dict[str, Stat]:
    """64 MiB (quick: 16 MiB) copies through acl.rt.memcpy (synchronous) against np.copyto
    between two pinned host buffers of the same size, paired; plus H2D through
    memcpy_async + synchronize_stream."""
    rt = s.acl.rt
    n = p.copy_bytes
    h1, h2 = s.malloc_host(n), s.malloc_host(n)
    d1, d2 = s.malloc(n), s.malloc(n)
    hv1, hv2 = host_array(h1, n), host_array(h2, n)
    hv1[:] = np.random.default_rng().integers(0, 256, n, dtype=np.uint8)
    hv2[:] = 0
    memcpy, memcpy_async, stream = rt.memcpy, rt.memcpy_async, s.stream
    check(memcpy(d1, n, h1, n, H2D), "memcpy H2D")
    check(memcpy(d2, n, d1, n, D2D), "memcpy D2D")
    check(memcpy(h2, n, d2, n, D2H), "memcpy D2H")
    if not np.array_equal(hv1, hv2):
        raise AclCallError("the copy round trip H2D -> D2D -> D2H did not return the data")

    def reference():
        np.copyto(hv2, hv1)

    def h2d_async():
        memcpy_async(d1, n, h1, n, H2D, stream)
        rt.synchronize_stream(stream)

    reps, warm = p.big_repeats, p.warmup
    h2d = paired(reference, lambda: memcpy(d1, n, h1, n, H2D), reps, warm)
    d2h = paired(reference, lambda: memcpy(h2, n, d1, n, D2H), reps, warm)
    d2d = paired(reference, lambda: memcpy(d2, n, d1, n, D2D), reps, warm)
    h2d_a = paired(reference, h2d_async, reps, warm)
    return {
        "memcpy_h2d_ratio": h2d.ratio,
        "memcpy_d2h_ratio": d2h.ratio,
        "memcpy_d2d_ratio": d2d.ratio,
        "memcpy_h2d_async_ratio": h2d_a.ratio,
        "copyto_gbps": _gbps(n, h2d.reference_s),
    }


def _gbps(nbytes: int, seconds: Stat) -> Stat:
    return Stat(nbytes / seconds.median / 1e9, nbytes / seconds.hi / 1e9, nbytes / seconds.lo / 1e9, seconds.n)


# ================================================================ kernels
def _stream_object(s: Session):
    """The runtime stream behind the facade handle (the op launcher takes stream objects)."""
    return RUNTIME.streams.get(s.stream)


def _device_array(s: Session, host: np.ndarray) -> int:
    ptr = s.malloc(host.nbytes)
    check(s.acl.rt.memcpy(ptr, host.nbytes, host.ctypes.data, host.nbytes, H2D), "memcpy H2D")
    return ptr


def measure_add(s: Session, p: Profile) -> dict[str, Stat]:
    """float32 c = a + b over `add_bytes` per operand: npurt.ops.launch.elementwise on the
    stream + synchronize_stream, against np.add(a, b, out=c)."""
    launch = ops_launch
    n = p.add_bytes // 4
    rng = np.random.default_rng()
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    da, db, dc = _device_array(s, a), _device_array(s, b), s.malloc(a.nbytes)
    stream = _stream_object(s)
    sync = s.acl.rt.synchronize_stream

    def subject():
        launch.elementwise("add", dc, da, db, n, np.float32, stream=stream)
        sync(s.stream)

    subject()
    check(sync(s.stream), "synchronize_stream after add")
    got = np.empty_like(a)
    check(s.acl.rt.memcpy(got.ctypes.data, got.nbytes, dc, got.nbytes, D2H), "memcpy D2H")
    if not np.array_equal(got, a + b):
        raise AclCallError("the elementwise add kernel gave a wrong result")
    res = paired(lambda: np.add(a, b, out=c), subject, p.big_repeats, p.warmup)
    return {"kernel_add_ratio": res.ratio, "kernel_add_ms": res.subject_s.scaled(1e3),
            "numpy_add_ms": res.reference_s.scaled(1e3)}


def measure_matmul(s: Session, p: Profile) -> dict[str, Stat]:
    """float32 n x n matmul: npurt.ops.launch.matmul + synchronize_stream against
    np.matmul(a, b, out=c)."""
    launch = ops_launch
    n = p.matmul_n
    rng = np.random.default_rng()
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    c = np.empty_like(a)
    da, db, dc = _device_array(s, a), _device_array(s, b), s.malloc(a.nbytes)
    stream = _stream_object(s)
    sync = s.acl.rt.synchronize_stream

    def subject():
        launch.matmul(dc, da, db, n, n, n, np.float32, stream=stream)
        sync(s.stream)

    subject()
    check(sync(s.stream), "synchronize_stream after matmul")
    got = np.empty_like(a)
    check(s.acl.rt.memcpy(got.ctypes.data, got.nbytes, dc, got.nbytes, D2H), "memcpy D2H")
    if not np.allclose(got, a @ b, rtol=1e-3, atol=1e-3 * n):
        raise AclCallError("the matmul kernel gave a wrong result")
    res = paired(lambda: np.matmul(a, b, out=c), subject, p.matmul_repeats, 1)
    return {"matmul_ratio": res.ratio, "matmul_ms": res.subject_s.scaled(1e3),
            "numpy_matmul_ms": res.reference_s.scaled(1e3)}


# ================================================================ overlap
OVERLAP_BUFFERS = 3  # device buffers in the ring: the copy may run up to 2 batches ahead
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
                     kernels: bool = True) -> float:
            ready, done = events[:OVERLAP_BUFFERS], events[OVERLAP_BUFFERS:]
            compute_obj = RUNTIME.streams.get(compute_stream)
            t0 = clock()
            for i in range(batches):
                j = i % OVERLAP_BUFFERS
                if i >= OVERLAP_BUFFERS:  # buffer j is free once the kernel that last read it is done
                    rt.stream_wait_event(copy_stream, done[j])
                if copies:
                    rt.memcpy_async(d_in[j], B, host + i * B, B, H2D, copy_stream)
                rt.record_event(ready[j], copy_stream)
                rt.stream_wait_event(compute_stream, ready[j])
                if kernels:
                    launch.elementwise(OVERLAP_OP, d_out[j], d_in[j], None, m, np.float32, stream=compute_obj,
                                       num_blocks=1)
                rt.record_event(done[j], compute_stream)
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
        idle, handoff = compute_idle(lambda: pipeline(copy_h, one, m), RUNTIME.streams.get(copy_h),
                                      RUNTIME.streams.get(one), p.overlap_repeats)
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
    """Built-in gelu (one block, launch + synchronize) over the plain numpy formula on host
    arrays, the same m float32 elements, timed alternately: > 1 means the kernel is slower.
    Each pair gives one time ratio (the inverse of `paired`'s speed ratio, so the median of
    an odd count and the range carry over exactly)."""
    launch = ops_launch
    x = np.random.default_rng().standard_normal(m).astype(np.float32)
    y, t = np.empty_like(x), np.empty(1 << 16, np.float32)
    check(s.acl.rt.memcpy(d_in, x.nbytes, x.ctypes.data, x.nbytes, H2D), "memcpy H2D")  # the same elements
    stream, sync = _stream_object(s), s.acl.rt.synchronize_stream
    with np.errstate(over="ignore"):
        plain = lambda: plain_gelu(x, y, t)  # noqa: E731

        def subject() -> None:
            launch.elementwise("gelu", d_out, d_in, None, m, np.float32, stream=stream, num_blocks=1)
            check(sync(s.stream), "synchronize_stream after gelu")

        subject()
        plain()
        got = np.empty_like(x)
        check(s.acl.rt.memcpy(got.ctypes.data, got.nbytes, d_out, got.nbytes, D2H), "memcpy D2H")
        if not np.allclose(got, y, rtol=1e-5, atol=1e-6):
            raise AclCallError("the gelu kernel disagrees with the plain numpy formula")
        speed = paired(plain, subject, repeats, warmup).ratio
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
def measure_streams(s: Session, p: Profile) -> dict[str, Stat]:
    """Create `streams` streams, enqueue one tiny copy on each, synchronize each: seconds.
    Destroying them afterwards is not timed."""
    rt = s.acl.rt
    count, dst, src = p.streams, s.dev_b, s.dev_a

    def run() -> float:
        create, memcpy_async, synchronize_stream = rt.create_stream, rt.memcpy_async, rt.synchronize_stream
        streams = []
        t0 = clock()
        for _ in range(count):
            stream, ret = create()
            if ret:
                break
            streams.append(stream)
        for stream in streams:
            memcpy_async(dst, TINY, src, TINY, D2D, stream)
        for stream in streams:
            synchronize_stream(stream)
        t = clock() - t0
        for stream in streams:
            rt.destroy_stream(stream)
        if ret != 0:
            raise AclCallError(f"create_stream #{len(streams) + 1} returned {ret}: {s.acl.get_recent_err_msg()} "
                               "(the bench raises NPURT_MAX_STREAMS before acl.init; was the runtime "
                               "initialized before the bench started?)")
        return t

    return {"streams_10k_s": sample(run, p.streams_repeats, 1)}


def measure_queued_memory(s: Session, p: Profile) -> dict[str, Stat]:
    """Memory per queued tiny task: a stream waits on an event that is never recorded (so
    nothing behind the wait can run), `queued_tasks` tiny copies are enqueued behind it, and
    the heap growth is divided by their number. bytes_per_task is the traced growth: Python
    objects by tracemalloc plus the C heap by glibc's mallinfo2 (exact, whatever the heap
    held before; the C heap is read in the untraced pass, as tracemalloc's own bookkeeping
    lives there). The RSS delta of a separate untraced pass is shown beside it (coarse: it
    includes allocator slack, and reuse of memory freed earlier hides growth)."""
    rt = s.acl.rt
    count, dst, src = p.queued_tasks, s.dev_b, s.dev_a
    opener = value(rt.create_stream(), "create_stream")
    blocked = value(rt.create_stream(), "create_stream")

    def fill(traced: bool) -> tuple[float, float]:
        # a fresh ACL_EVENT_SYNC event: a wait before any record blocks until one completes
        gate = value(rt.create_event_with_flag(1), "create_event_with_flag")
        try:
            check(rt.stream_wait_event(blocked, gate), "stream_wait_event")
            memcpy_async = rt.memcpy_async
            if traced:
                tracemalloc.start()
                before = tracemalloc.get_traced_memory()[0]
            else:
                before, c_before = rss_bytes(), c_heap_bytes()
            t0 = clock()
            for _ in range(count):
                memcpy_async(dst, TINY, src, TINY, D2D, blocked)
            t = clock() - t0
            if traced:
                grown = tracemalloc.get_traced_memory()[0] - before
                tracemalloc.stop()
            else:
                grown = rss_bytes() - before, c_heap_bytes() - c_before
            check(rt.record_event(gate, opener), "record_event")  # open the gate
            check(rt.synchronize_stream(blocked), "synchronize_stream")
            return grown, t / count * 1e6
        finally:
            rt.destroy_event(gate)

    try:
        (rss, c_heap), enq = fill(False)  # first, while the heap has the least free space to reuse
        python_heap, _ = fill(True)
        return {"bytes_per_task": one((python_heap + max(0, c_heap)) / count),
                "bytes_per_task_rss": one(rss / count), "enqueue_queued_us": one(enq)}
    finally:
        rt.destroy_stream(blocked)
        rt.destroy_stream(opener)


def measure_fragmentation(s: Session, p: Profile) -> dict[str, Stat]:
    """A large malloc after many small frees (issue 29): `fragment_frees` blocks of 480 B
    (512 with ACL's padding; whole 2 MiB segments of them) are allocated and freed, so only a
    merge of freed neighbours can serve the 1 MB malloc timed next (the pool caches nothing
    bigger). Merging used to cost O(n^2) in the freed blocks: minutes after 10^5 frees."""
    rt = s.acl.rt
    per_segment = (2 << 20) // 512
    count = -(-p.fragment_frees // per_segment) * per_segment
    malloc, free = rt.malloc, rt.free
    # first use up the cached remainders of earlier allocations (they could serve the 1 MB
    # without a merge): until the pool maps a segment of its own for the next 480 B block
    maps = memory_stats()["segment_maps"]
    ptrs = []
    while memory_stats()["segment_maps"] == maps:
        ptrs.append(malloc(480, POLICY)[0])
    ptrs += [malloc(480, POLICY)[0] for _ in range(count - 1)]  # whole segments of them
    if 0 in ptrs:
        raise AclCallError(f"malloc of 480 B failed: {s.acl.get_recent_err_msg()}")
    for ptr in ptrs:
        free(ptr)
    del ptrs
    t0 = clock()
    big = value(malloc(1_000_000, POLICY), "malloc")
    t = clock() - t0
    check(free(big), "free")
    return {"alloc_after_fragmentation_ms": one(t * 1e3)}


def one(v: float) -> Stat:
    """A figure measured once."""
    return Stat(v, v, v, 1)
