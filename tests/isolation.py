"""Running code in a fresh interpreter, so that a crash or a hang fails a test instead of
killing or wedging pytest: `run_isolated(code)` for one snippet, `IsolatedCases` for the
named snippets of a module (one interpreter for all, a new one after a crash or a hang).
Tests import it by name (`from isolation import IsolatedCases`); conftest.py's `isolated`
fixture is `run_isolated`.

Each fresh interpreter gets simulated devices of its own: a device namespace no other process
uses (`own_namespace()`), since processes of one namespace share their devices. A caller that
wants to share passes NPURT_DEVICE_NAMESPACE in `env`."""
from __future__ import annotations

import itertools
import os

import pytest

_namespaces = itertools.count()


def own_namespace() -> dict:
    """Environment for a child whose simulated devices no other process shares."""
    return {"NPURT_DEVICE_NAMESPACE": f"pytest-{os.getpid()}-{next(_namespaces)}"}


def run_isolated(code: str, timeout: float = 60, env: dict | None = None):
    """Run `code` in a fresh interpreter; returns (returncode, stdout + stderr). A crash or a
    hang fails the calling test instead of killing or wedging pytest."""
    import subprocess
    import sys
    import textwrap
    try:
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **own_namespace(), **(env or {})})
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hung: no exit within {timeout} s; output so far:\n{exc.stdout or ''}{exc.stderr or ''}")
    if proc.returncode < 0:
        pytest.fail(f"crashed with signal {-proc.returncode}; output:\n{proc.stdout}{proc.stderr}")
    return proc.returncode, proc.stdout + proc.stderr


class IsolatedCases:
    """Named snippets run in one fresh interpreter (after a shared prelude), so a crash or a
    hang fails the snippet's test instead of killing or wedging pytest, and starting Python
    is paid once per module. A snippet passes if it finishes without raising; after a crash
    or a hang the remaining snippets run in a new interpreter (NPURT_ISOLATE_EACH=1: every
    snippet in its own interpreter)."""

    def __init__(self, prelude: str, cases: dict[str, str], timeout: float = 60):
        self.prelude, self.cases, self.timeout = prelude, cases, timeout
        self.results: dict[str, str] | None = None

    def result(self, name: str) -> str:
        """"ok", or what went wrong (the traceback, "crashed ...", "hung ...")."""
        if self.results is None:
            self.results = {}
        if name not in self.results:
            each = os.environ.get("NPURT_ISOLATE_EACH")  # debugging: one interpreter per snippet
            todo = [name] if each else [n for n in self.cases if n not in self.results]
            while todo:
                self._run(todo)
                todo = [n for n in todo if n not in self.results]
        return self.results[name]

    def _run(self, names: list[str]) -> None:
        import json
        import subprocess
        import sys
        import textwrap
        runner = "\n".join([
            "import json, sys, traceback",
            textwrap.dedent(self.prelude),
            "def _report(name, outcome):",
            "    print('@@CASE ' + json.dumps([name, outcome]), flush=True)",
        ] + [f"try:\n    exec(compile({textwrap.dedent(self.cases[n])!r}, {n!r}, 'exec'), dict(globals()))\n"
             f"    _report({n!r}, 'ok')\nexcept BaseException:\n    _report({n!r}, traceback.format_exc())"
             for n in names])
        try:
            proc = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True,
                                  timeout=self.timeout, env={**os.environ, **own_namespace()})
            out, err, why = proc.stdout, proc.stderr, f"crashed (exit status {proc.returncode})"
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            why = f"hung (no exit within {self.timeout} s)"
        for line in out.splitlines():
            if line.startswith("@@CASE "):
                name, outcome = json.loads(line[7:])
                self.results[name] = outcome
        pending = [n for n in names if n not in self.results]
        if pending:  # the first one not reported is the one that crashed or hung
            self.results[pending[0]] = f"{why} in this case; stderr:\n{err[-3000:]}"
