"""Data-parallel training: every rank trains the same model on its own shard of each batch,
and the gradients are all-reduced (summed over ranks) with HCCL before each update, so all
ranks keep identical weights, equal to training on the whole batch in one place.

Softmax regression with SGD, as in examples/training_pipeline.py. At the end the weights of
every rank are gathered and compared, and checked against the same training done by numpy on
full batches.

Run:  python examples/distributed/data_parallel_training.py             (2 ranks, as threads)
      npurt launch -n 2 examples/distributed/data_parallel_training.py   (2 processes)
"""
import sys

import numpy as np

import npurt
from npurt import hccl

FEATURES, CLASSES, BATCH, STEPS, LR = 32, 4, 256, 40, 0.5


def make_data(rng, n):
    centers = rng.standard_normal((CLASSES, FEATURES)) * 0.6
    labels = rng.integers(0, CLASSES, n)
    x = (centers[labels] + rng.standard_normal((n, FEATURES))).astype(np.float32)
    return x, np.eye(CLASSES, dtype=np.float32)[labels]


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_training(x_all, y_all):
    """The same training on whole batches, in one place (the reference)."""
    w, b = np.zeros((FEATURES, CLASSES), np.float32), np.zeros(CLASSES, np.float32)
    for step in range(STEPS):
        x, y = x_all[step * BATCH:(step + 1) * BATCH], y_all[step * BATCH:(step + 1) * BATCH]
        d = (softmax(x @ w + b) - y) / BATCH
        w, b = w - LR * (x.T @ d), b - LR * d.sum(axis=0)
    return w, b


def train(rank):
    comm = hccl.Communicator.world()                  # every rank of the job
    shard = BATCH // comm.size
    x_all, y_all = make_data(np.random.default_rng(7), BATCH * STEPS)   # same data everywhere
    w, b = npurt.zeros((FEATURES, CLASSES)), npurt.zeros((CLASSES,))
    for step in range(STEPS):
        rows = slice(step * BATCH + rank * shard, step * BATCH + (rank + 1) * shard)  # my shard
        x, y = npurt.to_device(x_all[rows]), npurt.to_device(y_all[rows])
        p = npurt.ops.softmax(x @ w + b)              # forward
        d = (p - y) / BATCH                           # d loss / d logits of the whole batch
        grad_w, grad_b = x.T @ d, d.sum(axis=0)       # this shard's part of the gradient
        comm.all_reduce(grad_w)                       # sum the parts: the full-batch gradient
        comm.all_reduce(grad_b)
        w -= grad_w * LR                              # the same update on every rank
        b -= grad_b * LR
    every_w = comm.all_gather(w).to_host()            # (ranks, FEATURES, CLASSES)
    same = all(np.array_equal(every_w[0], every_w[r]) for r in range(comm.size))
    ref_w, ref_b = numpy_training(x_all, y_all)
    ok = same and np.allclose(w.to_host(), ref_w, rtol=1e-3, atol=1e-5) and \
        np.allclose(b.to_host(), ref_b, rtol=1e-3, atol=1e-5)
    last = slice((STEPS - 1) * BATCH, STEPS * BATCH)
    accuracy = np.mean(np.argmax(x_all[last] @ every_w[0], axis=1) == np.argmax(y_all[last], axis=1))
    print(f"rank {rank}/{comm.size} on device {comm.device}: weights identical on all ranks: {same}, "
          f"match full-batch numpy training: {ok}, accuracy {accuracy:.2f}")
    return ok and accuracy > 0.7


if __name__ == "__main__":
    ok = all(hccl.spawn(train, nranks=2))  # under npurt launch / mpirun: this process's rank
    print(f"data-parallel training: {'OK' if ok else 'FAILED'}", flush=True)  # one write: ranks share the output
    sys.exit(0 if ok else 1)
