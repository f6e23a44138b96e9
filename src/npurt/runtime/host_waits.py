"""A host thread's wait for the device: on a condition, with a timeout, warning when it lasts
(a real NPU would just hang), or stepped by a controlled schedule (schedule.py)."""
from __future__ import annotations

import threading
import time

from .scheduler import Scheduler
from .warn import HangWarning, warn_user


def wait_until(cond: threading.Condition, done, timeout_s: float | None, what) -> bool:
    """Wait on `cond` (held by the caller) until done() is true or the timeout passes.

    Logs a warning naming what the wait is stuck on once it has lasted NPURT_HANG_WARNING_S
    seconds (a real NPU would just hang there). Returns done(). Under a controlled schedule
    the waiting thread has the device run steps instead (schedule.py)."""
    controlled = Scheduler.controlled
    if controlled is not None:
        return controlled.wait(cond, done, timeout_s, what)
    warn_after = Scheduler.hang_warning_s
    start = time.monotonic()
    warned = False
    while not done():
        now = time.monotonic()
        remaining = None if timeout_s is None else timeout_s - (now - start)
        if remaining is not None and remaining <= 0:
            return done()
        step = remaining
        if warn_after and not warned:
            to_warning = warn_after - (now - start)
            if to_warning <= 0:
                warn_user(f"npurt: this host thread has waited {now - start:.0f} s for {what()} (a real NPU "
                          "would hang here; set NPURT_HANG_WARNING_S to change when this shows)", HangWarning)
                warned = True
            else:
                step = to_warning if step is None else min(step, to_warning)
        cond.wait(step)
    return True
