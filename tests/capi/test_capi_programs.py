"""C programs against the prefix: each one checks itself and prints "<name>: ok"."""
from __future__ import annotations

import pytest


def run_ok(program, name, *args, **kw):
    res = program.run(*args, **kw)
    assert res.returncode == 0 and f"{name}: ok" in res.stdout, res.stdout + res.stderr
    return res


def test_memory_in_every_direction(build_c):
    res = run_ok(build_c("memory.c"), "memory")
    assert "oversized copy: 107000 aclrtMemcpy: count (32) is larger than destMax (16)" in res.stdout


def test_a_program_runs_with_only_set_env_sh(build_c):
    """No Python environment of its own: env -i plus the prefix's set_env.sh."""
    import subprocess
    prog = build_c("memory.c")
    res = subprocess.run(["env", "-i", "bash", "-c", f". {prog.prefix}/set_env.sh && PYTHONPATH=/nonexistent "
                          f"PYTHONHOME=/nonexistent {prog.exe}"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "memory: ok" in res.stdout, res.stdout + res.stderr
