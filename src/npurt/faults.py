"""`npurt.faults`: inject faults and run under controlled schedules from Python (tests, notebooks).

    with npurt.faults.inject("acl.rt.malloc@3=207001;task:kernel@1=507015"):
        ...                                   # the 3rd malloc fails, the 1st kernel task fails
    npurt.faults.summary()                    # {"acl.rt.malloc@3=207001": 1, ...}

    with npurt.faults.schedule(7):            # one task at a time, in the order seed 7 chooses
        ...

The spec language is the one of NPURT_FAULTS (docs/testing.md; `npurt.runtime.faults`). The
faults reach every face alike (pyACL, C, this Pythonic API, torch), because they are armed in
the runtime those faces share. `inject` and `schedule` work as plain calls too (the faults or
the schedule then stay until `clear()` / `unschedule()`).
"""
from __future__ import annotations

from .runtime import FAULTS, SCHEDULE, FaultSpecError, ScheduleSpecError

__all__ = ["inject", "clear", "summary", "armed", "schedule", "unschedule", "FaultSpecError",
           "ScheduleSpecError"]


class _Armed:
    """What inject/schedule return: usable as a context manager that undoes it on exit."""

    def __init__(self, undo, value):
        self._undo, self.value = undo, value

    def __enter__(self):
        return self.value

    def __exit__(self, *exc) -> None:
        self._undo()


def inject(spec: str, seed: int | None = None) -> _Armed:
    """Arm the faults of `spec` (replacing any armed ones); FaultSpecError, with the position
    of the mistake, for a spec that cannot be armed. `seed` drives the P% triggers. As a
    context manager, the faults are cleared on exit."""
    faults = FAULTS.arm(spec, seed)
    return _Armed(FAULTS.disarm, faults)


def clear() -> None:
    """Disarm every fault; a device lost by an injected fault works again."""
    FAULTS.disarm()


def armed() -> bool:
    return FAULTS.armed


def summary() -> dict[str, int]:
    """Injections so far, per spec entry."""
    return FAULTS.summary()


def schedule(seed) -> _Armed:
    """Run the device under the controlled schedule of `seed` (an int, "random:SEED" or
    "choices:I,J,..."); work already queued finishes first. As a context manager, the normal
    scheduler is back on exit. The value is the schedule's state (`steps`, `order`)."""
    ctl = SCHEDULE.start(seed)
    return _Armed(SCHEDULE.stop, ctl)


def unschedule() -> None:
    SCHEDULE.stop()
