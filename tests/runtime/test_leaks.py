"""What long-running programs must not accumulate, and what memory queries must not lag behind
(issue 11: per-request streams that touched a long-lived buffer, stale free-memory figures)."""
from __future__ import annotations

import gc
import threading
import weakref

import numpy as np

from npurt.runtime import constants as C

H2D = C.ACL_MEMCPY_HOST_TO_DEVICE
N = 64 * 1024


def _alive(refs) -> int:
    gc.collect()
    return sum(r() is not None for r in refs)


def test_destroyed_streams_are_not_kept_alive_by_a_long_lived_device_buffer(rt):
    weights = rt.malloc(N)
    host = rt.malloc_host(N)
    refs = []
    for _ in range(100):  # one stream per request, as a server does
        s = rt.create_stream()
        rt.memcpy_async(weights, N, host, N, H2D, s)
        rt.synchronize_stream(s)
        rt.destroy_stream(s)
        refs.append(weakref.ref(s))
        del s
    assert _alive(refs) < 10


def test_destroyed_streams_are_not_kept_alive_by_a_long_lived_pinned_host_buffer(rt):
    host = rt.malloc_host(N)
    refs = []
    for _ in range(100):
        dev = rt.malloc(N)
        s = rt.create_stream()
        rt.memcpy_async(dev, N, host, N, H2D, s)
        rt.synchronize_stream(s)
        rt.destroy_stream(s)
        rt.free(dev)
        refs.append(weakref.ref(s))
        del s
    assert _alive(refs) < 10


def test_a_buffer_used_by_many_live_streams_still_protects_their_queued_work(rt):
    gate = threading.Event()
    buf = rt.malloc(N)
    rt.memset(buf, N, 3, N)
    streams = [rt.create_stream() for _ in range(40)]
    outs = [np.zeros(N, np.uint8) for _ in streams]
    hosts = [rt.malloc_host(N) for _ in streams]
    for s, h in zip(streams, hosts):
        rt.launch_host_func(s, gate.wait, 30)
        rt.memcpy_async(h, N, buf, N, C.ACL_MEMCPY_DEVICE_TO_HOST, s)
    rt.free(buf)  # every stream still has to read it
    other = rt.malloc(N)
    assert other != buf
    rt.memset(other, N, 9, N)
    gate.set()
    for s, h, out in zip(streams, hosts, outs):
        rt.synchronize_stream(s)
        rt.memcpy(out.ctypes.data, N, h, N, C.ACL_MEMCPY_HOST_TO_HOST)
        assert (out == 3).all()


def _gated_free(rt, size):
    """malloc, use on a stream held by a gate, free (pending); returns the gate opener."""
    gate = threading.Event()
    s = rt.create_stream()
    dev = rt.malloc(size)
    rt.launch_host_func(s, gate.wait, 30)
    rt.memset_async(dev, size, 1, size, s)
    rt.free(dev)
    return s, gate


def test_get_mem_info_counts_a_stream_ordered_free_as_free_once_its_work_is_done(rt):
    size = 4 << 20
    rt.free(rt.malloc(size))  # the segment now exists and is cached
    free_before, _ = rt.get_mem_info(C.ACL_MEM_NORMAL)
    s, gate = _gated_free(rt, size)
    gate.set()
    rt.synchronize_stream(s)
    free_after, _ = rt.get_mem_info(C.ACL_MEM_NORMAL)
    assert free_after == free_before


def test_memory_stats_shows_no_pending_free_once_the_work_is_done(rt):
    s, gate = _gated_free(rt, N)
    assert rt.memory_stats()["pending_free_blocks"] == 1
    gate.set()
    rt.synchronize_stream(s)
    assert rt.memory_stats()["pending_free_blocks"] == 0
