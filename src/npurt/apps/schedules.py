"""`npurt run --schedules N prog.py`: run a program under N controlled schedules and report the seeds it fails under.

Each run is a child process, `python -m npurt run --schedule SEED [options] prog.py args`, so a
failing seed replays with exactly that command. Runs go in parallel, as many at a time as the
machine has cores (`--jobs J` to change). A run fails when it exits non-zero (an exception, a
wrong result the program checks and exits for) or does not finish within `--timeout S`
seconds (a hang). The report lists each failing seed, the last lines it printed on stderr, and
the command that replays it; the exit status is 0 when every seed passed, 1 otherwise.

`--schedules all --max-steps K` enumerates instead: every interleaving of the first K steps
(depth first over the choices the schedule makes at each step, no preemption after step K),
each replayable with `npurt run --schedule choices:I,J,... prog.py`. `--max-runs M` (default
1000) bounds the enumeration.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass


@dataclass
class Outcome:
    schedule: str        # the --schedule value: a seed or choices:I,J,...
    status: int | None   # exit status; None: it did not finish in time
    stderr: str
    seconds: float
    stdout: str = ""
    trace: list | None = None  # (candidates, chosen) per step, for the enumeration

    @property
    def failed(self) -> bool:
        return self.status != 0


def child_command(schedule: str, options: list[str], program: list[str]) -> list[str]:
    return [sys.executable, "-m", "npurt", "run", "--schedule", schedule, *options, *program]


def replay_command(schedule: str, options: list[str], program: list[str]) -> str:
    return shlex.join(["npurt", "run", "--schedule", schedule, *options, *program])


def run_one(schedule: str, options: list[str], program: list[str], timeout_s: float,
            trace: bool = False) -> Outcome:
    env = dict(os.environ)
    env.pop("NPURT_SCHEDULE", None)
    trace_path = None
    if trace:
        fd, trace_path = tempfile.mkstemp(prefix="npurt-schedule-", suffix=".txt")
        os.close(fd)
        env["NPURT_SCHEDULE_TRACE"] = trace_path
    start = time.monotonic()
    try:
        proc = subprocess.run(child_command(schedule, options, program), env=env, capture_output=True,
                              text=True, timeout=timeout_s)
        status, err, out = proc.returncode, proc.stderr, proc.stdout
    except subprocess.TimeoutExpired as exc:
        status = None
        err = (exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr) or ""
        out = (exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout) or ""
    steps = None
    if trace_path is not None:
        try:
            with open(trace_path) as fh:
                steps = [tuple(map(int, line.split())) for line in fh if line.strip()]
        except OSError:
            steps = []
        finally:
            os.unlink(trace_path)
    return Outcome(schedule, status, err, time.monotonic() - start, out, steps)


def run_seeds(n: int, options: list[str], program: list[str], jobs: int, timeout_s: float) -> list[Outcome]:
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda seed: run_one(str(seed), options, program, timeout_s), range(1, n + 1)))


def first_failing_seed(options: list[str], program: list[str], jobs: int, timeout_s: float,
                       budget: int) -> Outcome | None:
    """The first of seeds 1..budget under which the program fails (its own check), or None:
    what shows that a race the sanitizer reported matters."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for first in range(1, budget + 1, jobs):
            seeds = range(first, min(budget, first + jobs - 1) + 1)
            for out in pool.map(lambda seed: run_one(str(seed), options, program, timeout_s), seeds):
                if out.failed:
                    return out
    return None


def enumerate_schedules(max_steps: int, options: list[str], program: list[str], jobs: int, timeout_s: float,
                        max_runs: int = 1000) -> tuple[list[Outcome], bool]:
    """Every interleaving of the first `max_steps` steps; (outcomes, complete)."""
    outcomes: list[Outcome] = []
    pending = [[]]
    seen = set()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        while pending and len(outcomes) < max_runs:
            batch = pending[:max(1, min(jobs, max_runs - len(outcomes)))]
            del pending[:len(batch)]
            results = list(pool.map(lambda prefix: run_one("choices:" + ",".join(map(str, prefix)), options,
                                                           program, timeout_s, trace=True), batch))
            for prefix, out in zip(batch, results):
                outcomes.append(out)
                steps = out.trace or []
                taken = [chosen for _, chosen in steps]
                for i in range(len(prefix), min(max_steps, len(steps))):
                    for alt in range(steps[i][0]):
                        if alt != taken[i]:
                            branch = tuple(taken[:i] + [alt])
                            if branch not in seen:
                                seen.add(branch)
                                pending.append(list(branch))
    return outcomes, not pending


def report(outcomes: list[Outcome], options: list[str], program: list[str], complete: bool = True,
           out=sys.stderr) -> int:
    failed = [o for o in outcomes if o.failed]
    total = sum(o.seconds for o in outcomes)
    kind = "schedule" if outcomes and outcomes[0].schedule.startswith("choices:") else "seed"
    print(f"npurt run: {len(outcomes)} {kind}s tried{'' if complete else ' (enumeration cut short)'}, "
          f"{len(failed)} failed ({total:.1f} s of runs)", file=out)
    for o in failed:
        why = "did not finish (hang?)" if o.status is None else f"exit status {o.status}"
        print(f"  {kind} {o.schedule}: {why}", file=out)
        tail = [line for line in (o.stdout + "\n" + o.stderr).splitlines() if line.strip()][-3:]
        for line in tail:
            print(f"      {line}", file=out)
    if failed:
        print(f"replay: {replay_command(failed[0].schedule, options, program)}", file=out)
    return 1 if failed else 0
