"""The collectives figure: AllReduce across 2 processes, npurt.hccl against plain mpi4py.

`measure_allreduce` starts 2 ranks with the MPI launcher (`mpiexec -n 2 python -m
npurt.apps.bench.collectives`); each rank holds a float32 buffer of the profile's size in device
memory. Pairs alternate npurt's `Communicator.all_reduce` + synchronize with mpi4py's
`Allreduce` of numpy buffers of the same size; both are timed between barriers, as the slower
rank sees them. Bus bandwidth is NCCL's convention, size * 2(n-1)/n / time, so the ratio is
reference time / npurt time (> 1: npurt is faster).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

import npurt
from npurt.hccl import Communicator, spawn

from ..launcher import find_mpiexec
from .harness import Profile, Stat

RANKS = 2


def measure_allreduce(session, p: Profile) -> dict[str, Stat]:
    mpiexec = find_mpiexec()
    try:
        import mpi4py  # noqa: F401 - only checks the extra is there
    except ImportError:
        raise RuntimeError("needs mpi4py and an MPI library: pip install 'npurt[dist]'") from None
    if mpiexec is None:
        raise RuntimeError("found no mpiexec: pip install 'npurt[dist]'")
    command = [mpiexec, "-n", str(RANKS), sys.executable, "-c", RANK_PROGRAM,
               str(p.allreduce_bytes), str(p.big_repeats), str(p.warmup)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        out, err = child.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # mpiexec and the ranks it started
        child.communicate()
        raise RuntimeError("the 2-process AllReduce run did not finish within 600 s") from None
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if child.returncode != 0 or not lines:
        raise RuntimeError(f"the 2-process AllReduce run failed (exit {child.returncode}): "
                           f"{(err or out).strip()[-2000:]}")
    samples = json.loads(lines[-1])
    npurt_s, mpi_s = samples["npurt_s"], samples["mpi_s"]
    bus = p.allreduce_bytes * 2 * (RANKS - 1) / RANKS
    return {
        "allreduce_busbw_ratio": Stat.of([m / s for m, s in zip(mpi_s, npurt_s)]),
        "allreduce_busbw_gbps": Stat.of([bus / s / 1e9 for s in npurt_s]),
        "mpi_allreduce_busbw_gbps": Stat.of([bus / s / 1e9 for s in mpi_s]),
    }


def _rank(nbytes: int, repeats: int, warmup: int) -> None:
    """One rank of the measurement (run under mpiexec)."""
    from mpi4py import MPI

    def main(rank: int) -> None:
        world = MPI.COMM_WORLD
        comm = Communicator.world()
        n = nbytes // 4
        host = np.random.default_rng(rank).random(n, dtype=np.float32)
        x, out = npurt.to_device(host), npurt.empty(n, np.float32)
        ref_send, ref_recv = host.copy(), np.empty_like(host)
        stream = npurt.current_stream()

        def ours():
            comm.all_reduce(x, out=out, stream=stream)
            stream.synchronize()

        def theirs():
            world.Allreduce(ref_send, ref_recv, op=MPI.SUM)

        def timed(fn) -> float:
            world.Barrier()
            t0 = time.perf_counter()
            fn()
            return world.allreduce(time.perf_counter() - t0, op=MPI.MAX)

        for _ in range(warmup):
            timed(ours)
            timed(theirs)
        if not np.allclose(out.to_host(), ref_recv, rtol=1e-5):
            raise SystemExit("npurt's AllReduce disagrees with MPI's")
        ours_s, theirs_s = [], []
        for i in range(repeats):  # alternate which goes first
            if i % 2:
                ours_s.append(timed(ours))
                theirs_s.append(timed(theirs))
            else:
                theirs_s.append(timed(theirs))
                ours_s.append(timed(ours))
        if rank == 0:
            print(json.dumps({"npurt_s": ours_s, "mpi_s": theirs_s}), flush=True)

    spawn(main)



# each rank's program (`python -c`, not `-m`: the bench package already imports this module)
RANK_PROGRAM = ("import sys; from npurt.apps.bench.collectives import _rank; "
                "_rank(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))")
