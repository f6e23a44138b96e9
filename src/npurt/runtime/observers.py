"""Runtime events for tools (sanitizer, profiler, tests) to listen to.

The runtime calls `HOOKS.emit(name, **fields)` only after checking `HOOKS.active`, so with
no observer registered the cost on a hot path is one attribute check.

Event names and their fields:

| name | fields | emitted |
| --- | --- | --- |
| task_enqueued | task (its `seq` and `stream` set) | under the stream's enqueue lock, before any thread can run the task (observers must not enqueue) |
| task_blocked | task, blocker | the stream parks because its head task cannot run yet (an event wait, a blocking callback); `blocker.describe()` says on what; may repeat for one task |
| task_started | task | on the thread that runs the task, right before it runs |
| task_finished | task, error (None or the TaskError) | right after it ran (dropped tasks retire without started/finished) |
| host_copy | op ("memcpy", "memcpy2d", "memset"), dst, src (None for memset), nbytes, direction ("H2D", "D2H", "D2D", "H2H"; memset: "D" or "H"), t0_ns (perf_counter_ns when it began) | after a synchronous copy or set ran in the calling thread |
| mem_alloc | device, addr, size | |
| mem_free | device, addr, size | |
| mem_access | device, addr, nbytes, task | kernel views: ctx.gm |
| host_sync | what ("stream", "event", "device"), obj | before a host thread waits |
| event_record | event, stream, seq | after the record task was enqueued |
| event_wait | event, stream, seq | after the wait task was enqueued |

What a task is, for a tool: `task.kind` (the class's kind: "kernel", "memcpy_async", ...),
`task.stream`, `task.seq`, and `task.details()`, a dict of plain values ("name", "bytes",
"blocks", ...; see tasks.Task.details). A new kind of task shows up in the tools by
defining those two.
"""
from __future__ import annotations

import logging
from typing import Callable

Observer = Callable[..., None]


class Hooks:
    """The registry of observers. An observer is `fn(name, **fields)`."""

    def __init__(self) -> None:
        self.active = False
        self._observers: list[Observer] = []

    def add(self, fn: Observer) -> None:
        self._observers = [*self._observers, fn]
        self.active = True

    def remove(self, fn: Observer) -> None:
        self._observers = [o for o in self._observers if o is not fn]
        self.active = bool(self._observers)

    def emit(self, name: str, **fields) -> None:
        for fn in self._observers:
            try:
                fn(name, **fields)
            except Exception:  # noqa: BLE001 - a tool's bug must not break the runtime
                logging.getLogger("npurt").exception("npurt: observer %r raised on %s; ignored", fn, name)


HOOKS = Hooks()
