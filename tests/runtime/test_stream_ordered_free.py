"""Stream-ordered memory reuse: a device block freed while queued work may still use it goes
back to the pool only once that work has finished (issue 3, scope 8)."""
from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.memory_take import take_at
from npurt.runtime.errors import InvalidValueError

H2D, D2H, D2D = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST, C.ACL_MEMCPY_DEVICE_TO_DEVICE
N = 64 * 1024


def _view(ptr: int, n: int = N) -> np.ndarray:
    return np.frombuffer((ctypes.c_ubyte * n).from_address(ptr), np.uint8)


@pytest.fixture
def gate():
    g = threading.Event()
    yield g
    g.set()


def _pending(rt) -> int:
    return rt.memory_stats()["pending_free_blocks"]


def test_a_block_freed_under_queued_work_is_not_handed_out_again(rt, gate):
    s = rt.create_stream()
    dev = rt.malloc(N)
    rt.memset(dev, N, 7, N)
    out = rt.malloc_host(N)
    rt.launch_host_func(s, gate.wait, 30)
    rt.memcpy_async(out, N, dev, N, D2H, s)  # reads `dev` later
    rt.free(dev)
    assert _pending(rt) == 1
    other = rt.malloc(N)
    assert other != dev  # the pending block is not reused
    rt.memset(other, N, 0x11, N)  # would clobber the queued copy's source if it aliased
    gate.set()
    rt.synchronize_stream(s)
    assert (_view(out) == 7).all()


def test_a_pending_block_returns_to_the_pool_once_the_work_is_done(rt, gate):
    s = rt.create_stream()
    dev = rt.malloc(N)
    rt.launch_host_func(s, gate.wait, 30)
    rt.memset_async(dev, N, 1, N, s)
    rt.free(dev)
    gate.set()
    rt.synchronize_stream(s)
    maps = rt.memory_stats()["segment_maps"]
    again = rt.malloc(N)
    assert again == dev  # back in the cache, and reused
    assert _pending(rt) == 0
    assert rt.memory_stats()["segment_maps"] == maps


def test_a_block_with_no_queued_work_is_cached_at_once(rt):
    s = rt.create_stream()
    dev = rt.malloc(N)
    rt.memset_async(dev, N, 1, N, s)
    rt.synchronize_stream(s)
    rt.free(dev)
    assert _pending(rt) == 0
    assert rt.malloc(N) == dev


def test_the_destination_of_a_queued_copy_is_protected_too(rt, gate):
    s = rt.create_stream()
    src = rt.malloc_host(N)
    _view(src)[:] = 9
    dst = rt.malloc(N)
    rt.launch_host_func(s, gate.wait, 30)
    rt.memcpy_async(dst, N, src, N, H2D, s)  # will write `dst`
    rt.free(dst)
    other = rt.malloc(N)
    rt.memset(other, N, 0, N)
    gate.set()
    rt.synchronize_stream(s)
    assert other != dst
    assert not _view_device(rt, other).any()  # the late copy did not land in the new allocation


def _view_device(rt, ptr: int) -> np.ndarray:
    out = np.empty(N, np.uint8)
    rt.memcpy(out.ctypes.data, N, ptr, N, D2H)
    return out


def test_uses_on_several_streams_all_have_to_finish(rt):
    a, b = rt.create_stream(), rt.create_stream()
    gate_a, gate_b = threading.Event(), threading.Event()
    try:
        dev = rt.malloc(N)
        other = rt.malloc(N)
        rt.launch_host_func(a, gate_a.wait, 30)
        rt.launch_host_func(b, gate_b.wait, 30)
        rt.memcpy_async(other, N, dev, N, D2D, a)
        rt.memset_async(dev, N, 3, N, b)
        rt.free(dev)
        gate_a.set()
        rt.synchronize_stream(a)
        assert rt.malloc(N) != dev  # stream b still has work on it
        gate_b.set()
        rt.synchronize_stream(b)
        rt.empty_cache()  # collects finished pending frees
        assert _pending(rt) == 0
    finally:
        gate_a.set()
        gate_b.set()


def test_empty_cache_does_not_release_a_pending_block(rt, gate):
    s = rt.create_stream()
    dev = rt.malloc(N)
    rt.launch_host_func(s, gate.wait, 30)
    rt.memset_async(dev, N, 5, N, s)
    rt.free(dev)
    rt.empty_cache()
    assert rt.memory_stats()["reserved_bytes"] > 0
    assert _pending(rt) == 1
    gate.set()
    rt.synchronize_stream(s)
    rt.empty_cache()
    assert rt.memory_stats()["reserved_bytes"] == 0


def test_a_pending_free_counts_as_freed_in_the_stats(rt, gate):
    s = rt.create_stream()
    dev = rt.malloc(N)
    rt.launch_host_func(s, gate.wait, 30)
    rt.memset_async(dev, N, 5, N, s)
    rt.free(dev)
    stats = rt.memory_stats()
    assert stats["allocated_bytes"] == 0 and stats["num_frees"] == 1
    assert stats["active_blocks"] == 0


def test_a_pending_block_cannot_be_freed_twice(rt, gate):
    s = rt.create_stream()
    dev = rt.malloc(N)
    rt.launch_host_func(s, gate.wait, 30)
    rt.memset_async(dev, N, 5, N, s)
    rt.free(dev)
    with pytest.raises(InvalidValueError, match="double free"):
        rt.free(dev)


def test_blocks_pending_on_two_streams_return_only_when_both_have_finished(rt, gate):
    s1, s2 = rt.create_stream(), rt.create_stream()
    second = threading.Event()
    dev = rt.malloc(N)
    rt.launch_host_func(s1, gate.wait, 30)
    rt.memset_async(dev, N, 1, N, s1)
    rt.launch_host_func(s2, second.wait, 30)
    rt.memset_async(dev, N, 2, N, s2)
    rt.free(dev)
    gate.set()
    rt.synchronize_stream(s1)
    assert rt.malloc(N) != dev  # s2 still uses it
    assert _pending(rt) == 1
    second.set()
    rt.synchronize_stream(s2)
    assert rt.malloc(N) == dev
    assert _pending(rt) == 0


def test_thousands_of_pending_frees_come_back_once_their_stream_ran(rt, gate):
    s = rt.create_stream()
    rt.launch_host_func(s, gate.wait, 30)
    freed = set()
    for _ in range(3000):  # a host running far ahead of its stream, freeing a temporary per op
        p = rt.malloc(512)
        rt.memset_async(p, 512, 0, 512, s)
        rt.free(p)
        freed.add(p)
    assert _pending(rt) == 3000
    assert len(freed) == 3000  # none reused while its memset is queued
    gate.set()
    rt.synchronize_stream(s)
    again = {rt.malloc(512) for _ in range(100)}
    assert again <= freed
    assert _pending(rt) == 0


def test_best_fit_stops_searching_bins_that_ran_empty(rt, gate):
    # each split leaves a remainder of a new size; the sizes best_fit walks must not pile up
    from npurt.runtime.runtime import RUNTIME
    s = rt.create_stream()
    rt.launch_host_func(s, gate.wait, 30)
    for _ in range(2000):
        p = rt.malloc(512)
        rt.memset_async(p, 512, 0, 512, s)
        rt.free(p)
    pool = RUNTIME.device(0).memory.normal_pool
    assert len(pool.bin_sizes) < 50
    gate.set()
    rt.synchronize_stream(s)


def test_peak_reserved_bytes_remembers_the_pools_high_water_mark(rt):
    big = rt.malloc(8 << 20)
    peak = rt.memory_stats()["peak_reserved_bytes"]
    assert peak >= rt.memory_stats()["reserved_bytes"] >= 8 << 20
    rt.free(big)
    rt.empty_cache()
    stats = rt.memory_stats()
    assert stats["reserved_bytes"] < 8 << 20 <= stats["peak_reserved_bytes"] == peak
    RUNTIME_reset_peak = __import__("npurt.runtime.runtime", fromlist=["RUNTIME"]).RUNTIME.device(0).memory.reset_peak
    RUNTIME_reset_peak()
    assert rt.memory_stats()["peak_reserved_bytes"] == rt.memory_stats()["reserved_bytes"]


def test_the_holders_given_to_enqueue_are_held_until_the_task_retired(rt, gate):
    """Stream.enqueue(task, holders=...) is the one way a task's use of memory is recorded:
    under the task's sequence number, before any thread can run it."""
    from npurt.runtime import RUNTIME, HostFuncTask
    s = rt.create_stream()
    dev = rt.malloc(N)
    block = RUNTIME.device(0).memory.live[dev]
    rt.enqueue(s, HostFuncTask(gate.wait, (30,), "wait"), holders=[block, None])  # None: pageable host
    rt.free(dev)
    assert _pending(rt) == 1  # the queued task holds it
    gate.set()
    rt.synchronize_stream(s)
    assert rt.malloc(N) == dev  # retired: back in the cache, and reused


def test_a_malloc_that_finds_no_memory_waits_for_pending_frees_and_retries(fresh_runtime, monkeypatch):
    # issue 29: it reported 207001 while the memory it needed was one finished task away
    import time
    monkeypatch.setenv("NPURT_HBM_SIZE", "64M")
    rt = fresh_runtime
    rt.init()
    rt.set_device(0)
    from npurt.runtime.errors import OutOfMemoryError
    free, total = rt.get_mem_info(C.ACL_HBM_MEM)
    big = free * 6 // 10
    s = rt.create_stream()
    a = rt.malloc(big)
    rt.launch_host_func(s, time.sleep, 0.5)   # the set below waits behind this
    rt.memset_async(a, big, 1, 4096, s)
    rt.free(a)                                 # stream-ordered: pending until the set ran
    assert rt.memory_stats()["pending_free_blocks"] == 1
    b = rt.malloc(big)                         # needs a's memory: waits for s, then reuses it
    assert b == a
    assert rt.memory_stats()["num_ooms"] == 0
    rt.free(b)
    with pytest.raises(OutOfMemoryError):      # what cannot be had is still an error
        rt.malloc(total * 2)


def test_the_retire_of_the_work_a_pending_block_waits_for_gives_it_back_to_its_bin(rt, gate):
    """No scan at the next malloc: the stream's retirement of the use puts the block back in
    its bin, so an exact-size malloc finds it on the fast path."""
    mem = rt.current_device().memory
    s = rt.create_stream()
    dev = rt.malloc(N)
    rt.launch_host_func(s, gate.wait, 30)
    rt.memset_async(dev, N, 1, N, s)
    block = mem.live[dev]
    rt.free(dev)
    assert mem.pending_count == 1 and block not in mem.normal_pool.bins.get(block.size, ())
    gate.set()
    rt.synchronize_stream(s)
    # the retire callback runs in the retiring thread right after it wakes the host: wait for it
    # by its effect (bounded), never by a sleep of a guessed length
    for _ in range(10_000):
        if mem.pending_count == 0:
            break
        threading.Event().wait(0.001)
    assert mem.pending_count == 0 and block in mem.normal_pool.bins[block.size]
    assert rt.malloc(N) == dev


def test_a_pending_block_taken_back_at_its_address_still_waits_for_its_queued_work(rt, gate):
    """take_at (a checkpointed pool state put back: torch's setCheckpointPoolState) makes a
    pending block live again; the work queued on it is still the block's, so its next free
    is pending too and emptying the cache keeps its pages (they were once unmapped under a
    worker's write: a segfault)."""
    mem = rt.current_device().memory
    s = rt.create_stream()
    dev = rt.malloc(N)
    rt.launch_host_func(s, gate.wait, 30)
    rt.memset_async(dev, N, 5, N, s)  # writes `dev` once the gate opens
    rt.free(dev)
    assert _pending(rt) == 1
    assert take_at(mem, dev, N)
    assert _pending(rt) == 0  # live again
    rt.free(dev)
    assert _pending(rt) == 1, "freed as if nothing were queued on it"
    unmaps = rt.memory_stats()["segment_unmaps"]
    rt.empty_cache()
    assert rt.memory_stats()["segment_unmaps"] == unmaps
    gate.set()
    rt.synchronize_stream(s)
    assert _pending(rt) == 0
