"""Events and cross-stream synchronisation: a producer stream fills buffers, two consumer
streams wait on its events (not on the whole stream), and timing events measure each stage.

Run: python examples/events_cross_stream.py
"""
import sys

import numpy as np

import npurt


def main() -> int:
    rng = np.random.default_rng()
    a_host = rng.standard_normal((384, 384)).astype(np.float32)
    b_host = rng.standard_normal((384, 384)).astype(np.float32)

    producer, left, right = npurt.Stream(), npurt.Stream(), npurt.Stream()
    t0, t_a, t_b = (npurt.Event(enable_timing=True) for _ in range(3))

    with npurt.stream(producer):
        t0.record()
        a = npurt.to_device(a_host)
        a_ready = producer.record_event(t_a)         # consumers of `a` need not wait for `b`
        b = npurt.to_device(b_host)
        b_ready = producer.record_event(t_b)

    left.wait_event(a_ready)
    with npurt.stream(left):
        a2 = a @ a                                   # only needs `a`
        left_done = left.record_event(npurt.Event(enable_timing=True))

    right.wait_event(b_ready)
    right.wait_stream(left)                          # also needs the left result
    with npurt.stream(right):
        c = a2 + b
        right_done = right.record_event(npurt.Event(enable_timing=True))

    right_done.synchronize()                         # the host waits for one event only
    print(f"a ready {t0.elapsed_time(t_a):.2f} ms, b ready {t0.elapsed_time(t_b):.2f} ms, "
          f"a@a done {t0.elapsed_time(left_done):.2f} ms, a@a + b done {t0.elapsed_time(right_done):.2f} ms")
    print(f"queries: left {left.query()}, right {right.query()}, a_ready {a_ready.query()}")

    got = c.to_host(stream=right)
    ok = np.allclose(got, a_host @ a_host + b_host, rtol=1e-4, atol=1e-3)
    print("events and cross-stream sync:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
