"""Checks of every HCCL collective against numpy, run on every rank of a communicator.

Used two ways: tests/hccl/test_hccl_collectives.py runs each check on 4 ranks in one process
(`spawn`), and tests/hccl/test_hccl_processes.py runs this file with `npurt launch -n 4`, where
it runs every check and prints one JSON line per rank with the outcome of each. Inputs are
made from the rank and a check number, so every rank can compute what every other rank
sent and the expected result.

    python tests/hccl_checks.py [--scale S] [--only NAME,...] [--timeout-phase] [--out DIR]

With --out, each rank also writes its result to DIR/rank<r>.json (the launcher may interleave
the ranks' output lines).
"""
from __future__ import annotations

import json
import os
import sys
import traceback

import numpy as np

import npurt
import npurt.hccl as hccl
from npurt.hccl import Communicator

try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - the test extra installs it
    BF16 = None

INTS = [np.int8, np.int16, np.int32, np.int64]
MOVABLE = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16,
           np.float32, np.float64]
REDUCIBLE_FLOATS = [np.float16, np.float32]
OPS = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


def data(rank: int, n: int, dtype, salt: int = 0) -> np.ndarray:
    """Rank `rank`'s input: small values (products of 4 ranks stay exact in float16)."""
    rng = np.random.default_rng(1000 * rank + salt)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        return rng.integers(1, 5, n).astype(dt) if dt.itemsize == 1 else rng.integers(-40, 90, n).astype(dt)
    return (rng.random(n) * 2 + 0.5).astype(dt)


def expect_reduced(inputs: list[np.ndarray], op: str) -> np.ndarray:
    stack = np.stack(inputs)
    dt = stack.dtype
    if dt.kind == "f" or dt == BF16:
        return OPS[op](stack.astype(np.float64), axis=0)
    return OPS[op](stack, axis=0, dtype=dt) if op in ("sum", "prod") else OPS[op](stack, axis=0)


def close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    dt = got.dtype
    if dt.kind in "iu":
        assert np.array_equal(got, want), f"{what}: got {got[:8]}..., want {want[:8]}..."
        return
    rtol = {2: 2e-2, 4: 1e-5, 8: 1e-12}[dt.itemsize]
    ok = np.allclose(got.astype(np.float64), np.asarray(want, np.float64), rtol=rtol, atol=0)
    assert ok, f"{what}: got {got[:6]}..., want {np.asarray(want)[:6]}..."


# ---------------------------------------------------------------- the checks
def check_all_reduce_integers(comm, rank, size, n):
    for dt in INTS:
        for op in OPS:
            if op == "prod" and dt == np.int16:
                continue  # not supported on A2 (checked in the error tests)
            x = npurt.to_device(data(rank, n, dt, 1))
            comm.all_reduce(x, op=op)
            close(x.to_host(), expect_reduced([data(r, n, dt, 1) for r in range(size)], op), f"{dt.__name__} {op}")


def check_all_reduce_floats(comm, rank, size, n):
    for dt in REDUCIBLE_FLOATS + ([BF16] if BF16 is not None else []):
        for op in OPS:
            if op == "prod" and dt == BF16:
                continue
            x = npurt.to_device(data(rank, n, dt, 2))
            out = npurt.empty(n, dt)
            comm.all_reduce(x, op=op, out=out)
            close(out.to_host(), expect_reduced([data(r, n, dt, 2) for r in range(size)], op), f"{np.dtype(dt)} {op}")


def check_all_reduce_large_ring(comm, rank, size, n):
    big = max(n * 64, 1 << 15)  # above the direct path's limit: the ring algorithm
    for dt, op in ((np.float32, "sum"), (np.int32, "max"), (np.float16, "sum")):
        x = npurt.to_device(data(rank, big, dt, 3))
        comm.all_reduce(x, op=op)  # in place
        close(x.to_host(), expect_reduced([data(r, big, dt, 3) for r in range(size)], op), f"ring {np.dtype(dt)}")


def check_broadcast_every_type(comm, rank, size, n):
    for i, dt in enumerate(MOVABLE + ([BF16] if BF16 is not None else [])):
        root = i % size
        x = npurt.to_device(data(rank, n, dt, 4))
        comm.broadcast(x, root=root)
        close(x.to_host(), data(root, n, dt, 4), f"{np.dtype(dt)} root {root}")
    m = max(n * 64, 1 << 15) + 7  # scatter + ring all-gather
    big = npurt.to_device(data(rank, m, np.float32, 5))
    comm.broadcast(big, root=size - 1)
    close(big.to_host(), data(size - 1, m, np.float32, 5), "large broadcast")


def check_all_gather_every_type(comm, rank, size, n):
    for dt in MOVABLE + ([BF16] if BF16 is not None else []):
        y = comm.all_gather(npurt.to_device(data(rank, n, dt, 6)))
        close(y.to_host(), np.stack([data(r, n, dt, 6) for r in range(size)]), f"{np.dtype(dt)}")


def check_reduce_scatter(comm, rank, size, n):
    for dt, op in ((np.float32, "sum"), (np.int8, "sum"), (np.int32, "prod"), (np.float16, "max"),
                   (np.int64, "min")):
        for block in (n, max(n * 128, 1 << 14) + 1):  # direct and ring paths
            x = npurt.to_device(data(rank, block * size, dt, 7))
            out = comm.reduce_scatter(x.reshape(size, block), op=op)
            want = expect_reduced([data(r, block * size, dt, 7) for r in range(size)], op)
            close(out.to_host().reshape(-1), want[rank * block:(rank + 1) * block], f"{np.dtype(dt)} {op} {block}")


def check_reduce_to_each_root(comm, rank, size, n):
    for root in range(size):
        for dt, op, m in ((np.float32, "sum", n), (np.int16, "max", n), (np.float32, "sum", max(n * 64, 1 << 15))):
            x = npurt.to_device(data(rank, m, dt, 8 + root))
            out = npurt.zeros(m, dt)
            comm.reduce(x, root=root, op=op, out=out)
            got = out.to_host()
            if rank == root:
                close(got, expect_reduced([data(r, m, dt, 8 + root) for r in range(size)], op), f"root {root}")
            else:
                assert not got.any(), "reduce wrote the receive buffer of a rank that is not the root"


def check_all_to_all(comm, rank, size, n):
    for dt in (np.int32, np.float16, np.uint8):
        x = npurt.to_device(data(rank, n * size, dt, 9))
        got = comm.all_to_all(x.reshape(size, n)).to_host()
        want = np.stack([data(r, n * size, dt, 9)[rank * n:(rank + 1) * n] for r in range(size)])
        close(got, want, f"{np.dtype(dt)}")


def check_all_to_all_v(comm, rank, size, n):
    def counts(src, dst):  # elements src sends to dst (some zero)
        return (src + 2 * dst + n) % 5

    send_counts = [counts(rank, j) for j in range(size)]
    recv_counts = [counts(j, rank) for j in range(size)]
    sent = [data(rank, sum(send_counts), np.float32, 10)]
    x = npurt.to_device(sent[0])
    out = npurt.full(sum(recv_counts) + 3, -1.0, np.float32)
    recv_displs = list(np.cumsum([0, *recv_counts])[:-1] + 3)  # leave 3 untouched elements in front
    comm.all_to_all_v(x, send_counts, out, recv_counts, recv_displs=recv_displs)
    got = out.to_host()
    assert (got[:3] == -1).all(), "all_to_all_v wrote outside the receive displacements"
    for j in range(size):
        theirs = data(j, sum(counts(j, k) for k in range(size)), np.float32, 10)
        start = sum(counts(j, k) for k in range(rank))
        close(got[recv_displs[j]:recv_displs[j] + recv_counts[j]], theirs[start:start + counts(j, rank)],
              f"block from rank {j}")


def check_send_recv_ring(comm, rank, size, n):
    s = npurt.current_stream()
    for dt in (np.float64, np.int8):
        mine = npurt.to_device(data(rank, n, dt, 11))
        got = npurt.empty(n, dt)
        right, left = (rank + 1) % size, (rank - 1) % size
        if rank % 2 == 0:  # even ranks send first, odd ranks receive first: no deadlock
            comm.send(mine, right, stream=s)
            comm.recv(got, left, stream=s)
        else:
            comm.recv(got, left, stream=s)
            comm.send(mine, right, stream=s)
        close(got.to_host(), data(left, n, dt, 11), f"{np.dtype(dt)} from rank {left}")


def check_barrier_orders_streams(comm, rank, size, n):
    flag = npurt.zeros(1, np.int32)
    comm.barrier()
    comm.all_reduce(flag.fill(1), op="sum")
    assert flag.item() == size


def check_pyacl_style_api(comm, rank, size, n):
    """The same communicator through the pyACL-style functions, with raw device addresses."""
    import npurt.acl as acl
    h = comm.handle
    assert hccl.get_rank_size(h) == (size, hccl.HCCL_SUCCESS)
    assert hccl.get_rank_id(h) == (rank, hccl.HCCL_SUCCESS)
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    host = data(rank, n, np.float32, 12)
    nbytes = host.nbytes
    send, _ = acl.rt.malloc(nbytes, 0)
    recv, _ = acl.rt.malloc(nbytes * size, 0)
    acl.rt.memcpy(send, nbytes, host.ctypes.data, nbytes, 1)
    assert hccl.all_gather(send, recv, n, hccl.HCCL_DATA_TYPE_FP32, h, stream) == hccl.HCCL_SUCCESS
    assert hccl.all_reduce(send, send, n, hccl.HCCL_DATA_TYPE_FP32, hccl.HCCL_REDUCE_MAX, h, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    out = np.empty(n * size, np.float32)
    acl.rt.memcpy(out.ctypes.data, out.nbytes, recv, out.nbytes, 2)
    close(out, np.concatenate([data(r, n, np.float32, 12) for r in range(size)]), "all_gather")
    acl.rt.memcpy(out.ctypes.data, nbytes, send, nbytes, 2)
    close(out[:n], np.max([data(r, n, np.float32, 12) for r in range(size)], axis=0), "all_reduce max")
    for ptr in (send, recv):
        acl.rt.free(ptr)
    acl.rt.destroy_stream(stream)


def check_communicators_of_pairs(comm, rank, size, n):
    """Ranks 2k and 2k+1 form a communicator of their own, from a root info the even rank made
    and shared over the world communicator (rank 2k+1 is rank 1 of it)."""
    mine = np.frombuffer(Communicator.get_root_info(), np.uint8) if rank % 2 == 0 else \
        np.zeros(hccl.HCCL_ROOT_INFO_BYTES, np.uint8)
    infos = comm.all_gather(npurt.to_device(mine)).to_host()
    first = rank - rank % 2
    if first + 1 >= size:  # an odd size leaves the last rank alone
        pair = Communicator.from_root_info(1, infos[first].tobytes(), 0)
    else:
        pair = Communicator.from_root_info(2, infos[first].tobytes(), rank % 2)
    x = npurt.to_device(np.full(n, rank + 1, np.int32))
    pair.all_reduce(x)
    want = (first + 1) + (first + 2 if first + 1 < size else 0)
    assert (x.to_host() == want).all(), f"{x.to_host()[:4]} != {want}"
    assert (pair.rank, pair.size) == ((rank % 2, 2) if first + 1 < size else (0, 1))
    pair.destroy()


def check_mismatched_counts_fail_every_rank(comm, rank, size, n):
    x = npurt.to_device(data(rank, n + (rank == size - 1), np.float32, 13))
    comm.all_reduce(x)
    _expect_failure(hccl.HCCL_E_PARA, "disagree")
    y = npurt.to_device(data(rank, n, np.float32 if rank else np.int32, 13))  # a type mismatch
    comm.all_reduce(y)
    _expect_failure(hccl.HCCL_E_PARA, "disagree")
    z = npurt.to_device(data(rank, n, np.float32, 14))  # the communicator still works
    comm.all_reduce(z)
    close(z.to_host(), expect_reduced([data(r, n, np.float32, 14) for r in range(size)], "sum"), "after mismatch")


def check_invalid_arguments_fail_at_the_call(comm, rank, size, n):
    x = npurt.to_device(data(rank, n, np.float32, 15))
    for call, code in ((lambda: comm.broadcast(x, root=size), hccl.HCCL_E_PARA),
                       (lambda: comm.send(x, rank), hccl.HCCL_E_PARA),
                       (lambda: comm.all_reduce(x, op="mean"), hccl.HCCL_E_PARA),
                       (lambda: comm.all_reduce(npurt.to_device(np.ones(4, np.uint16))), hccl.HCCL_E_NOT_SUPPORT),
                       (lambda: comm.all_reduce(npurt.to_device(np.ones(4, np.int16)), op="prod"),
                        hccl.HCCL_E_NOT_SUPPORT)):
        try:
            call()
        except hccl.HcclError as exc:
            assert exc.code == code, f"{exc} should be code {code}"
        else:
            raise AssertionError("an invalid call was accepted")
    h = comm.handle
    assert hccl.broadcast(x.ptr, n, hccl.HCCL_DATA_TYPE_FP32, size + 3, h, npurt.current_stream()) == \
        hccl.HCCL_E_PARA
    assert hccl.all_reduce(0, x.ptr, n, hccl.HCCL_DATA_TYPE_FP32, 0, h, npurt.current_stream()) == \
        hccl.HCCL_E_PTR
    comm.all_reduce(x)  # nothing was enqueued by the failed calls: the ranks stay in step
    npurt.current_stream().synchronize()


def _expect_failure(code: int, words: str) -> None:
    try:
        npurt.current_stream().synchronize()
    except npurt.NpuError as exc:
        assert exc.code == code, f"expected code {code}, got {exc}"
        assert words in str(exc), str(exc)
    else:
        raise AssertionError("the stream did not report the failed collective")


CHECKS = {name[len("check_"):]: fn for name, fn in dict(globals()).items() if name.startswith("check_")}


def run_checks(rank: int, names, n: int) -> dict:
    comm = Communicator.world()
    results = {}
    for name in names:
        try:
            CHECKS[name](comm, rank, comm.size, n)
            results[name] = "ok"
        except Exception:  # noqa: BLE001 - reported, and the next check runs
            results[name] = traceback.format_exc(limit=6)
    return results


def timeout_phase(rank: int, leaver: int) -> str:
    """A fresh communicator in which rank `leaver` returns (or exits) without joining the
    collective: the others must fail with HCCL_E_TIMEOUT at synchronize, not hang."""
    os.environ["HCCL_EXEC_TIMEOUT"] = "1"
    comm = Communicator.world()
    comm.destroy()
    comm = Communicator.world()  # a new one, with the short timeout
    if rank == leaver:
        return "left"
    x = npurt.to_device(np.ones(16, np.float32))
    comm.all_reduce(x)
    try:
        npurt.current_stream().synchronize()
    except npurt.NpuError as exc:
        if exc.code != hccl.HCCL_E_TIMEOUT:
            return f"wrong code: {exc}"
        y = npurt.to_device(np.ones(4, np.float32))
        comm.all_reduce(y)  # the communicator is now unusable: fails at once
        try:
            npurt.current_stream().synchronize()
        except npurt.NpuError as again:
            return "timeout" if again.code == hccl.HCCL_E_TIMEOUT else f"wrong code after timeout: {again}"
        return "the communicator still ran an operation after a timeout"
    return "no error"


def main(argv: list[str]) -> int:
    scale = float(argv[argv.index("--scale") + 1]) if "--scale" in argv else 1.0
    names = argv[argv.index("--only") + 1].split(",") if "--only" in argv else list(CHECKS)
    n = max(8, int(64 * scale))

    def rank_main(rank):
        size = hccl.current_world().size
        out = {"rank": rank, "size": size, "device": npurt.current_device(), "checks": run_checks(rank, names, n)}
        if "--timeout-phase" in argv:
            out["timeout"] = timeout_phase(rank, size - 1)
        return out

    out_dir = argv[argv.index("--out") + 1] if "--out" in argv else None
    for result in hccl.spawn(rank_main):
        print(json.dumps(result), flush=True)
        if out_dir:
            with open(os.path.join(out_dir, f"rank{result['rank']}.json"), "w") as f:
                json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
