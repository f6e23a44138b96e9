"""npurt.profiler: profile what the simulated NPU runs, msprof-style.

    import npurt

    with npurt.profiler.profile("prof_out") as prof:   # directory for the files (optional)
        with npurt.profiler.range("step 1"):
            y = npurt.ops.gelu(x @ w)
        y.to_host()
    print(prof.report())

The directory then holds msprof.json (the timeline: open it in https://ui.perfetto.dev or
chrome://tracing, or draw it with `npurt plot prof_out -o timeline.png`), the summary
tables op_summary.csv, op_statistic.csv, task_time.csv, api_statistic.csv, msprof_tx.csv,
stream_summary.csv, overlap.csv, idle_gaps.csv, and summary.txt. docs/profiler.md explains
each. One profile runs at a time; `range` and `mark` cost next to nothing when none runs.
"""
from __future__ import annotations

import contextlib

from .tools.profiler import markers as _markers
from .tools.profiler import session as _session
from .tools.profiler.session import Profile, ProfilerError

__all__ = ["Profile", "ProfilerError", "profile", "range", "mark", "is_profiling"]


def profile(out_dir=None, *, devices=None, api_calls: bool = True, memory: bool = True) -> Profile:
    """A profile to use as a context manager (or start()/stop()). With `out_dir`, the trace,
    the CSV tables and summary.txt are written there when it stops; the directory is
    checked (made if missing) now, before any work. `devices`: device ids to collect
    (default: all); `api_calls`: record host API calls; `memory`: record allocations."""
    return Profile(out_dir, devices=devices, api_calls=api_calls, memory=memory)


def is_profiling() -> bool:
    """True while a profile runs in this process."""
    return _session.ACTIVE is not None


class range(contextlib.ContextDecorator):  # noqa: A001 - the name users know (nvtx.range)
    """A named range on the calling thread's timeline (a context manager or a decorator);
    it appears in msprof_tx.csv and as a step of overlap.csv."""

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"a range's name must be a str, got {type(name).__name__}")
        self.name = name

    def __enter__(self) -> "range":
        _markers.push(self.name)
        return self

    def __exit__(self, *exc) -> None:
        _markers.pop()


def mark(name: str) -> None:
    """An instant marker on the calling thread's timeline."""
    if not isinstance(name, str):
        raise TypeError(f"a mark's name must be a str, got {type(name).__name__}")
    _markers.mark(name)
