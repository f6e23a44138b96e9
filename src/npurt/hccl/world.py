"""Where this process stands in a distributed job, and `spawn` to run a function on every rank.

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
import uuid
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


def spawn(fn, nranks: int | None = None, args: tuple = ()) -> list:
    """Run `fn(rank, *args)` on every rank and return the results in rank order.

    Launched as several processes (`npurt launch`, `mpirun`): this process's rank only, after
    making device LOCAL_RANK current. In a single process: `nranks` threads (default: every
    visible device), thread i on device i; an exception on any rank fails the collectives
    the others wait in (instead of letting them wait for HCCL_EXEC_TIMEOUT) and is raised
    here, noting the rank."""
    import npurt

    world = current()
    if world.kind == "mpi":
        npurt.set_device(world.local_rank)
        return [fn(world.rank, *args)]
    n = npurt.device_count() if nranks is None else nranks
    if type(n) is not int or not 1 <= n <= npurt.device_count():
        raise ValueError(f"spawn: nranks must be 1..{npurt.device_count()} (one simulated device per rank; "
                         f"set NPURT_DEVICE_COUNT for more), got {nranks!r}")
    key = b"spawn:" + uuid.uuid4().bytes
    results: list = [None] * n
    errors: list = []  # (rank, exception) in the order they were raised: the first is the cause
    lock = threading.Lock()

    def body(rank: int) -> None:
        _thread.world = World(rank, n, rank, n, "threads", key)
        try:
            npurt.set_device(rank)
            results[rank] = fn(rank, *args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            with lock:
                errors.append((rank, exc))
            from . import local
            local.abort(key, f"rank {rank} raised {type(exc).__name__}: {exc}")
        finally:
            _thread.world = None

    threads = [threading.Thread(target=body, args=(r,), name=f"npurt-rank{r}") for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        rank, exc = errors[0]
        exc.add_note(f"(raised on rank {rank} of {n}; the other ranks' collectives were failed)")
        raise exc
    return results
