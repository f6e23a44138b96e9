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
from ...runtime import RUNTIME, constants as C
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
def stream_object(s: Session):
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
    stream = stream_object(s)
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
    stream = stream_object(s)
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
