"""Runtime events for tools (sanitizer, profiler, tests) to listen to.

The runtime calls `HOOKS.emit(name, **fields)` only after checking `HOOKS.active`, so with
no observer registered the cost on a hot path is one attribute check.

Event names and their fields (an observer must accept and ignore fields it does not know;
new fields may be added):

| name | fields | emitted |
| --- | --- | --- |
| task_enqueued | task (its `seq` and `stream` set) | under the stream's enqueue lock, before any thread can run the task (so always before its task_started), in the enqueuing thread (observers must not enqueue) |
| task_blocked | task, blocker | the stream parks because its head task cannot run yet (an event wait, a blocking callback); `blocker.describe()` says on what, `blocker.waits_for()` what must happen first; may repeat for one task |
| task_started | task | on the thread that runs the task, right before it runs |
| task_finished | task, error (None or the TaskError) | right after it ran (dropped tasks retire without started/finished) |
| host_copy | op ("memcpy", "memcpy2d", "memset"), dst, src (None for memset), nbytes, direction ("H2D", "D2H", "D2D", "H2H"; memset: "D" or "H"), t0_ns (perf_counter_ns when it began) | after a synchronous copy or set ran in the calling thread |
| host_access | addr, nbytes, mode ("r" or "w"), what (the call); width, pitch for a 2-D access (rows of width bytes every pitch bytes) | a host thread itself is about to read or write memory: synchronous memcpy / memcpy2d / memset, acl.util.ptr_to_bytes / ptr_to_numpy, kernel argument staging |
| mem_alloc | device (None: host memory from malloc_host), addr, size (the requested bytes), managed | after a successful malloc / malloc_host. managed: a Python object owns the memory and frees it, stream-ordered, when collected (DeviceArray, empty_pinned, staged kernel args) |
| mem_free | device (None: free_host), addr, size, managed, uses ({stream: last sequence number} of the queued work the stream-ordered free waits for) | before a valid free |
| mem_access | device, addr, nbytes, task, mode ("r", "w" or "rw", as declared to ctx.gm) | a kernel block takes a view of memory (ctx.gm) |
| mem_error | kind ("out_of_bounds", "use_after_free", "invalid_address", "invalid_free", "kind_mismatch"), addr, nbytes, device (or None), message, task (the running kernel's task, else None) | where the runtime refuses a memory operation, before it raises |
| memcpy_kind | op ("memcpy", "memcpy_async", "memcpy2d"), kind (the kind passed), actual (the direction the addresses give, an ACL_MEMCPY_* value), dst, src, nbytes, site ((filename, line) of the caller outside npurt, or None), refused (True: NPURT_MEMCPY_KIND=strict, or a kind memcpy_async refuses with pageable memory) | a copy's kind contradicts its addresses, before it is copied by address (with one MemcpyKindWarning per call site) or refused |
| host_register / host_unregister | addr, size (and alias, device for host_register) | after a successful host_register / host_unregister |
| host_sync | what ("stream", "event", "device"), obj | an API synchronize call, before it waits |
| host_wait | stream, seq | a host thread starts waiting in Stream.synchronize for task `seq` |
| host_wait_done | stream, seq, ok | that wait ended; ok: task `seq` and all before it retired, so the thread is ordered after them |
| wait_refused | stream, seq, message | a synchronize the runtime refuses (DeadlockError) because it could never end: the waiting thread is what it waits for |
| host_synced | stream, seq | the calling thread learned without waiting that task `seq` retired: a stream or event query that reports complete, a Pythonic awaitable resuming |
| callback_started | stream, seq, task (or None) | a host callback starts in the calling thread after task `seq` of `stream` retired (launch_callback in process_report, Stream.add_done_callback) |
| callback_finished | stream, seq, task, block | it returned; block: the stream waits for it (ACL_CALLBACK_BLOCK) |
| event_record | event, stream, seq | after the record task was enqueued |
| event_wait | event, stream, seq | after the wait task was enqueued |
| device_release | device, reason | reset_device / finalize, after the device's streams were waited for and before what it holds is freed |
| runtime_finalize | (none) | finalize, before host memory is released |

What a task is, for a tool: `task.kind` (the class's kind: "kernel", "memcpy_async", ...),
`task.stream`, `task.seq`, `task.details()`, a dict of plain values ("name", "bytes",
"blocks", ...; see tasks.Task.details), and `task.accesses()`, the memory it reads and
writes when it runs (kernels report their views through mem_access as they run instead).
A new kind of task shows up in the tools by defining those.
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

    @property
    def observers(self) -> tuple:
        """The registered observers (a snapshot)."""
        return tuple(self._observers)

    def emit(self, name: str, **fields) -> None:
        for fn in self._observers:
            try:
                fn(name, **fields)
            except Exception:  # noqa: BLE001 - a tool's bug must not break the runtime
                logging.getLogger("npurt").exception("npurt: observer %r raised on %s; ignored", fn, name)


HOOKS = Hooks()


class ApiSurfaces:
    """The front ends' public functions, for tools that time host API calls (the profiler's
    API spans). Each face offers its namespaces (modules) and classes when it is imported:
    `offer(level, owner, prefix)`, level "acl" or "npurt", prefix the name calls are shown
    under ("acl.rt", "npurt", "npurt.DeviceArray"). A tool reads `entries` and may `listen`
    for owners offered later (a face imported while a profile runs). Nothing below the faces
    knows them: they come to the tool through here."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, object, str]] = []
        self._listeners: list[Callable[[tuple], None]] = []

    def offer(self, level: str, owner, prefix: str) -> None:
        entry = (level, owner, prefix)
        self.entries.append(entry)
        for fn in list(self._listeners):
            fn(entry)

    def listen(self, fn: Callable[[tuple], None]) -> None:
        self._listeners.append(fn)

    def unlisten(self, fn: Callable[[tuple], None]) -> None:
        self._listeners = [f for f in self._listeners if f is not fn]


API_SURFACES = ApiSurfaces()

