"""Collection: an observer of the runtime's hooks that keeps raw, timestamped records.

The collector is registered with `HOOKS.add` only while a profile runs; then every hook
costs one call here. Each call takes a timestamp and appends or pops one small record (a
dict or list operation, atomic under the GIL, so workers and host threads need no lock).
Everything else (names, spans, flows, statistics) is worked out once, at the end
(timeline.py), so the workload pays as little as possible while it is being measured.

A finished task is reduced to a tuple at once: task objects hold buffers alive (a copy's
host array), and the profile must not hold them longer than the runtime would.

Memory is bounded: a task costs about 700 bytes until the profile stops, so at most
`max_records` tasks (and as many API calls) are kept, MAX_RECORDS (10^6, about 0.7 GB) unless
the Profile says otherwise; later ones are counted in `dropped`, and the report says so.
"""
from __future__ import annotations

import threading
from time import perf_counter_ns

_ident = threading.get_ident
MAX_RECORDS = 1_000_000  # tasks (and API calls) one profile keeps by default


class Collector:
    """Raw records of one profile. `devices`: ids to keep tasks of (None: all)."""

    def __init__(self, devices=None, tasks: bool = True, memory: bool = True, copies: bool = True,
                 max_records: int = MAX_RECORDS):
        self.devices = None if devices is None else frozenset(devices)
        self.limit = max_records
        self.dropped = {"tasks": 0, "calls": 0}  # records not kept: the limit was reached
        self.want_tasks, self.want_memory, self.want_copies = tasks, memory, copies
        self.t0 = perf_counter_ns()
        self.enqueued: dict = {}    # task -> (t, host thread id)
        self.blocked: dict = {}     # task -> (t, what it waits on)
        self.started: dict = {}     # task -> t
        self.tasks: list = []       # finished: see _finished
        self.host_copies: list = []  # (thread, op, direction, nbytes, t0, t1)
        self.memory: list = []      # (t, device id, +/- bytes)
        self.calls: list = []       # (thread, level, name, t0, t1): filled by apicalls
        self.marks: list = []       # (kind, thread, name, t0, t1, extra): ranges and marks
        self.threads: dict = {}     # host thread id -> name
        self.stopped_at = 0

    def thread_name(self, tid: int) -> None:
        if tid not in self.threads:
            self.threads[tid] = threading.current_thread().name

    # ------------------------------------------------------------ the observer
    def __call__(self, name: str, task=None, error=None, blocker=None, **fields) -> None:
        now = perf_counter_ns()
        if name == "task_started":
            if task in self.enqueued:
                self.started[task] = now
        elif name == "task_finished":
            t_start = self.started.pop(task, None)
            if t_start is not None:
                self._finished(task, error, t_start, now)
        elif name == "task_enqueued":
            if self.want_tasks and (self.devices is None or task.stream.device.id in self.devices):
                if len(self.tasks) + len(self.enqueued) >= self.limit:
                    self.dropped["tasks"] += 1
                    return
                tid = _ident()
                self.enqueued[task] = (now, tid)
                if tid not in self.threads:
                    self.thread_name(tid)
        elif name == "task_blocked":
            if task in self.enqueued and task not in self.blocked:
                self.blocked[task] = (now, blocker.describe())
        elif name == "host_copy":
            if self.want_copies:
                tid = _ident()
                self.thread_name(tid)
                self.host_copies.append((tid, fields["op"], fields["direction"], fields["nbytes"],
                                         fields["t0_ns"], now))
        elif name == "mem_alloc" or name == "mem_free":
            device = fields["device"]
            if self.want_memory and device is not None and (self.devices is None or device.id in self.devices):
                size = fields["size"]
                self.memory.append((now, device.id, size if name == "mem_alloc" else -size))

    def _finished(self, task, error, t_start: int, t_end: int) -> None:
        entry = self.enqueued.pop(task, None)
        if entry is None:  # the profile stopped meanwhile
            return
        t_enq, tid = entry
        blocked = self.blocked.pop(task, None)
        stream = task.stream
        try:
            details = task.details()
        except Exception as exc:  # noqa: BLE001 - a task's details are cosmetic
            details = {"details_error": f"{type(exc).__name__}: {exc}"}
        self.tasks.append((stream.device.id, stream.stream_id, stream.is_default, task.seq, task.kind, details,
                           t_enq, tid, blocked, t_start, t_end, None if error is None else error.code))

    def stop(self) -> None:
        self.stopped_at = perf_counter_ns()
        # tasks still queued or dropped never finished: forget them (and the buffers they hold)
        self.enqueued.clear()
        self.blocked.clear()
        self.started.clear()
