"""A profile: start collecting, stop, and the timeline, tables and files that come out.

One profile runs at a time in a process (as msprof allows one collection per device); the
Pythonic `npurt.profiler.profile()`, `acl.prof.start/stop`, `npurt run --profile` and
`npurt demo --profile` all make a `Profile`. Output files in the directory it saves to:

    msprof.json        the timeline (Chrome trace-event JSON; Perfetto, chrome://tracing)
    *.csv              the summaries (summary.py lists them and their columns)
    summary.txt        the terminal report
"""
from __future__ import annotations

import os

from ...runtime import HOOKS, InvalidValueError, NpuError, RUNTIME, Settings, constants as C, fork_safe_lock
from . import apicalls, summary, trace
from .collector import MAX_RECORDS, Collector
from .timeline import Timeline, build

ACTIVE: "Profile | None" = None
_lock = fork_safe_lock()
TRACE_FILE = "msprof.json"


class ProfilerError(NpuError):
    """A profile started while another runs, or stopped when none runs."""

    def __init__(self, message: str, code: int = C.ACL_ERROR_PROF_ALREADY_RUN):
        super().__init__(message, code)


def check_out_dir(path) -> str:
    """`path` as an absolute directory that exists and is writable (made if missing)."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InvalidValueError(f"the profile's output directory must be a path, got {path!r}")
    path = os.path.abspath(os.fspath(path))
    if os.path.exists(path) and not os.path.isdir(path):
        raise InvalidValueError(f"cannot write the profile to {path}: it is a file, not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise InvalidValueError(f"cannot create the profile's output directory {path}: {exc.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InvalidValueError(f"cannot write the profile to {path}: permission denied")
    return path


def _soc() -> str:
    if RUNTIME.driver is not None:
        return RUNTIME.driver.spec.name
    return Settings.from_env().soc


def _allocated_now() -> dict:
    """Bytes the application holds on each device (requested sizes of live blocks)."""
    out = {}
    for device in list(getattr(RUNTIME, "devices", []) or []):
        if device is not None:
            out[device.id] = sum(b.requested for b in list(device.memory.live.values()))
    return out


class Profile:
    """One profile. Use as a context manager, or call start() and stop().

    After stop: `timeline` (the Timeline), `tables` (name -> (header, rows)), `report()`
    (the terminal summary), `save(dir)`; with `out_dir` given, stop() saves there.
    `devices`: device ids whose tasks to collect (None: all); `tasks`, `api_calls`,
    `memory`, `markers`, `copies`: what to collect. `max_records`: the most tasks (and API
    calls) kept (default collector.MAX_RECORDS, 10^6: a task costs about 700 bytes until the
    profile stops); later ones are counted in `dropped` and the report says how many."""

    def __init__(self, out_dir=None, *, devices=None, tasks: bool = True, api_calls: bool = True,
                 memory: bool = True, markers: bool = True, copies: bool = True,
                 max_records: int = MAX_RECORDS):
        if type(max_records) is not int or max_records < 1:
            raise InvalidValueError(f"max_records must be a positive int, got {max_records!r}")
        self.max_records = max_records
        self.out_dir = None if out_dir is None else check_out_dir(out_dir)
        self.devices = None if devices is None else sorted(set(devices))
        self.tasks, self.api_calls, self.memory, self.markers, self.copies = tasks, api_calls, memory, markers, copies
        self.collector: Collector | None = None
        self.timeline: Timeline | None = None
        self._tables: dict | None = None
        self.files: list[str] = []
        self._baseline: dict = {}
        self._wrapped = False

    # ------------------------------------------------------------ lifecycle
    def start(self) -> "Profile":
        global ACTIVE
        with _lock:
            if ACTIVE is not None:
                raise ProfilerError("a profile is already running in this process; stop it first "
                                    "(one profile at a time, as msprof allows one collection per device)")
            if self.collector is not None:
                raise ProfilerError("this profile already ran; make a new one")
            self._baseline = _allocated_now()
            self.collector = Collector(self.devices, tasks=self.tasks, memory=self.memory, copies=self.copies,
                                       max_records=self.max_records)
            ACTIVE = self
        try:
            if self.api_calls:
                apicalls.install(self.collector.calls, self.collector.threads, self.max_records,
                                 self.collector.dropped)
                self._wrapped = True
            HOOKS.add(self.collector)
        except BaseException:  # leave nothing half-started behind
            apicalls.uninstall()
            self._wrapped = False
            with _lock:
                ACTIVE = None
            raise
        return self

    def stop(self) -> "Profile":
        global ACTIVE
        with _lock:
            if ACTIVE is not self:
                raise ProfilerError("this profile is not running", C.ACL_ERROR_PROF_NOT_RUN)
            HOOKS.remove(self.collector)
            if self._wrapped:
                apicalls.uninstall()
                self._wrapped = False
            self.collector.stop()
            ACTIVE = None
        self.timeline = build(self.collector, soc=_soc(), pid=os.getpid(), baseline=self._baseline)
        if self.out_dir is not None:
            self.save(self.out_dir)
        return self

    @property
    def running(self) -> bool:
        return ACTIVE is self

    def __enter__(self) -> "Profile":
        return self.start()

    def __exit__(self, *exc) -> None:
        if self.running:
            self.stop()

    # ------------------------------------------------------------ results
    def _done(self) -> Timeline:
        if self.timeline is None:
            raise ProfilerError("the profile has not been stopped yet; its results exist after stop()",
                                C.ACL_ERROR_PROF_NOT_RUN)
        return self.timeline

    @property
    def tables(self) -> dict:
        """name -> (header, rows) of the summary tables (summary.py)."""
        if self._tables is None:
            self._tables = summary.tables(self._done())
        return self._tables

    @property
    def dropped(self) -> dict:
        """{"tasks": n, "calls": n}: records not kept because max_records was reached."""
        return dict(self.collector.dropped) if self.collector is not None else {"tasks": 0, "calls": 0}

    def report(self, top: int = 10) -> str:
        """The terminal summary: largest ops, streams' busy time, overlap, idle gaps, API calls."""
        text = summary.render(self._done(), self.tables, top)
        dropped = self.dropped
        if dropped["tasks"] or dropped["calls"]:
            text = (f"npurt profile: NOT RECORDED: {dropped['tasks']} task(s) and {dropped['calls']} API call(s) after "
                    f"the first {self.max_records} (Profile(max_records=...) keeps more; a task costs about 700 "
                    "bytes until the profile stops)\n") + text
        return text

    def save(self, out_dir) -> list[str]:
        """Write msprof.json, the CSV tables and summary.txt to `out_dir`; returns the paths."""
        out_dir = check_out_dir(out_dir)
        tl = self._done()
        files = [trace.write(tl, os.path.join(out_dir, TRACE_FILE))]
        files += summary.write_csv(self.tables, out_dir)
        path = os.path.join(out_dir, "summary.txt")
        with open(path, "w") as f:
            f.write(self.report())
        files.append(path)
        self.files = files
        return files
