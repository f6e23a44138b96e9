"""The in-process transport: ranks are simulated devices of this process.

Every rank's op of one collective meets in an `Instance` (keyed by the collective's sequence
number in the communicator, or by (source, destination, number) for send/recv). Ranks that
arrive early park their streams; the last one to arrive checks that all asked for the same
thing and moves the data itself, rank to rank through numpy views of the devices' memory
(large operations are split over the driver's cores), then wakes the others. No thread waits
inside a task. If a rank does not arrive within HCCL_EXEC_TIMEOUT, the ranks that did fail
with HCCL_E_TIMEOUT and the communicator becomes unusable, as in HCCL.

Destroying a rank's communicator lets the operations it queued run (HcclCommDestroy). An
operation waiting only for ranks that are gone (destroyed, with none of their queued
operations still to come) can never complete: it fails at once (HCCL_E_INTERNAL) instead of
parking its stream until HCCL_EXEC_TIMEOUT, or for ever without one.
"""
from __future__ import annotations

import threading
import time
import weakref

import numpy as np

from ..runtime import RUNTIME, WATCHDOG, address, fork_safe_lock
from . import types as T
from . import world
from .ops import COLLECTIVES, Op, check_agreement
from .reduction import reduce_many

PARALLEL_BYTES = 4 << 20  # operations moving more than this are split over the cores

_REGISTRY_LOCK = fork_safe_lock()
_JOINING: dict[bytes, "LocalGroup"] = {}
_SPAWNED: dict[bytes, weakref.WeakSet] = {}  # spawn key -> groups made by its rank threads


class Instance:
    """One collective (or one send/recv pair) as it gathers its ranks."""

    __slots__ = ("key", "ranks", "ops", "executor", "done", "error", "__weakref__")

    def __init__(self, key, ranks: tuple[int, ...]):
        self.key, self.ranks = key, ranks
        self.ops: dict[int, Op] = {}
        self.executor: Op | None = None
        self.done = False
        self.error: T.HcclError | None = None

    def missing(self) -> list[int]:
        return [r for r in self.ranks if r not in self.ops]


class LocalGroup:
    """The members of one in-process communicator and their collectives in flight."""

    def __init__(self, key: bytes, size: int, exec_timeout: float):
        self.key, self.size, self.exec_timeout = key, size, exec_timeout
        self.cond = threading.Condition()
        self.members: dict[int, object] = {}
        self.instances: dict[tuple, Instance] = {}
        self.broken: T.HcclError | None = None
        self.complete = False  # every rank has joined (members may leave again later)
        self.closed: dict[int, "LocalTransport"] = {}  # ranks whose communicator was destroyed

    def fail_stranded(self) -> list:
        """Instances that wait only for ranks that are gone: fail them; the (op, error) to
        complete outside the lock (caller holds self.cond)."""
        out = []
        for key, inst in list(self.instances.items()):
            missing = inst.missing()
            if missing and all(r in self.closed and self.closed[r].gone() for r in missing):
                del self.instances[key]
                any_op = next(iter(inst.ops.values()))
                error = T.HcclError(
                    f"{any_op.describe()} cannot complete: rank(s) {missing} destroyed their communicator without "
                    "reaching it", T.HCCL_E_INTERNAL)
                inst.done, inst.error = True, error
                out += [(o, error) for o in inst.ops.values()]
        return out

    # ---------------------------------------------------------- membership
    def add(self, comm) -> None:
        for rank, other in self.members.items():
            if other.device is comm.device:
                raise T.HcclError(f"rank {comm.rank} and rank {rank} of an in-process communicator both use "
                                  f"device {comm.device.id}; each rank needs its own device", T.HCCL_E_PARA)
        if comm.rank in self.members:
            raise T.HcclError(f"rank {comm.rank} has already joined this communicator", T.HCCL_E_PARA)
        self.members[comm.rank] = comm
        if len(self.members) == self.size:
            self.complete = True

    def fail(self, error: T.HcclError) -> None:
        """Fail every operation in flight and every later one (and wake ranks still joining)."""
        with self.cond:
            if self.broken is None:
                self.broken = error
            waiting = [op for inst in self.instances.values() for op in inst.ops.values()]
            for inst in self.instances.values():
                inst.done, inst.error = True, error
            self.instances.clear()
            self.cond.notify_all()
        for op in waiting:
            op.complete(unusable(op, error))


def _track(group: LocalGroup) -> None:
    """Remember groups made inside a spawn rank thread, so a failing rank can fail them."""
    w = world.current()
    if w.kind == "threads":
        with _REGISTRY_LOCK:
            _SPAWNED.setdefault(w.key, weakref.WeakSet()).add(group)


def abort(spawn_key: bytes, reason: str) -> None:
    """A rank of `spawn` raised: fail the collectives of the groups its threads made."""
    with _REGISTRY_LOCK:
        groups = list(_SPAWNED.get(spawn_key, ()))
    for group in groups:
        group.fail(T.HcclError(f"another rank failed: {reason}", T.HCCL_E_INTERNAL))


def create(key: bytes, comms: list, exec_timeout: float) -> LocalGroup:
    """A group whose members are all known now (comm_init_all)."""
    group = LocalGroup(key, len(comms), exec_timeout)
    for comm in comms:
        group.add(comm)
        comm.transport = LocalTransport(group, comm)
    _track(group)
    return group


def join(key: bytes, comm, connect_timeout: float, exec_timeout: float) -> None:
    """Join the group `key` as `comm.rank`; returns once all `comm.size` ranks have joined
    (other threads of this process), HcclError(HCCL_E_TIMEOUT) after `connect_timeout` s."""
    with _REGISTRY_LOCK:
        group = _JOINING.get(key)
        if group is None:
            group = _JOINING[key] = LocalGroup(key, comm.size, exec_timeout)
    _track(group)
    with group.cond:
        if group.size != comm.size:
            raise T.HcclError(f"rank {comm.rank} says the communicator has {comm.size} ranks; the ranks that "
                              f"joined first said {group.size}", T.HCCL_E_PARA)
        group.add(comm)
        comm.transport = LocalTransport(group, comm)
        group.cond.notify_all()
        deadline = time.monotonic() + connect_timeout
        while not group.complete:
            if group.broken is not None:
                del group.members[comm.rank]
                raise T.HcclError(f"rank {comm.rank}: {group.broken.message}", group.broken.code)
            left = deadline - time.monotonic()
            if left <= 0:
                del group.members[comm.rank]
                missing = sorted(set(range(group.size)) - set(group.members) - {comm.rank})
                raise T.HcclError(
                    f"rank {comm.rank}: rank(s) {missing} of {group.size} did not join the communicator within "
                    f"HCCL_CONNECT_TIMEOUT ({connect_timeout:g} s); every rank must call comm_init_root_info "
                    "with the same root info", T.HCCL_E_TIMEOUT)
            group.cond.wait(left)
    with _REGISTRY_LOCK:
        if _JOINING.get(key) is group:
            del _JOINING[key]


class LocalTransport:
    """One rank's end of an in-process communicator."""

    def __init__(self, group: LocalGroup, comm):
        self.group, self.comm = group, comm
        self.started = 0  # this rank's operations that reached the head of their stream

    def gone(self) -> bool:
        """Destroyed, and every operation it queued has started: it reaches no new one."""
        return self.comm.destroyed and self.started >= self.comm._issued

    # ---------------------------------------------------------- the task's protocol
    def start(self, op: Op) -> None:
        """`op` reached the head of its stream: meet the other ranks' ops."""
        stranded: list = []
        try:
            self._meet(op, stranded)
        finally:  # operations that can no longer complete fail (outside the lock)
            for o, error in stranded:
                o.complete(error)

    def _meet(self, op: Op, stranded: list) -> None:
        group = self.group
        with group.cond:
            self.started += 1
            if group.closed and self.comm.rank in group.closed:
                stranded += group.fail_stranded()  # this may have been its last queued operation
            if group.broken is not None:
                op.complete(unusable(op, group.broken))
                return
            if op.kind in COLLECTIVES:
                key, ranks = ("c", op.match), tuple(range(group.size))
            else:
                src, dst = (op.rank, op.peer) if op.kind == "send" else (op.peer, op.rank)
                key, ranks = ("p", src, dst, op.match), (src, dst)
            inst = group.instances.get(key)
            if inst is None:
                inst = group.instances[key] = Instance(key, ranks)
                if group.exec_timeout > 0:
                    ref = weakref.ref(inst)
                    WATCHDOG.call_at(time.monotonic() + group.exec_timeout, lambda: self._expire(ref))
            inst.ops[op.rank] = op
            op.instance = inst
            if len(inst.ops) < len(ranks):
                if group.closed:
                    stranded += group.fail_stranded()
                return
            inst.executor = op  # the last to arrive moves the data
            del group.instances[key]
            headers = [None] * group.size
            for rank, o in inst.ops.items():
                headers[rank] = o.header()
            try:
                check_agreement(op, headers)
            except T.HcclError as exc:
                inst.done, inst.error = True, exc
        if inst.error is not None:
            for o in inst.ops.values():
                o.complete(inst.error)

    def runs_here(self, op: Op) -> bool:
        inst = op.instance
        return inst is not None and inst.executor is op

    def finish(self, op: Op) -> None:
        """The task runs: the executor moves every rank's data, then wakes the others."""
        inst = op.instance
        if inst is None or inst.executor is not op or inst.done:
            return
        error = None
        try:
            _execute(op.kind, inst.ops)
        except T.HcclError as exc:
            error = exc
        except Exception as exc:  # noqa: BLE001 - reported on every rank's stream
            error = T.HcclError(f"{op.describe()} failed: {type(exc).__name__}: {exc}", T.HCCL_E_INTERNAL)
        inst.done, inst.error = True, error
        for o in inst.ops.values():
            o.complete(error)

    def _expire(self, ref) -> None:
        inst = ref()
        if inst is None:
            return
        group = self.group
        with group.cond:
            if inst.done or inst.executor is not None:
                return
            missing = inst.missing()
            any_op = next(iter(inst.ops.values()))
            error = T.HcclError(
                f"{any_op.describe()} timed out: rank(s) {missing} did not reach it within HCCL_EXEC_TIMEOUT "
                f"({group.exec_timeout:g} s); the communicator is now unusable (destroy it and create a new "
                "one)", T.HCCL_E_TIMEOUT)
            inst.done, inst.error = True, error
            group.broken = error
            group.instances.pop(inst.key, None)
            waiting = list(inst.ops.values())
        for o in waiting:
            o.complete(error)

    def waiting_for(self, op: Op) -> str:
        inst = op.instance
        missing = inst.missing() if inst is not None else []
        return (f"{op.describe()}: rank(s) {missing} have not reached it "
                f"(HCCL_EXEC_TIMEOUT {self.group.exec_timeout:g} s)")

    def close(self) -> None:
        group = self.group
        with group.cond:
            group.members.pop(self.comm.rank, None)
            group.closed[self.comm.rank] = self
            stranded = group.fail_stranded()
        for op, error in stranded:
            op.complete(error)


def unusable(op: Op, cause: T.HcclError) -> T.HcclError:
    return T.HcclError(f"{op.describe()} was not run: the communicator failed earlier and is unusable "
                       f"({cause.message}); destroy it and create a new one", cause.code)


# ---------------------------------------------------------------- data movement
def _typed(addr: int, count: int, dtype: np.dtype) -> np.ndarray:
    return address.view(addr, count * dtype.itemsize).view(dtype)


def _parallel(jobs: list) -> None:
    """Run the (nbytes, fn) jobs; big ones are split into parts run on the driver's cores."""
    work = []
    for nbytes, fn, count in jobs:
        parts = max(1, min(RUNTIME.driver.cores.threads, nbytes // PARALLEL_BYTES)) if count else 1
        bounds = [count * i // parts for i in range(parts + 1)]
        work.extend((fn, bounds[i], bounds[i + 1]) for i in range(parts))
    if len(work) == 1:
        fn, lo, hi = work[0]
        fn(lo, hi)
        return
    RUNTIME.driver.cores.run(len(work), lambda i: work[i][0](work[i][1], work[i][2]))


def _execute(kind: str, ops: dict[int, Op]) -> None:
    """Move the data of one collective whose ops (rank -> Op) have all arrived and agree."""
    any_op = next(iter(ops.values()))
    n, dt, code, count = any_op.comm.size, any_op.dtype, any_op.dtype_code, any_op.count
    item = dt.itemsize
    if kind == "barrier":
        return
    if kind in ("send", "recv"):
        src = next(o for o in ops.values() if o.kind == "send")
        dst = next(o for o in ops.values() if o.kind == "recv")
        s, d = _typed(src.send, count, dt), _typed(dst.recv, count, dt)
        _parallel([(count * item, lambda lo, hi: np.copyto(d[lo:hi], s[lo:hi]), count)])
        return
    if kind == "all_reduce":
        sends = [_typed(ops[r].send, count, dt) for r in range(n)]
        recvs = [_typed(ops[r].recv, count, dt) for r in range(n)]
        red = any_op.red

        def part(lo, hi):  # reduce into rank 0's buffer, then copy while it is in cache
            reduce_many(recvs[0][lo:hi], [s[lo:hi] for s in sends], red, code)
            for r in range(1, n):
                np.copyto(recvs[r][lo:hi], recvs[0][lo:hi])
        _parallel([(count * item * n, part, count)])
    elif kind == "reduce":
        sends = [_typed(ops[r].send, count, dt) for r in range(n)]
        root = _typed(ops[any_op.root].recv, count, dt)
        _parallel([(count * item * n, lambda lo, hi: reduce_many(
            root[lo:hi], [s[lo:hi] for s in sends], any_op.red, code), count)])
    elif kind == "reduce_scatter":
        sends = [_typed(ops[r].send, count * n, dt) for r in range(n)]
        jobs = []
        for r in range(n):
            recv, base = _typed(ops[r].recv, count, dt), r * count
            jobs.append((count * item * n, lambda lo, hi, recv=recv, base=base: reduce_many(
                recv[lo:hi], [s[base + lo:base + hi] for s in sends], any_op.red, code), count))
        _parallel(jobs)
    elif kind == "broadcast":
        src = _typed(ops[any_op.root].send, count, dt)
        jobs = [(count * item, lambda lo, hi, d=_typed(ops[r].send, count, dt): np.copyto(d[lo:hi], src[lo:hi]),
                 count) for r in range(n) if r != any_op.root]
        if jobs:
            _parallel(jobs)
    elif kind == "all_gather":
        sends = [_typed(ops[r].send, count, dt) for r in range(n)]
        jobs = []
        for r in range(n):
            recv = _typed(ops[r].recv, count * n, dt)
            for j in range(n):
                jobs.append((count * item, lambda lo, hi, d=recv[j * count:(j + 1) * count], s=sends[j]:
                             np.copyto(d[lo:hi], s[lo:hi]), count))
        _parallel(jobs)
    elif kind in ("all_to_all", "all_to_all_v"):
        jobs = []
        for r in range(n):
            dst = ops[r]
            for j in range(n):
                src = ops[j]
                c = dst.recv_counts[j]
                if c:
                    d = _typed(dst.recv + dst.recv_displs[j] * item, c, dt)
                    s = _typed(src.send + src.send_displs[r] * item, c, dt)
                    jobs.append((c * item, lambda lo, hi, d=d, s=s: np.copyto(d[lo:hi], s[lo:hi]), c))
        if jobs:
            _parallel(jobs)
    else:  # pragma: no cover - every kind is listed above
        raise T.HcclError(f"unknown collective {kind!r}", T.HCCL_E_INTERNAL)
