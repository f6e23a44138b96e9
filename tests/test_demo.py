"""`npurt demo`, the README's main command (issue 6, scope 6): runs in a subprocess as a user
would run it, must pass its numpy check and print an honest summary."""
from __future__ import annotations

import subprocess
import sys

import numpy as np


def _demo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "npurt.cli", "demo", *args], capture_output=True,
                          text=True, timeout=120)


def test_npurt_demo_passes_and_prints_what_ran_where():
    proc = _demo("--batches", "4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "PASS" in out and "matches numpy" in out
    assert "copy stream" in out and "compute stream" in out
    assert "timeline" in out and "overlap" in out and "wall time" in out
    for batch in range(4):
        assert f"\n      {batch} " in out          # one timing row per batch


def test_npurt_demo_quiet_prints_only_the_verdict():
    proc = _demo("--quiet", "--batches", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines() == [proc.stdout.strip()]
    assert proc.stdout.startswith("npurt demo: PASS")


def test_demo_exits_non_zero_when_the_result_is_wrong(fresh_runtime, monkeypatch, capsys):
    from npurt import demo

    def wrong(x, w1, w2):
        return np.zeros((x.shape[0], w2.shape[1]))
    monkeypatch.setattr(demo, "reference", wrong)
    monkeypatch.setattr(demo, "BATCH", 64)
    assert demo.main(batches=2, quiet=True) == 1
    assert "FAIL" in capsys.readouterr().out


def test_demo_rejects_zero_batches(fresh_runtime):
    from npurt import demo
    assert demo.main(batches=0, quiet=True) == 2
