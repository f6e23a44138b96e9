"""Host writes that no runtime call tells about: found by a change of the buffer's contents.

A host thread writes a numpy array, a pinned buffer (`empty_pinned`, a `ptr_to_numpy`
view) or a registered buffer with plain Python or numpy, which no hook sees. While an
asynchronous copy that reads or writes such host memory is not yet ordered before the host
(no synchronize since its enqueue), the sanitizer keeps a copy of the bytes as the host left
them. It compares when the host next learns the copy finished, and before the device writes
the memory; a difference the device did not make is a host write
racing the copy. The result does not depend on timing: a write made after the copy ran
but before the synchronize is found too, at that synchronize.

What cannot be found this way: a host *read* of such memory through numpy before the
synchronize (nothing changes), and a write of the values the memory already held.
"""
from __future__ import annotations

import numpy as np

from npurt.runtime import address

from .report import Actor, Report

SNAPSHOT_LIMIT = 64 << 20  # bytes per watched range; larger ranges are compared by chunk sums
CHUNK = 1 << 16


def _view(lo: int, hi: int) -> np.ndarray:
    return address.host_view(lo, hi - lo)


# Snapshot buffers are reused: a copy into freshly allocated memory pays a page fault per
# 4 KiB (measured here: 25 ms for 8 MiB, against 2 ms into memory already touched).
_spare: dict[int, list] = {}
_SPARE_LIMIT = 256 << 20
_spare_bytes = [0]


def _buffer(n: int) -> np.ndarray:
    lst = _spare.get(n)
    if lst:
        _spare_bytes[0] -= n
        return lst.pop()
    return np.empty(n, np.uint8)


def _give_back(buf: np.ndarray) -> None:
    if _spare_bytes[0] + buf.size <= _SPARE_LIMIT:
        _spare.setdefault(buf.size, []).append(buf)
        _spare_bytes[0] += buf.size


class Snapshot:
    """The bytes of a host range (or, for big ranges, per-chunk sums of them)."""

    __slots__ = ("lo", "hi", "data", "sums")

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi
        self.data = self.sums = None
        self.take()

    def take(self) -> None:
        """(Re)capture the range as it is now."""
        view = _view(self.lo, self.hi)
        if self.hi - self.lo <= SNAPSHOT_LIMIT:
            if self.data is None:
                self.data = _buffer(view.size)
            np.copyto(self.data, view)
        else:
            self.sums = _sums(view)

    def release(self) -> None:
        if self.data is not None:
            _give_back(self.data)
            self.data = None

    def changed(self) -> tuple[int, int] | None:
        """The [lo, hi) span of bytes that differ now, or None."""
        view = _view(self.lo, self.hi)
        if self.data is not None:
            if _same(view, self.data):
                return None
            diff = np.flatnonzero(view != self.data)
            if not diff.size:
                return None
            return self.lo + int(diff[0]), self.lo + int(diff[-1]) + 1
        now = _sums(view)
        diff = np.flatnonzero((now != self.sums).any(axis=1))
        if not diff.size:
            return None
        return (self.lo + int(diff[0]) * CHUNK,
                min(self.hi, self.lo + (int(diff[-1]) + 1) * CHUNK))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Byte-equal, compared 8 bytes at a time where the length allows (8x less work)."""
    n = a.size // 8 * 8
    if n and not np.array_equal(a[:n].view(np.uint64), b[:n].view(np.uint64)):
        return False
    return bool(np.array_equal(a[n:], b[n:]))


def _sums(view: np.ndarray) -> np.ndarray:
    """Two position-sensitive sums per CHUNK bytes (and one row for the tail)."""
    n = view.size // CHUNK * CHUNK
    rows = []
    if n:
        body = view[:n].view(np.uint64).reshape(-1, CHUNK // 8)
        weights = np.arange(1, 2 * (CHUNK // 8), 2, dtype=np.uint64)
        rows.append(np.stack([np.add.reduce(body * weights, axis=1), np.bitwise_xor.reduce(body, axis=1)], axis=1))
    if view.size > n:
        tail = view[n:].tobytes()
        rows.append(np.array([[hash(tail) & ((1 << 63) - 1), len(tail)]], np.uint64))
    return np.concatenate(rows) if rows else np.zeros((0, 2), np.uint64)


class Watch:
    """A host range with asynchronous work not yet ordered before the host."""

    __slots__ = ("lo", "hi", "snap", "pending", "writing", "since")

    def __init__(self, lo: int, hi: int, since):
        self.lo, self.hi = lo, hi
        self.snap: Snapshot | None = None
        self.pending: list = []     # (TaskInfo, write)
        self.writing = 0            # device writes to it running now
        self.since = since          # the user's line after which a change is the host's


class HostWatch:
    def __init__(self) -> None:
        self.watches: dict[tuple[int, int], Watch] = {}

    def overlapping(self, lo: int, hi: int) -> list[Watch]:
        return [w for w in self.watches.values() if w.lo < hi and lo < w.hi]

    def enqueued(self, info, lo: int, hi: int, write: bool, site) -> None:
        """A task that will touch host memory [lo, hi) was enqueued."""
        w = self.watches.get((lo, hi))
        if w is None:
            w = self.watches[(lo, hi)] = Watch(lo, hi, site)
            if not any(o.writing for o in self.overlapping(lo, hi)):
                w.snap = Snapshot(lo, hi)
        w.pending.append((info, write))

    def check(self, w: Watch, now) -> tuple[int, int] | None:
        """A change of a watched range's bytes since its snapshot (the snapshot is renewed)."""
        if w.snap is None or w.writing:
            return None
        span = w.snap.changed()
        if span is not None:
            w.snap.take()
        if now is not None:
            w.since = now
        if span is None:
            return None
        lo, hi = span  # whole 16-byte words: a value's unchanged bytes still belong to the write
        return max(w.lo, lo - (lo - w.lo) % 16), min(w.hi, hi + (-(hi - w.lo)) % 16)

    def started(self, info, lo: int, hi: int, write: bool, now) -> list:
        """A task touching [lo, hi) starts: a task that writes it would hide a host write made
        before it, so the bytes are compared first (a read hides nothing: the comparison when
        the host learns the task finished sees the same change)."""
        found = []
        if not write:
            return found
        for w in self.overlapping(lo, hi):
            since = w.since
            span = self.check(w, now)
            if span is not None:
                found.append((list(w.pending), span, since))
            w.writing += 1
        return found

    def finished(self, info, lo: int, hi: int, write: bool) -> None:
        if not write:
            return
        for w in self.overlapping(lo, hi):
            w.writing = max(0, w.writing - 1)
            if not w.writing:  # the device's bytes are the new reference
                if w.snap is None:
                    w.snap = Snapshot(w.lo, w.hi)
                else:
                    w.snap.take()

    def ordered(self, is_ordered, now) -> list:
        """The host learned that some work finished: compare, then stop watching what is
        now ordered before it. is_ordered(info) says which pending tasks are."""
        found = []
        for key, w in list(self.watches.items()):
            if not any(is_ordered(info) for info, _ in w.pending):
                continue
            since = w.since
            span = self.check(w, now)
            if span is not None:
                found.append((list(w.pending), span, since))
            w.pending = [(info, write) for info, write in w.pending if not is_ordered(info)]
            if not w.pending:
                del self.watches[key]
                if w.snap is not None:
                    w.snap.release()
        return found

    def forget(self, lo: int, hi: int) -> None:
        """The memory is gone (free_host, unregister): stop watching it."""
        for w in self.overlapping(lo, hi):
            self.watches.pop((w.lo, w.hi), None)
            if w.snap is not None:
                w.snap.release()


def host_write_report(pending: list, span: tuple[int, int], since, now, host_actor: Actor) -> Report:
    """pending: the (task info, writes) not ordered before the host when the change was seen."""
    lo, hi = span
    partners = [(info, write) for info, write in pending if info.lo_hi_overlaps(lo, hi)] or pending
    info, write = partners[0]
    name = "WAW hazard" if write else "WAR hazard"
    words = "write after write" if write else "write after read"
    actors = [info.actor("write" if write else "read"), host_actor]
    window = f"between {since} and {now}" if since is not None and now is not None else (
        f"after {since}" if since is not None else "")
    details = [f"bytes 0x{lo:x}..0x{hi:x} ({hi - lo} bytes) of host memory changed {window} while "
               f"{info.describe()} was not yet ordered before the host: the host wrote them (npurt sees host "
               "writes by their effect on the bytes)"]
    fix = (f"synchronize {info.stream_label} (or an event recorded after {info.describe()}) before writing this "
           "host buffer again, or write into a second buffer while the copy runs")
    return Report("racecheck", name, f"{words} on {hi - lo} bytes of host memory", actors=actors, details=details,
                  fix=fix, address=lo, nbytes=hi - lo, key=("host-write", info.site, since))
