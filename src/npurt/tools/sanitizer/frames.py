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
        if self.file == NATIVE:
            return f"a native call of {self.func}"
        return f"{os.path.basename(self.file)}:{self.line}"

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "function": self.func}


UNKNOWN = Site("<unknown>", 0, "?")
NATIVE = "<native program>"  # a Site's file for a call a C program made through libacl_rt.so

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


_native_entries: dict = {}  # code object -> the C function (libacl_rt.so's) it answers


def add_native_entries(entries: dict) -> None:
    """The C interface's Python entry points, C name -> callable (`npurt.capi.entry`): a call
    entering through one of them with no user frame above it came from a native program, and
    its site is that C function (the C caller's own line is not known). A C accelerator entry
    (`npurt._speedups.Entry`) is known by the Python slow path it calls (`.slow`), which is
    what runs whenever a tool listens."""
    for name, fn in entries.items():
        code = getattr(getattr(fn, "slow", fn), "__code__", None)
        if code is not None:
            _native_entries.setdefault(code, name)


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
    """The innermost frame of the calling thread outside npurt; for a call from a native
    program (all frames npurt's, entered through a C function's entry point), that C
    function (`NATIVE`); else None (all internal: e.g. a scheduler worker)."""
    f = sys._getframe(depth)
    native = None
    while f is not None:
        code = f.f_code
        if not _is_internal(code):
            return Site(code.co_filename, f.f_lineno, code.co_name)
        if _native_entries:
            native = _native_entries.get(code, native)
        f = f.f_back
    return Site(NATIVE, 0, native) if native is not None else None
