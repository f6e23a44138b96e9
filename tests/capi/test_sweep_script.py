"""scripts/sweep_runtime_samples.py, the sweep docs/c-api.md records: it finds every sample with
a run.sh, runs each under only the prefix's environment (set_env.sh, NPURT_DEVICE_COUNT=4) and
reports its exit status and the lines that say how it went."""
from __future__ import annotations

import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, os.pardir, os.pardir, "scripts", "sweep_runtime_samples.py")


def _script():
    spec = importlib.util.spec_from_file_location("sweep_runtime_samples", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sample(root, name: str, body: str) -> None:
    where = root / "example" / name
    where.mkdir(parents=True)
    (where / "run.sh").write_text(body)


def test_the_sweep_runs_each_run_sh_with_only_the_prefix_environment(tmp_path, monkeypatch, capsys):
    prefix, runtime = tmp_path / "prefix", tmp_path / "runtime"
    prefix.mkdir()
    (prefix / "set_env.sh").write_text('export ASCEND_HOME_PATH="%s"\n' % prefix)
    monkeypatch.setenv("NPURT_SHOULD_NOT_LEAK", "1")
    _sample(runtime, "a/0_ok", 'echo "home=$ASCEND_HOME_PATH devices=$NPURT_DEVICE_COUNT '
            'leak=${NPURT_SHOULD_NOT_LEAK:-none}"\necho "[SUCCESS] it worked"\n')
    _sample(runtime, "b/1_bad", 'echo "[ERROR] it broke"; exit 3\n')
    out = tmp_path / "sweep"
    rc = _script().main(["--prefix", str(prefix), "--runtime", str(runtime), "--out", str(out)])
    lines = capsys.readouterr().out.splitlines()
    assert rc == 1 and lines[-1] == "1 sample(s) exited non-zero"
    assert lines[0].startswith("a/0_ok: rc=0") and "[SUCCESS] it worked" in lines[0]
    assert lines[1].startswith("b/1_bad: rc=3") and "[ERROR] it broke" in lines[1]
    log = (out / "a__0_ok.log").read_text()
    assert f"home={prefix} devices=4 leak=none" in log
