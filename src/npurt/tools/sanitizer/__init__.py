"""npurt's sanitizer: finds the bugs an NPU hides (races, memory errors, leaks, hangs).

It listens to the runtime's observer hooks only. Modules, one concept each: `clocks`
(happens-before), `shadow` (access history), `memcheck`, `initcheck`, `leakcheck`,
`hangcheck` (synccheck), `hostwatch` (host writes seen by their effect), `racecheck` and
`report` (what the user reads), `core` (the observer that feeds them), `frames` (the user's
line). Start it with `npurt.sanitizer.enable()`, `npurt run --sanitize`, or
`pytest --npurt-sanitize`.
"""
from __future__ import annotations

from .core import ALL_TOOLS, Sanitizer, disable, enable
from .frames import add_internal, add_native_entries
from .report import PREFIX, Report

__all__ = ["ALL_TOOLS", "PREFIX", "Report", "Sanitizer", "add_internal", "add_native_entries", "disable", "enable"]
