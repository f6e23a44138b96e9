"""Sets of byte ranges (which bytes of an allocation were ever written)."""
from __future__ import annotations

import bisect


class IntervalSet:
    """Disjoint, sorted, merged [lo, hi) ranges."""

    __slots__ = ("los", "his")

    def __init__(self) -> None:
        self.los: list[int] = []
        self.his: list[int] = []

    def add(self, lo: int, hi: int) -> None:
        if lo >= hi:
            return
        los, his = self.los, self.his
        i = bisect.bisect_left(his, lo)        # first range ending at or after lo
        j = bisect.bisect_right(los, hi)       # ranges starting after hi stay
        if i < j:
            lo, hi = min(lo, los[i]), max(hi, his[j - 1])
        los[i:j] = [lo]
        his[i:j] = [hi]

    def missing(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The parts of [lo, hi) not in the set."""
        out, at = [], lo
        los, his = self.los, self.his
        i = bisect.bisect_right(his, lo)
        while at < hi and i < len(los):
            if los[i] >= hi:
                break
            if los[i] > at:
                out.append((at, los[i]))
            at = max(at, his[i])
            i += 1
        if at < hi:
            out.append((at, hi))
        return out

    def __repr__(self) -> str:
        return "IntervalSet(" + ", ".join(f"[{a:#x}, {b:#x})" for a, b in zip(self.los, self.his)) + ")"
