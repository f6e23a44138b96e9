"""The catalogue: every seeded bug is found with the right kind, every correct program
(pipelines with events, callbacks, two devices, the examples, the demo) runs with zero
reports."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sanitized_run import EXAMPLES, PROGRAMS, expectations, kinds, run_program

BUGS = sorted(p.name for p in PROGRAMS.glob("*.py") if not p.name.startswith("ok_"))
CORRECT = sorted(p.name for p in PROGRAMS.glob("ok_*.py"))
pytestmark = pytest.mark.timeout(120)
TOOLS = {"race": "racecheck", "mem": "memcheck", "init": "initcheck", "leak": "leakcheck", "sync": "synccheck"}
PYTHONIC_EXAMPLES = sorted(p.name for p in EXAMPLES.glob("*.py"))
# acl.prof numbers its sessions per process (PROF_000001_...): that example runs in its own
SUBPROCESS = {"profiling.py"}
PYACL_EXAMPLES = sorted(p.name for p in (EXAMPLES / "pyacl").glob("*.py") if p.name != "error_handling.py")


def _describe(san) -> str:
    return "\n".join(r.text() for r in san.reports) or "(no reports)"


def test_the_catalogue_has_three_bugs_per_class_in_each_style():
    for prefix, tool in TOOLS.items():
        for style in ("acl", "py"):
            found = [b for b in BUGS if b.startswith(f"{prefix}_{style}_")]
            assert len(found) >= 3, (tool, style, found)
            assert all(expectations(PROGRAMS / b)[0][0] == tool for b in found)


@pytest.mark.parametrize("name", BUGS)
def test_seeded_bug_is_reported_with_its_kind(name):
    expected = expectations(PROGRAMS / name)
    san = run_program(PROGRAMS / name)
    assert san.reports, f"{name}: nothing reported"
    for tool, allowed in expected:
        assert any(r.tool == tool and r.kind in allowed for r in san.reports), _describe(san)
    for r in san.reports:  # and nothing else
        assert any(r.tool == tool and r.kind in allowed for tool, allowed in expected), _describe(san)


@pytest.mark.parametrize("name", CORRECT)
def test_correct_program_has_no_reports(name):
    assert expectations(PROGRAMS / name) == []
    san = run_program(PROGRAMS / name)
    assert not san.reports, _describe(san)


@pytest.mark.parametrize("name", PYTHONIC_EXAMPLES)
def test_pythonic_example_has_no_reports(name):
    san = run_program(EXAMPLES / name)
    assert not san.reports, _describe(san)


@pytest.mark.parametrize("name", PYACL_EXAMPLES)
def test_pyacl_example_has_no_reports(name, tmp_path):
    if name in SUBPROCESS:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NPURT_", "ASCEND_"))}
        proc = subprocess.run([sys.executable, "-m", "npurt.cli", "run", "--sanitize", str(EXAMPLES / "pyacl" / name)],
                              capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
        assert proc.returncode == 0 and proc.stderr.strip().endswith("ERROR SUMMARY: 0 errors"), proc.stderr
        return
    san = run_program(EXAMPLES / "pyacl" / name)
    assert not san.reports, _describe(san)


def test_the_error_handling_example_reports_only_its_deliberate_kernel_overread():
    san = run_program(EXAMPLES / "pyacl" / "error_handling.py")
    assert kinds(san) == [("memcheck", "illegal access")], _describe(san)
    assert "overread" in san.reports[0].text()


def test_the_demo_has_no_reports(tmp_path):
    script = tmp_path / "demo.py"
    script.write_text("import npurt.demo\nnpurt.demo.main(batches=3, quiet=True)\n")
    san = run_program(script)
    assert not san.reports, _describe(san)
