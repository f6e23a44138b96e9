"""`npurt run ./app`: a native program linked against the `npurt cann-home` prefix runs under
npurt run, with the sanitizer (exit status 86 on any report) and the profiler asked for
through its environment (npurt.capi.session)."""
from __future__ import annotations

import json
import os
import subprocess
import sys


def npurt_run(cann_home, *args, timeout=120):
    env = {**os.environ, "NPURT_CANN_HOME": cann_home}
    return subprocess.run([sys.executable, "-m", "npurt", "run", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_a_native_program_runs_against_the_prefix(build_c, cann_home):
    proc = npurt_run(cann_home, build_c("run_hello.c").exe)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello from a native program\n"


def test_the_sanitizer_reports_a_native_programs_bug_with_status_86(build_c, cann_home, tmp_path):
    report = tmp_path / "report.json"
    proc = npurt_run(cann_home, "--sanitize-report", str(report), build_c("run_double_free.c").exe)
    assert proc.returncode == 86, proc.stderr
    assert "========= npurt-sanitizer: memcheck: double free" in proc.stderr
    assert json.loads(report.read_text())["errors"] == 1


def test_a_correct_native_program_passes_the_sanitizer(build_c, cann_home):
    proc = npurt_run(cann_home, "--sanitize", build_c("run_hello.c").exe)
    assert proc.returncode == 0, proc.stderr
    assert "========= npurt-sanitizer: ERROR SUMMARY: 0 errors" in proc.stderr


def test_the_profiler_writes_a_native_programs_timeline(build_c, cann_home, tmp_path):
    proc = npurt_run(cann_home, "--profile", str(tmp_path / "prof"), build_c("run_hello.c").exe)
    assert proc.returncode == 0, proc.stderr
    trace = json.loads((tmp_path / "prof" / "msprof.json").read_text())
    assert any(e.get("cat") == "memset" or "memset" in e.get("name", "") for e in trace["traceEvents"]), \
        "the program's aclrtMemset is on the timeline"
    assert "npurt run: profile written to" in proc.stderr
