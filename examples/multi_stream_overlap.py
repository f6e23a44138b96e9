"""Copy/compute overlap on two streams: while the compute stream works on chunk i, the copy
stream uploads chunk i+1. Event timing shows both streams busy at once.

Run: python examples/multi_stream_overlap.py
"""
import sys

import numpy as np

import npurt

CHUNKS, ROWS, COLS = 6, 512, 1024


def main() -> int:
    rng = np.random.default_rng()
    chunks = [npurt.empty_pinned((ROWS, COLS), np.float32) for _ in range(CHUNKS)]
    for c in chunks:
        c[...] = rng.standard_normal((ROWS, COLS), dtype=np.float32)
    w_host = rng.standard_normal((COLS, 32)).astype(np.float32)
    w = npurt.to_device(w_host)

    copy, compute = npurt.Stream(), npurt.Stream()
    compute.wait_stream(npurt.current_stream())      # w was uploaded on the default stream
    timing = lambda: npurt.Event(enable_timing=True)  # noqa: E731
    start = timing()
    start.record(copy)
    copy_done, compute_spans, results = [], [], []
    for i, chunk in enumerate(chunks):
        with npurt.stream(copy):                     # upload chunk i on the copy stream
            dev = npurt.to_device(chunk)
            uploaded = copy.record_event(timing())
        copy_done.append(uploaded)
        compute.wait_event(uploaded)                 # compute waits only for its own chunk
        with npurt.stream(compute):
            began = compute.record_event(timing())
            results.append(npurt.ops.relu(dev @ w).sum(axis=0))
            ended = compute.record_event(timing())
        compute_spans.append((began, ended))
    compute.synchronize()

    last_copy = start.elapsed_time(copy_done[-1])
    first_compute = start.elapsed_time(compute_spans[0][0])
    total = start.elapsed_time(compute_spans[-1][1])
    print(f"{CHUNKS} chunks of {ROWS * COLS * 4 / 2**20:.0f} MiB: copies done at {last_copy:.2f} ms, "
          f"compute ran {first_compute:.2f} -> {total:.2f} ms")
    overlapped = sum(1 for i in range(1, CHUNKS) if start.elapsed_time(compute_spans[i - 1][0]) <
                     start.elapsed_time(copy_done[i]))
    print(f"{overlapped} of {CHUNKS - 1} uploads were still running while an earlier chunk was computing")

    ok = all(np.allclose(r.to_host(), np.maximum(c @ w_host, 0).sum(axis=0), rtol=1e-4, atol=1e-3)
             for r, c in zip(results, chunks))
    print("multi-stream overlap:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
