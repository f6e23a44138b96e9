"""Where in the user's code something happened: the innermost frame outside npurt.

Reports name the line that enqueued a task or allocated memory, not npurt's own frames
(the facade, the Pythonic API, the runtime). Other packages that sit between the user and
npurt (a framework shim) add their directories with `add_internal`.
"""
from __future__ import annotations

import contextlib
import functools
import os
import queue
import sys
import threading
from typing import NamedTuple



class Site(NamedTuple):
    """A line of user code."""

    file: str
    line: int
    func: str

    def __str__(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}"

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "function": self.func}


UNKNOWN = Site("<unknown>", 0, "?")

# npurt's own package directory (this file is npurt/tools/sanitizer/frames.py)
_NPURT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_internal_dirs: list[str] = [_NPURT_DIR + os.sep]
_internal_files = {os.path.abspath(m.__file__) for m in (contextlib, functools, queue, threading)}
_verdicts: dict = {}  # code object -> True if internal


_FRAMEWORKS = ("torch",)  # packages between a user and npurt: their frames are not the user's line


def _add_frameworks() -> None:
    for name in _FRAMEWORKS:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            folder = os.path.dirname(os.path.abspath(path)) + os.sep
            if folder not in _internal_dirs:
                _internal_dirs.append(folder)


def add_internal(path: str) -> None:
    """Treat frames from files under `path` as library frames, not user code."""
    _internal_dirs.append(os.path.abspath(path).rstrip(os.sep) + os.sep)
    _verdicts.clear()


def _is_internal(code) -> bool:
    verdict = _verdicts.get(code)
    if verdict is None:
        _add_frameworks()
        name = code.co_filename
        if name.startswith(("<frozen", "<npurt")):  # importlib, runpy, the facade's generated wrappers
            verdict = _verdicts[code] = True
            return True
        path = os.path.abspath(name) if not name.startswith("<") else name
        verdict = _verdicts[code] = (path in _internal_files
                                     or any(path.startswith(d) for d in _internal_dirs))
    return verdict


def user_site(depth: int = 1) -> Site | None:
    """The innermost frame of the calling thread outside npurt, or None (all internal:
    e.g. a scheduler worker)."""
    f = sys._getframe(depth)
    while f is not None:
        code = f.f_code
        if not _is_internal(code):
            return Site(code.co_filename, f.f_lineno, code.co_name)
        f = f.f_back
    return None
