"""Build and run every sample of hicann/runtime's example/ that has a run.sh, as a user would:
its own run.sh, under `env -i` plus the prefix's set_env.sh and NPURT_DEVICE_COUNT=4 (the
IPC notify samples use devices 2 and 3), in a scratch copy of example/ (a sample uses the
shared kernel_func/ and common/). Prints one line per sample: exit status, seconds, and the
lines that say how it went (success words, [ERROR], failures); writes each full log.

    python scripts/sweep_runtime_samples.py --prefix "$(npurt cann-home)" \
        [--runtime /work/hicann-runtime] [--out /tmp/sweep] [--only SUBSTRING] [--timeout 600]

docs/c-api.md ("Last sweep") records what it found.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time

VERDICT = re.compile(r"success|succeed|correct|passed|\[error\]|fail|mismatch|check result", re.I)


def samples(example: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(example):
        dirs.sort()
        if "run.sh" in files and root != example:
            found.append(root)
    return found


def run_one(where: str, prefix: str, timeout: float) -> tuple[int, float, str]:
    python_bin = os.path.dirname(sys.executable)  # a python3 with numpy, for run.sh files that make data
    env = {"HOME": os.environ.get("HOME", "/tmp"), "PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin"}
    cmd = f'. "{prefix}/set_env.sh" && export NPURT_DEVICE_COUNT=4 && bash run.sh'
    t0 = time.monotonic()
    try:
        res = subprocess.run(["bash", "-c", cmd], cwd=where, env=env, capture_output=True, text=True,
                             timeout=timeout)
        rc, out = res.returncode, res.stdout + res.stderr
    except subprocess.TimeoutExpired as exc:
        rc = 124
        out = (exc.stdout or b"").decode(errors="replace") + (exc.stderr or b"").decode(errors="replace")
    return rc, time.monotonic() - t0, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", required=True, help="the npurt cann-home prefix")
    ap.add_argument("--runtime", default="/work/hicann-runtime", help="a hicann/runtime work tree")
    ap.add_argument("--out", default="/tmp/npurt-sample-sweep", help="scratch directory (recreated)")
    ap.add_argument("--only", default="", help="run only samples whose path contains this")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv)
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    example = os.path.join(args.out, "example")
    shutil.copytree(os.path.join(args.runtime, "example"), example)
    bad = 0
    for where in samples(example):
        name = os.path.relpath(where, example)
        if args.only not in name:
            continue
        rc, secs, out = run_one(where, os.path.abspath(args.prefix), args.timeout)
        with open(os.path.join(args.out, name.replace("/", "__") + ".log"), "w") as f:
            f.write(out)
        said = [line.strip() for line in out.splitlines() if VERDICT.search(line)
                and "CMake" not in line and "-- " not in line[:3]]
        bad += rc != 0
        print(f"{name}: rc={rc} {secs:.0f}s | " + " || ".join(said[-4:])[:600], flush=True)
    print(f"{bad} sample(s) exited non-zero", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
