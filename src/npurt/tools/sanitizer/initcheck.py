"""initcheck: reads of device memory that nothing ever wrote.

Each device allocation keeps the set of its bytes that were written (copies and sets into
it, kernel views declared "w", and the bytes an "rw" view was found to change). A read of
bytes outside that set is reported: on an NPU they hold whatever the memory held before
(another allocation's data, or garbage). A kernel view declared "rw" (the default) may or
may not read: it is not checked for reads, only what it changed is counted as written.

Finding what an "rw" view changed: when a task first takes such a view, the bytes nothing
ever wrote are filled with a pattern (their contents are undefined anyway) and the rest is
copied; when the task finishes, the bytes that differ from the pattern or the copy were
written. A write of the same value the memory already held is not seen, which is harmless.

Reads of unwritten bytes are reported when the allocation is freed or released, or when
the run ends, not at once: a write that turns out to be concurrent with the read (a race,
which racecheck reports) cancels it, so what is reported does not depend on which of the
two happened to run first.
"""
from __future__ import annotations

import numpy as np

from .report import Report

CANARY = np.frombuffer(bytes((0x5B + 7 * i) % 256 for i in range(251)), np.uint8)  # a period no dtype aligns with
GAP = 16  # changed bytes closer than this count as one written range (a value's unchanged bytes)


class UnwrittenRead:
    """A read of bytes no write had reached when it was checked."""

    __slots__ = ("gaps", "actor", "agent", "clock")

    def __init__(self, gaps, actor, agent, clock):
        self.gaps, self.actor, self.agent, self.clock = gaps, actor, agent, clock


def uninit_report(alloc, gaps: list, actor) -> Report:
    n = sum(b - a for a, b in gaps)
    lo = gaps[0][0]
    first = ", ".join(f"0x{a:x}..0x{b:x}" for a, b in gaps[:3]) + (" ..." if len(gaps) > 3 else "")
    return Report(
        "initcheck", "uninitialized read", f"{n} bytes of {alloc.describe()} are read but were never written",
        actors=[actor], details=[f"never written: {first}"],
        fix="write the memory first (memcpy or memset into it, or a kernel output) or read only what was written",
        address=lo, nbytes=n, device=getattr(alloc.device, "id", None), key=(alloc.site, actor.site))


def fill_canary(view: np.ndarray, offset: int) -> None:
    """Fill a byte view with the pattern, phased by its offset in the allocation."""
    n = view.size
    if not n:
        return
    reps = -(-(n + offset % CANARY.size) // CANARY.size)
    view[:] = np.tile(CANARY, reps)[offset % CANARY.size:offset % CANARY.size + n]


def changed_ranges(before: np.ndarray, after: np.ndarray) -> list[tuple[int, int]]:
    """[lo, hi) byte ranges where `after` differs from `before` (gaps under GAP merged)."""
    diff = np.flatnonzero(before != after)
    if not diff.size:
        return []
    breaks = np.flatnonzero(np.diff(diff) > GAP)
    starts = np.concatenate(([diff[0]], diff[breaks + 1]))
    ends = np.concatenate((diff[breaks], [diff[-1]])) + 1
    return list(zip(starts.tolist(), ends.tolist()))
