"""How the sanitizer is started: npurt.sanitizer.enable() and its context manager,
`npurt run --sanitize`, and the pytest plugin."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import npurt
import npurt.sanitizer
from npurt.runtime.observers import HOOKS
from sanitized_run import PROGRAMS, run_program

pytestmark = pytest.mark.timeout(120)
PITFALL = PROGRAMS / "race_acl_pitfall2.py"


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("NPURT_", "ASCEND_"))}


def npurt_run(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "npurt.cli", "run", *map(str, args)], capture_output=True,
                          text=True, timeout=100, env=_env(), cwd=cwd)


def test_the_context_manager_collects_reports_and_stops_listening(rt):
    out = io.StringIO()
    with npurt.sanitizer.enable(out=out) as san:
        dev = rt.malloc(64)
        rt.free(dev)
        with pytest.raises(npurt.InvalidValueError):
            rt.free(dev)
    assert [r.kind for r in san.reports] == ["double free"]
    assert not HOOKS.active
    text = out.getvalue()
    assert "memcheck: double free" in text
    assert text.rstrip().endswith("ERROR SUMMARY: 1 error (memcheck 1)")


def test_enable_and_disable_from_code(rt):
    san = npurt.sanitizer.enable(tools="mem", echo=False)
    assert HOOKS.active
    npurt.sanitizer.disable()
    assert not HOOKS.active and san.errors == 0


def test_tools_can_be_chosen():
    san = run_program(PITFALL, tools="mem,init,leak,sync")
    assert san.reports == []
    san = run_program(PITFALL, tools=["race"])
    assert [r.tool for r in san.reports] == ["racecheck"]


def test_an_unknown_tool_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown sanitizer tool 'races'"):
        npurt.sanitizer.enable(tools="races")
    assert not HOOKS.active


def test_the_json_report_holds_every_report(tmp_path):
    path = tmp_path / "r.json"
    with npurt.sanitizer.enable(report=str(path), echo=False) as san:
        pass
    assert json.loads(path.read_text()) == {"errors": 0, "reports": []}
    san = run_program(PITFALL)
    data = san.reporter.to_json()
    (report,) = data["reports"]
    assert report["tool"] == "racecheck" and report["kind"] == "RAW hazard"
    assert [a["site"]["line"] for a in report["accesses"]] == [21, 22]
    assert report["fix"].startswith("record an event")


def test_npurt_run_sanitize_reports_on_stderr_and_exits_86(tmp_path):
    report = tmp_path / "report.json"
    proc = npurt_run("--sanitize", "--sanitize-report", report, PITFALL, cwd=tmp_path)
    assert proc.returncode == 86, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("========= npurt-sanitizer: ")]
    assert lines[0].endswith("racecheck: RAW hazard: read after write on 1048576 bytes of device 0 memory")
    assert lines[-1] == "========= npurt-sanitizer: ERROR SUMMARY: 1 error (racecheck 1)"
    assert json.loads(report.read_text())["errors"] == 1


def test_npurt_run_sanitize_exits_0_for_a_correct_program(tmp_path):
    proc = npurt_run("--sanitize", PROGRAMS / "ok_acl_callbacks.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("ERROR SUMMARY: 0 errors")


def test_npurt_run_tools_selects_and_rejects(tmp_path):
    proc = npurt_run("--tools", "mem,leak", PITFALL, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = npurt_run("--tools=race,bogus", PITFALL, cwd=tmp_path)
    assert proc.returncode == 2 and "unknown sanitizer tool 'bogus'" in proc.stderr


PLUGIN_TESTS = '''
import numpy as np
import pytest
import npurt


def test_racy():
    a = npurt.to_device(np.ones(1024, np.float32))
    s = npurt.Stream()
    with npurt.stream(s):
        b = a * 2
    s.synchronize()


def test_clean():
    a = npurt.to_device(np.ones(1024, np.float32))
    s = npurt.Stream()
    s.wait_stream(npurt.current_stream())
    with npurt.stream(s):
        b = a * 2
    s.synchronize()


@pytest.mark.npurt_no_sanitize
def test_opted_out():
    test_racy()
'''


def test_the_pytest_plugin_fails_a_test_whose_code_produced_a_report(tmp_path):
    from importlib.metadata import entry_points
    assert any(ep.value == "npurt.pytest_plugin" for ep in entry_points(group="pytest11")), \
        "the pytest11 entry point is missing: reinstall npurt (pip install -e .)"
    (tmp_path / "test_plugin_demo.py").write_text(PLUGIN_TESTS)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plugin_demo.py"]
    proc = subprocess.run([*cmd, "--npurt-sanitize"], capture_output=True, text=True, timeout=100,
                          cwd=tmp_path, env=_env())
    assert "1 failed, 2 passed" in proc.stdout, proc.stdout + proc.stderr
    assert "FAILED test_plugin_demo.py::test_racy" in proc.stdout
    assert "racecheck: RAW hazard" in proc.stdout


def test_the_readme_shows_the_report_npurt_run_sanitize_prints(tmp_path):
    import re
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text[text.index("## Sanitizer"):text.index("## Configuration")]
    program = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"```text\n(.*?)```", section, re.S).group(1).splitlines()
    (tmp_path / "race.py").write_text(program)
    proc = npurt_run("--sanitize", "race.py", cwd=tmp_path)
    assert proc.returncode == 86
    def report(lines):
        # the sanitizer's own lines, and the runner's lines about them (the --race-seeds hint)
        return [ln for ln in lines if ln.startswith(("========= npurt-sanitizer:", "npurt run:"))]

    addr = re.compile(r"0x[0-9a-f]+")
    assert [addr.sub("0x?", ln) for ln in report(proc.stderr.splitlines())] == \
        [addr.sub("0x?", ln) for ln in report(shown)]
