"""What a failed task reports: the TaskError its stream raises at the next synchronize, and
the DeadlockError of a wait that could never end (split out of the scheduler, which raises
them, so that the stream and the control API build the same messages)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import constants as C
from .errors import DeadlockError, NpuError, TaskError

if TYPE_CHECKING:
    from .tasks import Task


def task_error(task: "Task", exc: BaseException) -> TaskError:
    """Turn whatever a task raised into the TaskError its stream reports."""
    stream = task.stream
    where = f"stream {stream.stream_id} (device {stream.device.id}) task #{task.seq} {task.describe()}"
    if isinstance(exc, NpuError):
        err = TaskError(f"{where} failed: {exc.message}", exc.code, where)
    else:
        err = TaskError(f"{where} failed: {type(exc).__name__}: {exc}", task.error_code, where)
    err.__cause__ = exc
    if task.stack:
        err.message += "\nThe task was enqueued at:\n" + task.stack
    return err


def interrupted_error(task: "Task", exc: BaseException) -> TaskError:
    """The failure of a task whose run a host thread's exception cut short."""
    err = task_error(task, exc)
    err.message = (f"{err.task_info} was interrupted ({type(exc).__name__}) while a host thread ran it "
                   "inline, and did not complete; the stream went on with its next task")
    return err


def deadlock_error(what: str, why: str) -> DeadlockError:
    return DeadlockError(f"{what} would wait forever: {why}. Synchronize from another thread, or "
                         "record an event and wait for it outside the task",
                         C.ACL_ERROR_RT_PARAM_INVALID)
