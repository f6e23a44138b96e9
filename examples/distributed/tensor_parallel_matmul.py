"""Tensor-parallel matmul: a two-layer MLP, y = gelu(x @ W1) @ W2, with its weights split
over the ranks as in Megatron-LM, so no rank ever holds a whole weight matrix.

* W1 is split by columns: rank r computes h_r = gelu(x @ W1[:, cols_r]), its slice of the
  hidden layer (no communication: gelu is element-wise).
* W2 is split by rows: rank r computes the partial product h_r @ W2[rows_r, :]; an HCCL
  all_reduce sums the partial products into the full y on every rank.

The column-parallel product is also gathered with all_gather to show the other pattern. Both
results are checked against numpy with the whole matrices.

Run:  python examples/distributed/tensor_parallel_matmul.py             (2 ranks, as threads)
      npurt launch -n 2 examples/distributed/tensor_parallel_matmul.py   (2 processes)
"""
import sys

import numpy as np

import npurt
from npurt import hccl

BATCH, IN, HIDDEN, OUT = 64, 128, 256, 96


def gelu(z):
    return 0.5 * z * (1 + np.tanh(0.7978845608 * (z + 0.044715 * z ** 3)))


def forward(rank):
    comm = hccl.Communicator.world()
    n = comm.size
    rng = np.random.default_rng(3)  # every rank makes the same full matrices, keeps its slices
    x = rng.standard_normal((BATCH, IN)).astype(np.float32)
    w1 = (rng.standard_normal((IN, HIDDEN)) / np.sqrt(IN)).astype(np.float32)
    w2 = (rng.standard_normal((HIDDEN, OUT)) / np.sqrt(HIDDEN)).astype(np.float32)
    cols = slice(rank * HIDDEN // n, (rank + 1) * HIDDEN // n)

    xd = npurt.to_device(x)
    h = npurt.ops.gelu(xd @ npurt.to_device(w1[:, cols]))   # column-parallel: my hidden slice
    y = h @ npurt.to_device(w2[cols, :])                    # row-parallel: my partial product
    comm.all_reduce(y, op="sum")                            # y = sum of the partial products

    blocks = comm.all_gather(h)                             # (ranks, BATCH, HIDDEN / ranks)
    h_full = np.concatenate(list(blocks.to_host()), axis=1)

    want_h = gelu(x @ w1)
    ok_h = np.allclose(h_full, want_h, rtol=1e-3, atol=1e-3)
    ok_y = np.allclose(y.to_host(), want_h @ w2, rtol=1e-3, atol=1e-3)
    print(f"rank {rank}/{n}: W1 columns {cols.start}..{cols.stop - 1}, W2 rows likewise; "
          f"gathered hidden layer matches numpy: {ok_h}; all-reduced output matches numpy: {ok_y}")
    return ok_h and ok_y


if __name__ == "__main__":
    ok = all(hccl.spawn(forward, nranks=2))  # under npurt launch / mpirun: this process's rank
    print(f"tensor-parallel matmul: {'OK' if ok else 'FAILED'}", flush=True)  # one write: ranks share the output
    sys.exit(0 if ok else 1)
