"""The documentation site: built from the docstrings with mkdocs-material + mkdocstrings,
strictly, so a broken reference or link fails; the API reference covers the public API."""
from __future__ import annotations

import inspect
import json
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
               "Model": "model", "abs": "ops", "exp": "ops", "log": "ops", "sqrt": "ops", "where": "ops",
               "concatenate": "ops", "stack": "ops"}
    missing = {n for n in _public_names() if n not in documented and aliases.get(n) not in documented}
    assert not missing, f"add to docs/reference/pythonic.md: {sorted(missing)}"


@pytest.mark.parametrize("page", ["reference/pythonic.md", "reference/cli.md", "reference/pytest.md", "porting.md",
                                  "compatibility.md"])
def test_the_site_navigation_lists_the_reference_pages(page):
    assert page in (ROOT / "mkdocs.yml").read_text()


# What the docs name must exist: every `npurt.x.y` in inline code and in the Python samples
# resolves after `import npurt` (and the sample's own imports; `import acl` as under npurt run).
# npurt.torch (opt-in: importing it registers torch's "npu" device), npurt.capi (the C interface's
# builder) and npurt.apps (the
# programs behind the npurt command) are named as modules to import: their chains resolve
# after importing the longest module path they start with.
NAMES_CHECK = r'''
import importlib, json, re, sys
from npurt.apps.runner import install_acl_alias
install_acl_alias()
import npurt
missing = []
for page, imports, chain in json.loads(sys.stdin.read()):
    ns = {"npurt": npurt}
    exec(imports, ns)
    if chain.startswith(("npurt.torch", "npurt.apps", "npurt.capi")):
        parts = chain.split(".")
        for n in range(len(parts), 1, -1):
            try:
                importlib.import_module(".".join(parts[:n]))
                break
            except ImportError:
                continue
    obj = ns["npurt"]
    for part in chain.split(".")[1:]:
        if not hasattr(obj, part):
            missing.append(f"{page}: {chain}")
            break
        obj = getattr(obj, part)
print(json.dumps(missing))
'''


def _documented_names() -> list[tuple[str, str, str]]:
    """(page, the imports of its sample, npurt.chain) for every name the README and docs use."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text()
        name = str(page.relative_to(ROOT))
        for block in re.findall(r"```python\n(.*?)```", text, re.S):
            imports = "\n".join(line for line in block.splitlines() if re.match(r"(import|from) \S", line))
            code = re.sub(r"([\"']).*?\1", "", block)         # module names in strings (`-m npurt.cli`)
            found += [(name, imports, c) for c in sorted(set(re.findall(r"(?<![\w.])npurt(?:\.\w+)+", code)))]
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for span in re.findall(r"`([^`\n]+)`", prose):
            # (a module run with `python -m npurt.x` is a module's name, not an attribute)
            found += [(name, "", c) for c in re.findall(r"(?<![\w./-])(?<!-m )npurt(?:\.\w+)+", span)]
    return found


def test_every_name_the_docs_use_resolves_after_import_npurt():
    names = _documented_names()
    assert any(c == "npurt.sanitizer.enable" for _, _, c in names)   # the README's `with npurt.sanitizer.enable():`
    pytest.importorskip("torch")
    proc = subprocess.run([sys.executable, "-c", NAMES_CHECK], input=json.dumps(names), capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_the_package_namespace_holds_no_future_import():
    assert "annotations" not in dir(npurt)
    assert {"sanitizer", "hccl", "acl", "ops", "profiler"} <= set(dir(npurt))


REPO = "https://github.com/npurt/npurt/"


def test_the_readmes_links_are_absolute_and_name_files_that_exist():
    """The README is also the PyPI page, where relative links break."""
    links = re.findall(r"\]\(([^)\s]+)\)", (ROOT / "README.md").read_text())
    relative = [link for link in links if not re.match(r"https?://|#", link) and not re.match(r"[a-z], ", link)]
    assert not relative
    ours = [link for link in links if link.startswith(REPO)]
    assert len(ours) > 20
    for link in ours:
        path = re.sub(r"^(blob|tree|raw)/main/", "", link[len(REPO):])
        assert (ROOT / path).exists(), link


def test_the_generated_pages_hold_every_command_variable_and_example(tmp_path):
    from npurt import envvars
    from npurt.apps import cli
    proc = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, proc.stderr
    site = tmp_path / "site"
    cli_page = (site / "reference" / "cli" / "index.html").read_text()
    for command in cli.COMMANDS:
        assert f"usage: npurt {command}" in cli_page, command
    config = (site / "configuration" / "index.html").read_text()
    assert all(f"<code>{v.name}</code>" in config for v in envvars.VARIABLES)
    examples = (site / "examples" / "index.html").read_text()
    for example in sorted((ROOT / "examples").rglob("*.py")):
        assert f">{example.name}</a>" in examples, example
    assert (site / "getting-started" / "index.html").exists()
    pytest_page = (site / "reference" / "pytest" / "index.html").read_text()
    assert pytest_page.count("<table>") >= 3                   # fixtures, markers, options


def test_the_architecture_page_has_one_line_per_module():
    page = (ROOT / "docs" / "architecture.md").read_text()
    listed = set(re.findall(r"^\| `([\w/]+\.py)` \|", page, re.M))
    modules = {str(p.relative_to(ROOT / "src" / "npurt")) for p in (ROOT / "src" / "npurt").rglob("*.py")}
    assert not modules - listed, f"modules without their line in docs/architecture.md's module map: {sorted(modules - listed)}"
    assert not listed - modules, f"docs/architecture.md lists modules that do not exist: {sorted(listed - modules)}"
