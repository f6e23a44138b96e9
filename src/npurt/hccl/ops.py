"""What one rank asked for: the `Op` of a collective or point-to-point call, and the check
that every rank asked for the same thing.

An Op holds addresses and counts, not views (it waits in a stream's queue like any task).
Ranks exchange a small header (`Op.header`) before moving data, so mismatched counts, data
types, reduction ops or roots fail on every rank with HCCL_E_PARA instead of corrupting
memory or hanging.
"""
from __future__ import annotations

import threading

import numpy as np

from . import types as T

COLLECTIVES = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "reduce", "all_to_all",
               "all_to_all_v", "barrier")
KIND_IDS = {kind: i + 1 for i, kind in enumerate(COLLECTIVES + ("send", "recv"))}
KIND_NAMES = {i: kind for kind, i in KIND_IDS.items()}
REDUCING = ("all_reduce", "reduce_scatter", "reduce")
HEADER_FIXED = 6


class Op:
    """One rank's part of a collective (or of a send/recv pair)."""

    __slots__ = ("kind", "comm", "rank", "index", "match", "send", "recv", "count", "dtype_code",
                 "dtype", "red", "root", "peer", "send_counts", "send_displs", "recv_counts",
                 "recv_displs", "error", "done", "blocker", "lock", "instance", "started", "spans")

    def __init__(self, kind: str, comm, count: int = 0, dtype_code: int = T.HCCL_DATA_TYPE_INT8,
                 dtype: np.dtype = np.dtype(np.int8), send: int = 0, recv: int = 0, red: int = -1,
                 root: int = -1, peer: int = -1):
        self.kind, self.comm, self.rank = kind, comm, comm.rank
        self.index = self.match = 0
        self.send, self.recv, self.count = send, recv, count
        self.dtype_code, self.dtype, self.red, self.root, self.peer = dtype_code, dtype, red, root, peer
        self.send_counts = self.send_displs = self.recv_counts = self.recv_displs = None
        self.error: T.HcclError | None = None
        self.done = False
        self.blocker = None
        self.lock = threading.Lock()
        self.instance = None    # the in-process transport's shared record of this op
        self.started = False    # handed to the transport
        self.spans = ()         # located buffers (stream-ordered free)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def describe(self) -> str:
        what = f"{self.kind} #{self.match}"
        if self.kind in ("send", "recv"):
            what += f" {'to' if self.kind == 'send' else 'from'} rank {self.peer}"
        return f"HCCL {what} ({self.count} x {T.DATA_TYPE_NAMES[self.dtype_code]}) on rank {self.rank} " \
               f"of {self.comm.size} ({self.comm.name})"

    def extent(self, counts, displs) -> int:
        return max((d + c for d, c in zip(displs, counts) if c), default=0)

    def accesses(self) -> tuple:
        """This rank's buffers as (addr, nbytes, mode) for tools."""
        item, n, count = self.itemsize, self.comm.size, self.count
        kind = self.kind
        if kind == "barrier":
            return ()
        if kind == "send":
            return ((self.send, count * item, "r"),)
        if kind == "recv":
            return ((self.recv, count * item, "w"),)
        if kind == "broadcast":
            return ((self.send, count * item, "r" if self.rank == self.root else "w"),)
        if kind in ("all_to_all", "all_to_all_v"):
            spans = ((self.send, self.extent(self.send_counts, self.send_displs) * item, "r"),
                     (self.recv, self.extent(self.recv_counts, self.recv_displs) * item, "w"))
        else:
            ins = count * n if kind == "reduce_scatter" else count
            outs = count * n if kind == "all_gather" else count
            if kind == "reduce" and self.rank != self.root:
                return ((self.send, ins * item, "r"),) if ins else ()
            if self.send == self.recv:
                return ((self.send, ins * item, "rw"),) if ins else ()
            spans = ((self.send, ins * item, "r"), (self.recv, outs * item, "w"))
        return tuple(s for s in spans if s[1])

    # ---------------------------------------------------------- agreement
    def header(self) -> np.ndarray:
        """What this rank asked for, as int64s: kind, count, type, op, root, peer, then (for
        all-to-all) the counts it sends to and receives from each rank."""
        n = self.comm.size
        h = np.full(HEADER_FIXED + 2 * n, -1, np.int64)
        h[:HEADER_FIXED] = (KIND_IDS[self.kind], self.count, self.dtype_code, self.red, self.root, self.peer)
        if self.send_counts is not None:
            h[HEADER_FIXED:HEADER_FIXED + n] = self.send_counts
            h[HEADER_FIXED + n:] = self.recv_counts
        return h

    def complete(self, error: "T.HcclError | None" = None) -> None:
        """Record the outcome and wake the stream parked on this op (any thread)."""
        with self.lock:
            if self.done:
                return
            self.error = error
            self.done = True
            blocker, self.blocker = self.blocker, None
        if blocker is not None:
            blocker.fire()


def _describe_header(h: np.ndarray) -> str:
    kind = KIND_NAMES.get(int(h[0]), "?")
    parts = [kind]
    if kind not in ("barrier", "all_to_all_v"):
        parts.append(f"count {int(h[1])}")
    parts.append(T.DATA_TYPE_NAMES.get(int(h[2]), str(int(h[2]))))
    if kind in REDUCING:
        parts.append(f"op {T.REDUCE_OP_NAMES.get(int(h[3]), int(h[3]))}")
    if kind in ("broadcast", "reduce"):
        parts.append(f"root {int(h[4])}")
    return " ".join(parts)


def check_agreement(op: Op, headers: list[np.ndarray]) -> None:
    """HcclError(HCCL_E_PARA) unless every rank asked for a matching operation. `headers` is
    indexed by rank (all ranks for a collective; for send/recv, the two of the pair)."""
    if op.kind in ("send", "recv"):
        mine, theirs = headers[op.rank], headers[op.peer]
        if KIND_NAMES.get(int(theirs[0])) not in ("send", "recv") or theirs[0] == mine[0] or \
                theirs[1] != mine[1] or theirs[2] != mine[2]:
            sender, receiver = (mine, theirs) if op.kind == "send" else (theirs, mine)
            raise T.HcclError(
                f"{op.describe()}: the send and the receive do not match: the sender sends "
                f"{int(sender[1])} x {T.DATA_TYPE_NAMES.get(int(sender[2]), int(sender[2]))}, the receiver "
                f"expects {int(receiver[1])} x {T.DATA_TYPE_NAMES.get(int(receiver[2]), int(receiver[2]))}",
                T.HCCL_E_PARA)
        return
    n = len(headers)
    fixed = [tuple(int(v) for v in h[:HEADER_FIXED]) for h in headers]
    problem = None
    if len(set(fixed)) != 1:
        problem = "every rank must call the same operation with the same count, data type, op and root"
    elif op.kind == "all_to_all_v":
        for i in range(n):
            for j in range(n):
                if headers[i][HEADER_FIXED + j] != headers[j][HEADER_FIXED + n + i]:
                    raise T.HcclError(
                        f"{op.describe()}: rank {i} sends {int(headers[i][HEADER_FIXED + j])} elements to rank "
                        f"{j}, which expects {int(headers[j][HEADER_FIXED + n + i])} from it (send_counts[j] "
                        "of rank i must equal recv_counts[i] of rank j)", T.HCCL_E_PARA)
    if problem is not None:
        table = "; ".join(f"rank {r}: {_describe_header(h)}" for r, h in enumerate(headers))
        raise T.HcclError(f"{op.describe()}: ranks disagree ({table}); {problem}", T.HCCL_E_PARA)


def partition(count: int, parts: int) -> list[int]:
    """Bounds of `parts` nearly equal chunks of `count` elements (parts + 1 numbers)."""
    return [count * i // parts for i in range(parts + 1)]
