"""The stream task of a collective: an ordinary task, ordered with the stream's other work.

When the task reaches the head of its stream, the scheduler asks `blocker()`: the op is handed
to the communicator's transport, and the stream parks (no worker sleeps) until every rank has
arrived and the data has moved, or until the transport gives up (HCCL_E_TIMEOUT). `run()` then
does this rank's share of the work, if any, and raises the op's error, which the stream reports
at its next synchronize.
"""
from __future__ import annotations

from ..runtime import FAULTS, Blocker, Task
from .local import LocalTransport
from .ops import Op
from .types import HCCL_E_INTERNAL


class OpBlocker(Blocker):
    """Satisfied when the transport completes `op` (successfully or not)."""

    __slots__ = ("op",)

    def __init__(self, op: Op):
        self.op = op

    def register(self) -> bool:
        op = self.op
        with op.lock:
            if op.done:
                return False
            op.blocker = self
            return True

    def describe(self) -> str:
        return self.op.comm.transport.waiting_for(self.op)


class CollectiveTask(Task):
    __slots__ = ("op",)
    may_block = True
    error_code = HCCL_E_INTERNAL

    def __init__(self, op: Op):
        self.op = op

    @property
    def kind(self) -> str:
        return f"hccl_{self.op.kind}"

    def blocker(self):
        op = self.op
        if not op.started:
            op.started = True
            # an injected rank fault (NPURT_FAULTS hccl:RANK): a silent rank never arrives
            if FAULTS.tasks and FAULTS.on_collective(op, not isinstance(op.comm.transport, LocalTransport)):
                return OpBlocker(op)
            op.comm.transport.start(op)
        if op.done or op.comm.transport.runs_here(op):
            return None
        return OpBlocker(op)

    def run(self) -> None:
        op = self.op
        op.comm.transport.finish(op)
        if op.error is not None:
            if op.comm.async_error is None:
                op.comm.async_error = op.error
            raise op.error

    def accesses(self) -> tuple:
        return self.op.accesses()

    def details(self) -> dict:
        op = self.op
        return {"name": f"hccl {op.kind}", "bytes": op.count * op.itemsize, "rank": op.rank,
                "ranks": op.comm.size, "communicator": op.comm.name}

    def describe(self) -> str:
        return self.op.describe()
