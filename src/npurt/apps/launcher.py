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

A rank whose program raises an uncaught exception aborts the job (MPI_Abort) once its
traceback is printed, as a rank killed by a signal does: the others stop within seconds
instead of waiting in a collective for it.

Rank r uses device LOCAL_RANK of its host (npurt.hccl.spawn makes it current) and reaches the
others through HCCL; the ranks of a host share its simulated devices (docs/memory.md), so a
rank can also import a peer's buffer by IPC (npurt.ipc_export / aclrtIpcMemImportByKey). MPI is initialized in every rank before the script starts, so a rank
that never makes a communicator cannot leave the others waiting in MPI_Init.

`--per-host K` alone simulates hosts of K ranks each on this machine (LOCAL_RANK = RANK % K):
the layout of K ranks on each of N/K real hosts; each simulated host is a device namespace of
its own (NPURT_DEVICE_NAMESPACE gets the suffix `.host<H>`). `--hostfile FILE` runs on real hosts (MPICH's
hostfile, `host:slots` per line, passed to mpiexec as `-f FILE`, with `-ppn K` when
--per-host is given); LOCAL_RANK is then the MPI launcher's local rank. See docs/distributed.md.
"""
from __future__ import annotations

import argparse
import array
import fcntl
import importlib.util
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import termios
import time

from ..hccl.world import World, _from_env
from .runner import main as run_main
from .cliargs import CommandParser, Exit, command_parser, parse, split_passthrough

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
    print(f"npurt launch: error: {message}", file=sys.stderr)
    return 2


SUMMARY = ("Run a program as N ranks (processes) connected by MPI, with RANK, LOCAL_RANK, WORLD_SIZE and "
           "LOCAL_WORLD_SIZE set; rank r uses simulated device LOCAL_RANK. Each rank runs it as `npurt run` "
           "does, with the run options given here.")
EPILOG = """Needs the extra npurt[dist] (mpi4py and an MPI library): pip install 'npurt[dist]'.
With --profile DIR each rank writes its profile to DIR/rank<R>; with --sanitize-report FILE to
FILE.rank<R>.json (FILE's extension kept). The exit status is the MPI launcher's (not 0 when a rank failed)."""


def parser() -> CommandParser:
    p = command_parser("launch", SUMMARY, EPILOG)
    p.add_argument("-n", "--np", dest="n", type=_positive, default=2, metavar="N", help="number of ranks (default 2)")
    p.add_argument("--per-host", type=_positive, metavar="K",
                   help="ranks per host (default N, at most 16); without --hostfile the hosts are simulated "
                        "on this machine")
    p.add_argument("--hostfile", metavar="FILE", help="run on the hosts listed in FILE (mpiexec -f FILE)")
    p.add_argument("-l", "--label", action="store_true", help="prefix every output line with its rank")
    p.add_argument("-v", "--verbose", action="store_true", help="print the mpiexec command line (on stderr)")
    run = p.add_argument_group("run options (passed to every rank's npurt run)")
    run.add_argument("--torch-npu", action="store_true", help="as npurt run --torch-npu")
    run.add_argument("--sanitize", action="store_true", help="sanitize every rank (exit status 86 on a report)")
    run.add_argument("--tools", metavar="LIST", help="the sanitizer's tools (implies --sanitize)")
    run.add_argument("--sanitize-report", metavar="FILE", help="JSON reports, one file per rank (implies --sanitize)")
    run.add_argument("--profile", metavar="OUT_DIR", help="profile every rank, into OUT_DIR/rank<R>")
    p.add_argument("program", nargs="?", metavar="script.py", help="the program every rank runs")
    p.add_argument("args", nargs="*", metavar="ARGS", help="its arguments (passed through)")
    return p


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value!r}")
    return int(value)


OPTIONS_WITH_VALUES = {"-n", "--np", "--per-host", "--hostfile", "--tools", "--sanitize-report", "--profile"}


def _run_options(args) -> list[str]:
    """The options each rank's `npurt run` gets."""
    opts = ["--torch-npu"] if args.torch_npu else []
    if args.sanitize or args.tools is not None or args.sanitize_report is not None:
        opts.append("--sanitize")
    for flag, value in (("--tools", args.tools), ("--sanitize-report", args.sanitize_report),
                        ("--profile", args.profile)):
        if value is not None:
            opts += [flag, os.path.abspath(value) if flag != "--tools" else value]
    return opts


def main(argv: list[str]) -> int:
    p = parser()
    try:
        own, program, rest = split_passthrough(list(argv), OPTIONS_WITH_VALUES)
        args = parse(p, own + program)
        if args.program is None:
            p.error("give the program the ranks run: npurt launch -n N script.py [args...]")
        if args.hostfile is not None and not os.path.isfile(args.hostfile):
            p.error(f"hostfile {args.hostfile!r} does not exist")
        if not os.path.isfile(args.program):
            p.error(f"can't open file {args.program!r}: no such file")
    except Exit as exc:
        return exc.status
    n, per_host, hostfile = args.n, args.per_host, args.hostfile
    args_for_ranks = [*_run_options(args), "--", args.program, *rest]
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
    if args.label:
        command.append("-prepend-rank")
    # --rank-of K: K ranks per simulated host on this machine; 0: real hosts, whose local ranks
    # the MPI launcher gives
    rank_of = local if hostfile is None else 0
    command += [sys.executable, "-m", "npurt.apps.launcher", "--rank-of", str(rank_of), "--", *args_for_ranks]
    if args.verbose:
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


def per_rank_outputs(run_argv: list[str], rank: int) -> list[str]:
    """Rank `rank`'s npurt run arguments: its own profile directory (OUT_DIR/rank<R>) and
    sanitizer report (FILE.rank<R>.json), so the ranks do not write over each other."""
    out = list(run_argv)
    end = out.index("--") if "--" in out else len(out)
    for i in range(end - 1):
        if out[i] == "--profile":
            out[i + 1] = os.path.join(out[i + 1], f"rank{rank}")
        elif out[i] == "--sanitize-report":
            root, ext = os.path.splitext(out[i + 1])
            out[i + 1] = f"{root}.rank{rank}{ext or '.json'}"
    return out


def rank_main(argv: list[str]) -> int:
    """In each rank: set the torchrun-style variables from the MPI launcher's, then run the
    script as `npurt run` does."""
    per_host = int(argv[1])
    rest = argv[3:] if argv[2:3] == ["--"] else argv[2:]    # npurt run's options, --, the program
    w: World = _from_env(mpi_only=True)
    if w.size <= 1 and os.environ.get("PMI_SIZE") is None:
        print("npurt launch: this module is started by `npurt launch`, not directly", file=sys.stderr)
        return 2
    if per_host:  # simulated hosts of `per_host` ranks on this machine
        # the ranks of one simulated host share its devices (as an 8-NPU server's processes
        # do); those of another simulated host must not: each host is a device namespace
        namespace = os.environ.get("NPURT_DEVICE_NAMESPACE", "").strip() or "default"
        os.environ.update(LOCAL_RANK=str(w.rank % per_host), LOCAL_WORLD_SIZE=str(min(per_host, w.size)),
                          NPURT_HOST_INDEX=str(w.rank // per_host),
                          NPURT_DEVICE_NAMESPACE=f"{namespace}.host{w.rank // per_host}")
    else:  # real hosts: the MPI launcher knows which ranks share one
        os.environ.update(LOCAL_RANK=str(w.local_rank), LOCAL_WORLD_SIZE=str(w.local_size))
    os.environ.update(RANK=str(w.rank), WORLD_SIZE=str(w.size))
    rest = per_rank_outputs(rest, w.rank)
    # Initialize MPI in every rank now: MPI_Init waits for every process of the job, so a rank
    # that never used MPI (it never made a communicator) would leave the others hanging there.
    from mpi4py import MPI
    uncaught: list = []
    status = run_main(rest, uncaught)
    if uncaught:
        abort_job(MPI, w.rank, uncaught[0], status)
    return status


def abort_job(MPI, rank: int, exc: BaseException, status: int) -> None:
    """A rank's program raised (its traceback is printed already): abort the whole job, as a
    rank killed by a signal does, instead of leaving the other ranks waiting in a collective
    for it (up to HCCL_EXEC_TIMEOUT, 30 minutes by default). A rank that exits with a status
    of its own (sys.exit, the sanitizer's 86) ends normally: the others finish their work."""
    print(f"npurt launch: rank {rank} raised {type(exc).__name__} (traceback above); aborting the job "
          "so the other ranks do not wait for it", file=sys.stderr, flush=True)
    sys.stdout.flush()
    wait_for_output_read()
    MPI.COMM_WORLD.Abort(status or 1)


def wait_for_output_read(fds: tuple[int, ...] = (1, 2), limit_s: float = 3.0) -> None:
    """Wait (at most `limit_s`) until the MPI launcher's proxy has read what this rank wrote to
    its stdout and stderr pipes. MPI_Abort makes the launcher kill every proxy at once, and a
    proxy killed before it read the pipe loses the traceback: on a loaded machine the job then
    ended with no output at all. What the proxy has read it forwards ahead of the abort, which
    follows on the same connection. `fds` are this rank's output descriptors."""
    deadline = time.monotonic() + limit_s
    pending = array.array("i", [0])
    for fd in fds:
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                continue  # a file or a terminal: written already
        except OSError:
            continue
        while time.monotonic() < deadline:
            try:
                fcntl.ioctl(fd, termios.FIONREAD, pending, True)  # bytes still in the pipe
            except OSError:
                break
            if pending[0] == 0:
                break
            time.sleep(0.005)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--rank-of":
        sys.exit(rank_main(sys.argv[1:]))
    sys.exit(main(sys.argv[1:]))
