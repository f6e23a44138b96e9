"""torch.distributed with backend "hccl" on npu (npurt.torch.distributed), as torch_npu users
run it: `npurt launch -n 2`, env:// rendezvous from the variables npurt launch sets."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("mpi4py")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src")


def _run(*args, timeout=600):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])))
    env.pop("MASTER_PORT", None)
    return subprocess.run([sys.executable, "-m", "npurt", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_backend_hccl_is_registered_for_npu():
    import torch.distributed as dist

    import npurt.torch  # noqa: F401
    assert dist.Backend.default_device_backend_map["npu"] == "hccl"
    assert "hccl" in dist.Backend.backend_list


def test_every_collective_matches_its_definition_on_two_ranks():
    proc = _run("launch", "-n", "2", "--torch-npu", os.path.join(os.path.dirname(__file__),
                                                                  "dist_collectives_script.py"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # both ranks reached the end of their checks; the two ranks share the pipe, so their
    # "OK <rank>" lines may interleave character by character ("OKOK 1\n 0\n")
    assert proc.stdout.count("OK") == 2, proc.stdout


def _steps(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def test_ddp_on_two_ranks_matches_the_single_process_run_step_for_step():
    script = os.path.join(ROOT, "examples", "torch", "ddp.py")
    two = _run("launch", "-n", "2", "--torch-npu", script)
    assert two.returncode == 0, two.stdout[-3000:] + two.stderr[-3000:]
    one = _run("run", "--torch-npu", script)
    assert one.returncode == 0, one.stdout[-3000:] + one.stderr[-3000:]
    a, b = _steps(two.stdout), _steps(one.stdout)
    assert len(a) == len(b) == 5
    for x, y in zip(a, b):
        assert x["loss"] == pytest.approx(y["loss"], rel=1e-5)
        assert x["param_sum"] == pytest.approx(y["param_sum"], rel=1e-5, abs=1e-6)
    assert a[-1]["param_sum"] != a[0]["param_sum"]  # it trained


def test_plain_processes_without_mpi_are_told_to_use_npurt_launch(tmp_path):
    script = tmp_path / "two.py"
    script.write_text("import os, torch, torch.distributed as dist, npurt.torch\n"
                      "os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT='29533')\n"
                      "store = dist.HashStore()\n"
                      "try:\n    dist.init_process_group('hccl', store=store, rank=0, world_size=2)\n"
                      "except RuntimeError as exc:\n    print('REFUSED', exc)\n")
    env = dict(os.environ, PYTHONPATH=SRC)
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "RANK", "WORLD_SIZE"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert "REFUSED" in proc.stdout and "npurt launch" in proc.stdout, proc.stdout + proc.stderr
