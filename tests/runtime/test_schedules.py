"""Controlled schedules (NPURT_SCHEDULE, npurt run --schedule/--schedules, the npurt_schedules marker):
one task at a time in an order a seed chooses, the same seed giving the same interleaving and the same
result; an ordering bug is found within a stated number of seeds and replays from the printed command."""
from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

import npurt
from npurt import runtime as rt
from tests.conftest import run_isolated

pytest_plugins = ["pytester"]

# The demo's bug: a kernel on stream b reads what a kernel on stream a writes, with no event
# between them. It checks its own result and exits 1 when the read came first.
RACY = """\
import sys
import npurt
a, b = npurt.Stream(), npurt.Stream()
with npurt.stream(a):
    x = npurt.ones(1024)
with npurt.stream(b):
    y = x * 2
npurt.synchronize()
ok = bool((y.numpy() == 2).all())
print("ok" if ok else "WRONG: b read x before a wrote it")
sys.exit(0 if ok else 1)
"""
FIXED = RACY.replace("with npurt.stream(b):\n", "b.wait_event(a.record_event())\nwith npurt.stream(b):\n")


@pytest.fixture
def controlled(rt):
    yield npurt.faults.schedule
    npurt.faults.unschedule()


def _run_two_streams(seed):
    """Three tasks on each of two streams; the order the device ran them in."""
    with npurt.faults.schedule(seed) as ctl:
        a, b = npurt.Stream(), npurt.Stream()
        for s in (a, b):
            with npurt.stream(s):
                npurt.ones(8) * 2
        npurt.synchronize()
        return list(ctl.order[-6:]), (a.stream_id, b.stream_id)


def test_the_same_seed_gives_the_same_interleaving(controlled):
    orders = {}
    for seed in (1, 2, 3, 4, 5, 6, 1, 2):
        order, (a, b) = _run_two_streams(seed)
        order = ["a" if sid == a else "b" for _, sid in order]
        assert orders.setdefault(seed, order) == order
    assert len({tuple(o) for o in orders.values()}) > 1  # seeds do choose different orders


def test_one_task_runs_at_a_time_and_a_query_advances_the_device(controlled):
    with npurt.faults.schedule(3) as ctl:
        s = npurt.Stream()
        with npurt.stream(s):
            for _ in range(5):
                npurt.ones(4)
        steps, queued = ctl.steps, s.runtime_stream.enqueued_seq
        queries = 1
        assert not s.query()  # the device has run only what the host asked for: one step
        while not s.query():
            queries += 1
        assert queries + 1 == queued and ctl.steps - steps == queued  # one step per query


def test_host_functions_run_on_the_device_thread_in_their_turn(controlled):
    ran = []
    with npurt.faults.schedule(5):
        s = npurt.Stream()
        rt.launch_host_func(s.runtime_stream, lambda: ran.append(threading.current_thread().name))
        s.synchronize()
    assert ran == ["npurt-schedule"]


def test_a_correct_program_gives_the_same_bytes_under_every_seed(controlled):
    results = set()
    for seed in range(1, 6):
        with npurt.faults.schedule(seed):
            a, b = npurt.Stream(), npurt.Stream()
            with npurt.stream(a):
                x = npurt.arange(64, dtype="float32")
            b.wait_event(a.record_event())
            with npurt.stream(b):
                y = x * 3 + 1
            npurt.synchronize()  # y.numpy() alone copies on the default stream: a race of its own
            results.add(y.numpy().tobytes())
    assert results == {(np.arange(64, dtype=np.float32) * 3 + 1).tobytes()}


@pytest.mark.parametrize("text", ["abc", "random:x", "choices:1,a", "1.5"])
def test_a_schedule_that_is_not_an_integer_seed_is_refused(text):
    with pytest.raises(rt.ScheduleSpecError):
        rt.parse_schedule(text)
    code, out = run_isolated("import npurt", env={"NPURT_SCHEDULE": text})
    assert code != 0 and "ScheduleSpecError" in out


def _npurt_run(tmp_path, *args, timeout=240):
    prog = tmp_path / "prog.py"
    if not prog.exists():
        prog.write_text(RACY)
    return subprocess.run([sys.executable, "-m", "npurt", "run", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=timeout)


def test_the_racy_program_fails_under_some_of_12_seeds_and_replays_from_the_printed_command(tmp_path):
    done = _npurt_run(tmp_path, "--schedules", "12", "--jobs", "2", "prog.py")
    assert done.returncode == 1, done.stderr
    assert "12 seeds tried" in done.stderr and "WRONG" in done.stderr
    replay = next(line for line in done.stderr.splitlines() if line.startswith("replay: "))
    command = replay[len("replay: "):].split()
    assert command[:3] == ["npurt", "run", "--schedule"] and command[-1] == "prog.py"
    for _ in range(2):  # exactly, every time
        again = _npurt_run(tmp_path, *command[2:])
        assert again.returncode == 1 and "WRONG" in again.stdout


def test_a_seed_that_passes_exits_with_the_program_status_and_the_fixed_program_passes_every_seed(tmp_path):
    (tmp_path / "prog.py").write_text(FIXED)
    done = _npurt_run(tmp_path, "--schedules", "8", "--jobs", "2", "prog.py")
    assert done.returncode == 0 and "8 seeds tried, 0 failed" in done.stderr
    one = _npurt_run(tmp_path, "--schedule", "3", "prog.py")
    assert one.returncode == 0 and one.stdout.strip() == "ok"


def test_the_bounded_exhaustive_mode_finds_the_interleaving_that_fails(tmp_path):
    done = _npurt_run(tmp_path, "--schedules", "all", "--max-steps", "4", "--jobs", "2", "prog.py")
    assert done.returncode == 1 and "schedule choices:" in done.stderr
    replay = next(line for line in done.stderr.splitlines() if line.startswith("replay: "))
    again = _npurt_run(tmp_path, *replay.split()[3:])
    assert again.returncode == 1


def test_the_pytest_marker_runs_a_test_under_each_seed(pytester):
    pytester.makepyfile('''
        import pytest
        import npurt
        from npurt.runtime import SCHEDULE

        @pytest.mark.npurt_schedules(3)
        def test_under_seeds(npurt_schedule_seed, npurt_runtime):
            assert SCHEDULE.controlled.seed == npurt_schedule_seed
            assert (npurt.ones(4) * 2).numpy().tolist() == [2.0] * 4
    ''')
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_under_seeds?schedule1?*", "*test_under_seeds?schedule3?*"])
    assert not rt.SCHEDULE.active


def test_a_race_the_sanitizer_reports_is_shown_to_matter_with_a_seed_that_fails(tmp_path):
    done = _npurt_run(tmp_path, "--sanitize", "--jobs", "2", "--race-seeds", "12", "prog.py")
    assert done.returncode == 86 and "racecheck" in done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("npurt run: the race matters"))
    seed = line.split("under seed ")[1].split()[0]
    assert f"npurt run --schedule {seed} prog.py" in done.stderr
    assert _npurt_run(tmp_path, "--schedule", seed, "prog.py").returncode == 1
