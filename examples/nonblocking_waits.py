"""Waiting for the device without blocking: polling with query(), asyncio (`await
stream.wait()`, `await event`), a done-callback, and a worker thread with its own stream.

Run: python examples/nonblocking_waits.py
"""
import asyncio
import sys
import threading

import numpy as np

import npurt


def polling(x_host) -> bool:
    """Queue work, then do host work while polling until the stream is done."""
    s = npurt.Stream()
    with npurt.stream(s):
        y = npurt.ops.softmax(npurt.to_device(x_host) * 2.0)
    host_steps = 0
    while not s.query():          # never blocks
        host_steps += 1           # ... useful host work would go here ...
    print(f"  polling: stream done after {host_steps} host steps")
    e = np.exp(2 * x_host - (2 * x_host).max(axis=1, keepdims=True))
    return np.allclose(y.to_host(stream=s), e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-6)


async def with_asyncio(x_host) -> bool:
    """Two pipelines on two streams awaited concurrently; the event loop keeps running."""
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    async def pipeline(scale: float):
        s = npurt.Stream()
        with npurt.stream(s):
            y = (npurt.to_device(x_host) * scale).sum(axis=1)
            done = s.record_event(npurt.Event())
        await done                 # resumes when the device reached the event
        await s.wait()             # and when everything queued on s so far is done
        return y.to_host(stream=s)

    tick = asyncio.ensure_future(ticker())
    a, b = await asyncio.gather(pipeline(1.0), pipeline(3.0))
    tick.cancel()
    print(f"  asyncio: both streams awaited; the event loop ran {ticks} other steps meanwhile")
    ref = x_host.sum(axis=1)
    return np.allclose(a, ref, rtol=1e-4, atol=1e-4) and np.allclose(b, 3 * ref, rtol=1e-4, atol=1e-4)


def worker_thread(x_host) -> bool:
    """A host thread with its own stream (new threads start on device 0) hands its result
    back; add_done_callback tells the main thread when the device work is done."""
    out, finished = {}, threading.Event()

    def work():
        s = npurt.Stream()
        with npurt.stream(s):
            out["y"] = npurt.ops.relu(npurt.to_device(x_host))
        s.add_done_callback(lambda stream: finished.set())   # runs in a device worker

    t = threading.Thread(target=work)
    t.start()
    t.join()
    ok = finished.wait(timeout=30)
    print(f"  worker thread: done-callback fired: {ok}")
    return ok and np.array_equal(out["y"].to_host(), np.maximum(x_host, 0))


def main() -> int:
    x_host = np.random.default_rng().standard_normal((512, 256)).astype(np.float32)
    results = {"polling": polling(x_host), "asyncio": asyncio.run(with_asyncio(x_host)),
               "worker thread": worker_thread(x_host)}
    ok = all(results.values())
    print("non-blocking waits:", "OK" if ok else f"FAILED {results}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
