"""Where a two-stream pipeline loses its overlap (`overlap_compute_idle_pct`,
`overlap_handoff_us` of `npurt bench`): the time the compute stream could run its next kernel
but has not started it, read from the runtime's task events."""
from __future__ import annotations

from ...runtime import HOOKS
from .harness import Stat, clock


def compute_idle(run, copy_stream, compute_stream, repeats: int) -> tuple[Stat, Stat]:
    """Where the two-stream pipeline loses its overlap: per batch, the time the compute
    stream could run its kernel but does not (from the later of the copy stream's record of
    the batch's `ready` event finishing and the previous kernel finishing, to the kernel
    starting: the hand-off of the stream between threads), seen through the task events. Returns (those gaps summed, as a percentage of the run's wall time; the median
    gap in µs). Measured in runs of their own: a listening observer takes the runtime's tool
    path, so these runs are not the timed ones."""
    log: list = []

    def observer(name, task=None, **_fields):
        if task is not None and name in ("task_started", "task_finished"):
            log.append((clock(), name, task.stream, task.kind))

    shares, gaps = [], []
    for _ in range(repeats):
        log.clear()
        HOOKS.add(observer)
        try:
            t0 = clock()
            run()
            wall = clock() - t0
        finally:
            HOOKS.remove(observer)
        ready = [t for t, name, st, kind in log
                 if st is copy_stream and name == "task_finished" and kind == "record_event"]
        starts = [t for t, name, st, kind in log
                  if st is compute_stream and name == "task_started" and kind == "kernel"]
        ends = [t for t, name, st, kind in log
                if st is compute_stream and name == "task_finished" and kind == "kernel"]
        # idle: from the later of "its data is ready" and "the previous kernel finished"
        batch = [max(0.0, k - max(r, ends[i - 1] if i else r)) for i, (r, k) in enumerate(zip(ready, starts))]
        gaps += batch
        shares.append(100 * sum(batch) / wall)
    median_gap = sorted(gaps)[len(gaps) // 2] * 1e6 if gaps else float("nan")
    return Stat.of(shares), Stat(median_gap, min(gaps) * 1e6 if gaps else median_gap,
                                 max(gaps) * 1e6 if gaps else median_gap, len(gaps))
