"""A training-style pipeline: softmax regression trained with SGD on the device.

Batches are uploaded on a copy stream while the compute stream runs forward (matmul +
softmax), backward (transpose-matmul, reductions) and the in-place weight update. The first
step's gradients are checked against numpy, and the loss must go down.

Run: python examples/training_pipeline.py
"""
import sys

import numpy as np

import npurt

FEATURES, CLASSES, BATCH, STEPS, LR = 32, 4, 256, 60, 0.5


def make_data(rng, n):
    centers = rng.standard_normal((CLASSES, FEATURES)) * 0.6
    labels = rng.integers(0, CLASSES, n)
    x = (centers[labels] + rng.standard_normal((n, FEATURES))).astype(np.float32)
    return x, np.eye(CLASSES, dtype=np.float32)[labels]


def loss_of(p, y):
    return float(-np.mean(np.log(np.sum(p * y, axis=1) + 1e-12)))


def numpy_grads(x, y, w, b):
    logits = x @ w + b
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    d = (e / e.sum(axis=1, keepdims=True) - y) / len(x)
    return x.T @ d, d.sum(axis=0)


def main() -> int:
    rng = np.random.default_rng()
    x_all, y_all = make_data(rng, BATCH * STEPS)
    x_pinned = npurt.empty_pinned(x_all.shape, np.float32)   # async uploads need pinned memory
    y_pinned = npurt.empty_pinned(y_all.shape, np.float32)
    x_pinned[...], y_pinned[...] = x_all, y_all

    w0 = (rng.standard_normal((FEATURES, CLASSES)) * 0.01).astype(np.float32)
    w, b = npurt.to_device(w0), npurt.zeros((CLASSES,))
    copy, compute = npurt.Stream(), npurt.Stream()
    compute.wait_stream(npurt.current_stream())             # w and b were made on the default stream
    ok, losses = True, []
    for step in range(STEPS):
        rows = slice(step * BATCH, (step + 1) * BATCH)
        with npurt.stream(copy):                              # upload the batch
            x, y = npurt.to_device(x_pinned[rows]), npurt.to_device(y_pinned[rows])
            ready = copy.record_event()
        compute.wait_event(ready)
        with npurt.stream(compute):
            p = npurt.ops.softmax(x @ w + b)                  # forward
            d = (p - y) / BATCH                               # d loss / d logits
            grad_w, grad_b = x.T @ d, d.sum(axis=0)           # backward
            if step == 0:
                ref_w, ref_b = numpy_grads(x_all[rows], y_all[rows], w0, 0)
                ok &= np.allclose(grad_w.to_host(stream=compute), ref_w, rtol=1e-3, atol=1e-5)
                ok &= np.allclose(grad_b.to_host(stream=compute), ref_b, rtol=1e-3, atol=1e-5)
                print(f"step 0 gradients match numpy: {ok}")
            w -= grad_w * LR                                  # in-place SGD update
            b -= grad_b * LR
            if step % 10 == 0 or step == STEPS - 1:
                losses.append(loss_of(p.to_host(stream=compute), y_all[rows]))
                print(f"step {step:3d}  loss {losses[-1]:.4f}")
    compute.synchronize()
    ok &= losses[-1] < 0.5 * losses[0]
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    print("training pipeline:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
