"""ModelTask: one model execution on a stream, as the graph engine queues it (model.py runs it).

It declares the device buffers it reads and writes (the sanitizer's and the profiler's view),
can be told to stop (`expire`: its deadline, a device reset, an interrupt, the interpreter's
exit: ONNX Runtime leaves the run at its next node), and records a failure for
acl.mdl.create_and_get_op_desc (failures.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..runtime import Task, constants as C, effective_op_execute_timeout_us
from . import failures

if TYPE_CHECKING:
    from .model import Model


class ModelTask(Task):
    """One model execution on a stream."""

    __slots__ = ("model", "ins", "outs", "gear", "in_dims", "out_ds", "options", "stop", "runner")
    kind = "model_execute"
    error_code = C.ACL_ERROR_RT_MODEL_EXECUTE

    def __init__(self, model: Model, ins, outs, gear, in_dims, out_ds):
        self.model, self.ins, self.outs, self.gear, self.in_dims, self.out_ds = model, ins, outs, gear, in_dims, out_ds
        self.options = None      # its ORT RunOptions while it runs
        self.stop = None         # (code, message) once it was told to stop
        self.runner = 0          # the thread running it

    def expire(self, code: int = C.ACL_ERROR_RT_AICORE_TIMEOUT, why: str = "") -> bool:
        """Stop this execution (its deadline, a device reset, an interrupt, exit): ORT leaves
        the run at its next node and the task fails with `code`. True if it was running."""
        if self.stop is None:
            if not why:
                limit = effective_op_execute_timeout_us()
                why = (f"did not finish within the op execute timeout of {limit / 1e3:.3f} ms and was stopped at "
                       "its deadline (AI core timeout; set_op_execute_timeout_us)")
            m = self.model
            self.stop = (code, f"model {m.id} ({m.mdef.name}) execution {why}")
        options = self.options
        if options is not None:
            options.terminate = True
        return options is not None

    def run(self) -> None:
        try:
            self.model.run(self)
        except BaseException:
            s = self.stream
            failures.record(s.device.id, s.stream_id, self.seq, self.model)
            raise

    def accesses(self) -> tuple:
        reads = tuple((addr, size, "r") for addr, size in self.ins if addr)
        writes = tuple((addr, size, "w") for addr, size, _ in self.outs if addr)
        return reads + writes

    def describe(self) -> str:
        m = self.model
        gear = "" if self.gear is None else f", gear {m.mdef.gears[self.gear]}"
        return f"model {m.id} ({m.mdef.name}) execute{gear}"

    def details(self) -> dict:
        m = self.model  # for tools: the profiler's timeline and op_summary, acl.prof subscriptions
        return {"name": m.mdef.name, "model_id": m.id, "model_name": m.mdef.name}
