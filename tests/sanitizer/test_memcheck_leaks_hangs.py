"""memcheck, initcheck, leakcheck and synccheck details beyond the catalogue."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import npurt
import npurt.sanitizer
from npurt.runtime import constants as C
from npurt.runtime.tasks import Task

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def san(rt):
    s = npurt.sanitizer.enable(echo=False)
    yield s
    s.disable()


class TouchTask(Task):
    """A task that says it writes [addr, addr + n): what a copy inside an allocation's
    padding looks like to the sanitizer (the runtime itself refuses copies past the
    requested size today)."""

    __slots__ = ("addr", "n")
    kind = "touch"

    def __init__(self, addr, n):
        self.addr, self.n = addr, n

    def accesses(self):
        return ((self.addr, self.n, "w"),)

    def run(self):
        pass


def test_a_write_past_the_requested_size_is_reported_even_inside_the_padding(rt, san):
    dev = rt.malloc(1000)                      # usable up to 1056 bytes on an NPU
    rt.enqueue(None, TouchTask(dev, 1016))
    rt.synchronize_device()
    (report,) = san.reports
    assert (report.tool, report.kind) == ("memcheck", "illegal write")
    assert "16 bytes past the end" in report.title


def test_a_free_after_synchronize_is_not_reported(rt, san):
    s = rt.create_stream()
    dev, pinned = rt.malloc(4096), rt.malloc_host(4096)
    rt.memcpy_async(dev, 4096, pinned, 4096, C.ACL_MEMCPY_HOST_TO_DEVICE, s)
    s.synchronize()
    rt.free(dev)
    rt.free_host(pinned)
    assert san.reports == []


def test_free_host_of_pinned_memory_a_queued_copy_still_reads_is_an_illegal_free(rt, san):
    # issue 29: npurt defers the unmap, so nothing breaks here; on the hardware the DMA would
    # read freed memory, and a device free in the same place is reported
    s = rt.create_stream()
    gate = threading.Event()
    dev, pinned = rt.malloc(4096), rt.malloc_host(4096)
    rt.launch_host_func(s, gate.wait)  # holds the copy in the queue
    rt.memcpy_async(dev, 4096, pinned, 4096, C.ACL_MEMCPY_HOST_TO_DEVICE, s)
    rt.free_host(pinned)
    gate.set()
    s.synchronize()
    (report,) = san.reports
    assert (report.tool, report.kind) == ("memcheck", "illegal free")
    assert "free_host does not wait for queued copies" in report.text()
    assert "memcpy" in report.text().lower()
    rt.free(dev)


def test_a_double_free_is_reported_as_one_and_the_runtime_stays_usable(rt, san):
    dev = rt.malloc(64)
    rt.free(dev)
    with pytest.raises(npurt.InvalidValueError):
        rt.free(dev)
    (report,) = san.reports
    assert report.kind == "double free" and "was freed at test_memcheck_leaks_hangs.py" in report.text()
    again = rt.malloc(64)
    rt.memset(again, 64, 0, 64)
    rt.free(again)


def test_memory_allocated_before_the_sanitizer_started_is_adopted_not_reported(rt):
    dev = rt.malloc(4096)
    rt.memset(dev, 4096, 1, 4096)
    with npurt.sanitizer.enable(echo=False) as s:
        out = np.empty(4096, np.uint8)
        rt.memcpy(out.ctypes.data, 4096, dev, 4096, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert s.reports == []
    rt.free(dev)


def test_leaks_from_one_line_are_one_report_with_the_count(rt, san):
    for _ in range(5):
        rt.malloc(4096)
    rt.reset_device(0)
    (report,) = san.reports
    assert report.kind == "leak" and report.title.startswith("5 allocations of device memory (20480 bytes)")
    assert "test_memcheck_leaks_hangs.py" in report.text() and "reset_device(0)" in report.title


def test_a_hang_is_reported_with_its_chain_and_the_wait_fails_instead(rt, san):
    s = rt.create_stream()
    rt.subscribe_report(threading.get_ident(), s)
    rt.launch_callback(lambda data: None, None, C.ACL_CALLBACK_BLOCK, s)
    with pytest.raises(npurt.StreamAbortedError):
        s.synchronize()
    (report,) = san.reports
    text = report.text()
    assert (report.tool, report.kind) == ("synccheck", "hang")
    assert "which waits for host callback" in text and "it can never call process_report" in text
    dev = rt.malloc(64)                          # the stream takes new work
    rt.memset_async(dev, 64, 0, 64, s)
    s.synchronize()
    rt.process_report(100)
    rt.unsubscribe_report(threading.get_ident(), s)


def test_a_blocking_callback_served_by_a_report_thread_is_not_a_hang(rt, san):
    s = rt.create_stream()
    ctx = rt.get_context()
    stop = threading.Event()

    def serve():
        rt.set_context(ctx)
        while not stop.is_set():
            try:
                rt.process_report(20)
            except npurt.NpuError:
                pass

    t = threading.Thread(target=serve)
    t.start()
    rt.subscribe_report(t.ident, s)
    ran = []
    rt.launch_callback(ran.append, 1, C.ACL_CALLBACK_BLOCK, s)
    s.synchronize()
    stop.set()
    t.join()
    assert ran == [1] and san.reports == []


def test_an_unwritten_read_that_a_concurrent_write_explains_is_left_to_racecheck(rt, san):
    a, b = rt.create_stream(), rt.create_stream()
    dev, pinned = rt.malloc(4096), rt.malloc_host(4096)
    rt.memcpy_async(pinned, 4096, dev, 4096, C.ACL_MEMCPY_DEVICE_TO_HOST, b)   # may run first
    rt.memset_async(dev, 4096, 1, 4096, a)
    rt.synchronize_device()
    rt.free(dev)
    assert sorted({(r.tool, r.kind) for r in san.reports}) == [("racecheck", "WAR hazard")]


class FakeDevice:
    id = 0


class FakeStream:
    """Just what the hang check reads of a runtime stream."""

    def __init__(self, sid):
        self.stream_id, self.device, self.is_default = sid, FakeDevice(), False
        self.completed_seq, self.enqueued_seq, self.state = 0, 1, "parked"
        self.queue, self.parked_on = [], None


class WaitFor:
    def __init__(self, stream, seq):
        self.stream, self.seq = stream, seq

    def waits_for(self):
        return ("stream", self.stream, self.seq)

    def describe(self):
        return f"stream {self.stream.stream_id} to finish task #{self.seq}"


class Head:
    seq = 1

    def describe(self):
        return "stream_wait_event 0"


def test_a_chain_of_stream_waits_that_comes_back_is_a_cycle():
    from npurt.tools.sanitizer.hangcheck import HangCheck, Wait
    s1, s2 = FakeStream(1), FakeStream(2)
    s1.queue, s2.queue = [Head()], [Head()]
    s1.parked_on, s2.parked_on = WaitFor(s2, 1), WaitFor(s1, 1)
    check = HangCheck(npurt.sanitizer.Sanitizer(echo=False))
    signature, steps, streams, cause, fix = check.chain(Wait(1, "main", s1, 1, None))
    assert cause == "cycle" and streams == [s1, s2]
    assert steps[-1] == "stream 1 (device 0) is already in this chain: the waits form a cycle"
    s2.parked_on = None
    s2.state = "running"
    assert check.chain(Wait(1, "main", s1, 1, None)) is None


def test_a_wrong_memcpy_kind_is_reported_when_the_copy_goes_by_address(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_MEMCPY_KIND", "address")
    rt = fresh_runtime
    rt.init()
    rt.set_device(0)
    dev = rt.malloc(64)
    rt.memset(dev, 64, 3, 64)
    out = np.zeros(64, np.uint8)
    with npurt.sanitizer.enable(echo=False) as san, pytest.warns(Warning, match="contradicts"):
        rt.memcpy(out.ctypes.data, 64, dev, 64, C.ACL_MEMCPY_HOST_TO_DEVICE)   # the copy happens
    assert out[0] == 3
    assert [(r.tool, r.kind) for r in san.reports] == [("memcheck", "memcpy kind mismatch")]
    rt.free(dev)
