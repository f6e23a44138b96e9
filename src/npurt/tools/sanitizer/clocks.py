"""Happens-before: vector clocks over agents (streams and host threads).

A vector clock maps an agent id to the last clock value of that agent known to happen
before. It is a plain dict that is never changed once shared: `join` returns its first
argument itself when the second adds nothing, so "did anything change?" is an identity test.

* A stream's clock is its task sequence number: task n of stream S has S: n in its clock.
* A host thread's clock advances after it touched memory and then enqueued work, so its
  accesses before an enqueue happen before the task and those after do not.
"""
from __future__ import annotations

import bisect
import itertools

_agent_ids = itertools.count(1)


def new_agent() -> int:
    return next(_agent_ids)


def join(a: dict, b: dict) -> dict:
    """The pointwise maximum; `a` itself when b adds nothing."""
    out = None
    for k, v in b.items():
        if v > a.get(k, 0):
            if out is None:
                out = dict(a)
            out[k] = v
    return a if out is None else out


def ordered(agent: int, clock: int, vc: dict) -> bool:
    """True if the event (agent, clock) happens before everything vc stands for."""
    return clock <= vc.get(agent, 0)


class HostAgent:
    """A host thread as the sanitizer sees it."""

    __slots__ = ("agent", "clock", "vc", "dirty", "snapped", "name", "ident")

    def __init__(self, ident: int, name: str):
        self.agent = new_agent()
        self.clock = 1
        self.vc = {self.agent: 1}
        self.dirty = False    # an access was made at the current clock
        self.snapped = False  # a task was enqueued knowing the current clock
        self.ident, self.name = ident, name

    def touched(self) -> tuple[int, int]:
        """The epoch of an access made now: after every task enqueued so far (a synchronous
        copy made right after a launch, with no access of the host in between, is not part
        of what the launched kernel was ordered after)."""
        if self.snapped:
            self.snapped = False
            self.clock += 1
            self.vc = {**self.vc, self.agent: self.clock}
        self.dirty = True
        return self.agent, self.clock

    def snapshot(self) -> dict:
        """The clock a task enqueued now starts from; later accesses are not before it."""
        vc = self.vc
        if self.dirty:
            self.dirty = False
            self.clock += 1
            self.vc = {**vc, self.agent: self.clock}
        else:
            self.snapped = True
        return vc

    def learn(self, vc: dict) -> None:
        """The thread is now ordered after everything `vc` stands for."""
        self.vc = join(self.vc, vc)


class StreamClock:
    """The clocks of one stream's tasks, computed in execution order.

    `ext` is the stream's clock without its own entry, after the last started task; each
    change of it is kept as a checkpoint (sequence number, ext) so the clock of any earlier
    task can be found (event records, host synchronizes)."""

    MAX_CHECKPOINTS = 1 << 16

    __slots__ = ("agent", "ext", "started", "seqs", "exts", "pending")

    def __init__(self) -> None:
        self.agent = new_agent()
        self.ext: dict = {}
        self.started = 0
        self.seqs: list[int] = [0]
        self.exts: list[dict] = [{}]
        self.pending: dict = {}   # joined into the next task (a blocking callback's thread)

    def start(self, seq: int, *extra: dict) -> dict:
        """Task `seq` starts: its clock is the stream's, joined with `extra` (the enqueuing
        thread's clock, the record a wait waited for)."""
        ext, me = self.ext, self.agent
        if self.pending:
            extra = (*extra, self.pending)
            self.pending = {}
        for vc in extra:
            for k, v in vc.items():
                if v > ext.get(k, 0) and k != me:
                    if ext is self.ext:
                        ext = dict(ext)
                    ext[k] = v
        if ext is not self.ext:
            self.ext = ext
            self.seqs.append(seq)
            self.exts.append(ext)
            if len(self.seqs) > self.MAX_CHECKPOINTS:  # thin out the older half
                half = len(self.seqs) // 2
                self.seqs[:half] = self.seqs[:half:2]
                self.exts[:half] = self.exts[:half:2]
        self.started = seq
        return {**ext, self.agent: seq}

    def at(self, seq: int) -> dict:
        """The clock of task `seq` (one that started, or one that will start next with
        nothing more joined), for whoever learns that it has finished."""
        if seq >= self.started:
            ext = self.ext
        else:
            ext = self.exts[bisect.bisect_right(self.seqs, seq) - 1]
        return {**ext, self.agent: seq}
