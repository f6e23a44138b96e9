"""`npurt demo`, the README's main command: a balanced two-stream pipeline checked against
numpy, the speed-up beside the best this host allows, and npurt's reports on buggy programs.
Runs as a user runs it; exits non-zero when a number or a report is wrong."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest


@pytest.fixture(scope="module")
def demo_output() -> str:
    proc = subprocess.run([sys.executable, "-m", "npurt", "demo", "--batches", "6"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_demo_passes_its_numpy_check(demo_output):
    assert re.search(r"^npurt demo: PASS: 6 batches, scores match numpy \(max relative error [\d.e+-]+\); "
                     r"(\d) of \1 bugs reported; (speed-up [\d.]+x \(threads reach [\d.]+x\)|overlap cannot pay "
                     r"here: .*|speed-up [\d.]+x, below the .*)$", demo_output, re.M)


def test_the_demo_shows_balanced_stages_and_the_speedup_beside_the_best_possible(demo_output):
    assert re.search(r"balanced stages: a copy takes [\d.]+ ms; the kernel \((\d+ layers?, then a sum per row|a sum per row: [^)]*)\) takes "
                     r"[\d.]+ ms",
                     demo_output)
    assert re.search(r"speed-up, two streams over one \(median of 5 rounds\): [\d.]+x", demo_output)
    assert re.search(r"the best this workload gets here: [\d.]+x if the stages overlapped perfectly; [\d.]+x "
                     r"for the same copies and arithmetic", demo_output)
    assert "    copy    |" in demo_output and "    compute |" in demo_output


def test_the_demo_summarizes_instead_of_printing_a_row_per_batch(demo_output):
    assert "per batch (median): copy" in demo_output
    assert not re.search(r"^\s+\d+\s+[\d.]+ -> ", demo_output, re.M)


@pytest.mark.parametrize("bug, report", [
    ("the host dereferences a device pointer", "is a device address"),
    ("a copy in the wrong direction", "contradicts the addresses"),
    ("a use after free", "freed (use after free)"),
    ("a wait for an event nobody records", "never"),
    ("two streams and no event between them", "racecheck: RAW hazard"),
])
def test_the_demo_shows_npurts_report_for_each_buggy_program(demo_output, bug, report):
    block = re.search(rf"\d\. {re.escape(bug)}:\n(.*?)(?=\n  \d\. |\nnpurt demo: )", demo_output, re.S).group(1)
    program, said = block.split("     npurt: ", 1)
    assert report in " ".join(said.split())       # the message, unwrapped


def test_quiet_prints_only_the_verdict(fresh_runtime, monkeypatch, capsys):
    from npurt.apps import demo
    monkeypatch.setattr(demo, "ROWS", 64)
    assert demo.main(batches=2, quiet=True) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("npurt demo: PASS: 2 batches")


def test_long_runs_report_progress_through_the_helper(fresh_runtime, monkeypatch, capsys):
    from npurt.apps import demo
    seen = []

    class Recorder:
        def update(self, description=None, completed=None):
            seen.append(completed)

    import contextlib
    monkeypatch.setattr(demo, "progress_of", lambda *a, **k: contextlib.nullcontext(Recorder()))
    monkeypatch.setattr(demo, "PROGRESS_MIN", 8)
    monkeypatch.setattr(demo, "ROWS", 64)
    assert demo.main(batches=16) == 0
    assert seen == [8, 16]
    assert "\r" not in capsys.readouterr().err          # stderr is no terminal here: nothing drawn


def test_demo_exits_non_zero_when_the_scores_are_wrong(fresh_runtime, monkeypatch, capsys):
    from npurt.apps import demo
    monkeypatch.setattr(demo, "reference", lambda x, w, b: np.zeros(x.shape[0]))
    monkeypatch.setattr(demo, "ROWS", 64)
    assert demo.main(batches=2, quiet=True) == 1
    assert "FAIL: scores differ from numpy" in capsys.readouterr().out


def test_demo_exits_non_zero_when_a_bug_goes_unreported(fresh_runtime, monkeypatch, capsys):
    from npurt.apps import demo, demo_bugs
    title, program, _ = demo_bugs.BUGS[2]
    monkeypatch.setattr(demo_bugs, "BUGS", [(title, program, "a report npurt never gives")])
    monkeypatch.setattr(demo, "ROWS", 64)
    assert demo.main(batches=2, quiet=True) == 1
    assert "FAIL: 1 bug(s) went unreported" in capsys.readouterr().out


def test_under_a_sanitizer_the_bug_programs_are_not_run(fresh_runtime, monkeypatch, capsys):
    from npurt.apps import demo
    from npurt.tools.sanitizer import Sanitizer
    monkeypatch.setattr(demo, "ROWS", 64)
    san = Sanitizer("all", echo=False).enable()
    try:
        assert demo.main(batches=2) == 0
    finally:
        san.disable()
    out = capsys.readouterr().out
    assert "not run: a sanitizer is watching this run" in out and "bug programs not run under the sanitizer" in out
    assert not san.reports, "\n".join(r.text() for r in san.reports)


def test_demo_rejects_zero_batches(fresh_runtime):
    from npurt.apps import demo
    assert demo.main(batches=0, quiet=True) == 2


def test_the_verdict_says_in_words_when_overlap_cannot_pay_on_this_host():
    from npurt.apps.demo import overlap_verdict
    assert overlap_verdict(0.88, 0.94).startswith("overlap cannot pay here: two plain threads reach 0.94x; npurt 0.88x")
    assert overlap_verdict(0.95, 1.10) == "speed-up 0.95x, below the 1.10x two plain threads reach on this host"
    assert overlap_verdict(1.04, 1.11) == "speed-up 1.04x (threads reach 1.11x)"


def test_no_zero_layers_and_a_time_axis_under_the_timeline():
    from npurt.apps.demo import _layers_text, _timeline
    assert "0 layer" not in _layers_text(0) and _layers_text(1) == "1 layer, then a sum per row"
    assert _layers_text(3) == "3 layers, then a sum per row"
    lines = _timeline({"copy": [(0.0, 1.0), (1.0, 2.0)], "compute": [(1.0, 2.0), (2.0, 3.0)]}, width=20)
    assert lines[-1].split() == ["0", "ms", "3.0", "ms"]
    assert len(lines[-1]) == len(lines[0])
