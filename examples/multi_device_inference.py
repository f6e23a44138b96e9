"""Multi-device inference: the model is replicated to every device with `.to(device)`, the
batches are split between the devices, each device works on its own stream, and the
results come back to the host in order.

Run: python examples/multi_device_inference.py
"""
import sys

import numpy as np

import npurt

BATCHES, ROWS, D_IN, HIDDEN, CLASSES = 8, 256, 512, 128, 10


def reference(x, w1, w2):
    h = x.astype(np.float64) @ w1
    h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
    logits = h @ w2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main() -> int:
    n_dev = min(2, npurt.device_count())
    rng = np.random.default_rng()
    w1_h = (rng.standard_normal((D_IN, HIDDEN)) / np.sqrt(D_IN)).astype(np.float32)
    w2_h = (rng.standard_normal((HIDDEN, CLASSES)) / np.sqrt(HIDDEN)).astype(np.float32)
    batches = [rng.standard_normal((ROWS, D_IN)).astype(np.float32) for _ in range(BATCHES)]

    w1, w2 = npurt.to_device(w1_h), npurt.to_device(w2_h)     # on device 0
    replicas = [(w1.to(d), w2.to(d)) for d in range(n_dev)]   # device-to-device copies
    streams = [npurt.Stream(device=d) for d in range(n_dev)]
    npurt.synchronize(0)                                      # the weights and replicas are in place

    outputs = []
    for i, x in enumerate(batches):                           # round-robin over the devices
        d = i % n_dev
        rw1, rw2 = replicas[d]
        with npurt.stream(streams[d]):                        # also makes device d current
            h = npurt.ops.gelu(npurt.to_device(x) @ rw1)
            outputs.append(npurt.ops.softmax(h @ rw2))
    for d, s in enumerate(streams):
        s.synchronize()
        print(f"device {d}: {sum(1 for o in outputs if o.device == d)} batches, "
              f"{npurt.memory_allocated(d) / 2**20:.1f} MiB allocated")

    got = [o.to_host(stream=streams[o.device]) for o in outputs]
    ok = all(np.allclose(g, reference(x, w1_h, w2_h), rtol=1e-4, atol=1e-6) for g, x in zip(got, batches))
    print(f"{BATCHES} batches on {n_dev} device(s), current device still {npurt.current_device()}")
    print("multi-device inference:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
