"""`npurt launch -n N script.py [args...]`: run a script as N ranks, one process each.

The ranks are started by the MPI launcher (`mpiexec`, from the `mpich` wheel of the extra
`npurt[dist]`; NPURT_MPIEXEC names another). Each rank runs the script as `npurt run` does
(so `import acl` works too) with the variables torchrun and mpirun users expect:

    RANK, WORLD_SIZE         this process's rank and the number of ranks
    MASTER_ADDR, MASTER_PORT where torch.distributed's env:// rendezvous meets (rank 0's host,
                             a free port), unless set
    LOCAL_RANK, LOCAL_WORLD_SIZE   its rank on its host and the ranks per host
    NPURT_DEVICE_COUNT       8 simulated devices per host (like an 8-NPU server), more if a
                             host runs more ranks (at most 16); an explicit value is kept

Rank r uses device LOCAL_RANK of its host (npurt.hccl.spawn makes it current) and reaches the
others only through HCCL. MPI is initialized in every rank before the script starts, so a rank
that never makes a communicator cannot leave the others waiting in MPI_Init.

`--per-host K` alone simulates hosts of K ranks each on this machine (LOCAL_RANK = RANK % K):
the layout of K ranks on each of N/K real hosts. `--hostfile FILE` runs on real hosts (MPICH's
hostfile, `host:slots` per line, passed to mpiexec as `-f FILE`, with `-ppn K` when
--per-host is given); LOCAL_RANK is then the MPI launcher's local rank. See docs/distributed.md.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys

USAGE = """usage: npurt launch [-n N] [--per-host K] [--hostfile FILE] [--torch-npu] [-l] [-v] script.py [args...]

Run script.py as N ranks (processes) connected by MPI, with RANK, LOCAL_RANK, WORLD_SIZE and
LOCAL_WORLD_SIZE set; rank r uses simulated device LOCAL_RANK.
  -n, --np N        number of ranks (default 2)
  --per-host K      ranks per host (default N, at most 16); without --hostfile the hosts are
                    simulated on this machine
  --hostfile FILE   run on the hosts listed in FILE (mpiexec -f FILE)
  --torch-npu       `import torch_npu` is npurt's shim in every rank (as npurt run --torch-npu)
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
    n, per_host, label, verbose, hostfile = 2, None, False, False, None
    run_options: list[str] = []
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt in ("-h", "--help"):
            print(USAGE, end="")
            return 0
        if opt == "--":
            break
        if opt in ("-l", "--label"):
            label = True
        elif opt == "--torch-npu":
            run_options.append(opt)
        elif opt in ("-v", "--verbose"):
            verbose = True
        elif opt == "--hostfile" or opt.startswith("--hostfile="):
            hostfile = opt.partition("=")[2] or (args.pop(0) if args else "")
            if not os.path.isfile(hostfile):
                return _fail(f"hostfile {hostfile!r} does not exist")
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
    # ranks on one host: all of them, or --per-host K; with a hostfile and no --per-host the
    # MPI launcher spreads them by the hosts' slots
    local = per_host or (n if hostfile is None else min(n, 8))
    if local > MAX_DEVICES:
        return _fail(f"{local} ranks per host, but a simulated host has at most {MAX_DEVICES} devices; "
                     "use --per-host to spread the ranks over several hosts")
    env = dict(os.environ)
    devices = env.get("NPURT_DEVICE_COUNT", "").strip()
    if devices:
        if not devices.isdigit() or int(devices) < min(local, n):
            return _fail(f"NPURT_DEVICE_COUNT={devices} is too few devices for {min(local, n)} ranks per host "
                         "(each rank uses device LOCAL_RANK); unset it or raise it")
    else:
        env["NPURT_DEVICE_COUNT"] = str(max(8, min(local, n)))
    # torch.distributed's env:// rendezvous (init_process_group), as torchrun sets it up
    if "MASTER_ADDR" not in env:
        env["MASTER_ADDR"] = "127.0.0.1" if hostfile is None else _first_host(hostfile)
    env.setdefault("MASTER_PORT", str(_free_port()))
    if importlib.util.find_spec("mpi4py") is None:
        return _fail("needs mpi4py and an MPI library: pip install 'npurt[dist]'")
    mpiexec = find_mpiexec()
    if mpiexec is None:
        return _fail("found no mpiexec (install the MPI wheel with pip install 'npurt[dist]', or name one "
                     "with NPURT_MPIEXEC)")
    command = [mpiexec, "-n", str(n)]
    if hostfile is not None:
        command += ["-f", hostfile] + (["-ppn", str(per_host)] if per_host else [])
    if label:
        command.append("-prepend-rank")
    # --rank-of K: K ranks per simulated host on this machine; 0: real hosts, whose local ranks
    # the MPI launcher gives
    rank_of = local if hostfile is None else 0
    command += [sys.executable, "-m", "npurt.tools.launch", "--rank-of", str(rank_of), *run_options, "--", *args]
    if verbose:
        print("npurt launch: " + " ".join(command), file=sys.stderr)
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as exc:
        return _fail(f"could not run {mpiexec}: {exc}")
    return wait_for(child)


def _free_port() -> int:
    """A TCP port free on this host now (the rendezvous store of rank 0 listens on it)."""
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def _first_host(hostfile: str) -> str:
    """The host of the hostfile's first line (rank 0 runs there)."""
    with open(hostfile) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                return line.split(":")[0].split()[0]
    return "127.0.0.1"


def wait_for(child: subprocess.Popen) -> int:
    """The launcher's exit status; if we are interrupted or terminated, the launcher (and the
    ranks it started) are stopped too, not left running."""
    previous = signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    try:
        return child.wait()
    except KeyboardInterrupt:
        child.terminate()
        child.wait()
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


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
    if per_host:  # simulated hosts of `per_host` ranks on this machine
        os.environ.update(LOCAL_RANK=str(w.rank % per_host), LOCAL_WORLD_SIZE=str(min(per_host, w.size)),
                          NPURT_HOST_INDEX=str(w.rank // per_host))
    else:  # real hosts: the MPI launcher knows which ranks share one
        os.environ.update(LOCAL_RANK=str(w.local_rank), LOCAL_WORLD_SIZE=str(w.local_size))
    os.environ.update(RANK=str(w.rank), WORLD_SIZE=str(w.size))
    # Initialize MPI in every rank now: MPI_Init waits for every process of the job, so a rank
    # that never used MPI (it never made a communicator) would leave the others hanging there.
    from mpi4py import MPI  # noqa: F401
    from .runner import main as run_main
    return run_main(rest)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--rank-of":
        sys.exit(rank_main(sys.argv[1:]))
    sys.exit(main(sys.argv[1:]))
