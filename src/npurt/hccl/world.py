"""Where this process stands in a distributed job (`spawn`, in ranks.py, runs a function on every rank).

A process started by `npurt launch` has RANK, LOCAL_RANK and WORLD_SIZE (and LOCAL_WORLD_SIZE)
set, as torchrun sets them; one started by `mpiexec`/`mpirun` directly has its MPI
launcher's variables (PMI_RANK/PMI_SIZE/MPI_LOCALRANKID for MPICH and Intel MPI,
OMPI_COMM_WORLD_* for Open MPI, MV2_COMM_WORLD_* for MVAPICH), which are read the same way.
A process with none of them is a world of one, in which `spawn` runs the ranks as threads,
one simulated device each. So the same script runs in one process, under `npurt launch -n N`
and under `mpirun -n N`.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

# (rank, size, local rank, local size) variables, in the order they are looked for
_LAUNCHERS = (
    ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"),
)
_MPI_MARKERS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "PMIX_RANK")


@dataclass
class World:
    """This rank's place: `rank` of `size`, `local_rank` of `local_size` on its host.
    `kind` is "threads" (ranks are threads of this process, made by spawn), "mpi" (ranks are
    processes) or "single"."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1
    kind: str = "single"
    key: bytes = b""
    cache: dict = field(default_factory=dict, repr=False)


class _ThreadWorld(threading.local):
    world: World | None = None


_thread = _ThreadWorld()
_process: World | None = None


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw.isdigit() else None


def mpi_launched() -> bool:
    """True if an MPI launcher started this process as one of several."""
    for name in _MPI_MARKERS:
        value = _env_int(name)
        if value is not None and (name == "PMIX_RANK" or value > 1):
            return True
    return False


def _from_env(mpi_only: bool = False) -> World:
    """The world the launcher's variables describe (`mpi_only`: skip RANK/WORLD_SIZE)."""
    for rank_var, size_var, local_var, local_size_var in _LAUNCHERS[1:] if mpi_only else _LAUNCHERS:
        rank, size = _env_int(rank_var), _env_int(size_var)
        if rank is None or size is None or size < 1:
            continue
        local = _env_int(local_var)
        local_size = _env_int(local_size_var)
        kind = "mpi" if size > 1 else "single"
        return World(rank, size, rank if local is None else local, size if local_size is None else local_size,
                     kind, b"npurt-world")
    return World()


def current() -> World:
    """The calling thread's world: the spawn rank it runs, else the process's launcher world."""
    global _process
    world = _thread.world
    if world is not None:
        return world
    if _process is None:
        _process = _from_env()
    return _process


def run_as(world: World | None) -> None:
    """Make `world` the calling thread's (spawn's rank threads); None: the process's again."""
    _thread.world = world

