"""The torch_npu examples run unmodified under `npurt run --torch-npu` and check their own
answers (each prints OK last)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from npurt.apps import runner

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "torch"


def test_every_torch_example_is_run_here():
    # ddp.py runs under `npurt launch -n 2` in tests/torch/test_torch_distributed.py
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == ["ddp.py", "infer.py", "streams.py", "train.py"]


@pytest.mark.parametrize("name", ["train.py", "infer.py"])
def test_example_runs_under_npurt_run_torch_npu(name, capsys):
    assert runner.main(["--torch-npu", str(EXAMPLES / name)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "OK"


def test_the_streams_example_runs_from_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "npurt.cli", "run", "--torch-npu", str(EXAMPLES / "streams.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "OK"
