"""The settings registry (npurt.envvars): every environment variable npurt reads is listed
once, with its default and meaning; `npurt info` and the docs' configuration table read it."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from npurt import envvars
from npurt.apps import cli
from npurt.runtime import ENV_VARIABLES, Settings

SRC = Path(__file__).resolve().parents[2] / "src" / "npurt"
OURS = re.compile(r"(NPURT|HCCL|ASCEND)_[A-Z0-9_]+")
READERS = ("getenv", "_flag", "_int", "_seconds")    # config.py's and hccl/config.py's readers


def _names_read_from_the_environment() -> dict[str, str]:
    """Variable names passed to os.environ.get / os.getenv / environ[...] / the config
    modules' readers, by the file that reads them."""
    found = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            args = []
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                owner = ast.unparse(f.value) if isinstance(f, ast.Attribute) else ""
                if (name in ("get", "pop", "setdefault") and owner.endswith("environ")) or name in READERS:
                    args = node.args
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("environ"):
                args = [node.slice]
            for arg in args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and OURS.fullmatch(arg.value):
                    found[arg.value] = str(path.relative_to(SRC))
    return found


def test_every_variable_the_source_reads_is_in_the_registry():
    read = _names_read_from_the_environment()
    assert {"NPURT_SOC", "HCCL_EXEC_TIMEOUT", "NPURT_MPIEXEC", "NPURT_FAULTS"} <= set(read)   # the scan sees them
    missing = {name: where for name, where in read.items() if name not in envvars.BY_NAME}
    assert not missing, f"add to npurt/envvars.py: {missing}"


def test_every_variable_in_the_registry_is_read_somewhere():
    text = "\n".join(p.read_text() for p in SRC.rglob("*.py") if p.name != "envvars.py")
    unread = [v.name for v in envvars.VARIABLES if f'"{v.name}"' not in text and f"'{v.name}'" not in text]
    assert not unread


def test_each_variable_is_listed_once_with_a_meaning():
    names = [v.name for v in envvars.VARIABLES]
    assert len(names) == len(set(names))
    assert all(v.meaning and v.default and v.group for v in envvars.VARIABLES)


def test_the_registry_covers_every_runtime_setting():
    runtime_names = {name for name, _ in ENV_VARIABLES(Settings())}
    assert runtime_names <= set(envvars.BY_NAME)


def test_npurt_info_lists_every_variable_with_its_source(fresh_runtime, monkeypatch, capsys):
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "30")
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    for var in envvars.VARIABLES:
        assert f"\n  {var.name} " in out, var.name
    assert "HCCL_EXEC_TIMEOUT          30                     from HCCL_EXEC_TIMEOUT=30" in out
    assert "NPURT_MPIEXEC              (the mpich wheel's)    default" in out


def test_the_docs_table_has_a_row_per_variable():
    table = envvars.table_markdown()
    assert table.count("\n") == len(envvars.VARIABLES) + 2
    assert "| `HCCL_CONNECT_TIMEOUT` | 120 | seconds communicator creation waits" in table
