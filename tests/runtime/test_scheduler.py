"""The scheduler: order within a stream, real concurrency across streams, order across
streams through events, parking instead of sleeping workers, inline execution by a
synchronizing host thread, no thread per stream (issue 3, scope 5 and the done-when lines).

Every test here is built so that a serial or an unordered scheduler would fail it."""
from __future__ import annotations

import ctypes
import threading
import time

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.errors import SyncTimeoutError
from npurt.runtime.observers import HOOKS

MiB = 1 << 20
D2D, D2H = C.ACL_MEMCPY_DEVICE_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST


def _pinned_view(ptr: int, n: int, dtype=np.uint8) -> np.ndarray:
    return np.frombuffer((ctypes.c_ubyte * n).from_address(ptr), dtype)


@pytest.fixture
def gate():
    g = threading.Event()
    yield g
    g.set()


@pytest.fixture
def one_worker_rt(fresh_runtime, monkeypatch):
    """A runtime whose devices have a single worker thread (deterministic hand-offs)."""
    monkeypatch.setenv("NPURT_WORKERS", "1")
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    return fresh_runtime


def _occupy_worker(rt, gate) -> None:
    """Make the device's only worker run a task that waits for `gate`."""
    started = threading.Event()

    def hold():
        started.set()
        gate.wait(30)

    rt.launch_host_func(rt.create_stream(), hold)
    assert started.wait(10)


# ---------------------------------------------------------------- order within a stream
def test_tasks_of_one_stream_run_in_enqueue_order(rt):
    s = rt.create_stream()
    out = []
    for i in range(5000):
        rt.launch_host_func(s, out.append, i)
    rt.synchronize_stream(s)
    assert out == list(range(5000))


def test_copies_and_sets_of_one_stream_run_in_order(rt):
    """Each D2H copy must see exactly the memset queued just before it."""
    s = rt.create_stream()
    n, rounds = 4096, 200
    dev = rt.malloc(n)
    pinned = rt.malloc_host(n * rounds)
    for i in range(rounds):
        rt.memset_async(dev, n, i, n, s)
        rt.memcpy_async(pinned + i * n, n, dev, n, D2H, s)
    rt.synchronize_stream(s)
    view = _pinned_view(pinned, n * rounds).reshape(rounds, n)
    assert all((view[i] == i).all() for i in range(rounds))


def test_one_stream_never_runs_two_tasks_at_once(rt):
    s = rt.create_stream()
    running, overlaps = [0], []

    def task():
        running[0] += 1
        if running[0] > 1:
            overlaps.append(1)
        time.sleep(0.0005)
        running[0] -= 1

    for _ in range(200):
        rt.launch_host_func(s, task)
    # a second host thread synchronizing at the same time must not run the stream in parallel
    ctx = rt.get_context()
    t = threading.Thread(target=lambda: (rt.set_context(ctx), rt.synchronize_stream(s)))
    t.start()
    rt.synchronize_stream(s)
    t.join()
    assert not overlaps


# ---------------------------------------------------------------- concurrency across streams
@pytest.mark.slow
def test_two_streams_copying_overlap_in_wall_time(rt, gate, scale):
    """Each stream copies 256 MiB device to device. The copy tasks' own run intervals (taken
    from the runtime's task_started / task_finished hooks, on the thread running them) must
    overlap: impossible for a serial scheduler, even one that interleaves tasks."""
    n = max(16 * MiB, int(256 * MiB * scale)) // 4096 * 4096
    a, b, starter = rt.create_stream(), rt.create_stream(), rt.create_stream()
    bufs = []
    for _ in range(4):
        ptr = rt.malloc(n)
        rt.memset(ptr, n, 1, n)  # touch the pages first: the copies then only copy
        bufs.append(ptr)
    go = rt.create_event()
    rt.launch_host_func(starter, gate.wait, 30)
    rt.record_event(go, starter)
    spans = {}

    def observer(name, task=None, **_):
        if task is not None and task.kind == "memcpy_async" and name in ("task_started", "task_finished"):
            spans.setdefault(task.stream, []).append(time.perf_counter_ns())

    HOOKS.add(observer)
    try:
        for stream, dst, src in ((a, bufs[0], bufs[1]), (b, bufs[2], bufs[3])):
            rt.stream_wait_event(stream, go)  # both become ready when `go` completes
            rt.memcpy_async(dst, n, src, n, D2D, stream)
        gate.set()
        rt.synchronize_stream(a)
        rt.synchronize_stream(b)
    finally:
        HOOKS.remove(observer)
    (sa, ea), (sb, eb) = spans[a], spans[b]
    assert sa < eb and sb < ea, f"copy intervals do not overlap: a [{sa}, {ea}] b [{sb}, {eb}] (ns)"


def test_a_blocked_stream_does_not_hold_up_another(rt, gate):
    a, b = rt.create_stream(), rt.create_stream()
    rt.launch_host_func(a, gate.wait, 30)
    done = threading.Event()
    rt.launch_host_func(b, done.set)
    assert done.wait(10)  # b ran while a's task was still blocked
    assert rt.stream_query(a) == C.ACL_STREAM_STATUS_NOT_READY


# ---------------------------------------------------------------- order across streams
def test_an_event_orders_a_reader_after_a_slow_writer(rt):
    a, b = rt.create_stream(), rt.create_stream()
    e = rt.create_event()
    box = {"value": 0}
    seen = []

    def slow_write():
        time.sleep(0.05)
        box["value"] = 42

    rt.launch_host_func(a, slow_write)
    rt.record_event(e, a)
    rt.stream_wait_event(b, e)
    rt.launch_host_func(b, lambda: seen.append(box["value"]))
    rt.synchronize_stream(b)
    assert seen == [42]


def test_an_event_orders_device_data_across_streams(rt):
    a, b = rt.create_stream(), rt.create_stream()
    n = 1 * MiB
    dev = rt.malloc(n)
    rt.memset(dev, n, 0, n)
    pinned = rt.malloc_host(n)
    e = rt.create_event()
    rt.launch_host_func(a, time.sleep, 0.05)
    rt.memset_async(dev, n, 7, n, a)
    rt.record_event(e, a)
    rt.stream_wait_event(b, e)
    rt.memcpy_async(pinned, n, dev, n, D2H, b)
    rt.synchronize_stream(b)
    assert (_pinned_view(pinned, n) == 7).all()


def test_a_chain_of_events_through_many_streams_keeps_order(rt):
    streams = [rt.create_stream() for _ in range(20)]
    out = []
    prev = None
    for i, s in enumerate(streams):
        if prev is not None:
            rt.stream_wait_event(s, prev)
        rt.launch_host_func(s, lambda i=i: (time.sleep(0.001 * (i % 3)), out.append(i)))
        prev = rt.create_event()
        rt.record_event(prev, s)
    rt.synchronize_stream(streams[-1])
    assert out == list(range(20))


# ---------------------------------------------------------------- parking, inline, threads
def test_parked_streams_do_not_occupy_the_worker(one_worker_rt):
    rt = one_worker_rt
    never = rt.create_event(C.ACL_EVENT_SYNC)  # never recorded: a semaphore
    parked = [rt.create_stream() for _ in range(20)]
    for s in parked:
        rt.stream_wait_event(s, never)
    done = threading.Event()
    rt.launch_host_func(rt.create_stream(), done.set)
    assert done.wait(10), "the only worker is stuck inside a wait"
    rt.record_event(never, None)
    for s in parked:
        rt.synchronize_stream(s, 10_000)


def test_synchronize_runs_ready_work_on_the_calling_thread(one_worker_rt, gate):
    rt = one_worker_rt
    _occupy_worker(rt, gate)
    s = rt.create_stream()
    who = []
    rt.launch_host_func(s, lambda: who.append(threading.current_thread()))
    rt.synchronize_stream(s)
    assert who == [threading.current_thread()]


def test_synchronize_with_timeout_does_not_get_stuck_running_a_long_task_inline(one_worker_rt, gate):
    """A timed wait must not run a READY task itself: the task could outlast the timeout."""
    rt = one_worker_rt
    _occupy_worker(rt, gate)
    s = rt.create_stream()
    release = threading.Event()
    rt.launch_host_func(s, release.wait, 30)  # a task that runs until released
    safety = threading.Timer(5, release.set)  # ends the task if the wait ran it inline
    safety.start()
    try:
        with pytest.raises(SyncTimeoutError):
            rt.synchronize_stream(s, 100)
        assert not release.is_set()  # the timeout fired while the task was still pending
    finally:
        safety.cancel()
        release.set()


def test_streams_do_not_get_a_thread_each(rt):
    baseline = threading.active_count()
    streams = [rt.create_stream() for _ in range(1000)]
    out = []
    for s in streams:
        rt.launch_host_func(s, out.append, 1)
    for s in streams:
        rt.synchronize_stream(s)
    assert len(out) == 1000
    workers = rt.current_device().scheduler.nworkers
    assert threading.active_count() <= baseline + workers


def test_higher_priority_streams_are_picked_first(one_worker_rt, gate):
    rt = one_worker_rt
    _occupy_worker(rt, gate)
    low, high = rt.create_stream(priority=7), rt.create_stream(priority=0)
    order = []
    finished = threading.Event()
    rt.launch_host_func(low, order.append, "low")
    rt.launch_host_func(low, finished.set)
    rt.launch_host_func(high, order.append, "high")
    gate.set()
    assert finished.wait(10)
    assert order == ["high", "low"]


def test_a_long_stream_lets_other_streams_run_in_between(one_worker_rt, gate):
    rt = one_worker_rt
    long_stream, short = rt.create_stream(), rt.create_stream()
    order = []
    finished = threading.Event()
    rt.launch_host_func(long_stream, gate.wait, 30)
    for i in range(1000):
        rt.launch_host_func(long_stream, order.append, i)
    rt.launch_host_func(long_stream, finished.set)
    rt.launch_host_func(short, order.append, "short")
    gate.set()
    assert finished.wait(30)
    assert order.index("short") < 1000  # it did not wait for all of the long stream


def test_many_host_threads_synchronizing_one_stream_all_return(rt):
    s = rt.create_stream()
    ctx = rt.get_context()
    out = []
    for i in range(500):
        rt.launch_host_func(s, out.append, i)
    errors = []

    def sync():
        try:
            rt.set_context(ctx)
            rt.synchronize_stream(s, 30_000)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=sync) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and out == list(range(500))


def test_random_programs_of_streams_and_events_respect_every_dependency(rt):
    """A random program of host tasks, records and waits over several streams (and both
    devices). Every task must run after the tasks before it on its stream and after every
    task captured by an event its stream waited for before it."""
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"seed {seed}")  # shown when the test fails
    rng = np.random.default_rng(seed)
    streams = [rt.create_stream() for _ in range(4)]
    rt.set_device(1)
    streams += [rt.create_stream() for _ in range(2)]
    rt.set_device(0)
    log: list[int] = []
    deps: dict[int, set[int]] = {}       # task id -> task ids that must run before it
    last_on: dict = {s: None for s in streams}  # stream -> its latest task id
    must: dict = {s: set() for s in streams}    # stream -> what its next task must follow
    events = []                          # (event, set of task ids its capture covers)
    task_id = 0
    for _ in range(1500):
        s = streams[int(rng.integers(len(streams)))]
        r = rng.random()
        if r < 0.7:
            deps[task_id] = set(must[s])
            rt.launch_host_func(s, log.append, task_id)
            must[s] = {task_id}
            last_on[s] = task_id
            task_id += 1
        elif r < 0.85:
            e = rt.create_event()
            rt.record_event(e, s)
            events.append((e, set(must[s])))
        elif events:
            e, covered = events[int(rng.integers(len(events)))]
            rt.stream_wait_event(s, e)
            must[s] = must[s] | covered
    for s in streams:
        rt.synchronize_stream(s, 60_000)
    assert sorted(log) == list(range(task_id))
    position = {t: i for i, t in enumerate(log)}
    for t, before in deps.items():
        for b in before:
            assert position[b] < position[t], f"task {t} ran before task {b} it depends on"


# ---------------------------------------------------------------- hand-offs (issue 28, item 5)
class _Runs:
    """An observer: which thread started each task, and an event per stream that is set
    when a memset of that stream finishes."""

    def __init__(self):
        self.started: list = []
        self.finished: dict = {}

    def __call__(self, name, task=None, **_fields):
        if task is None:
            return
        if name == "task_started":
            self.started.append((task.stream, task.kind, threading.current_thread()))
        elif name == "task_finished" and task.kind == "memset_async":
            self.finished.setdefault(task.stream, threading.Event()).set()

    def done(self, stream) -> threading.Event:
        return self.finished.setdefault(stream, threading.Event())

    def threads(self, stream, kind) -> list:
        return [th for s, k, th in self.started if s is stream and k == kind]


@pytest.fixture
def runs(rt):
    """The observer, listening; these tests gate a producer stream, so they need enqueues that
    return before the work runs (launch blocking waits for each: they are skipped there)."""
    if rt.current_device().runtime.settings.launch_blocking:
        pytest.skip("NPURT_LAUNCH_BLOCKING waits for each enqueue: a gated producer cannot be enqueued")
    observer = _Runs()
    HOOKS.add(observer)
    yield observer
    HOOKS.remove(observer)


def _count_wakes(monkeypatch, scheduler) -> list:
    """Count the worker wake-ups `scheduler` asks for from now on."""
    calls = []
    real = scheduler._wake
    monkeypatch.setattr(scheduler, "_wake", lambda: (calls.append(1), real())[1])
    return calls


def _parked(stream) -> None:
    """Wait until `stream` is parked (on what its head task waits for)."""
    deadline = time.monotonic() + 30
    while stream.state != "parked":
        assert time.monotonic() < deadline, f"{stream!r} never parked"
        time.sleep(0.001)


def _producer(rt, gate, then_hold=None):
    """A stream that records an event once `gate` opens; after the record it runs a host
    function waiting for `then_hold` if given (its worker stays busy), else it parks on a
    never-recorded event (its worker is free at once). Returns (stream, event, release)."""
    p, ev = rt.create_stream(), rt.create_event()
    never = rt.create_event(C.ACL_EVENT_SYNC)
    rt.launch_host_func(p, gate.wait, 30)
    rt.record_event(ev, p)
    if then_hold is not None:
        rt.launch_host_func(p, then_hold.wait, 30)
    else:
        rt.stream_wait_event(p, never)
    return p, ev, lambda: rt.record_event(never, None)


def _consumer(rt, ev):
    """A stream that waits for `ev`, then runs a small memset."""
    c = rt.create_stream()
    rt.stream_wait_event(c, ev)
    rt.memset_async(rt.malloc(64), 64, 1, 64, c)
    return c


def test_a_host_thread_waiting_for_a_parked_stream_runs_it_and_no_worker_is_woken(rt, gate, runs, monkeypatch):
    """The consumer stream waits on an event while the host synchronizes it: when the
    producer's record unparks it, the waiting host thread takes it (it would only wait for a
    woken worker otherwise), and no worker is woken for a ticket the host claims."""
    hold = threading.Event()
    try:
        p, ev, release = _producer(rt, gate, then_hold=hold)
        c = _consumer(rt, ev)
        wakes = _count_wakes(monkeypatch, rt.current_device().scheduler)

        def open_gate_once_the_host_waits():
            while c.takers == 0:
                time.sleep(0.001)
            gate.set()

        opener = threading.Thread(target=open_gate_once_the_host_waits)
        opener.start()
        rt.synchronize_stream(c)
        opener.join(10)
        assert runs.threads(c, "memset_async") == [threading.current_thread()]
        assert wakes == []
    finally:
        hold.set()
        release()


def test_a_worker_whose_stream_parks_after_an_unpark_runs_the_unparked_stream_itself(rt, gate, runs, monkeypatch):
    """The record that unparks the consumer is the producer's last runnable task (it parks
    next): the producer's worker goes on with the consumer itself, a hand-off with no
    thread switch, and wakes nobody."""
    p, ev, release = _producer(rt, gate)
    try:
        c = _consumer(rt, ev)
        _parked(c)
        wakes = _count_wakes(monkeypatch, rt.current_device().scheduler)
        gate.set()
        assert runs.done(c).wait(30)
        (recorder,) = runs.threads(p, "record_event")
        assert runs.threads(c, "memset_async") == [recorder]
        assert recorder is not threading.current_thread()
        assert wakes == []
        rt.synchronize_stream(c)
    finally:
        release()


def test_a_worker_announces_a_stream_it_unparked_before_it_runs_real_work(rt, gate, runs, monkeypatch):
    """The producer's next task after the record is a long one: its worker wakes another
    for the consumer before starting it, so the consumer runs meanwhile."""
    hold = threading.Event()
    try:
        p, ev, release = _producer(rt, gate, then_hold=hold)
        c = _consumer(rt, ev)
        _parked(c)
        wakes = _count_wakes(monkeypatch, rt.current_device().scheduler)
        gate.set()
        assert runs.done(c).wait(30), "the consumer waited for the producer's long task"
        assert not hold.is_set()
        assert len(wakes) >= 1
    finally:
        hold.set()
        release()
