"""`npurt.sanitizer`: find races, memory errors, leaks and hangs in a program as it runs.

    import npurt.sanitizer
    with npurt.sanitizer.enable() as san:       # or san = npurt.sanitizer.enable() ... san.disable()
        run_my_pipeline()
    assert not san.reports

Reports are printed to stderr as they are found (lines starting with
"========= npurt-sanitizer:") and an error summary ends the session. `tools` picks some of
race, mem, init, leak, sync; `report="out.json"` also writes them as JSON. From the command
line: `npurt run --sanitize script.py`; in tests: `pytest --npurt-sanitize`. See
docs/sanitizer.md.
"""
from __future__ import annotations

from .tools.sanitizer import ALL_TOOLS, PREFIX, Report, Sanitizer, add_internal, add_native_entries, disable, enable

__all__ = ["ALL_TOOLS", "PREFIX", "Report", "Sanitizer", "add_internal", "add_native_entries", "disable", "enable"]
