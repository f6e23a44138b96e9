"""`npurt launch -n N script.py [args...]`: run a script as N ranks, one process each.

The ranks are started by the MPI launcher (`mpiexec`, from the `mpich` wheel of the extra
`npurt[dist]`; NPURT_MPIEXEC names another). Each rank runs the script as `npurt run` does
(so `import acl` works too) with the variables torchrun and mpirun users expect:

    RANK, WORLD_SIZE         this process's rank and the number of ranks
    LOCAL_RANK, LOCAL_WORLD_SIZE   its rank on its host and the ranks per host
    NPURT_DEVICE_COUNT       8 simulated devices per host (like an 8-NPU server), more if a
                             host runs more ranks (at most 16); an explicit value is kept

Rank r uses device LOCAL_RANK of its host (npurt.hccl.spawn makes it current) and reaches the
others only through HCCL. MPI is initialized in every rank before the script starts, so a rank
that never makes a communicator cannot leave the others waiting in MPI_Init. `--per-host K` simulates hosts of K ranks each on this machine
(LOCAL_RANK = RANK % K): the same layout as K ranks on each of N/K real hosts, which is what
`mpiexec -f hostfile` gives on a cluster (see docs/distributed.md).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

USAGE = """usage: npurt launch [-n N] [--per-host K] [-l] [-v] script.py [args...]

Run script.py as N ranks (processes) connected by MPI, with RANK, LOCAL_RANK, WORLD_SIZE and
LOCAL_WORLD_SIZE set; rank r uses simulated device LOCAL_RANK.
  -n, --np N        number of ranks (default 2)
  --per-host K      ranks per simulated host (default N, at most 16)
  -l, --label       prefix every output line with its rank
  -v, --verbose     print the mpiexec command line (on stderr)
  -h, --help        show this help
Needs the extra npurt[dist] (mpi4py and an MPI library): pip install 'npurt[dist]'
"""
MAX_DEVICES = 16


def find_mpiexec() -> str | None:
    """NPURT_MPIEXEC, else the mpiexec installed next to this Python (the mpich wheel), else PATH."""
    named = os.environ.get("NPURT_MPIEXEC", "").strip()
    if named:
        return named
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("mpiexec")


def _fail(message: str) -> int:
    print(f"npurt launch: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    args = list(argv)
    n, per_host, label, verbose = 2, None, False, False
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt in ("-h", "--help"):
            print(USAGE, end="")
            return 0
        if opt == "--":
            break
        if opt in ("-l", "--label"):
            label = True
        elif opt in ("-v", "--verbose"):
            verbose = True
        elif opt in ("-n", "--np", "--per-host") or opt.startswith(("--np=", "--per-host=")):
            name, _, value = opt.partition("=")
            if not value:
                if not args:
                    return _fail(f"{opt} needs a number\n{USAGE}")
                value = args.pop(0)
            if not value.isdigit() or int(value) < 1:
                return _fail(f"{name} must be a positive integer, got {value!r}")
            if name == "--per-host":
                per_host = int(value)
            else:
                n = int(value)
        else:
            return _fail(f"unknown option {opt!r}\n{USAGE}")
    if not args:
        print(USAGE, end="", file=sys.stderr)
        return 2
    script = args[0]
    if not os.path.isfile(script):
        return _fail(f"can't open file {script!r}: no such file")
    per_host = per_host or n
    if per_host > MAX_DEVICES:
        return _fail(f"{per_host} ranks per host, but a simulated host has at most {MAX_DEVICES} devices; "
                     "use --per-host to spread the ranks over several simulated hosts")
    env = dict(os.environ)
    devices = env.get("NPURT_DEVICE_COUNT", "").strip()
    if devices:
        if not devices.isdigit() or int(devices) < min(per_host, n):
            return _fail(f"NPURT_DEVICE_COUNT={devices} is too few devices for {min(per_host, n)} ranks per host "
                         "(each rank uses device LOCAL_RANK); unset it or raise it")
    else:
        env["NPURT_DEVICE_COUNT"] = str(max(8, min(per_host, n)))
    if importlib.util.find_spec("mpi4py") is None:
        return _fail("needs mpi4py and an MPI library: pip install 'npurt[dist]'")
    mpiexec = find_mpiexec()
    if mpiexec is None:
        return _fail("found no mpiexec (install the MPI wheel with pip install 'npurt[dist]', or name one "
                     "with NPURT_MPIEXEC)")
    command = [mpiexec, "-n", str(n)]
    if label:
        command.append("-prepend-rank")
    command += [sys.executable, "-m", "npurt.tools.launch", "--rank-of", str(per_host), "--", *args]
    if verbose:
        print("npurt launch: " + " ".join(command), file=sys.stderr)
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        return _fail(f"could not run {mpiexec}: {exc}")


def rank_main(argv: list[str]) -> int:
    """In each rank: set the torchrun-style variables from the MPI launcher's, then run the
    script as `npurt run` does."""
    per_host = int(argv[1])
    rest = argv[2:]
    from npurt.hccl.world import World, _from_env
    w: World = _from_env(mpi_only=True)
    if w.size <= 1 and os.environ.get("PMI_SIZE") is None:
        print("npurt launch: this module is started by `npurt launch`, not directly", file=sys.stderr)
        return 2
    local_size = min(per_host, w.size)
    os.environ.update(RANK=str(w.rank), WORLD_SIZE=str(w.size), LOCAL_RANK=str(w.rank % per_host),
                      LOCAL_WORLD_SIZE=str(local_size), NPURT_HOST_INDEX=str(w.rank // per_host))
    # Initialize MPI in every rank now: MPI_Init waits for every process of the job, so a rank
    # that never used MPI (it never made a communicator) would leave the others hanging there.
    from mpi4py import MPI  # noqa: F401
    from .runner import main as run_main
    return run_main(rest)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--rank-of":
        sys.exit(rank_main(sys.argv[1:]))
    sys.exit(main(sys.argv[1:]))
