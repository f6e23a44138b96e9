"""How users reach the profiler: `npurt run --profile`, `npurt demo --profile`, `npurt plot`,
and a pyACL application profiling itself with acl.prof."""
from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

from npurt.apps import cli
from npurt.runtime.observers import HOOKS
from npurt.apps import runner

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pyacl"
SUMMARIES = ("op_summary", "op_statistic", "task_time", "api_statistic", "msprof_tx", "stream_summary",
             "overlap", "idle_gaps")


def _rows(path: Path, name: str) -> list[dict]:
    with open(path / f"{name}.csv", newline="") as f:
        return list(csv.DictReader(f))


def _is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def test_npurt_run_profile_writes_the_trace_and_summaries_of_the_script(fresh_runtime, tmp_path, capsys):
    out = tmp_path / "prof"
    status = runner.main(["--profile", str(out), str(EXAMPLES / "multi_stream_events.py")])
    assert status == 0
    captured = capsys.readouterr()
    assert "two-stream pipeline matches: True" in captured.out
    assert "ops by total time" in captured.err and "npurt profile:" not in captured.out  # the report: stderr
    assert (out / "msprof.json").exists() and (out / "summary.txt").exists()
    for name in SUMMARIES:
        assert (out / f"{name}.csv").exists()
    copies = {r["OP Type"] for r in _rows(out, "op_statistic")}
    assert {"memcpy_async H2D", "memcpy_async D2D", "memcpy_async D2H"} <= copies
    assert any(r["API Name"] == "acl.rt.stream_wait_event" for r in _rows(out, "api_statistic"))
    assert not HOOKS.active


def test_npurt_run_profile_refuses_an_output_path_it_cannot_write_before_running(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    assert runner.main([f"--profile={blocker}", str(script)]) == 2
    captured = capsys.readouterr()
    assert "not a directory" in captured.err and "ran" not in captured.out
    assert runner.main(["--profile"]) == 2


def test_demo_profile_shows_the_overlap_the_demo_reports(fresh_runtime, tmp_path, capsys):
    from npurt.apps import demo
    out = tmp_path / "demo"
    assert demo.main(profile=str(out)) == 0
    text = capsys.readouterr().out
    step = f"two streams, round {demo.ROUNDS}"
    found = re.search(rf"streams overlapped ([\d.]+) ms in '{step}' \(overlap.csv\); the demo measured "
                      r"(-?[\d.]+) ms with events", text)
    assert found, text
    printed, demo_overlap = float(found.group(1)), float(found.group(2))
    (row,) = [r for r in _rows(out, "overlap") if r["Step"] == step]
    assert printed == pytest.approx(float(row["Overlapped(us)"]) / 1000, abs=0.05)
    # the same overlap seen two ways: events recorded by the demo, task spans seen by the
    # profiler (they differ by the few microseconds between tasks and the idle time in the span)
    assert abs(printed - demo_overlap) <= max(1.0, 0.1 * float(row["Duration(us)"]) / 1000), text
    assert printed > 0
    png = tmp_path / "demo.png"
    assert cli.main(["plot", str(out), "-o", str(png), "--range", step]) == 0
    assert _is_png(png)


def test_pyacl_example_profiles_itself_with_acl_prof_and_the_result_plots(tmp_path):
    out = tmp_path / "acl"
    proc = subprocess.run([sys.executable, "-m", "npurt.cli", "run", str(EXAMPLES / "profiling.py"), str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "profile written: True" in proc.stdout
    (prof_dir,) = out.glob("PROF_*/mindstudio_profiler_output")
    for name in SUMMARIES:
        assert (prof_dir / f"{name}.csv").exists()
    tx = _rows(prof_dir, "msprof_tx")
    assert {(r["event_type"], r["message"]) for r in tx} >= {("push/pop", "pipeline"), ("start/end", "pipeline"),
                                                             ("marker", "pipeline"), ("marker", "all batches queued")}
    png = tmp_path / "acl.png"
    assert cli.main(["plot", str(out), "-o", str(png)]) == 0  # finds the PROF_* directory
    assert _is_png(png)


def test_plot_says_what_is_wrong_with_its_input(tmp_path, capsys):
    assert cli.main(["plot", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["plot", str(tmp_path)]) == 2
    assert "no msprof.json" in capsys.readouterr().err
    (tmp_path / "msprof.json").write_text("{not json")
    assert cli.main(["plot", str(tmp_path)]) == 2
    assert "cannot read the trace" in capsys.readouterr().err


def test_plot_of_an_unknown_range_lists_the_ranges_there_are(rt, tmp_path, capsys):
    import npurt
    s = rt.create_stream()
    with npurt.profiler.profile(tmp_path):
        with npurt.profiler.range("warm-up"):
            rt.launch_host_func(s, lambda: None)
            rt.synchronize_stream(s)
    assert cli.main(["plot", str(tmp_path), "--range", "nope", "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "no range named 'nope'" in err and "warm-up" in err


def test_plot_without_matplotlib_names_the_install_command(rt, tmp_path, monkeypatch, capsys):
    import npurt
    with npurt.profiler.profile(tmp_path):
        pass
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert cli.main(["plot", str(tmp_path)]) == 2
    assert "pip install 'npurt[plot]'" in capsys.readouterr().err


def test_importing_npurt_and_its_profiler_imports_no_plotting_library():
    code = "import sys, npurt, npurt.profiler, npurt.acl; print(sorted(m for m in ('matplotlib', 'rich') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_readme_shows_the_demos_timeline_picture():
    root = Path(__file__).resolve().parents[2]
    assert "](https://github.com/npurt/npurt/raw/main/docs/demo_timeline.png)" in (root / "README.md").read_text()
    assert _is_png(root / "docs" / "demo_timeline.png")


# ---- npurt plot: formats, the file name it reports, trimmed ends, flows when zoomed, units

def _profile_with_idle_ends(rt, out_dir):
    """A profile whose device work sits between two long host-only stretches."""
    import time

    import npurt
    s = rt.create_stream()
    with npurt.profiler.profile(out_dir):
        with npurt.profiler.range("idle before"):
            time.sleep(0.3)
        ev = rt.create_event()
        rt.launch_host_func(s, lambda: time.sleep(0.02))
        rt.record_event(ev, s)
        s2 = rt.create_stream()
        rt.stream_wait_event(s2, ev)
        rt.launch_host_func(s2, lambda: None)
        rt.synchronize_device()
        with npurt.profiler.range("idle after"):
            time.sleep(0.3)


def test_plot_refuses_an_unsupported_format_in_one_line(tmp_path, capsys):
    assert cli.main(["plot", str(tmp_path), "-o", str(tmp_path / "x.txt")]) == 2
    err = capsys.readouterr().err
    assert err == f"npurt plot: error: cannot draw '{tmp_path / 'x.txt'}': .txt is not a picture format npurt " \
                  "plot writes (.png, .svg, .pdf)\n"


def test_plot_reports_the_file_it_wrote(rt, tmp_path, capsys):
    _profile_with_idle_ends(rt, tmp_path / "prof")
    assert cli.main(["plot", str(tmp_path / "prof"), "-o", str(tmp_path / "picture")]) == 0
    assert capsys.readouterr().out == f"npurt plot: wrote {tmp_path / 'picture.png'}\n"
    assert _is_png(tmp_path / "picture.png")
    assert cli.main(["plot", str(tmp_path / "prof"), "-o", str(tmp_path / "t.svg")]) == 0
    assert (tmp_path / "t.svg").read_text().lstrip().startswith("<?xml")


def test_the_default_window_trims_the_idle_ends_and_flows_need_a_zoom(rt, tmp_path, monkeypatch):
    from npurt.tools.profiler import plot as P
    _profile_with_idle_ends(rt, tmp_path / "prof")
    events = P._load(P.find_trace(str(tmp_path / "prof")))
    lo, hi = P._window(events, None, None)
    everything = [e for e in events if e.get("ph") == "X"]
    whole = (max(e["ts"] + e["dur"] for e in everything) - min(e["ts"] for e in everything)) / 1000
    assert hi - lo < whole / 2          # the 0.6 s of host-only time is not drawn
    arrows = []
    import matplotlib.axes
    monkeypatch.setattr(matplotlib.axes.Axes, "annotate", lambda self, *a, **k: arrows.append(k))
    P.plot(str(tmp_path / "prof"), str(tmp_path / "whole.png"))
    assert arrows == []
    P.plot(str(tmp_path / "prof"), str(tmp_path / "zoom.png"), window=(lo, hi))
    assert len(arrows) >= 1


def test_the_terminal_summary_says_durations_in_units_that_read():
    from npurt.tools.profiler.summary import _table, human_bytes, human_time_us
    assert [human_time_us(v) for v in ("850.000", "12345.678", "4200000", "0.25")] == \
        ["850 us", "12.3 ms", "4.20 s", "250 ns"]
    assert [human_bytes(v) for v in (512, 1536, 64 << 20)] == ["512 B", "1.5 KiB", "64 MiB"]
    head = ["OP Type", "Total Time(us)", "Bytes"]
    lines = _table(head, [["add", "12345.678", 1536]], [0, 1, 2])
    assert lines[0].split() == ["OP", "Type", "Total", "Time", "Bytes"] and "12.3 ms" in lines[1] and "1.5 KiB" in lines[1]
