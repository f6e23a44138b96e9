"""The sanitizer: one observer of the runtime's hooks that feeds every tool.

Agents are streams and host threads. A task's vector clock is computed when it starts
(tasks of a stream start in order): the stream's clock so far, joined with the clock of the
thread that enqueued it and, for an event wait, with the clock of the record it waited for.
A host thread learns a stream's clock when it knows work finished: a synchronize, a query
that says complete, a callback that runs after the work. Accesses (what tasks declare in
`Task.accesses()`, kernel views, host accesses) are checked against the shadow history with
those clocks, so what is found does not depend on how the threads happened to interleave.

Everything runs under one lock; with the sanitizer off, none of this exists (the runtime
pays one attribute check per hook).
"""
from __future__ import annotations

import atexit
import gc
import itertools
import threading
import weakref

import numpy as np

from npurt.runtime.address import VA_BASE, is_host_alias
from npurt.runtime import BLOCK_LIVE, HOOKS, MEMCPY_KIND_NAMES, RUNTIME, RecordTask, Stream, WaitTask, address

from . import hostwatch, initcheck, leakcheck, memcheck, threadsync
from .clocks import HostAgent, StreamClock, join, ordered
from .frames import user_site
from .hangcheck import HangCheck, stream_label
from .intervals import IntervalSet
from .racecheck import race_report
from .report import Actor, Report, Reporter
from .shadow import Shadow

ALL_TOOLS = ("race", "mem", "init", "leak", "sync")
_order = itertools.count(1)
MAX_RECORDS_KEPT = 4096


class StreamState:
    __slots__ = ("clock", "label", "pending", "__weakref__")

    def __init__(self, stream) -> None:
        self.clock = StreamClock()
        self.label = stream_label(stream)
        self.pending: dict[int, TaskInfo] = {}   # seq -> info of tasks not finished yet


class TaskInfo:
    """What the sanitizer knows of one task: where it was enqueued, its clock, its views."""

    __slots__ = ("task", "state", "site", "host_vc", "vc", "order", "views", "prepared", "host_ranges",
                 "gm_args")

    def __init__(self, task, state: StreamState, site, host_vc: dict):
        self.task, self.state, self.site, self.host_vc = task, state, site, host_vc
        self.vc: dict | None = None
        self.order = next(_order)
        self.views: list = []          # (lo, reference bytes) of "rw" kernel views
        self.prepared: IntervalSet | None = None
        self.host_ranges: list = []    # (lo, hi, write) of watched host memory
        self.gm_args: tuple | None = None  # a kernel's GM argument values (None: all views count)

    @property
    def stream_label(self) -> str:
        return self.state.label

    @property
    def agent(self) -> int:
        return self.state.clock.agent

    def name(self) -> str:
        task = self.task
        try:
            details = task.details()
        except Exception:  # noqa: BLE001 - a task kind that does not say
            details = {}
        name = details.get("name") or task.kind
        return f"kernel {name}" if task.kind == "kernel" else name

    def describe(self) -> str:
        at = f" at {self.site}" if self.site is not None else f" (task #{self.task.seq})"
        return f"the {self.name()}{at}"

    def actor(self, mode: str) -> Actor:
        return Actor(f"{mode} by {self.name()}", self.state.label, self.site)

    def lo_hi_overlaps(self, lo: int, hi: int) -> bool:
        return any(a < hi and lo < b for a, b, _ in self.host_ranges)


class DoneTask:
    """What a finished task's TaskInfo keeps of a task that held a host buffer: its name and
    number, not the task, whose buffer must be free to go (its release ends the history of
    that memory: see Sanitizer._forget_at_release)."""

    __slots__ = ("kind", "seq", "_details")

    def __init__(self, task):
        self.kind, self.seq = task.kind, task.seq
        try:
            self._details = task.details()
        except Exception:  # noqa: BLE001 - a task kind that does not say
            self._details = {}

    def details(self) -> dict:
        return self._details


class HostWho:
    """A host thread's own access (a synchronous copy, an acl.util read)."""

    __slots__ = ("name", "site", "what", "order")
    stream_label = None

    def __init__(self, name: str, site, what: str):
        self.name, self.site, self.what = name, site, what
        self.order = next(_order)

    def describe(self) -> str:
        return f"the host's {self.what}" + (f" at {self.site}" if self.site is not None else "")

    def actor(self, mode: str) -> Actor:
        return Actor(f"{mode} by the host ({self.what})", f"host thread {self.name}", self.site, "at")


def _parse_tools(tools) -> frozenset:
    if tools in (None, "all"):
        return frozenset(ALL_TOOLS)
    if isinstance(tools, str):
        tools = [t.strip() for t in tools.split(",") if t.strip()]
    names = {"racecheck": "race", "memcheck": "mem", "initcheck": "init", "leakcheck": "leak",
             "synccheck": "sync", "hangcheck": "sync"}
    out = set()
    for t in tools:
        t = names.get(t, t)
        if t not in ALL_TOOLS:
            raise ValueError(f"unknown sanitizer tool {t!r}; choose from {', '.join(ALL_TOOLS)} (or 'all')")
        out.add(t)
    return frozenset(out)


def _graph_holds(uses) -> bool:
    """Whether a live graph (runtime/graph.py GraphHold: a holder that is no Stream) holds the
    memory these uses name."""
    return any(type(h) is not Stream and h.completed_seq < seq for h, seq in (uses or {}).items())


class Sanitizer:
    """Listens to the runtime while enabled; `reports` holds what it found.

    Use `npurt.sanitizer.enable()` (or `with npurt.sanitizer.enable() as san:`)."""

    def __init__(self, tools="all", out=None, echo: bool = True, json_path: str | None = None):
        self.tools = _parse_tools(tools)
        self.reporter = Reporter(out, echo)
        self.json_path = json_path
        self.lock = threading.RLock()
        self.releases: dict = {}  # (id of a host buffer's owner, lo, hi) -> None: forgotten at its release
        self.shadow = Shadow()
        self.allocs = memcheck.Allocations()
        self.watch = hostwatch.HostWatch()
        self.hang = HangCheck(self)
        self.streams: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.hosts: dict[int, HostAgent] = {}
        self.infos: dict[int, TaskInfo] = {}     # id(task) -> info, from enqueue to finish
        self.running: dict[int, TaskInfo] = {}   # thread ident -> the task it runs now
        self.records: dict[int, tuple] = {}      # id(event record) -> (record, clock)
        self.capture_sites: dict = {}            # id(graph capture) -> (site, thread name) of its begin
        self.deferred_frees: dict = {}           # addr -> (device, size): managed frees a live graph holds
        self.enabled = False
        self.finished = False
        self._dispatch = {name[4:]: getattr(self, name) for name in dir(self) if name.startswith("_on_")}
        self._observer = self.observe  # one bound method: HOOKS.remove compares by identity

    # ------------------------------------------------------------ lifecycle
    def enable(self) -> "Sanitizer":
        if not self.enabled:
            self.enabled = True
            if "sync" in self.tools:
                self.hang.start()
            threadsync.install(self)
            HOOKS.add(self._observer)
        return self

    def disable(self) -> None:
        """Stop listening; checks what a session end checks (leaks, stuck streams, host
        writes never synchronized) and prints the error summary."""
        if not self.enabled:
            return
        try:
            self.finish("the end of the sanitized run")
        finally:
            HOOKS.remove(self._observer)
            threadsync.uninstall(self)
            self.hang.stop()
            self.enabled = False
            _ACTIVE.discard(self)

    def __enter__(self) -> "Sanitizer":
        return self.enable()

    def __exit__(self, *exc) -> None:
        self.disable()

    @property
    def reports(self) -> list:
        return self.reporter.reports

    @property
    def errors(self) -> int:
        return self.reporter.errors

    def summary(self) -> str:
        return self.reporter.summary()

    def emit(self, report) -> None:
        self.reporter.add(report)

    def finish(self, when: str) -> None:
        if self.finished:
            return
        self.finished = True
        gc.collect()  # managed memory whose owners are gone is freed now, not reported
        with self.lock:
            found = self.watch.ordered(lambda info: True, None)
            self._host_write_reports(found, None)
            for a in [*self.allocs.live.values(), *self.allocs.dead.values()]:
                self._settle(a)
            if "leak" in self.tools:
                live = [a for a in self.allocs.live.values() if not a.managed and a.site is not None]
                for r in leakcheck.leak_reports(live, when):
                    self.emit(r)
        if "sync" in self.tools and RUNTIME.initialized:
            streams = [s for d in RUNTIME.devices if d is not None for s in d.all_streams()]
            for r in self.hang.stuck_at_exit(streams):
                self.emit(r)
        if self.reporter.echo:
            self.reporter.write(self.summary() + "\n")
        if self.json_path:
            self.reporter.write_json(self.json_path)

    # ------------------------------------------------------------ dispatch
    def observe(self, name: str, **fields) -> None:
        handler = self._dispatch.get(name)
        if handler is not None:
            handler(**fields)

    # ------------------------------------------------------------ agents
    def host(self) -> HostAgent:
        ident = threading.get_ident()
        h = self.hosts.get(ident)
        if h is None:
            h = self.hosts[ident] = HostAgent(ident, threading.current_thread().name)
            threadsync.inherit(self, h)
        return h

    def host_threads(self) -> list[int]:
        return list(self.hosts)

    def state(self, stream) -> StreamState:
        st = self.streams.get(stream)
        if st is None:
            st = self.streams[stream] = StreamState(stream)
        return st

    def site_of(self, task):
        info = self.infos.get(id(task))
        return info.site if info is not None else None

    def _agent_now(self):
        """(agent, clock, vc, who-maker) of the calling thread: the task it runs, or itself."""
        info = self.running.get(threading.get_ident())
        if info is not None and info.vc is not None:
            return info.agent, info.task.seq, info.vc, info
        h = self.host()
        agent, clock = h.touched()
        return agent, clock, h.vc, None

    # ------------------------------------------------------------ tasks
    def _on_task_enqueued(self, task, **_) -> None:
        site = user_site()
        with self.lock:
            st = self.state(task.stream)
            running = self.running.get(threading.get_ident())
            host_vc = running.vc if running is not None and running.vc is not None else self.host().snapshot()
            info = TaskInfo(task, st, site, host_vc)
            self.infos[id(task)] = info
            st.pending[task.seq] = info
            if "race" in self.tools:
                for acc in _accesses(task):
                    addr, n, mode = acc[0], acc[1], acc[2]
                    if 0 < addr < VA_BASE and n > 0 and _async_host(task, addr, n):
                        info.host_ranges.append((addr, addr + n, mode != "r"))
                        self.watch.enqueued(info, addr, addr + n, mode != "r", site)

    def _on_task_started(self, task, **_) -> None:
        with self.lock:
            info = self.infos.get(id(task))
            if info is None:  # enqueued before the sanitizer was enabled
                st = self.state(task.stream)
                info = self.infos[id(task)] = TaskInfo(task, st, None, {})
                st.pending[task.seq] = info
            st = info.state
            for seq in [s for s in st.pending if s < task.seq]:  # dropped by an abort or a stop
                self.infos.pop(id(st.pending.pop(seq).task), None)
            extra = [info.host_vc]
            if type(task) is WaitTask and task.rec is not None and task.rec.ran:
                extra.append(self._record_clock(task.rec))
            info.vc = st.clock.start(task.seq, *extra)
            if type(task) is RecordTask:
                self.records[id(task.rec)] = (task.rec, info.vc)
                if len(self.records) > MAX_RECORDS_KEPT:
                    self.records.pop(next(iter(self.records)))
            self.running[threading.get_ident()] = info
            found = []
            for lo, hi, write in info.host_ranges:
                found += self.watch.started(info, lo, hi, write, None)
            self._host_write_reports(found, None, before=info)
            for acc in _accesses(task):
                width, pitch = (acc[3], acc[4]) if len(acc) > 3 else (0, 0)
                self._touch(info, info.agent, task.seq, info.vc, acc[0], acc[1], acc[2], width, pitch)
            keep = getattr(task, "keep", None)
            if keep is not None and info.host_ranges:
                self._forget_at_release(keep, info.host_ranges)

    def _forget_at_release(self, buffer, ranges) -> None:
        """When the host object whose memory a task used is freed, forget that memory's
        history (numpy reuses the address for the next array: a later, unrelated access
        there is no race with this one). Objects that cannot be weakly referenced (bytes)
        keep their history by address, as before."""
        owner = buffer
        while isinstance(owner, np.ndarray) and owner.base is not None:
            owner = owner.base  # the object that owns the memory (a view's base)
        for lo, hi, _write in ranges:
            key = (id(owner), lo, hi)
            if key in self.releases:
                continue
            try:
                weakref.finalize(owner, self._host_released, key)
            except TypeError:
                return
            self.releases[key] = None

    def _host_released(self, key) -> None:
        with self.lock:
            if self.releases.pop(key, 0) is None:
                self.shadow.released(key[1], key[2])
                self.watch.forget(key[1], key[2])  # nobody can write a buffer that is gone

    def _record_clock(self, rec) -> dict:
        kept = self.records.get(id(rec))
        if kept is not None and kept[0] is rec:
            return kept[1]
        return self.state(rec.stream).clock.at(rec.seq)

    def _on_task_finished(self, task, error=None, **_) -> None:
        with self.lock:
            info = self.infos.pop(id(task), None)
            ident = threading.get_ident()
            if self.running.get(ident) is info:
                del self.running[ident]
            if info is None:
                return
            info.state.pending.pop(task.seq, None)
            for lo, ref in info.views:
                self._found_writes(info, lo, ref)
            info.views = []
            for lo, hi, write in info.host_ranges:
                self.watch.finished(info, lo, hi, write)
            if getattr(task, "keep", None) is not None:
                info.task = DoneTask(task)  # the history must not keep the host buffer alive

    # ------------------------------------------------------------ kernel views
    def _on_mem_access(self, device, addr, nbytes, task, mode="rw", write=None, **_) -> None:
        if nbytes <= 0:
            return
        if write is not None:  # an observer event in the older form: write=True/False
            mode = "w" if write else "r"
        with self.lock:
            info = self.infos.get(id(task))
            if info is None or info.vc is None:
                return
            lo = addr
            if is_host_alias(lo):
                lo = _alias_target(lo, nbytes)
                if lo is None:
                    return
            if mode == "rw":
                self._prepare_view(info, lo, nbytes)
                mode = "view"
            self._touch(info, info.agent, task.seq, info.vc, lo, nbytes, mode, noted=self._noted(info, lo))

    def _noted(self, info: TaskInfo, addr: int) -> bool:
        """Is the view in an allocation the launch named as a GM argument? The runtime then
        knows the kernel uses it, and a stream-ordered free waits for the kernel."""
        values = getattr(info.task, "values", None)
        if values is None:
            return True  # packed args read from device memory: the runtime noted them at launch
        if info.gm_args is None:
            func = info.task.func
            info.gm_args = tuple(values[i] for i in func.gm_slots)
        owner = self._owner(addr)
        if owner is None:
            return False
        return any(owner.addr <= v < owner.end for v in info.gm_args)

    def _prepare_view(self, info: TaskInfo, lo: int, n: int) -> None:
        """Before an "rw" view is used: keep what is needed to find its writes later (the
        first time this task sees those bytes)."""
        if info.prepared is None:
            info.prepared = IntervalSet()
        for g_lo, g_hi in info.prepared.missing(lo, lo + n):
            view = address.view(g_lo, g_hi - g_lo)
            owner = self._owner(g_lo)
            ref = view.copy()
            if owner is not None and owner.init is not None and g_lo >= VA_BASE:
                for u_lo, u_hi in owner.init.missing(g_lo, min(g_hi, owner.end)):
                    part = view[u_lo - g_lo:u_hi - g_lo]
                    initcheck.fill_canary(part, u_lo - owner.addr)  # undefined bytes: any value will do
                    ref[u_lo - g_lo:u_hi - g_lo] = part
            info.views.append((g_lo, ref))
            info.prepared.add(g_lo, g_hi)

    def _found_writes(self, info: TaskInfo, lo: int, ref) -> None:
        try:
            now = address.view(lo, ref.size)
        except Exception:  # noqa: BLE001 - memory released meanwhile (a reset)
            return
        for c_lo, c_hi in initcheck.changed_ranges(ref, now):
            self._touch(info, info.agent, info.task.seq, info.vc, lo + c_lo, c_hi - c_lo, "w",
                        noted=self._noted(info, lo + c_lo))

    # ------------------------------------------------------------ the access check
    def _owner(self, addr: int):
        regions = self.shadow.find(addr, addr + 1)
        return regions[0].owner if regions else None

    def _touch(self, who, agent, clock, vc, lo, n, mode, width=0, pitch=0, noted=True) -> None:
        """An access of [lo, lo + n) by `who`. mode: "r", "w", "rw" (both), "view" (a kernel
        "rw" view: a read now, its writes found later)."""
        if n <= 0:
            return
        hi = lo + n
        write = mode in ("w", "rw")
        if lo >= VA_BASE:
            if is_host_alias(lo):
                lo2 = _alias_target(lo, n)
                if lo2 is None:
                    return
                lo, hi = lo2, lo2 + n
                regions = self.shadow.ensure(lo, hi)
            else:
                regions = self.shadow.find(lo, hi)
                if not regions or regions[0].owner is None or regions[0].lo > lo:
                    self._adopt(lo)
                    regions = self.shadow.find(lo, hi)
                if not regions:
                    return
                owner = regions[0].owner
                if owner is not None and not self._memcheck(who, owner, lo, hi, write, mode):
                    return
                if owner is not None and owner.init is not None and "init" in self.tools:
                    self._initcheck(owner, who, agent, clock, vc, lo, min(hi, owner.end), mode)
        else:
            regions = self.shadow.ensure(lo, hi)
        if "race" not in self.tools:
            return
        noted = noted and who.stream_label is not None
        races = self.shadow.access(regions, lo, hi, write, agent, clock, vc, who, width, pitch, noted)
        for old in races:
            if old.owner is not None and old.owner.in_use_reported and old.owner is not regions[0].owner:
                continue  # the allocator race of an illegal free already reported
            region = next((r for r in regions if r.lo < old.hi and old.lo < r.hi), regions[0])
            self.emit(race_report(old, who, write, lo, hi, region))

    def _initcheck(self, owner, who, agent, clock, vc, lo: int, end: int, mode: str) -> None:
        if mode in ("r", "rw"):
            gaps = owner.init.missing(lo, end)
            if gaps:
                owner.unread.append(initcheck.UnwrittenRead(gaps, who.actor("read"), agent, clock))
        if mode in ("w", "rw"):
            if owner.unread and "race" in self.tools:  # a concurrent write: the race is the report
                owner.unread = [u for u in owner.unread
                                if u.agent == agent or ordered(u.agent, u.clock, vc)
                                or not any(a < end and lo < b for a, b in u.gaps)]
            owner.init.add(lo, end)

    def _settle(self, owner) -> None:
        """Report the reads of unwritten bytes of `owner` that no concurrent write explained."""
        for u in owner.unread:
            self.emit(initcheck.uninit_report(owner, u.gaps, u.actor))
        owner.unread = []

    def _memcheck(self, who, owner, lo: int, hi: int, write: bool, mode: str) -> bool:
        """False if the access must not be recorded (memory that is gone)."""
        if "mem" not in self.tools:
            return True
        if not owner.live:
            uses = owner.uses or {}
            state = getattr(who, "state", None)
            if state is not None and uses.get(state.clock.agent, 0) >= who.task.seq:
                return True  # queued before a stream-ordered free: reading it is allowed
            if not owner.in_use_reported:
                actor = who.actor("write" if write else "read")
                self.emit(memcheck.refused_report(
                    "use_after_free", "the memory was freed before this access", actor, lo, hi - lo, owner.device,
                    freed=owner))
            return False
        if hi > owner.end:
            self.emit(memcheck.oob_report(owner, lo, hi, write, who.actor("write" if write else "read")))
        return True

    def _adopt(self, addr: int) -> None:
        """Memory allocated before the sanitizer was enabled: learn it from the runtime."""
        device = RUNTIME.device_by_physical.get((addr - VA_BASE) >> 40)
        if device is None:
            return
        block = device.memory.find(addr)
        if block is None or block.state != BLOCK_LIVE:
            return
        a = memcheck.Allocation(device, block.addr, block.requested, True, None, "device", init=False)
        self.allocs.add(a)
        self.shadow.add_region(block.addr, block.addr + block.size, a)

    # ------------------------------------------------------------ host
    def _on_host_access(self, addr, nbytes, mode, what="host access", width=0, pitch=0, **_) -> None:
        site = user_site()
        with self.lock:
            agent, clock, vc, info = self._agent_now()
            who = info or HostWho(threading.current_thread().name, site, what)
            self._touch(who, agent, clock, vc, addr, nbytes, mode, width, pitch)

    def _learn(self, stream, seq: int) -> None:
        self.host().learn(self.state(stream).clock.at(seq))
        self.published()

    def published(self) -> None:
        """The calling thread learned something: host memory no longer in use by work it is
        now ordered after is compared one last time."""
        vc = self.host().vc
        if not self.watch.watches:
            return
        found = self.watch.ordered(lambda info: ordered(info.agent, info.task.seq, vc), None)
        if found:
            self._host_write_reports(found, user_site())

    def _host_write_reports(self, found, now, before=None) -> None:
        """Reports for host writes seen as changed bytes (which thread wrote is not known)."""
        if "race" not in self.tools:
            return
        for pending, span, since in found:
            host = Actor("write by the host (seen as changed bytes)", "a host thread", now, "noticed at")
            end = now or (f"the start of {before.describe()}" if before is not None else "the end of the run")
            self.emit(hostwatch.host_write_report(pending, span, since, end, host))

    def _on_host_wait(self, stream, seq, **_) -> None:
        if "sync" in self.tools:
            self.hang.begin(threading.get_ident(), threading.current_thread().name, stream, seq, user_site())

    def _on_host_wait_done(self, stream, seq, ok=True, **_) -> None:
        self.hang.end(threading.get_ident())
        if ok:
            with self.lock:
                self._learn(stream, seq)

    def _on_capture_begin(self, capture, stream, **_) -> None:
        with self.lock:
            self.capture_sites[id(capture)] = (user_site(), threading.current_thread().name)

    def _on_capture_refused(self, capture, call, code, mode, thread_mode, **_) -> None:
        """A call the capture forbids (107030 / 107027): where it was made and where the
        capture began, as one report (the runtime's message carries the begin stack too). The
        capture goes on, as CANN's does; the program's bug is the call it expected to run."""
        if "sync" not in self.tools:
            return
        with self.lock:
            begin_site, begin_thread = self.capture_sites.get(id(capture), (None, "?"))
        stream = capture.origin
        name = threading.current_thread().name
        self.emit(Report(
            "synccheck", "capture call refused",
            f"{call} was refused during the capture of {stream_label(stream)} ({mode} mode): the runtime returned {code}",
            actors=[Actor(call, f"host thread {name} (capture mode {thread_mode})", user_site(), "at"),
                    Actor(f"the capture of {stream_label(stream)}", f"host thread {begin_thread}", begin_site,
                          "began at")],
            details=["the call did nothing (its copy or wait did not run and is not in the graph); the capture "
                     "goes on"],
            fix="use the asynchronous form on the capturing stream, capture in RELAXED mode, or switch this "
                "thread's mode with aclmdlRICaptureThreadExchangeMode; never synchronize a capturing stream",
            key=("capture", call, begin_site)))

    def _on_wait_refused(self, stream, seq, message="", **_) -> None:
        if "sync" in self.tools:
            self.emit(self.hang.refused(stream, seq, message, threading.current_thread().name, user_site()))

    def _on_host_synced(self, stream, seq, **_) -> None:
        with self.lock:
            self._learn(stream, seq)

    def _on_callback_started(self, stream, seq, task=None, **_) -> None:
        with self.lock:
            st = self.state(stream)
            vc = st.clock.at(seq)
            info = self.infos.get(id(task)) if task is not None else None
            if info is not None and info.vc is None:  # the callback task has not started yet
                vc = join(vc, info.host_vc)
            self.host().learn(vc)
            self.published()

    def _on_callback_finished(self, stream, seq, task=None, block=False, **_) -> None:
        if block:
            with self.lock:
                st = self.state(stream)
                st.clock.pending = join(st.clock.pending, self.host().snapshot())

    # ------------------------------------------------------------ memory
    def _on_mem_alloc(self, device, addr, size, managed=False, **_) -> None:
        if self.deferred_frees:
            with self.lock:
                reused = [(a, d, n) for a, (d, n) in self.deferred_frees.items() if a < addr + size and addr < a + n]
                for a, _d, _n in reused:
                    del self.deferred_frees[a]
            for a, d, n in reused:  # the graph released it: the free happens for the tools now
                self._on_mem_free(d, a, n, managed=True)
        site = user_site()
        with self.lock:
            if device is None:
                a = memcheck.Allocation(None, addr, size, managed, site, "host", init=False)
                self.allocs.add(a)
                self.shadow.add_region(addr, addr + size, a)
                return
            block = device.memory.live.get(addr)
            usable = block.size if block is not None else size
            a = memcheck.Allocation(device, addr, size, managed, site, "device")
            self.allocs.add(a)
            region = self.shadow.add_region(addr, addr + usable, a)
            # the allocator orders what the allocating thread knows of, and a stream-ordered free
            # waited for every use the runtime knew of (also those that ran after the free)
            vc = self.host().vc
            self.shadow.forget(region, lambda r: not (ordered(r.agent, r.clock, vc) or (
                r.noted and r.owner is not None and r.owner.managed)))

    def _on_mem_free(self, device, addr, size=0, managed=False, uses=None, **_) -> None:
        if managed and _graph_holds(uses):
            # a collected array (a temporary of captured work) that a live graph holds: the
            # memory stays the graph's (its private pool) and replays use it; it is freed for
            # the tools when the address is allocated again
            with self.lock:
                self.deferred_frees[addr] = (device, size)
            return
        site = user_site()
        with self.lock:
            a = self.allocs.live.get(addr)
            if a is None:
                return
            h = self.host()
            vc = h.vc
            # a graph's hold (runtime/graph.py GraphHold) is no stream: memory a captured graph
            # uses stays the graph's by design (a private pool), its replays are checked as tasks
            uses = {self.state(s).clock.agent: seq for s, seq in (uses or {}).items() if type(s) is Stream}
            regions = self.shadow.find(addr, addr + max(size, 1))
            region = next((r for r in regions if r.owner is a), None)
            # device free and free_host alike: npurt defers a pinned buffer's unmap until its
            # queued copies ran, but on the hardware the DMA engine would read freed memory
            if not managed and "mem" in self.tools:
                users = self._in_use(a, region, uses, vc)
                if users:
                    a.in_use_reported = True
                    free = Actor("free", f"host thread {h.name}", site, "at")
                    self.emit(memcheck.free_in_use_report(a, free, users))
                    if region is not None and "race" in self.tools:
                        self._races_with_queued_writers(a, region)
            self._settle(a)
            a.uses = uses
            a.live = False
            self.allocs.remove(a, site)
            if region is not None:
                if a.in_use_reported:
                    region.records = []
                elif managed:  # the stream-ordered free waits for every use the runtime knows of
                    self.shadow.forget(region, lambda r: not (r.noted or ordered(r.agent, r.clock, vc)))
                else:
                    self.shadow.forget(region, lambda r: not ordered(r.agent, r.clock, vc))
            if device is None:
                self.watch.forget(addr, addr + size)

    def _races_with_queued_writers(self, a, region) -> None:
        """At an illegal free: the kernels still queued (or running) that may write `a` race
        with the host's earlier accesses of it they are not ordered after (a synchronous copy
        from memory a kernel on another stream is still to write, say). Their writes are found
        only when they finish, after this free, and then no longer count: report them now."""
        host_records = [r for r in region.records if r.who.stream_label is None]
        if not host_records:
            return
        for st in list(self.streams.values()):
            for info in list(st.pending.values()):
                if not self._may_write(info, a):
                    continue
                knows = info.vc if info.vc is not None else info.host_vc
                for r in host_records:
                    if r.agent != info.agent and not ordered(r.agent, r.clock, knows):
                        self.emit(race_report(r, info, True, a.addr, a.end, region))
                # a read of unwritten bytes this writer was still to write: the race is the report
                a.unread = [u for u in a.unread if u.agent == info.agent or ordered(u.agent, u.clock, knows)]

    @staticmethod
    def _may_write(info: TaskInfo, a) -> bool:
        """Whether a queued kernel was given a writable pointer into allocation `a`."""
        task = info.task
        values = getattr(task, "values", None)
        if getattr(task, "kind", None) != "kernel" or values is None:
            return False
        func = task.func
        modes = getattr(func, "pointer_modes", None) or ("rw",) * len(func.gm_slots)
        return any(a.addr <= values[slot] < a.end and mode != "r" for slot, mode in zip(func.gm_slots, modes))

    def _in_use(self, a, region, uses: dict, vc: dict) -> list:
        users, seen = [], set()
        for st in list(self.streams.values()):
            seq = uses.get(st.clock.agent)
            if seq is None or ordered(st.clock.agent, seq, vc):
                continue
            info = st.pending.get(seq)
            if info is not None:
                users.append(info.actor("use"))
                seen.add((st.clock.agent, seq))
            else:
                users.append(Actor(f"use by task #{seq}", st.label, None))
                seen.add((st.clock.agent, seq))
        if region is not None:
            for r in region.records:
                if a.device is None and r.who.stream_label is None:
                    continue  # another host thread's own (synchronous) access of pinned memory: not queued work
                if not ordered(r.agent, r.clock, vc) and (r.agent, r.clock) not in seen and r.agent not in uses:
                    seen.add((r.agent, r.clock))
                    users.append(r.who.actor("write" if r.write else "read"))
        return users

    def _on_memcpy_kind(self, op, kind, actual, dst, src, nbytes=0, refused=False, **_) -> None:
        """A copy whose kind contradicts its addresses (copied by address, or refused)."""
        if "mem" not in self.tools:
            return
        site = user_site()
        actor = HostWho(threading.current_thread().name, site, op).actor("call")
        actor.what = op
        done = "refused" if refused else f"copied as {MEMCPY_KIND_NAMES.get(actual, actual)} by address"
        message = (f"{op} was given {MEMCPY_KIND_NAMES.get(kind, kind)} ({kind}) for a copy the addresses make "
                   f"{MEMCPY_KIND_NAMES.get(actual, actual)} ({actual}): {done}")
        with self.lock:
            self.emit(memcheck.refused_report("kind_mismatch", message, actor, dst, nbytes, None))

    def _on_mem_error(self, kind, addr, nbytes=0, device=None, message="", task=None, **_) -> None:
        if "mem" not in self.tools or kind == "kind_mismatch":  # memcpy_kind told us already
            return
        site = user_site()
        with self.lock:
            info = self.infos.get(id(task)) if task is not None else None
            if info is not None:
                actor = info.actor("access")
                for a in self.allocs.dead.values():  # the free of this memory was reported already
                    if a.in_use_reported and isinstance(addr, int) and a.addr <= addr < a.end:
                        return
            else:
                actor = HostWho(threading.current_thread().name, site, "call").actor("access")
                actor.what = "call"
            double, freed = False, None
            if isinstance(addr, int):
                dead = self.allocs.dead.get(addr)
                if kind == "invalid_free" and dead is not None:
                    double, freed = True, dead
                elif kind == "use_after_free":
                    freed = dead or next((a for a in reversed(self.allocs.dead.values())
                                          if a.addr <= addr < a.end), None)
            self.emit(memcheck.refused_report(kind, message, actor, addr, nbytes, device, double, freed))

    def _on_host_register(self, addr, size, **_) -> None:
        site = user_site()
        with self.lock:
            a = memcheck.Allocation(None, addr, size, False, site, "registered", init=False)
            self.allocs.add(a)
            self.shadow.add_region(addr, addr + size, a)

    def _on_host_unregister(self, addr, size=0, **_) -> None:
        with self.lock:
            a = self.allocs.live.get(addr)
            if a is not None and a.kind == "registered":
                a.live = False
                self.allocs.remove(a, user_site())
            self.watch.forget(addr, addr + size)

    def _on_device_release(self, device, reason="reset", **_) -> None:
        gc.collect()  # arrays nobody holds any more free their memory first
        with self.lock:
            live = self.allocs.of_device(device)
            if "leak" in self.tools:
                for r in leakcheck.leak_reports([a for a in live if a.site is not None], reason):
                    self.emit(r)
            for a in live:
                self._settle(a)
                a.live = False
                self.allocs.remove(a, None)
                self.shadow.drop(a.addr, a.end)
            for stream in [s for s in self.streams.keys() if s.device is device]:
                self.streams.pop(stream, None)

    def _on_runtime_finalize(self, **_) -> None:
        with self.lock:
            live = [a for a in self.allocs.live.values() if a.device is None]
            if "leak" in self.tools:
                for r in leakcheck.leak_reports([a for a in live if a.site is not None], "acl.finalize"):
                    self.emit(r)
            for a in live:
                a.live = False
                self.allocs.remove(a, None)
                self.watch.forget(a.addr, a.end)


_MODES = {"r": "r", "w": "w", "rw": "rw", False: "r", True: "w"}  # a bool: "is it a write?"


def _accesses(task) -> list:
    """task.accesses() with each mode made one of "r", "w", "rw"."""
    try:
        found = task.accesses()
    except Exception:  # noqa: BLE001 - a task kind that does not say
        return []
    return [(a[0], a[1], _MODES.get(a[2], "rw"), *a[3:]) for a in found]


def _async_host(task, addr: int, n: int) -> bool:
    """True if the host memory a task touches is used asynchronously (pinned memory, or a
    buffer the task keeps): then the host must not touch it until it is synchronized."""
    if getattr(task, "keep", None) is not None:
        return True
    try:
        return RUNTIME.host.find(addr, n) is not None
    except Exception:  # noqa: BLE001
        return False


def _alias_target(alias: int, n: int):
    try:
        return RUNTIME.host.alias_target(alias, n)
    except Exception:  # noqa: BLE001
        return None


# ---------------------------------------------------------------- the process-wide face
_ACTIVE: set = set()


def enable(tools="all", report: str | None = None, out=None, echo: bool = True) -> Sanitizer:
    """Start a sanitizer: `tools` is "all" or some of race, mem, init, leak, sync (a list or
    a comma-separated string); `report` a path for the JSON report written when it ends;
    reports go to `out` (default stderr) as they are found unless `echo` is False."""
    san = Sanitizer(tools, out, echo, report).enable()
    _ACTIVE.add(san)
    return san


def disable() -> None:
    """Stop every sanitizer started with enable()."""
    for san in list(_ACTIVE):
        san.disable()


@atexit.register
def _at_exit() -> None:
    for san in list(_ACTIVE):
        try:
            san.disable()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
