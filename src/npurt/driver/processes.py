"""Who a process is, across the processes of a host: its pid and its start time.

A pid alone is reused once its process is gone, so the shared device (shared.py) and the IPC
registry (ipc.py) record (pid, start time) pairs: a process is alive while /proc shows that pid
with that start time and it is not a zombie (a killed process waiting for its parent holds no
memory any more).
"""
from __future__ import annotations

import os

_SELF: dict[int, int] = {}  # pid -> start time of this process (a fork has a new pid)


def start_time(pid: int) -> int:
    """The start time of a live process (clock ticks since boot), 0 when it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return 0
    fields = stat[stat.rfind(b")") + 2:].split()
    if fields[0] in (b"Z", b"X"):
        return 0
    return int(fields[19])


def me() -> list[int]:
    """[pid, start time] of this process."""
    pid = os.getpid()
    if pid not in _SELF:
        _SELF[pid] = start_time(pid)
    return [pid, _SELF[pid]]


def alive(who) -> bool:
    """Whether the process [pid, start time] is still running."""
    pid, start = who
    return pid > 0 and start_time(pid) == start
