"""A fresh-clone walk through the README and the docs: every Python sample runs as shown, and
every command of the README and of the docs' own pages runs, from a copy of the repository's
files (nothing built or installed in the working tree is used), and each guide's commands that
need nothing of the reader's run in the order the guide gives them.

Samples marked `<!-- fragment: ... -->` just above their block are excerpts (they use names
the surrounding text defines) and are not run. Shell commands in the guides that need a
script of the reader's (`npurt run app.py`, `npurt launch -n 4 train.py`) are run by those
features' own tests; `npurt bench` is what `.ci/run` runs after the tests. The README's install commands are what `.ci/run` runs verbatim.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]


def _samples(page: Path) -> list[str]:
    text = page.read_text()
    return [m.group(2) for m in re.finditer(r"(<!-- fragment[^>]*-->\n[ \t]*)?```python\n(.*?)```", text, re.S)
            if not m.group(1)]


SAMPLES = [(page, s) for page in PAGES for s in _samples(page)]


def _have_torch() -> bool:
    try:
        return importlib.util.find_spec("torch.nn") is not None
    except ImportError:        # tests/conftest.py makes `torch` an ImportError without PyTorch
        return False


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The repository's files (tracked, and new ones not ignored) copied to a fresh directory."""
    dest = tmp_path_factory.mktemp("clone")
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def _run(cmd: list[str], clone: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(clone / "src")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=clone, env=env)


def test_the_readme_has_a_pythonic_and_a_pyacl_sample():
    samples = _samples(README)
    assert any("import npurt" in s for s in samples)
    assert any(s.startswith("import acl") for s in samples)


@pytest.mark.parametrize("page, sample", SAMPLES,
                         ids=[f"{p.relative_to(ROOT)}:{s.splitlines()[0][:30]}" for p, s in SAMPLES])
def test_a_sample_runs_in_a_fresh_clone(page, sample, clone, tmp_path):
    if re.search(r"^import torch\b", sample, re.M) and not _have_torch():
        pytest.skip("needs PyTorch (the torch extra; CI installs the CPU build)")
    script = tmp_path / "sample.py"
    script.write_text(sample + "\nprint('sample done')\n")
    if sample.startswith("import acl"):  # pyACL style: through `npurt run`
        cmd = [sys.executable, "-m", "npurt", "run", str(script)]
    elif re.search(r"^import torch_npu\b", sample, re.M):   # torch_npu style: `npurt run --torch-npu`
        cmd = [sys.executable, "-m", "npurt", "run", "--torch-npu", str(script)]
    else:
        cmd = [sys.executable, str(script)]
    out = _run(cmd, clone)
    assert out.returncode == 0, out.stderr
    assert "sample done" in out.stdout
    assert "Warning" not in out.stderr, out.stderr           # no leak or hang report either


def test_the_quick_start_is_two_commands_and_ci_runs_the_test_one_verbatim():
    text = README.read_text()
    block = re.search(r"## Quick start.*?```sh\n(.*?)```", text, re.S).group(1)
    commands = [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    demo, tests = commands
    assert demo == "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/npurt demo"
    ci = (README.parent / ".ci" / "run").read_text()
    assert tests in ci


def test_the_quick_start_demo_runs_in_a_fresh_clone_and_the_readme_shows_its_output(clone):
    out = _run([sys.executable, "-m", "npurt", "demo"], clone)   # `.venv/bin/npurt demo`, from the clone
    assert out.returncode == 0, out.stdout + out.stderr
    shown = re.search(r"```text\n(npurt demo: .*?)```", README.read_text(), re.S).group(1)
    numbers = re.compile(r"[\d.]+")
    got_lines = [numbers.sub("#", line) for line in out.stdout.splitlines()]
    for line in shown.splitlines():
        if line.startswith(("  speed-up", "  1.", "  2.", "  3.", "  4.", "  5.")):
            assert numbers.sub("#", line) in got_lines, line   # same text, this run's numbers
        elif line.startswith(("  balanced", "npurt demo: PASS")):
            # the words after these depend on this host's load (the kernel's depth, whether
            # overlap can pay): the same text up to them
            head = line.split("the kernel (")[0] if line.startswith("  balanced") else "; ".join(line.split("; ")[:2])
            assert any(g.startswith(numbers.sub("#", head)) for g in got_lines), line


def _page_commands(page: Path) -> list[str]:
    """The npurt commands of a page's shell blocks and tables that run as written."""
    text = page.read_text()
    cmds = []
    for block in re.findall(r"```(?:sh|console)\n(.*?)```", text, re.S):
        cmds += [line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("npurt ")]
    cmds += re.findall(r"`((?:npurt|python -m npurt) (?:info|--version)[^`]*)`", text)
    return cmds


COMMAND_PAGES = (README, ROOT / "docs" / "index.md", ROOT / "docs" / "porting.md",
                 *sorted((ROOT / "docs" / "reference").glob("*.md")))
DOC_COMMANDS = [c for page in COMMAND_PAGES for c in _page_commands(page)]


@pytest.mark.parametrize("command", sorted(set(DOC_COMMANDS)))
def test_a_command_of_the_readme_and_the_reference_runs_in_a_fresh_clone(command, clone):
    args = shlex.split(command)
    args = args[3:] if args[:3] == ["python", "-m", "npurt"] else args[1:]
    out = _run([sys.executable, "-m", "npurt", *args], clone)
    assert out.returncode == 0, out.stdout + out.stderr


def _guide_commands(page: Path) -> list[str]:
    """A guide's npurt commands that need no file of the reader's (no script, no bench run)."""
    cmds = []
    for block in re.findall(r"```(?:sh|console)\n(.*?)```", page.read_text(), re.S):
        lines = [line.split("  #")[0].strip() for line in block.splitlines()]
        cmds += [c for c in lines if c.startswith("npurt ") and not re.search(r"\.py\b|^npurt bench|\[", c)]
    return cmds


GUIDES = [p for p in sorted((ROOT / "docs").glob("*.md")) if p not in COMMAND_PAGES and _guide_commands(p)]


@pytest.mark.parametrize("page", GUIDES, ids=[p.name for p in GUIDES])
def test_a_guides_commands_run_in_order_in_a_fresh_clone(page, clone, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(clone / "src")}
    for command in _guide_commands(page):   # in a directory of the reader's: prof_out, pictures land there
        out = subprocess.run([sys.executable, "-m", "npurt", *shlex.split(command)[1:]], capture_output=True,
                             text=True, timeout=180, cwd=tmp_path, env=env)
        assert out.returncode == 0, f"{command}\n{out.stdout}{out.stderr}"
    for name in re.findall(r"-o (\S+\.png)", "\n".join(_guide_commands(page))):
        assert (tmp_path / name).stat().st_size > 0, name


def _c_programs(page: Path) -> list[str]:
    return re.findall(r"```c\n(.*?)```", page.read_text(), re.S)


def test_the_getting_started_c_program_builds_and_runs_under_npurt_run(clone, tmp_path):
    """The guide's first C program, built against `npurt cann-home` with the guide's compiler
    line, runs under `npurt run ./hello` (and under --sanitize, with no report)."""
    import sysconfig
    programs = _c_programs(ROOT / "docs" / "getting-started.md")
    assert len(programs) == 1
    if shutil.which("cc") is None or not sysconfig.get_config_var("Py_ENABLE_SHARED") \
            or importlib.util.find_spec("cffi") is None:
        pytest.skip("needs a C compiler, a shared libpython and cffi (the capi extra)")
    prefix = _run([sys.executable, "-m", "npurt", "cann-home", "--prefix", str(tmp_path / "prefix")], clone)
    assert prefix.returncode == 0, prefix.stderr
    home = prefix.stdout.strip().splitlines()[-1]
    (tmp_path / "hello.c").write_text(programs[0])
    line = re.search(r"^cc hello\.c .*$", (ROOT / "docs" / "getting-started.md").read_text(), re.M).group(0)
    build = subprocess.run(["sh", "-c", line], cwd=tmp_path, capture_output=True, text=True,
                           env={**os.environ, "ASCEND_HOME_PATH": home})
    assert build.returncode == 0, build.stderr
    env = {**os.environ, "PYTHONPATH": str(clone / "src"), "NPURT_CANN_HOME": home}
    for options in ([], ["--sanitize"]):
        out = subprocess.run([sys.executable, "-m", "npurt", "run", *options, "./hello"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120, env=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("device memory at 0x")
