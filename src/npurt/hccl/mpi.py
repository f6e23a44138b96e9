"""The MPI transport: ranks in other processes, on this host or others, through mpi4py.

mpi4py (and an MPI library, e.g. the `mpich` wheel) is the optional extra `npurt[dist]`; it is
imported only when a communicator spans processes. Each communicator gets a private MPI
communicator (a duplicate of COMM_WORLD, made at init without blocking) and an *engine*: one
thread that runs the communicator's operations in the order this rank issued them, playing
the NIC and the collective engine of a real NPU. A stream whose collective reaches its head hands the op to
the engine and parks; the engine exchanges a small header with the ranks involved (all of
them, or the send/recv peer), checks that they agree, moves the data with the algorithms of
algorithms.py (nonblocking point-to-point messages straight from and into device memory
views), and wakes the stream.

Nothing waits forever: every wait polls its MPI requests against a deadline (HCCL_EXEC_TIMEOUT
for operations, HCCL_CONNECT_TIMEOUT for communicator creation). A rank that never arrives
makes the others fail with HCCL_E_TIMEOUT; their pending receives are cancelled and the
communicator becomes unusable (later operations fail at once), as in HCCL.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import socket
import threading
import time

import numpy as np

from ..runtime import address, fork_safe_lock
from . import algorithms
from . import types as T
from .local import unusable
from .ops import COLLECTIVES, Op, check_agreement

MAX_MESSAGE = 1 << 30   # larger buffers go as several messages
SPIN_S = 0.002          # spin this long before sleeping between polls (waiting for a late rank)
INSTALL_HINT = "pip install 'npurt[dist]'"


class MissingExtraError(T.HcclError, ImportError):
    """mpi4py (npurt[dist]) is needed for communicators that span processes."""


_MPI = None
_base = None
_init_seq = 0
_transports: list["MpiTransport"] = []
_lock = fork_safe_lock()


def mpi():
    """The mpi4py.MPI module, initialized with MPI_THREAD_MULTIPLE; a clear error if missing."""
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI
        except ImportError as exc:
            raise MissingExtraError(f"communicators across processes need mpi4py and an MPI library "
                                    f"({exc}); install them with {INSTALL_HINT}", T.HCCL_E_NOT_SUPPORT) from None
        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
            raise T.HcclError("MPI was initialized without MPI_THREAD_MULTIPLE; npurt's collective engine "
                              "runs MPI from its own thread (leave mpi4py.rc.thread_level at 'multiple')",
                              T.HCCL_E_NOT_SUPPORT)
        _MPI = MPI
        atexit.register(_close_all)
    return _MPI


def world(timeout_s: float):
    """npurt's private duplicate of MPI_COMM_WORLD (communicator set-up messages). Duplicating
    is collective: a nonblocking one, so a process that never comes is a timeout, not a hang."""
    global _base
    if _base is None:
        base, request = mpi().COMM_WORLD.Idup()
        if not wait([request], time.monotonic() + timeout_s):
            raise T.HcclError(f"not every process of the MPI world created a communicator within "
                              f"HCCL_CONNECT_TIMEOUT ({timeout_s:g} s); every process must call comm_init at "
                              "the same point", T.HCCL_E_TIMEOUT)
        _base = base
    return _base


def _close_all() -> None:
    for transport in list(_transports):
        transport.close(timeout_s=5.0, abort=True)


# ---------------------------------------------------------------- waiting with a deadline
def wait(requests: list, deadline: float, closing=lambda: False, spin_s: float | None = SPIN_S) -> bool:
    """Poll `requests` until all complete (True) or the deadline passes (False). Spins first,
    then sleeps with a growing interval; `spin_s=None` never sleeps (data is moving: every
    poll advances MPI's progress engine)."""
    MPI = _MPI
    if MPI.Request.Testall(requests):
        return True
    start = time.monotonic()
    nap = 1e-5
    while not MPI.Request.Testall(requests):
        now = time.monotonic()
        if now >= deadline or closing():
            return False
        if spin_s is not None and now - start > spin_s:
            time.sleep(nap)
            nap = min(nap * 2, 1e-3)
    return True


def _bytes(array: np.ndarray) -> list[np.ndarray]:
    """Byte views of a contiguous array, cut into messages of at most MAX_MESSAGE."""
    flat = array.reshape(-1).view(np.uint8)
    return [flat[i:i + MAX_MESSAGE] for i in range(0, flat.size, MAX_MESSAGE)]


# ---------------------------------------------------------------- communicator set-up
def init(key: bytes, comm, connect_timeout: float, exec_timeout: float) -> None:
    """Make `comm` (this process's rank of communicator `key`) an MPI communicator.

    Every process of the MPI world must call this at the same point (each may join a different
    communicator): the processes exchange (key, size, rank, host, device) and those with the
    same key form the new communicator, ranked as they asked."""
    global _init_seq
    base = world(connect_timeout)
    me, nproc = base.rank, base.size
    digest = int.from_bytes(hashlib.sha256(key).digest()[:7], "little")
    # `npurt launch --per-host` simulates several hosts on one machine: NPURT_HOST_INDEX tells them apart
    host_name = f"{socket.gethostname()}/{os.environ.get('NPURT_HOST_INDEX', '')}"
    host = int.from_bytes(hashlib.sha256(host_name.encode()).digest()[:7], "little")
    mine = np.array([digest, comm.size, comm.rank, host, comm.device.backend.physical_id], np.int64)
    table = np.zeros((nproc, mine.size), np.int64)
    table[me] = mine
    with _lock:
        tag = 1 + _init_seq % 1_000_000
        _init_seq += 1
    others = [p for p in range(nproc) if p != me]
    requests = [base.Irecv(table[p], p, tag) for p in others] + [base.Isend(mine, p, tag) for p in others]
    if not wait(requests, time.monotonic() + connect_timeout):
        missing = [p for p, req in zip(others, requests) if not req.Test()]
        for req in requests[:len(others)]:
            req.Cancel()
        raise T.HcclError(f"rank {comm.rank}: the processes with MPI world rank(s) {missing} did not create a "
                          f"communicator within HCCL_CONNECT_TIMEOUT ({connect_timeout:g} s); every process of "
                          "the MPI world must call comm_init at the same point", T.HCCL_E_TIMEOUT)
    members = {int(table[p, 2]): p for p in range(nproc) if table[p, 0] == digest}  # rank -> world rank
    sizes = {int(table[p, 1]) for p in members.values()}
    problem = None
    if sizes != {comm.size} or sorted(members) != list(range(comm.size)):
        said = ", ".join(f"world rank {p}: rank {table[p, 2]} of {table[p, 1]}" for p in sorted(members.values()))
        problem = T.HcclError(f"the processes given this root info do not form a communicator of {comm.size} "
                              f"ranks 0..{comm.size - 1} ({said})", T.HCCL_E_PARA)
    elif len({(int(table[p, 3]), int(table[p, 4])) for p in members.values()}) != comm.size:
        problem = T.HcclError("two ranks of the communicator use the same device of the same host; give each "
                              "process its own device (device LOCAL_RANK)", T.HCCL_E_PARA)
    # The communicator's messages get their own MPI context: a duplicate of the world, made
    # without blocking (every process duplicates at this point, whatever it joins; a process
    # that arrived after the others gave up times out here instead of waiting forever).
    private, request = base.Idup()
    if not wait([request], time.monotonic() + connect_timeout):
        raise T.HcclError(f"rank {comm.rank}: the other processes gave up creating the communicator (they "
                          f"waited HCCL_CONNECT_TIMEOUT, {connect_timeout:g} s, for this one)", T.HCCL_E_TIMEOUT)
    if problem is not None:
        raise problem
    transport = MpiTransport(comm, private, [members[r] for r in range(comm.size)], exec_timeout)
    comm.transport = transport
    with _lock:
        _transports.append(transport)


# ---------------------------------------------------------------- the engine
class MpiTransport:
    """One rank's end of a communicator spanning processes, and its engine thread."""

    def __init__(self, comm, mpi_comm, world_ranks: list[int], exec_timeout: float):
        self.comm, self.mpi_comm, self.exec_timeout = comm, mpi_comm, exec_timeout
        self.world_ranks = world_ranks  # the MPI rank (in mpi_comm) of each rank of the communicator
        self.steps = 2 * comm.size + 4  # message tags per operation
        # tag = ((op number * steps) + step) * 3 + slot; slot 0: collectives, 1 and 2: the two
        # directions of send/recv between a pair of ranks
        self.tag_ops = (mpi().TAG_UB + 1) // (3 * self.steps)
        self.cond = threading.Condition()
        self.pending: dict[int, Op] = {}
        self.next = 0
        self.thread: threading.Thread | None = None
        self.closing = False
        self.aborting = False   # at exit: give up waiting for other ranks
        self.stopped = False    # the engine thread has ended
        self.broken: T.HcclError | None = None
        self.current: Op | None = None
        self.orphans: list = []  # requests abandoned at a timeout, with their buffers
        self._scratch: dict[int, np.ndarray] = {}

    # ---------------------------------------------------------- the task's protocol
    def start(self, op: Op) -> None:
        with self.cond:
            if self.stopped:
                op.complete(T.HcclError(f"{op.describe()} was not run: the communicator was destroyed before "
                                        "its stream reached the operation", T.HCCL_E_PARA))
                return
            self.pending[op.index] = op
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, daemon=True,
                                               name=f"npurt-hccl-{self.comm.name}-rank{self.comm.rank}")
                self.thread.start()
            self.cond.notify()

    def runs_here(self, op: Op) -> bool:
        return False

    def finish(self, op: Op) -> None:
        pass  # the engine did the work

    def waiting_for(self, op: Op) -> str:
        current = self.current
        if current is op:
            return f"{op.describe()}: the other ranks (HCCL_EXEC_TIMEOUT {self.exec_timeout:g} s)"
        return f"{op.describe()}: the engine is busy with {current.describe() if current else 'earlier operations'}"

    def close(self, timeout_s: float = 30.0, abort: bool = False) -> None:
        """Stop the engine once the operations already handed to it have run (`abort`: stop
        waiting for other ranks now, as at exit)."""
        with self.cond:
            self.closing = True
            self.aborting = self.aborting or abort
            self.cond.notify()
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        with _lock:
            if self in _transports:
                _transports.remove(self)
        if self.broken is None and (thread is None or not thread.is_alive()):
            try:
                self.mpi_comm.Free()
            except Exception:  # noqa: BLE001 - MPI may already be finalized at exit
                pass

    # ---------------------------------------------------------- engine thread
    def _loop(self) -> None:
        while True:
            with self.cond:
                while self.next not in self.pending and not self.closing:
                    self.cond.wait()
                op = self.pending.pop(self.next, None)
                if op is None:  # closing, nothing left that was handed over
                    self.stopped = True
                    return
                self.next += 1
                self.current = op
            self._run(op)
            self.current = None

    def _run(self, op: Op) -> None:
        if self.broken is not None:
            op.complete(unusable(op, self.broken))
            return
        deadline = time.monotonic() + self.exec_timeout if self.exec_timeout > 0 else float("inf")
        link = Link(self, op, deadline)
        try:
            link.agree()
            link.phase = "data"
            _run_algorithm(op, link)
        except T.HcclError as exc:
            if exc.code == T.HCCL_E_TIMEOUT:
                self.broken = exc
            op.complete(exc)
            return
        except Exception as exc:  # noqa: BLE001 - reported on the stream, communicator unusable
            error = T.HcclError(f"{op.describe()} failed in the MPI transport: {type(exc).__name__}: {exc}",
                                T.HCCL_E_INTERNAL)
            self.broken = error
            op.complete(error)
            return
        op.complete(None)

    def scratch(self, size: int, dtype: np.dtype, slot: int) -> np.ndarray:
        nbytes = size * dtype.itemsize
        buf = self._scratch.get(slot)
        if buf is None or buf.nbytes < nbytes:
            buf = self._scratch[slot] = np.empty(max(nbytes, 64), np.uint8)
        return buf[:nbytes].view(dtype)


class Link:
    """The messages of one operation: tags from the op's number, waits against its deadline."""

    def __init__(self, transport: MpiTransport, op: Op, deadline: float):
        self.transport, self.op, self.deadline = transport, op, deadline
        self.comm = transport.mpi_comm
        self.rank, self.size = op.rank, op.comm.size
        slot = 0
        if op.kind not in COLLECTIVES:  # which direction of the pair the data flows
            src, dst = (op.rank, op.peer) if op.kind == "send" else (op.peer, op.rank)
            slot = 1 if src < dst else 2
        self.tag0 = (op.match % transport.tag_ops) * transport.steps * 3 + slot
        self.step = 0
        self.phase = "header"

    def scratch(self, size: int, dtype: np.dtype, slot: int) -> np.ndarray:
        return self.transport.scratch(size, dtype, slot)

    def agree(self) -> None:
        """Exchange headers with the ranks involved; HCCL_E_PARA on every rank if they differ."""
        op = self.op
        peers = [op.peer] if op.kind in ("send", "recv") else [j for j in range(self.size) if j != self.rank]
        mine = op.header()
        headers: list = [None] * self.size
        headers[self.rank] = mine
        for j in peers:
            headers[j] = np.empty_like(mine)
        self.exchange([(j, mine) for j in peers], [(j, headers[j]) for j in peers])
        check_agreement(op, headers)

    def exchange(self, sends, recvs) -> None:
        mpi_comm, where = self.comm, self.transport.world_ranks
        tag = self.tag0 + 3 * self.step
        self.step += 1
        requests, peers = [], []
        for peer, array in recvs:
            for piece in _bytes(array):
                requests.append(mpi_comm.Irecv(piece, where[peer], tag))
                peers.append(peer)
        n_recv = len(requests)
        for peer, array in sends:
            for piece in _bytes(array):
                requests.append(mpi_comm.Isend(piece, where[peer], tag))
                peers.append(peer)
        if not requests:
            return
        transport = self.transport
        waiting = self.phase == "header"
        if wait(requests, self.deadline, lambda: transport.aborting, SPIN_S if waiting else None):
            return
        missing = sorted({p for p, req in zip(peers, requests) if not req.Test()})
        for req in requests[:n_recv]:
            try:
                req.Cancel()  # no late message may land in memory that is reused
            except Exception:  # noqa: BLE001 - already completed
                pass
        transport.orphans.append((requests, sends, recvs))
        what = "reach it" if self.phase == "header" else "exchange its data"
        reason = ("before the process exited" if transport.aborting else
                  f"within HCCL_EXEC_TIMEOUT ({transport.exec_timeout:g} s)")
        raise T.HcclError(f"{self.op.describe()} timed out: rank(s) {missing} did not {what} {reason}; the "
                          "communicator is now unusable (destroy it and create a new one)", T.HCCL_E_TIMEOUT)


def _typed(addr: int, count: int, dtype: np.dtype) -> np.ndarray:
    return address.view(addr, count * dtype.itemsize).view(dtype)


def _run_algorithm(op: Op, link: Link) -> None:
    kind, dt, count = op.kind, op.dtype, op.count
    n = op.comm.size
    if kind == "barrier":
        return
    if kind == "all_reduce":
        algorithms.all_reduce(link, _typed(op.send, count, dt), _typed(op.recv, count, dt), op.red, op.dtype_code)
    elif kind == "reduce":
        recv = _typed(op.recv, count, dt) if op.rank == op.root else None
        algorithms.reduce(link, _typed(op.send, count, dt), recv, op.red, op.dtype_code, op.root)
    elif kind == "reduce_scatter":
        algorithms.reduce_scatter(link, _typed(op.send, count * n, dt), _typed(op.recv, count, dt), op.red,
                                  op.dtype_code)
    elif kind == "broadcast":
        algorithms.broadcast(link, _typed(op.send, count, dt), op.root)
    elif kind == "all_gather":
        algorithms.all_gather(link, _typed(op.send, count, dt), _typed(op.recv, count * n, dt))
    elif kind in ("all_to_all", "all_to_all_v"):
        send_extent = op.extent(op.send_counts, op.send_displs)
        recv_extent = op.extent(op.recv_counts, op.recv_displs)
        algorithms.all_to_all_v(link, _typed(op.send, send_extent, dt), op.send_counts, op.send_displs,
                                _typed(op.recv, recv_extent, dt), op.recv_counts, op.recv_displs)
    elif kind == "send":
        link.exchange([(op.peer, _typed(op.send, count, dt))], [])
    elif kind == "recv":
        link.exchange([], [(op.peer, _typed(op.recv, count, dt))])
