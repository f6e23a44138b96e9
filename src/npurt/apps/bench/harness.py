"""Timing: warm-up, repeats, medians and spreads, and the sizes of a run.

Every figure is a `Stat`: the median of `repeats` samples taken after `warmup` untimed runs,
with the smallest and largest sample. Latencies are timed as a loop of many calls divided by
the number of calls (one call is too short for the clock), so a sample is already an average
and the spread shows how much the machine drifted between samples. Ratios against a reference
(numpy, np.copyto) are *paired*: reference and subject run alternately, each pair gives one
ratio, and the ratio's median is reported — this VM's speed drifts by up to 1.6x for seconds
at a time, so only figures measured side by side are comparable.
"""
from __future__ import annotations

import ctypes
import gc
import math
import os
import statistics
import time
from dataclasses import dataclass, replace
from typing import Callable

clock = time.perf_counter


@dataclass(frozen=True)
class Stat:
    """Median and range of a set of samples."""

    median: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, samples: list[float]) -> "Stat":
        if not samples:
            raise ValueError("a Stat needs at least one sample")
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))

    def scaled(self, factor: float) -> "Stat":
        """The same figure in another unit (e.g. seconds -> microseconds)."""
        lo, hi = sorted((self.lo * factor, self.hi * factor))
        return Stat(self.median * factor, lo, hi, self.n)

    def finite(self) -> bool:
        return all(math.isfinite(v) for v in (self.median, self.lo, self.hi))


@dataclass(frozen=True)
class Profile:
    """Sizes and repeat counts of one run (full, quick, or tiny for the smoke test)."""

    name: str
    latency_calls: int        # calls per latency sample
    latency_repeats: int      # latency samples
    copy_bytes: int           # memcpy bandwidth buffers
    add_bytes: int            # elementwise add: bytes per operand
    matmul_n: int             # square matmul size
    big_repeats: int          # samples of bandwidth / kernel figures (paired)
    matmul_repeats: int
    overlap_batches: int      # pipeline batches
    overlap_batch_bytes: int  # bytes per pipeline batch
    overlap_repeats: int
    streams: int              # streams created for the many-streams figure
    streams_repeats: int
    queued_tasks: int         # tasks queued for the memory-per-task figure
    peer_queued_tasks: int    # the same for PoCL (its commands are heavier)
    peer_matmul_n: int        # a naive OpenCL matmul cannot do 4096^2 in reasonable time
    sim_add_elements: int     # Numba's simulator runs one Python thread per CUDA thread
    warmup: int = 2
    allreduce_bytes: int = 64 << 20  # AllReduce across 2 processes (per rank)
    fragment_frees: int = 1_000_000  # small blocks freed before the large malloc of alloc_after_fragmentation_ms

    def describe(self) -> str:
        mib = 1 << 20
        return (f"{self.name} run: {self.copy_bytes // mib} MiB copies, {self.add_bytes // mib} MiB add operands, "
                f"{self.matmul_n}^2 matmul, {self.streams:,} streams, {self.queued_tasks:,} queued tasks, "
                f"{self.latency_calls:,} calls x {self.latency_repeats} samples per latency")


MiB = 1 << 20
FULL = Profile("full", latency_calls=2000, latency_repeats=31, copy_bytes=64 * MiB, add_bytes=64 * MiB,
               matmul_n=4096, big_repeats=11, matmul_repeats=5, overlap_batches=8,
               overlap_batch_bytes=32 * MiB, overlap_repeats=9, streams=10_000, streams_repeats=5,
               queued_tasks=1_000_000, peer_queued_tasks=100_000, peer_matmul_n=1024,
               sim_add_elements=4096)
QUICK = replace(FULL, name="quick", latency_calls=1000, latency_repeats=21, copy_bytes=16 * MiB,
                add_bytes=16 * MiB, matmul_n=1024, big_repeats=9, matmul_repeats=5, overlap_batches=6,
                overlap_batch_bytes=4 * MiB, overlap_repeats=5, streams=1000, streams_repeats=3,
                queued_tasks=100_000, peer_queued_tasks=20_000, peer_matmul_n=256, sim_add_elements=1024,
                allreduce_bytes=16 * MiB, fragment_frees=200_000)
# the smoke test's size: every code path, nothing meaningful about the numbers
TINY = replace(QUICK, name="tiny", latency_calls=50, latency_repeats=3, copy_bytes=1 * MiB, add_bytes=1 * MiB,
               matmul_n=128, big_repeats=3, matmul_repeats=3, overlap_batches=3, overlap_batch_bytes=256 * 1024,
               overlap_repeats=3, streams=50, streams_repeats=2, queued_tasks=2000, peer_queued_tasks=500,
               peer_matmul_n=64, sim_add_elements=64, warmup=1, allreduce_bytes=1 * MiB,
               fragment_frees=20_000)
PROFILES = {p.name: p for p in (FULL, QUICK, TINY)}


def sample(run: Callable[[], float], repeats: int, warmup: int) -> Stat:
    """Stat of `repeats` values of run() after `warmup` untimed calls."""
    for _ in range(warmup):
        run()
    gc.collect()
    return Stat.of([run() for _ in range(repeats)])


def per_call_us(loop: Callable[[int], float], calls: int, repeats: int, warmup: int) -> Stat:
    """Latency in microseconds: loop(n) runs n calls and returns the seconds they took."""
    return sample(lambda: loop(calls) / calls * 1e6, repeats, warmup)


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of fn takes."""
    t0 = clock()
    fn()
    return clock() - t0


@dataclass(frozen=True)
class Paired:
    """A subject timed alternately with its reference: the ratio reference time / subject
    time (> 1: the subject is faster) and both times in seconds."""

    ratio: Stat
    subject_s: Stat
    reference_s: Stat


def paired(reference: Callable[[], object], subject: Callable[[], object], repeats: int, warmup: int) -> Paired:
    """Time `reference` and `subject` alternately; each pair gives one ratio."""
    for _ in range(warmup):
        reference()
        subject()
    gc.collect()
    ratios, subj, ref = [], [], []
    for i in range(repeats):
        # alternate which goes first, so neither always runs on a cache the other warmed
        if i % 2:
            s = timed(subject)
            r = timed(reference)
        else:
            r = timed(reference)
            s = timed(subject)
        ratios.append(r / s)
        subj.append(s)
        ref.append(r)
    return Paired(Stat.of(ratios), Stat.of(subj), Stat.of(ref))


# ---------------------------------------------------------------- memory probes
def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


def _mallinfo2():
    try:
        fn = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):  # not glibc >= 2.33
        return None
    fn.restype = _MallInfo2
    return fn


_mallinfo = _mallinfo2()


def c_heap_bytes() -> int:
    """Bytes in use in the C heap (glibc mallinfo2, all arenas); 0 where unavailable. Python
    objects live in pymalloc arenas (mmap), not here, so this adds to tracemalloc's figure
    without counting twice (except objects over 512 bytes, rare in a queued task)."""
    if _mallinfo is None:
        return 0
    info = _mallinfo()
    return info.uordblks + info.hblkhd
