"""The README's code samples run as shown."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SAMPLES = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_a_pythonic_and_a_pyacl_sample():
    assert any("import npurt" in s for s in SAMPLES)
    assert any(s.startswith("import acl") for s in SAMPLES)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.splitlines()[0][:40])
def test_a_readme_sample_runs(sample, tmp_path):
    script = tmp_path / "sample.py"
    script.write_text(sample + "\nprint('sample done')\n")
    if sample.startswith("import acl"):  # pyACL style: through `npurt run`
        cmd = [sys.executable, "-m", "npurt.cli", "run", str(script)]
    else:
        cmd = [sys.executable, str(script)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)  # files a sample writes
    assert out.returncode == 0, out.stderr
    assert "sample done" in out.stdout


def test_the_quick_start_is_two_commands_and_ci_runs_the_test_one_verbatim():
    text = README.read_text()
    block = re.search(r"## Quick start.*?```sh\n(.*?)```", text, re.S).group(1)
    commands = [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    demo, tests = commands
    assert demo.endswith("npurt demo")
    ci = (README.parent / ".ci" / "run").read_text()
    assert tests in ci
