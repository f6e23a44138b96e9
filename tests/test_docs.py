"""The documentation site: built from the docstrings with mkdocs-material + mkdocstrings,
strictly, so a broken reference or link fails; the API reference covers the public API."""
from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import npurt

ROOT = Path(__file__).resolve().parents[1]


def _build(config: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(config), "-d", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=config.parent,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})


def test_the_docs_build_strictly(tmp_path):
    proc = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "site" / "reference" / "pythonic" / "index.html").read_text()
    assert "Queue <code>blocks</code> instances of <code>kernel</code>" in page      # npurt.launch's docstring
    assert "torch.cuda.memory_stats" in page
    assert (tmp_path / "site" / "compatibility" / "index.html").exists()


def test_a_broken_reference_fails_the_strict_build(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# x\n\n::: npurt.no_such_function\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\nplugins:\n  - mkdocstrings:\n      handlers:\n        python:\n"
        f"          paths: [{ROOT / 'src'}]\n")
    proc = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode != 0 and "no_such_function" in proc.stderr


def _public_names() -> set[str]:
    names = set()
    for name in dir(npurt):
        obj = getattr(npurt, name)
        if name.startswith("_") or inspect.ismodule(obj) or not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        if isinstance(obj, type) and issubclass(obj, (Exception, Warning)):
            continue  # the errors are documented as the npurt.exceptions module
        names.add(name)
    return names


def test_the_api_reference_names_every_public_function_and_class():
    page = (ROOT / "docs" / "reference" / "pythonic.md").read_text()
    documented = set(re.findall(r"^::: npurt\.(\w+)", page, re.M))
    documented |= {"kernel", "GM", "launch"}                    # documented at their defining modules
    aliases = {"tensor": "array", "empty_like": "empty", "zeros_like": "zeros", "ones_like": "ones",
               "full_like": "full", "rand": "random", "randn": "random", "randint": "random",
               "manual_seed": "random", "get_device_name": "get_device_properties", "matmul": "ops",
               "Model": "model"}
    missing = {n for n in _public_names() if n not in documented and aliases.get(n) not in documented}
    assert not missing, f"add to docs/reference/pythonic.md: {sorted(missing)}"


@pytest.mark.parametrize("page", ["reference/pythonic.md", "reference/cli.md", "reference/pytest.md", "porting.md",
                                  "compatibility.md"])
def test_the_site_navigation_lists_the_reference_pages(page):
    assert page in (ROOT / "mkdocs.yml").read_text()
