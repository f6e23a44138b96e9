"""The distributed examples run as users run them: in one process (ranks as threads) and with
`npurt launch -n 2` (one process per rank); every rank reports OK."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from process_group import run_group

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "distributed"
NAMES = ["data_parallel_training.py", "tensor_parallel_matmul.py"]


def run(*command):
    env = {k: v for k, v in os.environ.items() if k != "NPURT_DEVICE_COUNT"}
    return run_group([sys.executable, *command], 240, cwd=EXAMPLES.parent.parent, env=env)


def test_every_distributed_example_is_listed_here():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_example_runs_in_one_process(name):
    proc = run(str(EXAMPLES / name))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].endswith("OK")


@pytest.mark.parametrize("name", NAMES)
def test_example_runs_as_two_processes_with_npurt_launch(name):
    pytest.importorskip("mpi4py", reason="needs the npurt[dist] extra")
    proc = run("-m", "npurt.cli", "launch", "-n", "2", str(EXAMPLES / name))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # one verdict per rank; the ranks share the output, whose pieces may interleave even inside
    # a line ("training: OKrank 0/2 ...", "matmul: OKtensor-parallel matmul: OK"): a verdict is
    # written in one piece but its newline may come in another, so count ": OK", not lines or words
    assert proc.stdout.count(": OK") == 2 and "FAILED" not in proc.stdout, proc.stdout
