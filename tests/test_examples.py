"""Every Pythonic example in examples/ runs as a user would run it and exits 0 (issue 6,
scope 7). Examples in subfolders belong to other parts (pyacl/, kernels/) and are run by
their own tests."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PYTHONIC = ["memory_basics.py", "multi_stream_overlap.py", "events_cross_stream.py",
            "nonblocking_waits.py", "training_pipeline.py", "multi_device_inference.py", "from_torch_npu.py"]


def test_every_top_level_example_is_listed_here():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(PYTHONIC)


@pytest.mark.parametrize("name", PYTHONIC)
def test_example_runs_and_exits_0(name):
    proc = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True,
                          timeout=120, cwd=EXAMPLES.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK" in proc.stdout.splitlines()[-1]


def test_the_torch_npu_snippet_runs_renamed_even_without_its_stream_waits(tmp_path):
    # the seed's snippet as written (no wait_stream: racy, as on hardware) must still run
    text = (EXAMPLES / "from_torch_npu.py").read_text()
    racy = "\n".join(line for line in text.splitlines() if ".wait_stream(" not in line)
    assert len(racy.splitlines()) == len(text.splitlines()) - 2
    script = tmp_path / "seed_snippet.py"
    script.write_text(racy.split("error = ")[0])
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
