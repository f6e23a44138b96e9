"""torch_npu code under the sanitizer (torch ops are ordinary npurt tasks that list what they
read and write): the seed's torch_npu snippet, verbatim, is reported; the corrected example
is clean. Needs PyTorch (CI installs the CPU build)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(240)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "torch"
SEED_SNIPPET = '''import torch
import torch_npu

a = torch.randn(256, 256, device="npu")
b = torch.randn(256, 256, device="npu")
stream_compute = torch.npu.Stream()
stream_copy = torch.npu.Stream()
with torch.npu.stream(stream_compute):
    c = torch.matmul(a, b)
with torch.npu.stream(stream_copy):
    d = a.cpu()
torch.npu.synchronize()
'''


def sanitize(script, cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPURT_", "ASCEND_"))}
    return subprocess.run([sys.executable, "-m", "npurt.cli", "run", "--torch-npu", "--sanitize", str(script)],
                          capture_output=True, text=True, timeout=200, env=env, cwd=cwd)


def test_the_seed_torch_npu_snippet_races_with_the_default_stream(tmp_path):
    (tmp_path / "seed.py").write_text(SEED_SNIPPET)
    proc = sanitize("seed.py", tmp_path)
    assert proc.returncode == 86, proc.stderr
    heads = [line for line in proc.stderr.splitlines() if ": racecheck: " in line or ": memcheck: " in line
             or ": leakcheck: " in line or ": initcheck: " in line or ": synccheck: " in line]
    assert heads and all("racecheck: RAW hazard" in line for line in heads), proc.stderr
    assert "write by kernel aten::normal_ on stream 0 (device 0, default), enqueued at seed.py:4" in proc.stderr
    assert "read by kernel aten::mm on stream 1 (device 0), enqueued at seed.py:9" in proc.stderr
    assert "read by memcpy_async D2H on stream 2 (device 0), enqueued at seed.py:11" in proc.stderr


def test_the_corrected_torch_streams_example_is_clean(tmp_path):
    proc = sanitize(EXAMPLES / "streams.py", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("ERROR SUMMARY: 0 errors")
