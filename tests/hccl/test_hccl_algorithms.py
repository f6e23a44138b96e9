"""The point-to-point collective algorithms (ring reduce-scatter / all-gather, scatter +
ring broadcast, direct exchanges) on a fake in-memory link, for rank counts and sizes the
process tests do not reach: odd rank counts, counts that do not divide evenly, in-place
buffers, both the direct (small) and ring (large) paths. The MPI transport runs exactly
these functions over mpi4py."""
from __future__ import annotations

import queue
import threading

import numpy as np
import pytest

from npurt.hccl import algorithms
from npurt.hccl import types as T

SIZES = [5, 1000, algorithms.SMALL_BYTES // 4 + 37]  # below n, direct path, ring path (float32)


class FakeLink:
    """Messages through queues keyed (source, destination, step); waits like the real link."""

    def __init__(self, rank, size, boxes):
        self.rank, self.size, self.boxes = rank, size, boxes
        self.step = 0
        self._scratch = {}

    def exchange(self, sends, recvs):
        for peer, array in sends:
            self.boxes[(self.rank, peer, self.step)].put(array.copy())
        for peer, array in recvs:
            got = self.boxes[(peer, self.rank, self.step)].get(timeout=10)
            assert got.nbytes == array.nbytes, "message size differs from the receive buffer"
            array.reshape(-1).view(np.uint8)[:] = got.reshape(-1).view(np.uint8)
        self.step += 1

    def scratch(self, size, dtype, slot):
        buf = self._scratch.get(slot)
        if buf is None or buf.nbytes < size * dtype.itemsize:
            buf = self._scratch[slot] = np.empty(size * dtype.itemsize, np.uint8)
        return buf[:size * dtype.itemsize].view(dtype)


def run_ranks(n, fn):
    """fn(link) on n threads; returns their results in rank order (and raises their errors)."""
    boxes = {(a, b, s): queue.Queue() for a in range(n) for b in range(n) for s in range(4 * n + 8)}
    results, errors = [None] * n, []

    def body(r):
        try:
            results[r] = fn(FakeLink(r, n, boxes))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def inputs(n, count, dtype=np.float32):
    return [np.random.default_rng(r).integers(-9, 9, count).astype(dtype) for r in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("count", SIZES)
@pytest.mark.parametrize("in_place", [False, True])
def test_all_reduce_gives_every_rank_the_same_sum(n, count, in_place):
    xs = inputs(n, count)

    def rank(link):
        send = xs[link.rank].copy()
        recv = send if in_place else np.zeros_like(send)
        algorithms.all_reduce(link, send, recv, T.HCCL_REDUCE_SUM, T.HCCL_DATA_TYPE_FP32)
        return recv

    for got in run_ranks(n, rank):
        np.testing.assert_array_equal(got, np.sum(xs, axis=0))


@pytest.mark.parametrize("n", [3, 4])
def test_ring_all_reduce_in_float16_gives_identical_bits_on_every_rank(n):
    xs = [np.random.default_rng(r).random(SIZES[2]).astype(np.float16) for r in range(n)]

    def rank(link):
        recv = np.empty_like(xs[0])
        algorithms.all_reduce(link, xs[link.rank], recv, T.HCCL_REDUCE_SUM, T.HCCL_DATA_TYPE_FP16)
        return recv

    results = run_ranks(n, rank)
    for got in results[1:]:
        assert got.tobytes() == results[0].tobytes()
    np.testing.assert_allclose(results[0], np.sum(np.array(xs, np.float64), axis=0), rtol=5e-3)


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("block", [3, SIZES[2] // 2])
def test_reduce_scatter_leaves_each_rank_its_reduced_block(n, block):
    xs = inputs(n, block * n, np.int32)

    def rank(link):
        recv = np.empty(block, np.int32)
        algorithms.reduce_scatter(link, xs[link.rank], recv, T.HCCL_REDUCE_MAX, T.HCCL_DATA_TYPE_INT32)
        return recv

    want = np.max(xs, axis=0)
    for r, got in enumerate(run_ranks(n, rank)):
        np.testing.assert_array_equal(got, want[r * block:(r + 1) * block])


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("count", SIZES)
def test_reduce_writes_only_the_root(n, count):
    xs = inputs(n, count)
    root = n - 1

    def rank(link):
        recv = np.zeros(count, np.float32) if link.rank == root else None
        algorithms.reduce(link, xs[link.rank], recv, T.HCCL_REDUCE_MIN, T.HCCL_DATA_TYPE_FP32, root)
        return recv

    results = run_ranks(n, rank)
    np.testing.assert_array_equal(results[root], np.min(xs, axis=0))


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("count", SIZES)
def test_broadcast_copies_the_root_everywhere(n, count):
    xs = inputs(n, count)

    def rank(link):
        buf = xs[link.rank].copy()
        algorithms.broadcast(link, buf, 1)
        return buf

    for got in run_ranks(n, rank):
        np.testing.assert_array_equal(got, xs[1])


@pytest.mark.parametrize("n", [1, 3])
def test_all_gather_stacks_every_rank(n):
    xs = inputs(n, 7)

    def rank(link):
        recv = np.empty(7 * n, np.float32)
        algorithms.all_gather(link, xs[link.rank], recv)
        return recv

    for got in run_ranks(n, rank):
        np.testing.assert_array_equal(got, np.concatenate(xs))


def test_all_to_all_v_routes_blocks_with_zero_counts_and_gaps():
    n = 3
    counts = np.array([[0, 2, 1], [3, 0, 0], [1, 1, 4]])  # counts[i, j]: i sends to j
    sends = [np.arange(counts[i].sum(), dtype=np.int64) + 100 * i for i in range(n)]

    def rank(link):
        r = link.rank
        sd = list(np.cumsum([0, *counts[r]])[:-1])
        rc = list(counts[:, r])
        rd = [d + 1 for d in np.cumsum([0, *rc])[:-1]]  # one gap element in front
        recv = np.full(sum(rc) + 1, -1, np.int64)
        algorithms.all_to_all_v(link, sends[r], list(counts[r]), sd, recv, rc, rd)
        return recv

    for r, got in enumerate(run_ranks(n, rank)):
        want = [-1]
        for i in range(n):
            start = counts[i, :r].sum()
            want.extend(sends[i][start:start + counts[i, r]])
        np.testing.assert_array_equal(got, want)
