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


def test_the_sanitizer_reports_a_native_programs_leaks_at_the_c_call_that_made_them(build_c, cann_home, tmp_path):
    """Issue 24 item 7: leaks in a native program are reported like a Python program's, each
    at the C function that allocated it (the sanitizer's site of a native call), with the C
    call that frees it as the fix; the allocation the program freed is not reported."""
    report = tmp_path / "report.json"
    proc = npurt_run(cann_home, "--sanitize-report", str(report), build_c("run_leak.c").exe)
    assert proc.returncode == 86, proc.stderr
    leaked, host = (int(word, 16) for word in proc.stdout.split()[1::2])
    leaks = [r for r in json.loads(report.read_text())["reports"] if r["kind"] == "leak"]
    by_address = {r["address"]: r for r in leaks}
    assert sorted(by_address) == sorted([leaked, host]), leaks
    assert by_address[leaked]["nbytes"] == 4096 and by_address[host]["nbytes"] == 256
    assert "a native call of aclrtMalloc" in proc.stderr
    assert "a native call of aclrtMallocHost" in proc.stderr
    assert "fix: aclrtFree each allocation" in proc.stderr
    assert "fix: aclrtFreeHost each allocation" in proc.stderr


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
