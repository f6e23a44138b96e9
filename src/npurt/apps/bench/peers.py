"""The peers: what a Python user without an accelerator picks today, measured the same way.

* PoCL (OpenCL on the CPU) through pyopencl, with the pocl-binary-distribution wheel.
* Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1).

Each peer runs in its own Python process (`CHILD_PROGRAM NAME PROFILE_JSON` under `python -c`):
Numba reads NUMBA_ENABLE_CUDASIM when numba.cuda is first imported, so the variable must be
in the environment before that import, and a separate process also keeps PoCL's threads and
memory out of npurt's measurements. Each process measures its own numpy reference for its
ratios. The child prints one line `NPURT-BENCH-RESULT <json>` at the end.

Fairness notes: pyopencl returns an event for each enqueue; the timed loops keep every event
alive (a user who wants to wait for the work later must), which is the peer's fast path.
Kernels are written the plain way a user of each peer would write them (one work item /
thread per element).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import tracemalloc

import numpy as np

from .harness import Profile, Stat, c_heap_bytes, clock, paired, per_call_us, rss_bytes, sample
from .report import Results

MARK = "NPURT-BENCH-RESULT "
PEERS = ("PoCL", "Numba sim")
TINY = 64


def run_peer(name: str, profile: Profile, timeout_s: float = 1200, only: tuple[str, ...] | None = None) -> Results:
    """Measure one peer in a child process; a Results with `skipped` set if it is not installed.
    `only`: the groups to measure, as `npurt bench --only` selects npurt's (same names)."""
    missing = _missing(name)
    if missing:
        return Results(name, skipped=f"{missing} is not installed (pip install -e '.[peers]')")
    env = dict(os.environ)
    if name == "Numba sim":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    cmd = [sys.executable, "-c", CHILD_PROGRAM, name, json.dumps(dataclasses.asdict(profile)),
           json.dumps(list(only) if only is not None else None)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return Results(name, skipped=f"its benchmark process ran longer than {timeout_s:.0f} s and was stopped")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK):
            data = json.loads(line[len(MARK):])
            res = Results(name, notes=data["notes"], skipped=data["skipped"], errors=data["errors"])
            res.stats = {k: Stat(*v[:3], int(v[3])) for k, v in data["stats"].items()}
            return res
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return Results(name, skipped=f"its benchmark process failed (exit {proc.returncode}): {' | '.join(tail)}")


def _missing(name: str) -> str | None:
    needs = {"PoCL": ("pyopencl",), "Numba sim": ("numba",)}[name]
    for module in needs:
        if importlib.util.find_spec(module) is None:
            return module
    return None


_ONLY: tuple[str, ...] | None = None  # the child's `--only` words (None: every group)


def _step(res: Results, what: str, fn, *args) -> None:
    """Run one group of figures (named as npurt's groups, so `--only` selects the same);
    a failure becomes an error line, not a lost run."""
    if _ONLY is not None and not any(word.lower() in what.lower() for word in _ONLY):
        return
    try:
        res.add(fn(*args))
    except Exception as exc:  # noqa: BLE001 - reported in the table's footer
        res.errors.append(f"{what}: {type(exc).__name__}: {exc}")


def _gbps(nbytes: int, seconds: Stat) -> Stat:
    return Stat(nbytes / seconds.median / 1e9, nbytes / seconds.hi / 1e9, nbytes / seconds.lo / 1e9, seconds.n)


# ================================================================ PoCL
ADD_SRC = """
__kernel void add(__global const float *a, __global const float *b, __global float *c) {
    size_t i = get_global_id(0); c[i] = a[i] + b[i];
}
__kernel void gelu(__global const float *x, __global float *y) {
    size_t i = get_global_id(0); float v = x[i];
    y[i] = v / (1.0f + exp(-1.5957691216057308f * (v + 0.044715f * v * v * v)));
}
__kernel void empty(void) {}
__kernel void matmul(__global const float *a, __global const float *b, __global float *c, const int n) {
    int row = get_global_id(1), col = get_global_id(0);
    float acc = 0.0f;
    for (int k = 0; k < n; k++) acc += a[row * n + k] * b[k * n + col];
    c[row * n + col] = acc;
}
"""


def measure_pocl(p: Profile) -> Results:
    import pyopencl as cl
    res = Results("PoCL")
    platforms = [pl for pl in cl.get_platforms() if "portable" in pl.name.lower() or "pocl" in pl.name.lower()]
    if not platforms:
        res.skipped = "pyopencl is installed but no PoCL platform was found (pip install pocl-binary-distribution)"
        return res
    ctx = cl.Context(platforms[0].get_devices()[:1])
    q = cl.CommandQueue(ctx)
    res.notes["version"] = platforms[0].version
    try:
        prg = cl.Program(ctx, ADD_SRC).build()
    except cl.Error as exc:  # a PoCL that cannot compile for this CPU: the kernel-free figures still count
        prg = None
        why = f"PoCL cannot build kernels here ({str(exc).strip().splitlines()[-1][:120]})"
        for fid in ("empty_kernel_us", "kernel_add_ratio", "matmul_ratio", "overlap_speedup"):
            res.notes[fid] = why
    _step(res, "memory per queued task", _pocl_queued, cl, ctx, q, p, res)  # first: the freshest heap
    _step(res, "latency", _pocl_latency, cl, ctx, q, prg, p)
    _step(res, "copies", _pocl_copies, cl, ctx, q, p)
    if prg is not None:
        _step(res, "elementwise add", _pocl_add, cl, ctx, q, prg, p, res)
        _step(res, "matmul", _pocl_matmul, cl, ctx, q, prg, p, res)
        _step(res, "copy/compute overlap", _pocl_overlap, cl, ctx, q, prg, p)
    _step(res, "many streams", _pocl_queues, cl, ctx, p)
    return res


def _pocl_latency(cl, ctx, q, prg, p: Profile) -> dict:
    mf = cl.mem_flags
    a, b = cl.Buffer(ctx, mf.READ_WRITE, 4096), cl.Buffer(ctx, mf.READ_WRITE, 4096)
    copy, finish, marker, Buffer = cl.enqueue_copy, q.finish, cl.enqueue_marker, cl.Buffer
    empty = prg.empty if prg is not None else None
    calls, reps, warm = p.latency_calls, p.latency_repeats, p.warmup

    def enqueue(n):
        keep = []
        hold = keep.append  # keep each event alive: the user waits on them later
        t0 = clock()
        for _ in range(n):
            hold(copy(q, b, a, byte_count=TINY))
        t = clock() - t0
        finish()
        return t

    def roundtrip(n):
        t0 = clock()
        for _ in range(n):
            copy(q, b, a, byte_count=TINY)
            finish()
        return clock() - t0

    def event_sync(n):
        t0 = clock()
        for _ in range(n):
            marker(q).wait()
        return clock() - t0

    def alloc_free(n):
        rw = mf.READ_WRITE
        t0 = clock()
        for _ in range(n):
            Buffer(ctx, rw, 4096).release()
        return clock() - t0

    def kernel(n):
        launch = cl.enqueue_nd_range_kernel
        t0 = clock()
        for _ in range(n):
            launch(q, empty, (1,), None)
            finish()
        return clock() - t0

    slow = max(10, calls // 4)  # the ~50 us figures need fewer calls per sample
    out = {"enqueue_us": per_call_us(enqueue, calls, reps, warm),
           "roundtrip_us": per_call_us(roundtrip, slow, reps, warm),
           "event_sync_us": per_call_us(event_sync, slow, reps, warm),
           "alloc_free_us": per_call_us(alloc_free, calls, reps, warm)}
    if prg is not None:
        out["empty_kernel_us"] = per_call_us(kernel, slow, reps, warm)
    return out


def _pocl_copies(cl, ctx, q, p: Profile) -> dict:
    n = p.copy_bytes
    h1 = np.random.default_rng().integers(0, 256, n, dtype=np.uint8)
    h2 = np.zeros(n, np.uint8)
    mf = cl.mem_flags
    d1, d2 = cl.Buffer(ctx, mf.READ_WRITE, n), cl.Buffer(ctx, mf.READ_WRITE, n)
    copy = cl.enqueue_copy

    def d2d():
        copy(q, d2, d1)
        q.finish()

    ref = lambda: np.copyto(h2, h1)  # noqa: E731
    reps, warm = p.big_repeats, p.warmup
    h2d = paired(ref, lambda: copy(q, d1, h1, is_blocking=True), reps, warm)
    d2h = paired(ref, lambda: copy(q, h2, d1, is_blocking=True), reps, warm)
    dd = paired(ref, d2d, reps, warm)
    return {"memcpy_h2d_ratio": h2d.ratio, "memcpy_d2h_ratio": d2h.ratio, "memcpy_d2d_ratio": dd.ratio,
            "copyto_gbps": _gbps(n, h2d.reference_s)}


def _pocl_add(cl, ctx, q, prg, p: Profile, res: Results) -> dict:
    n = p.add_bytes // 4
    rng = np.random.default_rng()
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c, got = np.empty_like(a), np.empty_like(a)
    mf = cl.mem_flags
    da = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    db = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
    dc = cl.Buffer(ctx, mf.WRITE_ONLY, a.nbytes)
    add = prg.add

    def subject():
        add(q, (n,), None, da, db, dc)
        q.finish()

    subject()
    cl.enqueue_copy(q, got, dc, is_blocking=True)
    if not np.array_equal(got, a + b):
        raise RuntimeError("the OpenCL add kernel gave a wrong result")
    r = paired(lambda: np.add(a, b, out=c), subject, p.big_repeats, p.warmup)
    return {"kernel_add_ratio": r.ratio, "kernel_add_ms": r.subject_s.scaled(1e3),
            "numpy_add_ms": r.reference_s.scaled(1e3)}


def _pocl_matmul(cl, ctx, q, prg, p: Profile, res: Results) -> dict:
    n = min(p.matmul_n, p.peer_matmul_n)
    rng = np.random.default_rng()
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    c, got = np.empty_like(a), np.empty_like(a)
    mf = cl.mem_flags
    da = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    db = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
    dc = cl.Buffer(ctx, mf.WRITE_ONLY, a.nbytes)
    mm = prg.matmul

    def subject():
        mm(q, (n, n), None, da, db, dc, np.int32(n))
        q.finish()

    subject()
    cl.enqueue_copy(q, got, dc, is_blocking=True)
    if not np.allclose(got, a @ b, rtol=1e-3, atol=1e-3 * n):
        raise RuntimeError("the OpenCL matmul kernel gave a wrong result")
    if n != p.matmul_n:
        res.notes["matmul_ratio"] = f"{n}^2, naive kernel"
        res.notes["matmul_ms"] = f"{n}^2"
        res.notes["numpy_matmul_ms"] = f"{n}^2"
    r = paired(lambda: np.matmul(a, b, out=c), subject, p.matmul_repeats, 1)
    return {"matmul_ratio": r.ratio, "matmul_ms": r.subject_s.scaled(1e3), "numpy_matmul_ms": r.reference_s.scaled(1e3)}


def _pocl_overlap(cl, ctx, q, prg, p: Profile) -> dict:
    B, batches = p.overlap_batch_bytes, p.overlap_batches
    n = B // 4
    host = np.random.default_rng().random(n * batches, dtype=np.float32)
    mf = cl.mem_flags
    d_in = [cl.Buffer(ctx, mf.READ_WRITE, B) for _ in range(2)]
    d_out = [cl.Buffer(ctx, mf.READ_WRITE, B) for _ in range(2)]
    q2 = cl.CommandQueue(ctx)
    gelu = prg.gelu  # the same tanh-approximation gelu as npurt's pipeline

    def pipeline(copy_q, compute_q, copies: bool = True, kernels: bool = True) -> float:
        done = [None, None]
        t0 = clock()
        for i in range(batches):
            j = i & 1
            wait = [done[j]] if done[j] is not None else None
            ready = None
            if copies:
                ready = cl.enqueue_copy(copy_q, d_in[j], host[i * n:(i + 1) * n], is_blocking=False, wait_for=wait)
            if kernels:
                done[j] = gelu(compute_q, (n,), None, d_in[j], d_out[j], wait_for=[ready] if ready else None)
        compute_q.finish()
        copy_q.finish()
        return clock() - t0

    r = paired(lambda: pipeline(q, q), lambda: pipeline(q2, q), p.overlap_repeats, p.warmup)
    copies = sample(lambda: pipeline(q, q, kernels=False), p.overlap_repeats, 1)
    kernels = sample(lambda: pipeline(q, q, copies=False), p.overlap_repeats, 1)
    c, k = copies.median, kernels.median
    ideal = (c + k) / max(c, k)
    return {"overlap_speedup": r.ratio, "overlap_one_stream_ms": r.reference_s.scaled(1e3),
            "overlap_two_streams_ms": r.subject_s.scaled(1e3), "overlap_copies_ms": copies.scaled(1e3),
            "overlap_kernels_ms": kernels.scaled(1e3), "overlap_ideal": Stat(ideal, ideal, ideal, 1)}


def _pocl_queues(cl, ctx, p: Profile) -> dict:
    mf = cl.mem_flags
    a, b = cl.Buffer(ctx, mf.READ_WRITE, 4096), cl.Buffer(ctx, mf.READ_WRITE, 4096)

    def run() -> float:
        t0 = clock()
        queues = [cl.CommandQueue(ctx) for _ in range(p.streams)]
        events = [cl.enqueue_copy(qq, b, a, byte_count=TINY) for qq in queues]
        for qq in queues:
            qq.finish()
        t = clock() - t0
        del events
        for qq in queues:
            qq.finish()
        return t

    return {"streams_10k_s": sample(run, p.streams_repeats, 1)}


def _pocl_queued(cl, ctx, q, p: Profile, res: Results) -> dict:
    """Commands queued behind a user event that is not yet complete, measured as npurt's:
    tracemalloc (pyopencl's Python objects) plus mallinfo2 (PoCL's C structures) per
    command, and the RSS delta of a second pass."""
    mf = cl.mem_flags
    a, b = cl.Buffer(ctx, mf.READ_WRITE, 4096), cl.Buffer(ctx, mf.READ_WRITE, 4096)
    count = p.peer_queued_tasks
    copy = cl.enqueue_copy

    def fill(traced: bool) -> tuple[float, float]:
        gate = cl.UserEvent(ctx)
        if traced:
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
        else:
            before, c_before = rss_bytes(), c_heap_bytes()
        t0 = clock()
        events = [copy(q, b, a, byte_count=TINY, wait_for=[gate])]
        keep = events.append
        for _ in range(count - 1):
            keep(copy(q, b, a, byte_count=TINY))
        t = clock() - t0
        if traced:
            grown = tracemalloc.get_traced_memory()[0] - before
            tracemalloc.stop()
        else:
            grown = rss_bytes() - before, c_heap_bytes() - c_before
        gate.set_status(cl.command_execution_status.COMPLETE)
        q.finish()
        del events
        return grown, t / count * 1e6

    (rss, c_heap), enq = fill(False)
    python_heap, _ = fill(True)
    for fid in ("bytes_per_task", "bytes_per_task_rss", "enqueue_queued_us"):
        res.notes[fid] = f"{count:,} queued"
    one = lambda v: Stat(v, v, v, 1)  # noqa: E731
    return {"bytes_per_task": one((python_heap + max(0, c_heap)) / count), "bytes_per_task_rss": one(rss / count),
            "enqueue_queued_us": one(enq)}


# ================================================================ Numba's CUDA simulator
cuda = None  # numba.cuda, imported by measure_numba_sim in the child process


def measure_numba_sim(p: Profile) -> Results:
    # The simulator swaps the numba.cuda module for its fake one in a kernel's *globals*
    # (not closures), so the kernels below must reach it as this module's global.
    global cuda
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")  # before numba.cuda is imported
    from numba import cuda
    res = Results("Numba sim")
    if not getattr(cuda, "simulator_enabled", False) and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        res.skipped = "numba.cuda was imported without NUMBA_ENABLE_CUDASIM=1"
        return res
    sync_note = "synchronous"
    for fid in ("enqueue_us",):
        res.notes[fid] = sync_note
    res.notes["event_sync_us"] = "no-op"
    res.notes["overlap_speedup"] = "n/a: synchronous"
    res.notes["matmul_ratio"] = "n/a: 1 Python thread per element"
    res.notes["bytes_per_task"] = "n/a: nothing queues"
    _step(res, "latency", _sim_latency, p)
    _step(res, "copies", _sim_copies, p)
    _step(res, "elementwise add", _sim_add, p, res)
    _step(res, "many streams", _sim_streams, p)
    return res


def _sim_latency(p: Profile) -> dict:
    s = cuda.stream()
    h = np.zeros(TINY, np.uint8)
    d = cuda.to_device(h)
    calls, reps, warm = max(10, p.latency_calls // 4), p.latency_repeats, p.warmup

    @cuda.jit
    def empty():
        pass

    def enqueue(n):
        t0 = clock()
        for _ in range(n):
            d.copy_to_device(h, stream=s)
        t = clock() - t0
        s.synchronize()
        return t

    def roundtrip(n):
        t0 = clock()
        for _ in range(n):
            d.copy_to_device(h, stream=s)
            s.synchronize()
        return clock() - t0

    def event_sync(n):
        ev = cuda.event()
        t0 = clock()
        for _ in range(n):
            ev.record(s)
            ev.synchronize()
        return clock() - t0

    def alloc_free(n):
        t0 = clock()
        for _ in range(n):
            cuda.device_array(4096, np.uint8)  # dropped at once: freed
        return clock() - t0

    def kernel(n):
        t0 = clock()
        for _ in range(n):
            empty[1, 1, s]()
            s.synchronize()
        return clock() - t0

    return {"enqueue_us": per_call_us(enqueue, calls, reps, warm),
            "roundtrip_us": per_call_us(roundtrip, calls, reps, warm),
            "event_sync_us": per_call_us(event_sync, calls, reps, warm),
            "alloc_free_us": per_call_us(alloc_free, calls, reps, warm),
            "empty_kernel_us": per_call_us(kernel, max(5, calls // 10), reps, warm)}


def _sim_copies(p: Profile) -> dict:
    n = p.copy_bytes
    h1 = np.random.default_rng().integers(0, 256, n, dtype=np.uint8)
    h2 = np.zeros(n, np.uint8)
    d1, d2 = cuda.to_device(h1), cuda.device_array(n, np.uint8)
    ref = lambda: np.copyto(h2, h1)  # noqa: E731
    reps, warm = p.big_repeats, p.warmup
    h2d = paired(ref, lambda: d1.copy_to_device(h1), reps, warm)
    d2h = paired(ref, lambda: d1.copy_to_host(h2), reps, warm)
    dd = paired(ref, lambda: d2.copy_to_device(d1), reps, warm)
    return {"memcpy_h2d_ratio": h2d.ratio, "memcpy_d2h_ratio": d2h.ratio, "memcpy_d2d_ratio": dd.ratio,
            "copyto_gbps": _gbps(n, h2d.reference_s)}


def _sim_add(p: Profile, res: Results) -> dict:
    n = p.sim_add_elements
    rng = np.random.default_rng()
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.device_array(n, np.float32)
    s = cuda.stream()

    @cuda.jit
    def add(x, y, z):
        i = cuda.grid(1)
        if i < z.size:
            z[i] = x[i] + y[i]

    threads = 256

    def subject():
        add[(n + threads - 1) // threads, threads, s](da, db, dc)
        s.synchronize()

    subject()
    if not np.array_equal(dc.copy_to_host(), a + b):
        raise RuntimeError("the simulated add kernel gave a wrong result")
    r = paired(lambda: np.add(a, b, out=c), subject, 3, 0)
    note = f"{n:,} elements"
    for fid in ("kernel_add_ratio", "kernel_add_ms", "numpy_add_ms"):
        res.notes[fid] = note
    return {"kernel_add_ratio": r.ratio, "kernel_add_ms": r.subject_s.scaled(1e3),
            "numpy_add_ms": r.reference_s.scaled(1e3)}


def _sim_streams(p: Profile) -> dict:
    h = np.zeros(TINY, np.uint8)
    d = cuda.to_device(h)

    def run() -> float:
        t0 = clock()
        streams = [cuda.stream() for _ in range(p.streams)]
        for s in streams:
            d.copy_to_device(h, stream=s)
        for s in streams:
            s.synchronize()
        return clock() - t0

    return {"streams_10k_s": sample(run, p.streams_repeats, 1)}


# ================================================================ child process entry
def _child(name: str, profile_json: str, only_json: str = "null") -> int:
    global _ONLY
    p = Profile(**json.loads(profile_json))
    only = json.loads(only_json)
    _ONLY = None if only is None else tuple(only)
    try:
        res = measure_pocl(p) if name == "PoCL" else measure_numba_sim(p)
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        res = Results(name, skipped=f"setup failed: {type(exc).__name__}: {exc}")
    stats = {k: [s.median, s.lo, s.hi, s.n] for k, s in res.stats.items()}
    print(MARK + json.dumps({"stats": stats, "notes": res.notes, "skipped": res.skipped, "errors": res.errors}),
          flush=True)
    return 0



# the child's program (`python -c`, not `-m`: the bench package already imports this module)
CHILD_PROGRAM = "import sys; from npurt.apps.bench.peers import _child; sys.exit(_child(*sys.argv[1:4]))"
