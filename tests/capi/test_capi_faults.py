"""Faults and controlled schedules reach C programs unmodified: NPURT_FAULTS names the C function
(aclrtMalloc@2=...) and a device task, NPURT_SCHEDULE makes an ordering bug of a C program appear
and replay by seed, through the same runtime the Python faces use."""
from __future__ import annotations

import re


def _result(proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dict(re.findall(r"^(\w+): (.*)$", proc.stdout, re.M))


def test_the_c_name_of_a_call_and_a_task_kind_inject_into_a_c_program(build_c):
    prog = build_c("faults_schedules.c")
    out = _result(prog.run(extra_env={"NPURT_FAULTS": "aclrtMalloc@2=207001;task:copy@1=uce"}))
    assert out["malloc"] == "0 207001 0"
    assert "injected fault 'aclrtMalloc@2=207001'" in out["message"]
    assert out["sync"] == "0 507053"  # the copy failed with the UCE error, at the synchronize


def test_the_ordering_bug_of_a_c_program_shows_under_some_seed_and_replays(build_c):
    prog = build_c("faults_schedules.c")
    bytes_by_seed = {}
    for seed in range(1, 9):
        bytes_by_seed[seed] = _result(prog.run(extra_env={"NPURT_SCHEDULE": f"random:{seed}"}))["byte"]
    assert set(bytes_by_seed.values()) == {"0", "1"}  # both orders happen within 8 seeds
    seed = next(s for s, b in bytes_by_seed.items() if b == "0")
    assert _result(prog.run(extra_env={"NPURT_SCHEDULE": f"random:{seed}"}))["byte"] == "0"
