"""Where a two-stream pipeline loses its overlap (`overlap_compute_idle_pct`,
`overlap_handoff_us` of `npurt bench`): the time the compute stream could run its next kernel
but has not started it, read from event timestamps, as one would measure it on an NPU."""
from __future__ import annotations

from .harness import Stat
from .metrics import value


def compute_idle(run, rt, batches: int, repeats: int) -> tuple[Stat, Stat]:
    """Where the two-stream pipeline loses its overlap: per batch, the time the compute
    stream could run its kernel but does not, from the later of "its data is ready" (the copy
    stream's record of the batch's `ready` event) and "the previous kernel is done" (the
    compute stream's record of `done` after it) to the compute stream resuming (its record
    of `start`, right after its wait for `ready` and before the kernel): the hand-off of the
    stream between threads. Returns (those gaps summed, as a percentage of the run's wall
    time; the median gap in µs).

    `run(marks)` runs the pipeline with `marks` = (ready, start, done): a timing event per
    batch for each, and returns its wall time in seconds. The timestamps are the runtime's
    own (event_get_timestamp, µs), so the measured runs take the same path as the timed ones;
    a listening observer would not (it puts every task on the tool path: a hand-off between
    two kernels measured 40 µs through task events and 12-17 µs by timestamps; alternated on
    one pipeline, 2.1 % against 1.4 % median, docs/performance.md "Session 10"). The `start`
    record is the one task these runs add to the timed pipeline."""
    marks: tuple[list, list, list] = ([], [], [])
    try:
        for events in marks:
            for _ in range(batches):
                events.append(value(rt.create_event(), "create_event"))
        shares, gaps = [], []
        for _ in range(repeats):
            wall = run(marks)
            ready, start, done = ([value(rt.event_get_timestamp(e), "event_get_timestamp") for e in events] for events in marks)
            batch = [max(0, start[i] - max(ready[i], done[i - 1] if i else ready[i])) for i in range(batches)]
            gaps += batch
            shares.append(100 * sum(batch) * 1e-6 / wall)
    finally:
        for events in marks:
            for ev in events:
                rt.destroy_event(ev)
    gaps.sort()
    median_gap = float(gaps[len(gaps) // 2]) if gaps else float("nan")
    return Stat.of(shares), Stat(median_gap, float(gaps[0]) if gaps else median_gap,
                                 float(gaps[-1]) if gaps else median_gap, len(gaps))

