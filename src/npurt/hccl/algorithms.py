"""Collective algorithms over point-to-point messages (used by the MPI transport).

Every algorithm is a sequence of steps; in each step a rank posts some sends and receives
and waits for all of them (`Link.exchange`). Every rank of the operation runs the same number
of steps, so a step number names a message unambiguously. Buffers are numpy views of device
memory, handed to the link as they are: data moves between the device memories of two ranks
with no staging copy, and reductions write straight into the receive buffer.

* all_reduce: for large buffers a ring: reduce-scatter (n-1 steps, each rank ends with one
  fully reduced chunk) then all-gather (n-1 steps); each rank sends and receives
  2(n-1)/n of the buffer, the bandwidth optimum. Small buffers: every rank sends its buffer
  to every other and reduces the n inputs in rank order (one step, lowest latency).
* reduce_scatter: the ring's first half; reduce: the same, then each chunk goes to the root.
* broadcast: large buffers are scattered by the root and then all-gathered around the ring
  (the root sends each byte once); small ones go directly from the root.
* all_gather, all_to_all(_v), send/recv: direct messages, one step.

Chunks are reduced once along the ring and then copied, so every rank gets the same bits.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from .ops import partition
from .reduction import combine, reduce_many

SMALL_BYTES = 64 << 10  # below this, latency matters more than bandwidth


class Link(Protocol):
    rank: int
    size: int

    def exchange(self, sends: list[tuple[int, np.ndarray]], recvs: list[tuple[int, np.ndarray]]) -> None:
        """One step: send each array to its peer, receive each from its peer, wait for all."""

    def scratch(self, shape: int, dtype: np.dtype, slot: int) -> np.ndarray:
        """A reusable host buffer (slot 0, 1, ...) for data in transit."""


def all_reduce(link: Link, send: np.ndarray, recv: np.ndarray, red: int, code: int) -> None:
    n, r = link.size, link.rank
    count = send.size
    if n == 1:
        if not np.shares_memory(send, recv):
            np.copyto(recv, send)
        return
    if recv.nbytes <= SMALL_BYTES or count < n:
        _gather_and_reduce(link, send, recv, red, code)
        return
    b = partition(count, n)
    right, left = (r + 1) % n, (r - 1) % n
    in_place = np.shares_memory(send, recv)
    tmp = link.scratch(b[1] - b[0] + 1, send.dtype, 0) if in_place else None
    for s in range(n - 1):  # reduce-scatter: finally chunk r of recv is fully reduced
        cs, cr = (r - s - 1) % n, (r - s - 2) % n
        outgoing = (send if s == 0 else recv)[b[cs]:b[cs + 1]]
        target = recv[b[cr]:b[cr + 1]]
        incoming = tmp[:target.size] if in_place else target
        link.exchange([(right, outgoing)], [(left, incoming)])
        combine(target, incoming, send[b[cr]:b[cr + 1]], red, code)
    for s in range(n - 1):  # all-gather the reduced chunks around the ring
        cs, cr = (r - s) % n, (r - s - 1) % n
        link.exchange([(right, recv[b[cs]:b[cs + 1]])], [(left, recv[b[cr]:b[cr + 1]])])


def _gather_and_reduce(link: Link, send, recv, red: int, code: int, root: int | None = None) -> None:
    """Every rank's input to every rank (or to `root`), reduced there in rank order."""
    n, r = link.size, link.rank
    if root is not None and r != root:
        link.exchange([(root, send)], [])
        return
    others = [j for j in range(n) if j != r]
    inputs = {j: link.scratch(send.size, send.dtype, i) for i, j in enumerate(others)}
    link.exchange([] if root is not None else [(j, send) for j in others], list(inputs.items()))
    reduce_many(recv, [send if j == r else inputs[j] for j in range(n)], red, code)


def reduce_scatter(link: Link, send: np.ndarray, recv: np.ndarray, red: int, code: int) -> None:
    n, r = link.size, link.rank
    count = recv.size
    if n == 1:
        np.copyto(recv, send)
        return
    if send.nbytes <= SMALL_BYTES:
        others = [j for j in range(n) if j != r]
        inputs = {j: link.scratch(count, send.dtype, i) for i, j in enumerate(others)}
        link.exchange([(j, send[j * count:(j + 1) * count]) for j in others], list(inputs.items()))
        mine = send[r * count:(r + 1) * count]
        reduce_many(recv, [mine if j == r else inputs[j] for j in range(n)], red, code)
        return
    _ring_reduce_scatter(link, send, [count * i for i in range(n + 1)], recv, red, code)


def _ring_reduce_scatter(link: Link, send, b: list[int], out, red: int, code: int) -> None:
    """Ring reduce-scatter of `send` cut at bounds `b`: chunk r, fully reduced, ends in `out`."""
    n, r = link.size, link.rank
    right, left = (r + 1) % n, (r - 1) % n
    widest = max(b[i + 1] - b[i] for i in range(n))
    held = None
    for s in range(n - 1):
        cs, cr = (r - s - 1) % n, (r - s - 2) % n
        outgoing = send[b[cs]:b[cs + 1]] if s == 0 else held
        size = b[cr + 1] - b[cr]
        target = out if s == n - 2 else link.scratch(widest, send.dtype, s % 2)[:size]
        link.exchange([(right, outgoing)], [(left, target)])
        combine(target, target, send[b[cr]:b[cr + 1]], red, code)
        held = target


def reduce(link: Link, send: np.ndarray, recv: np.ndarray | None, red: int, code: int, root: int) -> None:
    n, r = link.size, link.rank
    count = send.size
    if n == 1:
        if not np.shares_memory(send, recv):
            np.copyto(recv, send)
        return
    if send.nbytes <= SMALL_BYTES or count < n:
        _gather_and_reduce(link, send, recv, red, code, root)
        return
    b = partition(count, n)
    mine = link.scratch(b[r + 1] - b[r], send.dtype, 2)
    _ring_reduce_scatter(link, send, b, mine, red, code)
    if r == root:  # gather the chunks
        np.copyto(recv[b[r]:b[r + 1]], mine)
        link.exchange([], [(j, recv[b[j]:b[j + 1]]) for j in range(n) if j != r])
    else:
        link.exchange([(root, mine)], [])


def broadcast(link: Link, buf: np.ndarray, root: int) -> None:
    n, r = link.size, link.rank
    if n == 1:
        return
    if buf.nbytes <= SMALL_BYTES or n == 2 or buf.size < n:
        if r == root:
            link.exchange([(j, buf) for j in range(n) if j != root], [])
        else:
            link.exchange([], [(root, buf)])
        return
    b = partition(buf.size, n)
    if r == root:  # scatter: chunk j to rank j
        link.exchange([(j, buf[b[j]:b[j + 1]]) for j in range(n) if j != root], [])
    else:
        link.exchange([], [(root, buf[b[r]:b[r + 1]])])
    right, left = (r + 1) % n, (r - 1) % n
    for s in range(n - 1):  # all-gather around the ring
        cs, cr = (r - s) % n, (r - s - 1) % n
        link.exchange([(right, buf[b[cs]:b[cs + 1]])], [(left, buf[b[cr]:b[cr + 1]])])


def all_gather(link: Link, send: np.ndarray, recv: np.ndarray) -> None:
    n, r, count = link.size, link.rank, send.size
    np.copyto(recv[r * count:(r + 1) * count], send)
    others = [j for j in range(n) if j != r]
    link.exchange([(j, send) for j in others], [(j, recv[j * count:(j + 1) * count]) for j in others])


def all_to_all_v(link: Link, send: np.ndarray, send_counts, send_displs, recv: np.ndarray, recv_counts,
                 recv_displs) -> None:
    r = link.rank
    if recv_counts[r]:
        np.copyto(recv[recv_displs[r]:recv_displs[r] + recv_counts[r]],
                  send[send_displs[r]:send_displs[r] + send_counts[r]])
    others = [j for j in range(link.size) if j != r]
    link.exchange([(j, send[send_displs[j]:send_displs[j] + send_counts[j]]) for j in others if send_counts[j]],
                  [(j, recv[recv_displs[j]:recv_displs[j] + recv_counts[j]]) for j in others if recv_counts[j]])
