"""`spawn(fn, nranks)`: run a function on every rank of a job, as threads or as this process's rank.

Launched as several processes (`npurt launch`, `mpirun`), each process runs its own rank;
in one process the ranks are threads, one simulated device each (the Pythonic API's devices:
this module sits with it, above the collectives engine).
"""
from __future__ import annotations

import threading
import uuid

from ..devices import device_count, set_device
from . import local
from .world import World, current as current_world, run_as


def spawn(fn, nranks: int | None = None, args: tuple = ()) -> list:
    """Run `fn(rank, *args)` on every rank and return the results in rank order.

    Launched as several processes (`npurt launch`, `mpirun`): this process's rank only, after
    making device LOCAL_RANK current. In a single process: `nranks` threads (default: every
    visible device), thread i on device i; an exception on any rank fails the collectives
    the others wait in (instead of letting them wait for HCCL_EXEC_TIMEOUT) and is raised
    here, noting the rank."""
    world = current_world()
    if world.kind == "mpi":
        set_device(world.local_rank)
        return [fn(world.rank, *args)]
    n = device_count() if nranks is None else nranks
    if type(n) is not int or not 1 <= n <= device_count():
        raise ValueError(f"spawn: nranks must be 1..{device_count()} (one simulated device per rank; "
                         f"set NPURT_DEVICE_COUNT for more), got {nranks!r}")
    key = b"spawn:" + uuid.uuid4().bytes
    results: list = [None] * n
    errors: list = []  # (rank, exception) in the order they were raised: the first is the cause
    lock = threading.Lock()

    def body(rank: int) -> None:
        run_as(World(rank, n, rank, n, "threads", key))
        try:
            set_device(rank)
            results[rank] = fn(rank, *args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            with lock:
                errors.append((rank, exc))
            local.abort(key, f"rank {rank} raised {type(exc).__name__}: {exc}")
        finally:
            run_as(None)

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
