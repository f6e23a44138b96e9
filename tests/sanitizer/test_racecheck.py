"""racecheck: what orders work and what does not, independent of how threads happen to run."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import npurt
import npurt.sanitizer
from npurt.runtime import constants as C
from npurt.runtime.kernel import GM, kernel, launch

H2D, D2H, D2D = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST, C.ACL_MEMCPY_DEVICE_TO_DEVICE
pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def san(rt):
    s = npurt.sanitizer.enable(echo=False)
    yield s
    s.disable()


def races(san):
    return [r for r in san.reports if r.tool == "racecheck"]


def wait_until_done(stream, seq):
    """Block this thread until the stream finished task `seq`, without telling the runtime
    (no synchronize, no query): the sanitizer must not learn an order from it."""
    while stream.completed_seq < seq:
        time.sleep(0.001)


def gate_on(rt, stream, other, seq):
    """Make `stream` start its next work only after `other` finished task `seq` in real time."""
    rt.launch_host_func(stream, wait_until_done, other, seq)


@pytest.mark.parametrize("writer_first", [True, False])
def test_a_race_is_found_whichever_stream_runs_first(rt, san, writer_first):
    a, b = rt.create_stream(), rt.create_stream()
    dev = rt.malloc(4096)
    host = rt.malloc_host(4096)
    rt.memset(dev, 4096, 0, 4096)
    if writer_first:
        seq = rt.memset_async(dev, 4096, 1, 4096, a)
        gate_on(rt, b, a, seq)
        rt.memcpy_async(host, 4096, dev, 4096, D2H, b)
    else:
        seq = rt.memcpy_async(host, 4096, dev, 4096, D2H, b)
        gate_on(rt, a, b, seq)
        rt.memset_async(dev, 4096, 1, 4096, a)
    rt.synchronize_device()
    assert [r.kind for r in races(san)] == ["WAR hazard" if not writer_first else "RAW hazard"]


@kernel
def _fill_sevens(ctx, out: GM, n: np.int32):
    ctx.gm(out, np.uint8, n, "w")[:] = 7


@pytest.mark.parametrize("kind", [D2H, D2D])
def test_a_synchronous_copy_from_memory_a_kernel_on_a_stream_still_writes_is_a_race(rt, san, kind):
    # the copy follows two launches with no host access between them: it is ordered after
    # neither kernel (issue 24, item 9: the second launch's kernel was missed). The copy waits
    # for the runnable kernels writing its source (memops.await_writers, the hardware's timing),
    # unobserved: still a race
    src, other = rt.malloc(4096), rt.malloc(4096)
    dst = rt.malloc_host(4096) if kind == D2H else rt.malloc(4096)
    for p in (src, other) + ((dst,) if kind == D2D else ()):
        rt.memset(p, 4096, 0, 4096)
    a = rt.create_stream()
    launch(_fill_sevens, 1, (other, 4096), a)
    launch(_fill_sevens, 1, (src, 4096), a)
    rt.memcpy(dst, 4096, src, 4096, kind)
    rt.synchronize_device()
    assert [r.kind for r in races(san)] in (["RAW hazard"], ["WAR hazard"])


def test_a_synchronous_copy_from_a_kernel_s_output_freed_before_the_kernel_ran_is_still_a_race(rt, san):
    # hicann/runtime's 1_basic_features/memory/5_d2d_sync_memory_copy: the kernel is still
    # queued when the host copies its output and frees it; its writes would be found only
    # after the free, so the race is reported at the free, beside the illegal free
    src, dst = rt.malloc(4096), rt.malloc(4096)
    a = rt.create_stream()
    gate = threading.Event()
    rt.launch_host_func(a, gate.wait)
    launch(_fill_sevens, 1, (src, 4096), a)
    rt.memcpy(dst, 4096, src, 4096, D2D)
    rt.free(src)
    gate.set()
    rt.synchronize_device()
    kinds = sorted((r.tool, r.kind) for r in san.reports)
    assert ("racecheck", "RAW hazard") in kinds and ("memcheck", "illegal free") in kinds, kinds
    assert not [r for r in san.reports if r.tool == "initcheck"]  # the race explains the unwritten read
    (race,) = races(san)
    assert "kernel _fill_sevens" in race.actors[0].what and "memcpy" in race.actors[1].what


def test_an_event_orders_the_reader_after_the_writer(rt, san):
    a, b = rt.create_stream(), rt.create_stream()
    dev, host = rt.malloc(4096), rt.malloc_host(4096)
    rt.memset_async(dev, 4096, 1, 4096, a)
    ev = rt.create_event()
    rt.record_event(ev, a)
    rt.stream_wait_event(b, ev)
    rt.memcpy_async(host, 4096, dev, 4096, D2H, b)
    rt.synchronize_device()
    assert san.reports == []


def test_a_query_that_says_complete_orders_the_host(rt, san):
    s = rt.create_stream()
    dev = rt.malloc(4096)
    out = np.empty(4096, np.uint8)
    rt.memset_async(dev, 4096, 1, 4096, s)
    while rt.stream_query(s) != C.ACL_STREAM_STATUS_COMPLETE:
        time.sleep(0.001)
    rt.memcpy(out.ctypes.data, 4096, dev, 4096, D2H)
    assert san.reports == []


def test_the_report_names_both_accesses_with_stream_device_line_and_a_fix(rt, san):
    a, b = rt.create_stream(), rt.create_stream()
    dev, host = rt.malloc(1024), rt.malloc_host(1024)
    rt.memset_async(dev, 1024, 1, 1024, a); line_w = _line()
    rt.memcpy_async(host, 1024, dev, 1024, D2H, b); line_r = _line()
    rt.synchronize_device()
    (report,) = races(san)
    lines = report.lines()
    assert all(line.startswith("========= npurt-sanitizer: ") for line in lines)
    assert lines[0].endswith("racecheck: RAW hazard: read after write on 1024 bytes of device 0 memory")
    assert f"write by memset_async on stream {a.stream_id} (device 0), enqueued at test_racecheck.py:{line_w}" in lines[1]
    assert f"read by memcpy_async D2H on stream {b.stream_id} (device 0), enqueued at test_racecheck.py:{line_r}" in lines[2]
    assert f"fix: record an event on stream {a.stream_id}" in lines[-1] and "wait on it" in lines[-1]


def _line():
    import sys
    return sys._getframe(1).f_lineno


def test_views_at_different_offsets_race_only_where_their_bytes_overlap(rt, san):
    a, b = rt.create_stream(), rt.create_stream()
    dev = rt.malloc(8192)
    rt.memset_async(dev, 4096, 1, 4096, a)                 # bytes [0, 4096)
    rt.memset_async(dev + 4096, 4096, 2, 4096, b)          # bytes [4096, 8192): disjoint
    rt.synchronize_device()
    assert san.reports == []
    rt.memset_async(dev + 2048, 4096, 3, 4096, a)          # [2048, 6144) on a
    rt.memset_async(dev + 4096 + 1024, 1024, 4, 1024, b)   # [5120, 6144) on b: overlaps
    rt.synchronize_device()
    (report,) = races(san)
    assert report.kind == "WAW hazard" and report.nbytes == 1024


def test_two_dimensional_copies_into_different_columns_do_not_race(rt, san):
    a, b = rt.create_stream(), rt.create_stream()
    pitch, rows = 256, 16
    dev = rt.malloc(pitch * rows)
    host = np.ones(64 * rows, np.uint8)
    rt.memcpy2d_async(dev, pitch, host.ctypes.data, 64, 64, rows, H2D, a)          # columns 0..63
    rt.memcpy2d_async(dev + 128, pitch, host.ctypes.data, 64, 64, rows, H2D, b)    # columns 128..191
    rt.synchronize_device()
    assert races(san) == []


def test_a_host_write_after_the_copy_ran_is_still_a_race(rt, san):
    s = rt.create_stream()
    dev, pinned = rt.malloc(4096), rt.malloc_host(4096)
    view = np.frombuffer((np.ctypeslib.as_ctypes_type(np.uint8) * 4096).from_address(pinned), np.uint8)
    view[:] = 1
    seq = rt.memcpy_async(dev, 4096, pinned, 4096, H2D, s)
    wait_until_done(s, seq)                                # the copy has run (unknown to the host)
    view[:] = 2                                            # but nothing ordered the host after it
    s.synchronize()
    (report,) = races(san)
    assert report.kind == "WAR hazard" and "host memory changed" in report.text()


def test_a_host_write_after_synchronize_is_not_a_race(rt, san):
    s = rt.create_stream()
    dev, pinned = rt.malloc(4096), rt.malloc_host(4096)
    view = np.frombuffer((np.ctypeslib.as_ctypes_type(np.uint8) * 4096).from_address(pinned), np.uint8)
    for i in range(3):
        view[:] = i
        rt.memcpy_async(dev, 4096, pinned, 4096, H2D, s)
        s.synchronize()
    assert san.reports == []


@kernel
def gather(ctx, table: GM, out: GM, n: np.int32):
    """out = the array whose address is in table[0] (an access the launch does not name)."""
    ptr = int(ctx.gm(table, np.uint64, 1, "r")[0])
    ctx.gm(out, np.float32, n, "w")[:] = ctx.gm(ptr, np.float32, n, "r")


def test_a_race_through_the_allocator_handing_a_block_to_another_stream_is_caught(rt, san):
    a_stream, b_stream = npurt.Stream(), npurt.Stream()
    a = npurt.to_device(np.ones(1024, np.float32), stream=a_stream)
    table = npurt.to_device(np.array([a.ptr], np.uint64), stream=a_stream)
    out = npurt.empty((1024,), np.float32)
    a_stream.synchronize()
    seq = launch(gather, 1, (table.ptr, out.ptr, 1024), stream=a_stream.runtime_stream)
    wait_until_done(a_stream.runtime_stream, seq)          # the kernel read `a` through the table
    old = a.ptr
    del a                                                  # stream-ordered free: it knows no use by the kernel
    b = npurt.empty((1024,), np.float32)
    assert b.ptr == old                                    # the pool handed the block on
    b.fill(2.0, stream=b_stream)
    b_stream.synchronize()
    (report,) = races(san)
    assert report.kind == "WAR hazard"
    assert "the allocator handed them on" in report.text()


def test_stream_ordered_frees_of_arrays_do_not_race_their_next_owner(rt, san):
    s1, s2 = npurt.Stream(), npurt.Stream()
    for i in range(4):
        with npurt.stream(s1 if i % 2 else s2):
            x = npurt.ones((4096,)) * 2                    # temporaries freed while still queued
            _ = x + 1
    npurt.synchronize()
    assert san.reports == []


def test_a_done_callback_and_a_threading_event_order_the_main_thread(rt, san):
    s = npurt.Stream()
    done = threading.Event()
    with npurt.stream(s):
        y = npurt.ones((1024,)) * 3
    s.add_done_callback(lambda stream: done.set())
    assert done.wait(10)
    assert y.to_host()[0] == 3
    assert san.reports == []


def test_host_memory_the_allocator_hands_to_another_threads_array_does_not_race_its_old_user(rt, san):
    # issue 29: numpy hands a freed array's memory to the next array, maybe another thread's;
    # the history of the old array must end with it. Here the "allocator" is a pool both
    # arrays are views of (the same bytes, each through its own short-lived owner object).
    pool = np.zeros(1 << 16, np.uint8)
    dev = rt.malloc(pool.nbytes)
    rt.memset(dev, pool.nbytes, 7, pool.nbytes)
    ctx = rt.get_context()
    handoff = threading.Lock()  # a C lock: the sanitizer orders nothing through it
    handoff.acquire()
    addresses, errors = [], []

    def user(first: bool):
        try:
            rt.set_context(ctx)
            s = rt.create_stream()
            if not first:
                handoff.acquire()  # after the first user released its array (in real time only)
            owner = memoryview(pool)
            arr = np.frombuffer(owner, np.uint8)
            addresses.append(arr.ctypes.data)
            rt.copy_array_async(dev, arr, s, to_device=False)
            s.synchronize()
            assert (arr == 7).all()
            del arr, owner  # the memory goes back to the "allocator"
            if first:
                handoff.release()
            rt.destroy_stream(s)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=user, args=(first,)) for first in (True, False)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert addresses[0] == addresses[1]  # the same bytes, two unrelated arrays
    assert races(san) == [], races(san)[0].text()
    rt.free(dev)


def test_host_memory_still_in_use_by_an_unordered_copy_is_still_a_race(rt, san):
    # the history ends with the buffer, not before: two live arrays' copies still race
    host = np.zeros(4096, np.uint8)
    dev = rt.malloc(4096)
    s1, s2 = rt.create_stream(), rt.create_stream()
    rt.launch_host_func(s1, time.sleep, 0.05)
    rt.copy_array_async(dev, host, s1, to_device=False)
    rt.copy_array_async(dev, host, s2, to_device=False)
    s1.synchronize()
    s2.synchronize()
    assert races(san), "two unordered copies into one live array must race"
    rt.free(dev)
