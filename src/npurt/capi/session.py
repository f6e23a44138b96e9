"""The tools a native program runs under, asked for through its environment.

`npurt run --sanitize ./app` and `npurt run --profile DIR ./app` cannot reach into the program's
process, so they set variables (npurt.envvars) that libacl_rt's Python start reads:

    NPURT_SANITIZE          the sanitizer's tools (all, or race,mem,...): enabled at the start
    NPURT_SANITIZE_REPORT   the JSON file its reports go to (written even when there are none)
    NPURT_PROFILE           the directory the profile is written to

`start()` runs once when the library's Python side starts; `stop()` when the program ends (the
library's exit handler and aclFinalize both call it; the second call does nothing): the
sanitizer's end-of-run checks and summary on stderr, the JSON report, the profile's files.
`npurt run` reads the JSON report afterwards and exits with 86 if it holds any report.
"""
from __future__ import annotations

import os
import sys

from ..runtime import fork_safe_lock
from ..profiler import Profile
from ..sanitizer import Sanitizer

_lock = fork_safe_lock()
_running: dict[str, object] = {}


def start() -> None:
    """Enable what the environment asks for (nothing when neither variable is set)."""
    tools = os.environ.get("NPURT_SANITIZE", "").strip()
    out_dir = os.environ.get("NPURT_PROFILE", "").strip()
    with _lock:
        if tools and "sanitizer" not in _running:
            report = os.environ.get("NPURT_SANITIZE_REPORT", "").strip() or None
            _running["sanitizer"] = Sanitizer(tools, json_path=report).enable()
        if out_dir and "profile" not in _running:
            _running["profile"] = Profile(out_dir).start()


def stop() -> None:
    """End what start() began: reports, summaries and files are written once."""
    with _lock:
        running = dict(_running)
        _running.clear()
    sanitizer, profile = running.get("sanitizer"), running.get("profile")
    if profile is not None and profile.running:
        profile.stop()                       # writes msprof.json, the tables and summary.txt
        print(f"npurt: profile of {len(profile.timeline.tasks)} tasks written to {profile.out_dir}",
              file=sys.stderr)
    if sanitizer is not None:
        sanitizer.disable()                  # the end-of-run checks, the summary, the JSON report
