"""scripts/torch_npu_tests.py reads pytest -v's lines: each test's outcome, skips sorted into
disabled / skipped on torch_npu's CI too / skipped, and the test a dead process was in; the node
ids pytest lists under "warnings summary" are not tests that started."""
from __future__ import annotations

import importlib.util
import pathlib
import sys

_SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(_SCRIPTS))  # the script imports its sibling modules
try:
    _spec = importlib.util.spec_from_file_location("torch_npu_tests", _SCRIPTS / "torch_npu_tests.py")
    script = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(script)
finally:
    sys.path.remove(str(_SCRIPTS))

FINISHED = """\
============================= test session starts ==============================
collecting ... collected 3 items
t.py::TestA::test_a PASSED                                               [ 33%]
t.py::TestA::test_b SKIPPED (slow)                                       [ 66%]
t.py::TestA::test_c SKIPPED (two devices)                                [100%]
=============================== warnings summary ===============================
test/npu/t.py::TestA::test_a
  t.py:3: UserWarning: deprecated
-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
================== 1 passed, 2 skipped, 1 warning in 2.94s ===================
"""


def _read(out, ci_skip=lambda node, msg: None, disabled=()):
    outcomes = {}
    details = {"test_b": "slow message", "test_c": "only one NPU detected"}
    return outcomes, script.read_outcomes(out, outcomes, details, set(disabled), ci_skip)


def test_a_finished_run_has_no_crash_even_with_node_ids_in_its_warnings_summary():
    outcomes, crashed = _read(FINISHED)
    assert crashed is None
    assert outcomes == {"t.py::TestA::test_a": ["passed", ""], "t.py::TestA::test_b": ["skipped", "slow message"],
                        "t.py::TestA::test_c": ["skipped", "only one NPU detected"]}


def test_skips_are_sorted_into_disabled_ci_skipped_and_skipped():
    outcomes, _ = _read(FINISHED, ci_skip=lambda node, msg: "slow" if msg == "slow message" else None,
                        disabled={"TestA::test_c"})
    assert outcomes["t.py::TestA::test_b"] == ["ci_skipped", "[slow] slow message"]
    assert outcomes["t.py::TestA::test_c"][0] == "disabled"


def test_the_test_a_dead_process_was_in_is_named():
    out = FINISHED.split("t.py::TestA::test_b")[0] + "t.py::TestA::test_b \n"
    outcomes, crashed = _read(out)
    assert crashed == "t.py::TestA::test_b" and list(outcomes) == ["t.py::TestA::test_a"]


def test_the_harness_runs_a_files_unittest_tests_in_unittests_order(tmp_path):
    # torch_npu's CI runs `python test_x.py` (unittest's loader: classes by name, then tests by name)
    import os
    import subprocess
    (tmp_path / "test_order.py").write_text(
        "import unittest\n"
        "class TestZ(unittest.TestCase):\n    def test_b(self): pass\n    def test_a(self): pass\n"
        "def test_function(): pass\n"
        "class TestA(unittest.TestCase):\n    def test_y(self): pass\n")
    src = str(_SCRIPTS.parent / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_SCRIPTS), src]), "NPURT_TORCH_NPU_CHECKOUT": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider", "-p",
                        "torch_npu_harness", "test_order.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    order = [line.split("::", 1)[1] for line in r.stdout.splitlines() if line.startswith("test_order.py::")]
    assert order == ["TestA::test_y", "TestZ::test_a", "test_function", "TestZ::test_b"], r.stdout + r.stderr


def test_an_expected_failure_counts_as_unittest_counts_it():
    # torch_npu's CI runs unittest: an @expectedFailure test that fails is a success of the run,
    # one that passes ("unexpected success") a failure
    out = FINISHED.replace("t.py::TestA::test_b SKIPPED (slow)", "t.py::TestA::test_b XFAIL").replace(
        "t.py::TestA::test_c SKIPPED (two devices)", "t.py::TestA::test_c XPASS")
    outcomes, _ = _read(out)
    assert outcomes["t.py::TestA::test_b"][0] == "passed" and outcomes["t.py::TestA::test_c"][0] == "failed"
