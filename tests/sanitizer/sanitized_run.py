"""Running a program under the sanitizer in-process, as `npurt run --sanitize` would (a
helper module for the tests next to it)."""
from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import npurt.sanitizer
from npurt.runtime.runtime import RUNTIME
from npurt.apps.runner import install_acl_alias

PROGRAMS = Path(__file__).resolve().parent / "programs"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def expectations(path: Path) -> list[tuple[str, set[str]]]:
    """The `expect:` line of a program's docstring: [(tool, {kinds})], [] for "nothing"."""
    text = path.read_text()
    m = re.search(r"^expect: (.+)$", text, re.M)
    assert m, f"{path.name} has no expect: line"
    if m.group(1).strip() == "nothing":
        return []
    out = []
    for item in m.group(1).split(","):
        tool, kinds = item.strip().split(" ", 1)
        out.append((tool, set(kinds.split("|"))))
    return out


def _teardown_runtime() -> None:
    if RUNTIME.initialized:
        for device in RUNTIME.devices:
            if device is not None:
                for s in device.all_streams():
                    if s.completed_seq < s.enqueued_seq:
                        s.abort()  # a seeded hang may leave a stream stopped
        RUNTIME.finalized = False  # a new process state, as tests/conftest.py makes it
        RUNTIME.finalize(timeout_s=5.0)
    RUNTIME.finalized = False


def run_program(path: Path, tools="all", argv=()) -> "npurt.sanitizer.Sanitizer":
    """Run a script as __main__ with `import acl` -> npurt.acl, under a fresh runtime and a
    sanitizer; returns the (disabled) sanitizer with its reports."""
    _teardown_runtime()
    saved = {name: mod for name, mod in sys.modules.items() if name == "acl" or name.startswith("acl.")}
    aliases = install_acl_alias()
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *argv]
    sys.path.insert(0, str(path.parent))
    san = npurt.sanitizer.enable(tools, echo=False)
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit:
        pass
    finally:
        san.disable()
        sys.argv, sys.path[:] = old_argv, old_path
        for alias in aliases:
            sys.modules.pop(alias, None)
        sys.modules.update(saved)
        _teardown_runtime()
    return san


def kinds(san) -> list[tuple[str, str]]:
    return sorted({(r.tool, r.kind) for r in san.reports})

