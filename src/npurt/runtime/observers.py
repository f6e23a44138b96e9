"""Runtime events for tools (sanitizer, profiler, tests) to listen to.

The runtime calls `HOOKS.emit(name, **fields)` only after checking `HOOKS.active`, so with
no observer registered the cost on a hot path is one attribute check.

Event names and their fields:

| name | fields |
| --- | --- |
| task_enqueued | task |
| task_started | task |
| task_finished | task, error (None or the TaskError) |
| mem_alloc | device, addr, size |
| mem_free | device, addr, size |
| mem_access | device, addr, nbytes, task (kernel views: ctx.gm) |
| host_sync | what ("stream", "event", "device"), obj |
| event_record | event, stream, seq |
| event_wait | event, stream, seq |
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
