"""Memory basics: device arrays, views, copies, pinned host memory and the caching pool.

Run: python examples/memory_basics.py
"""
import sys

import numpy as np

import npurt


def main() -> int:
    rng = np.random.default_rng()
    host = rng.standard_normal((256, 256)).astype(np.float32)

    x = npurt.to_device(host)                  # host -> device (queued on the current stream)
    print(f"{x!r}: {x.nbytes} bytes on device {x.device}")
    top_left = x[:128, :128]                   # a view: no copy, shares x's memory
    top_left[...] = npurt.zeros((128, 128))    # writes through to x
    expected = host.copy()
    expected[:128, :128] = 0
    ok = np.array_equal(x.to_host(), expected)  # device -> host (waits for the copy)

    # the caching pool: freed memory stays reserved and is reused without the driver
    stats = npurt.memory_stats()
    print(f"allocated {stats['allocated_bytes']} B, reserved {stats['reserved_bytes']} B, "
          f"{stats['pool_hits']}/{stats['num_allocs']} allocations served from the pool")
    del x, top_left                            # freed when collected (stream-ordered)
    y = npurt.empty((256, 256))                # same size: reuses the cached block
    print(f"after del + new array: pool hits {npurt.memory_stats()['pool_hits']}")
    del y
    npurt.empty_cache()
    print(f"after empty_cache: reserved {npurt.memory_reserved()} B")

    # pinned (page-locked) host memory makes host<->device copies truly asynchronous
    pinned = npurt.empty_pinned((1024,), np.float32)
    pinned[:] = np.arange(1024)
    s = npurt.Stream()
    d = npurt.to_device(pinned, stream=s)
    back = npurt.empty_pinned((1024,), np.float32)
    d.copy_to_host(out=back, stream=s, blocking=False)
    s.synchronize()
    ok &= np.array_equal(back, pinned)

    # device memory is not host memory: implicit conversion is refused
    try:
        np.asarray(d)
        ok = False
    except npurt.HostConversionError as exc:
        print(f"np.asarray(device_array) -> {type(exc).__name__} (code {exc.code})")

    free, total = npurt.mem_get_info()
    print(f"device 0: {free / 2**30:.1f} GiB free of {total / 2**30:.0f} GiB")
    print("memory basics:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
