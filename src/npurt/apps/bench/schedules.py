"""What controlled schedules cost: seeded runs of the demo's buggy program per second.

schedules_per_s runs `npurt run --schedules N` (apps/schedules.py: each seed a child process
`npurt run --schedule SEED prog.py`, as many at a time as the machine has cores) on the demo's
buggy two-stream program (`npurt.apps.demo_bugs.RACE`: a kernel on stream b reads what a kernel
on stream a writes, with no event between them), extended with the check a user would write
(exit 1 when the read came first), and reports seeds completed per second. Each run is a fresh
interpreter, so the figure is dominated by interpreter start and npurt's import; the target,
0.5/s (a seed per 2 s on a 2-core machine), says a search of a few dozen seeds takes a minute.
"""
from __future__ import annotations

import os
import tempfile
import time

from .. import demo_bugs
from .. import schedules as runs
from .harness import Profile, Stat

CHECK = "\nimport sys\nsys.exit(0 if (y.numpy() == 2).all() else 1)\n"


def program_text() -> str:
    return "import npurt\n" + demo_bugs.RACE[1] + CHECK


def measure(s, p: Profile) -> dict[str, Stat]:
    seeds = {"tiny": 2, "quick": 8}.get(p.name, 16)
    jobs = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="npurt-bench-schedules-") as tmp:
        prog = os.path.join(tmp, "race.py")
        with open(prog, "w") as fh:
            fh.write(program_text())
        rates = []
        for _ in range(1 if p.name == "tiny" else 3):
            t0 = time.perf_counter()
            outcomes = runs.run_seeds(seeds, [], [prog], jobs, timeout_s=120)
            elapsed = time.perf_counter() - t0
            if any(o.status is None or o.status not in (0, 1) for o in outcomes):
                bad = next(o for o in outcomes if o.status not in (0, 1))
                raise RuntimeError(f"a seeded run of the demo's race did not end normally: {bad.stderr[-500:]}")
            rates.append(len(outcomes) / elapsed)
    return {"schedules_per_s": Stat.of(rates)}
