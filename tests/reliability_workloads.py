"""Hostile workloads for the reliability suite (tests/runtime/test_reliability.py), one per process:

    python tests/reliability_workloads.py SCENARIO OPS SEED

Each prints "OK ..." and exits 0 when every check held; a failed check raises (exit 1). The
suite runs them in subprocesses with a timeout, so a crash or a hang fails a test instead of
killing or wedging pytest.

model       threads run random pyACL operations (copies of every kind, sets, kernels, event
            hand-offs of buffers between streams and threads, stream-ordered free and reuse,
            streams made and destroyed) and check device memory against a numpy model
teardown    threads destroy streams, events and contexts while others create and use them
interrupts  Ctrl-C (KeyboardInterrupt) lands at random points of the main thread's calls while
            it enqueues, runs work inline and waits: no task runs twice, none is lost
            unless its enqueue was interrupted, no stream wedges, memory matches the model
fork        os.fork() at random points while threads use the runtime: children get a working
            fresh runtime, the parent goes on
fuzz        threads call every facade function with garbage arguments: no exception escapes
            (beyond the TypeError/ValueError the real extension raises) and the runtime stays
            usable
fragment    random small mallocs and frees from threads fragment the pool (10^5 blocks at the
            full size), interleaved with large mallocs only merging can serve: every block keeps
            its bytes, none overlaps, the pool gives everything back (issue 29, item 2; the
            merge was O(n^2): such a run did not finish)
models      threads run an endless model (a Loop that never ends) and a small one: async
            executions stopped by execute_v2 stream timeouts, unload while running, Ctrl-C
            (interrupt_main) during a synchronous execute; the small model's results match
            ONNX Runtime's throughout; then the script exits normally with executions still
            running (issue 29, items 1 and 5: that was a SIGABRT)
launch      `npurt launch -n 3`: ranks run all_reduces; a random rank raises at a random step:
            the job ends within the timeout with that rank's traceback and the abort notice,
            every rank gone (issue 29, item 3: the others waited 30 minutes)
"""
from __future__ import annotations

import _thread
import os
import queue
import random
import signal
import sys
import threading
import time

import numpy as np

import npurt.acl as acl
from npurt.runtime import constants as C
from npurt.runtime.kernel import GM, kernel, launch
from npurt.runtime.runtime import RUNTIME

H2D, D2H, D2D = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST, C.ACL_MEMCPY_DEVICE_TO_DEVICE
OK = 0


@kernel
def xor_into(ctx, dst: GM, src: GM, n: np.int32):
    lo, hi = ctx.block_range(n)
    d = ctx.gm(dst, np.uint8, n)
    s = ctx.gm(src, np.uint8, n)
    np.bitwise_xor(d[lo:hi], s[lo:hi], out=d[lo:hi])


def ok(ret, what):
    if ret != OK:
        raise AssertionError(f"{what} returned {ret}: {acl.get_recent_err_msg()}")


def call(fn, *args):
    """A facade call that returns (value, ret): the value, after checking ret."""
    *values, ret = fn(*args)
    ok(ret, fn.__name__)
    return values[0] if len(values) == 1 else values


def setup():
    ok(acl.init(), "acl.init")
    ok(acl.rt.set_device(0), "set_device")
    return acl.rt.get_context()[0]


def rt_stream(handle):
    return RUNTIME.streams.get(handle)


# ---------------------------------------------------------------- model
class Buf:
    __slots__ = ("addr", "n", "model", "stream")

    def __init__(self, addr, n, model, stream):
        self.addr, self.n, self.model, self.stream = addr, n, model, stream


class ModelThread:
    """Random operations on buffers this thread owns; each buffer belongs to one stream at a
    time, and moves to another stream (maybe of another thread) only through an event."""

    def __init__(self, index, ctx, ops, seed, inboxes, stats):
        self.i, self.ctx, self.ops, self.rnd = index, ctx, ops, random.Random(seed)
        self.inboxes, self.stats = inboxes, stats
        self.streams, self.bufs = [], []

    def run(self):
        ok(acl.rt.set_context(self.ctx), "set_context")
        self.streams = [call(acl.rt.create_stream) for _ in range(3)]
        ops = [self.new, self.memset, self.h2d_pinned, self.h2d_pageable, self.d2d, self.xor,
               self.move, self.hand_off, self.check, self.free, self.sync, self.new_stream,
               self.destroy_stream]
        weights = [6, 6, 4, 3, 5, 5, 4, 2, 4, 4, 2, 1, 1]
        for _ in range(self.ops):
            self.receive()
            self.rnd.choices(ops, weights)[0]()
            self.stats["ops"] += 1
        self.receive()
        for s in self.streams:
            ok(acl.rt.synchronize_stream(s), "synchronize_stream")
        for b in list(self.bufs):
            self.check(b)
            ok(acl.rt.free(b.addr), "free")
        for s in self.streams:
            ok(acl.rt.destroy_stream(s), "destroy_stream")

    # -- helpers
    def pick(self):
        return self.rnd.choice(self.bufs) if self.bufs else None

    def receive(self):
        try:
            while True:
                b, event = self.inboxes[self.i].get_nowait()
                s = self.rnd.choice(self.streams)
                ok(acl.rt.stream_wait_event(s, event), "stream_wait_event")
                ok(acl.rt.destroy_event(event), "destroy_event")
                b.stream = s
                self.bufs.append(b)
        except queue.Empty:
            pass

    def to_stream(self, b, s):
        """Move b to stream s through an event (the hardware's cross-stream order)."""
        if b.stream == s:
            return
        event = call(acl.rt.create_event)
        ok(acl.rt.record_event(event, b.stream), "record_event")
        ok(acl.rt.stream_wait_event(s, event), "stream_wait_event")
        ok(acl.rt.destroy_event(event), "destroy_event")
        b.stream = s

    # -- operations
    def new(self):
        if len(self.bufs) > 24:
            return self.free()
        n = self.rnd.choice([64, 256, 4096, 65536, 3 * 4096 + 192])
        addr = call(acl.rt.malloc, n, 0)
        s = self.rnd.choice(self.streams)
        value = self.rnd.randrange(256)
        ok(acl.rt.memset_async(addr, n, value, n, s), "memset_async")
        self.bufs.append(Buf(addr, n, np.full(n, value, np.uint8), s))

    def memset(self):
        b = self.pick()
        if b is None:
            return self.new()
        lo = self.rnd.randrange(b.n)
        count = self.rnd.randrange(b.n - lo + 1)
        value = self.rnd.randrange(256)
        ok(acl.rt.memset_async(b.addr + lo, b.n - lo, value, count, b.stream), "memset_async")
        b.model[lo:lo + count] = value

    def h2d_pinned(self):
        b = self.pick()
        if b is None:
            return self.new()
        host = call(acl.rt.malloc_host, b.n)
        data = np.frombuffer(self.rnd.randbytes(b.n), np.uint8)
        ok(acl.rt.memcpy(host, b.n, data.ctypes.data, b.n, C.ACL_MEMCPY_HOST_TO_HOST), "memcpy H2H")
        ok(acl.rt.memcpy_async(b.addr, b.n, host, b.n, H2D, b.stream), "memcpy_async H2D")
        ok(acl.rt.free_host(host), "free_host")  # while the copy may still be queued
        b.model[:] = data

    def h2d_pageable(self):
        b = self.pick()
        if b is None:
            return self.new()
        data = np.frombuffer(self.rnd.randbytes(b.n), np.uint8).copy()
        ok(acl.rt.memcpy_async(b.addr, b.n, data.ctypes.data, b.n, H2D, b.stream), "memcpy_async pageable")
        b.model[:] = data

    def d2d(self):
        if len(self.bufs) < 2:
            return self.new()
        a, b = self.rnd.sample(self.bufs, 2)
        self.to_stream(b, a.stream)
        n = min(a.n, b.n)
        ok(acl.rt.memcpy_async(a.addr, a.n, b.addr, n, D2D, a.stream), "memcpy_async D2D")
        a.model[:n] = b.model[:n]

    def xor(self):
        if len(self.bufs) < 2:
            return self.new()
        a, b = self.rnd.sample(self.bufs, 2)
        self.to_stream(b, a.stream)
        n = min(a.n, b.n)
        blocks = self.rnd.choice([1, 1, 4])
        launch(xor_into, blocks, (a.addr, b.addr, n), rt_stream(a.stream))
        np.bitwise_xor(a.model[:n], b.model[:n], out=a.model[:n])

    def move(self):
        b = self.pick()
        if b is not None:
            self.to_stream(b, self.rnd.choice(self.streams))

    def hand_off(self):
        b = self.pick()
        if b is None or len(self.inboxes) < 2:
            return
        target = self.rnd.choice([j for j in range(len(self.inboxes)) if j != self.i])
        event = call(acl.rt.create_event)
        ok(acl.rt.record_event(event, b.stream), "record_event")
        self.bufs.remove(b)
        self.inboxes[target].put((b, event))
        self.stats["hand_offs"] += 1

    def check(self, b=None):
        b = b or self.pick()
        if b is None:
            return
        out = np.empty(b.n, np.uint8)
        ok(acl.rt.memcpy_async(out.ctypes.data, b.n, b.addr, b.n, D2H, b.stream), "memcpy_async D2H")
        if not np.array_equal(out, b.model):
            bad = np.flatnonzero(out != b.model)
            raise AssertionError(f"thread {self.i}: buffer 0x{b.addr:x} ({b.n} B) differs from the model at "
                                 f"{len(bad)} bytes, first {bad[:8]}: {out[bad[:8]]} != {b.model[bad[:8]]}")
        self.stats["checks"] += 1

    def free(self):
        b = self.pick()
        if b is None:
            return
        ok(acl.rt.free(b.addr), "free")  # stream-ordered: queued work on it still completes
        self.bufs.remove(b)

    def sync(self):
        s = self.rnd.choice(self.streams)
        if self.rnd.random() < 0.5:
            ok(acl.rt.synchronize_stream(s), "synchronize_stream")
        else:
            acl.rt.stream_query(s)

    def new_stream(self):
        if len(self.streams) < 6:
            self.streams.append(call(acl.rt.create_stream))

    def destroy_stream(self):
        if len(self.streams) < 2:
            return
        s = self.rnd.choice(self.streams)
        rest = [t for t in self.streams if t != s]
        for b in self.bufs:
            if b.stream == s:
                self.to_stream(b, self.rnd.choice(rest))
        ok(acl.rt.destroy_stream(s), "destroy_stream")
        self.streams = rest


def run_threads(targets, timeout):
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                import traceback
                errors.append("".join(traceback.format_exception(exc)))
        return run

    threads = [threading.Thread(target=wrap(fn), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in threads):
        raise AssertionError("a thread hung")
    if errors:
        raise AssertionError(errors[0])


def memory_baseline():
    return RUNTIME.device(0).memory.stats()["allocated_bytes"]


def scenario_model(ops, seed):
    ctx = setup()
    before_mem = memory_baseline()
    before_streams = call(acl.rt.get_stream_available_num)
    nthreads = 4
    inboxes = [queue.Queue() for _ in range(nthreads)]
    stats = {"ops": 0, "checks": 0, "hand_offs": 0}
    workers = [ModelThread(i, ctx, ops // nthreads, seed * 100 + i, inboxes, stats) for i in range(nthreads)]
    run_threads([w.run for w in workers], timeout=600)
    for q in inboxes:  # buffers handed to a thread after it finished
        while not q.empty():
            b, event = q.get()
            out = np.empty(b.n, np.uint8)
            ok(acl.rt.synchronize_event(event), "synchronize_event")
            ok(acl.rt.memcpy(out.ctypes.data, b.n, b.addr, b.n, D2H), "memcpy D2H")
            assert np.array_equal(out, b.model), "a handed-off buffer differs from the model"
            ok(acl.rt.destroy_event(event), "destroy_event")
            ok(acl.rt.free(b.addr), "free")
    ok(acl.rt.synchronize_device(), "synchronize_device")
    assert memory_baseline() == before_mem, "device memory leaked"
    assert call(acl.rt.get_stream_available_num) == before_streams, "streams leaked"
    return f"{stats['ops']} ops, {stats['checks']} checks, {stats['hand_offs']} hand-offs"


# ---------------------------------------------------------------- teardown
def scenario_teardown(ops, seed):
    ctx = setup()
    before_streams = call(acl.rt.get_stream_available_num)
    before_events = call(acl.rt.get_event_avail_num)
    shared_streams, shared_events = [], []
    lock = threading.Lock()
    counts = {"destroyed": 0, "refused": 0}
    dev = call(acl.rt.malloc, 4096, 0)

    creating = [2]

    def creator(rnd):
        acl.rt.set_context(ctx)
        try:
            _create(rnd)
        finally:
            with lock:
                creating[0] -= 1

    def _create(rnd):
        for _ in range(ops // 8):
            if rnd.random() < 0.3:
                time.sleep(0.0005)
            s, ret = acl.rt.create_stream()
            e, ret2 = acl.rt.create_event()
            with lock:
                if ret == OK:
                    shared_streams.append(s)
                if ret2 == OK:
                    shared_events.append(e)

    def user(rnd):
        acl.rt.set_context(ctx)
        for _ in range(ops // 8):
            with lock:
                s = rnd.choice(shared_streams) if shared_streams else 0
                e = rnd.choice(shared_events) if shared_events else 0
            # any of these may meet a stream or event another thread just destroyed
            acl.rt.memset_async(dev, 4096, 1, 4096, s)
            acl.rt.record_event(e, s)
            acl.rt.stream_wait_event(s, e)
            acl.rt.synchronize_stream_with_timeout(s, 10_000)
            acl.rt.query_event_status(e)

    def destroyer(rnd):
        acl.rt.set_context(ctx)
        while creating[0] or len(shared_streams) > 8:
            with lock:
                s = rnd.choice(shared_streams) if shared_streams else None
                e = rnd.choice(shared_events) if shared_events else None
            for handle, fn, table in ((s, acl.rt.destroy_stream, shared_streams),
                                      (e, acl.rt.destroy_event, shared_events)):
                if handle is None:
                    continue
                ret = fn(handle)  # two destroyers may race on one handle: one wins
                if ret == OK:
                    counts["destroyed"] += 1
                    with lock:
                        if handle in table:
                            table.remove(handle)
                else:
                    assert ret == C.ACL_ERROR_RT_INVALID_HANDLE, ret
                    counts["refused"] += 1

    def contexts(rnd):
        for _ in range(ops // 40):
            c = call(acl.rt.create_context, 0)
            made = []
            racer = threading.Thread(target=lambda: _make_streams(c, made))
            racer.start()
            ok(acl.rt.destroy_context(c), "destroy_context")
            racer.join(30)
            assert not racer.is_alive()
            for s in made:  # every stream made in the context went with it
                assert rt_destroyed(s), "a stream outlived its context"
        acl.rt.set_context(ctx)

    rnd = random.Random(seed)
    run_threads([lambda r=random.Random(rnd.random()), f=f: f(r)
                 for f in (creator, creator, user, user, destroyer, destroyer, contexts)], timeout=600)
    ok(acl.rt.set_context(ctx), "set_context")
    for s in shared_streams:
        ok(acl.rt.destroy_stream(s), "destroy_stream")
    for e in shared_events:
        ok(acl.rt.destroy_event(e), "destroy_event")
    ok(acl.rt.free(dev), "free")
    assert call(acl.rt.get_stream_available_num) == before_streams, "the stream count drifted"
    assert call(acl.rt.get_event_avail_num) == before_events, "the event count drifted"
    return f"{counts['destroyed']} destroyed, {counts['refused']} refused as already destroyed"


def _make_streams(ctx, made):
    acl.rt.set_context(ctx)
    for _ in range(50):
        s, ret = acl.rt.create_stream()
        if ret != OK:
            return
        made.append(s)


def rt_destroyed(handle) -> bool:
    return RUNTIME.streams.lookup(handle) is None


# ---------------------------------------------------------------- interrupts
def scenario_interrupts(ops, seed):
    """The main thread enqueues batches of small tasks (each appends its id) and sets, and
    synchronizes at once, so it often drains a stream inline (one worker, busy with another
    thread's model workload); a timer interrupts it once per trial at a random moment."""
    os.environ["NPURT_WORKERS"] = "1"
    ctx = setup()
    rnd = random.Random(seed)
    streams = [call(acl.rt.create_stream) for _ in range(3)]
    ran, enqueued, uncertain = [], set(), set()
    bufs = [(call(acl.rt.malloc, 4096, 0), np.zeros(4096, np.uint8)) for _ in range(4)]
    for addr, _ in bufs:
        ok(acl.rt.memset(addr, 4096, 0, 4096), "memset")
    dirty = set()  # buffers an interrupted call may or may not have changed
    interrupts = trials = 0
    task_id = 0
    task_stream = {}  # task id -> the stream it was enqueued on
    cut_short = {h: 0 for h in streams}  # interrupts that landed while synchronizing each stream
    background = threading.Thread(target=_background_load, args=(ctx, ops, seed), daemon=True)
    background.start()
    for trial in range(ops // 50):
        timer = threading.Timer(rnd.random() * 0.004, _thread.interrupt_main)
        current = syncing = None
        trials += 1
        try:
            timer.start()
            for _ in range(rnd.randrange(2, 12)):
                kind = rnd.random()
                handle = rnd.choice(streams)
                s = RUNTIME.streams.get(handle)
                if kind < 0.6:
                    for _ in range(rnd.randrange(1, 30)):
                        task_id += 1
                        current = ("task", task_id)
                        s.enqueue(_host_task(ran, task_id))
                        enqueued.add(task_id)
                        task_stream[task_id] = handle
                    current, syncing = ("sync", None), handle
                    s.synchronize(report_errors=False)  # an interrupted task's failure stays there
                elif kind < 0.85:
                    i = rnd.randrange(len(bufs))
                    value = rnd.randrange(256)
                    current = ("buf", i)
                    ok(acl.rt.memset_async(bufs[i][0], 4096, value, 4096, handle), "memset_async")
                    bufs[i][1][:] = value
                    syncing = handle
                    s.synchronize(report_errors=False)  # one order per buffer
                else:
                    current, syncing = ("sync", None), handle
                    s.synchronize(report_errors=False)
                current = syncing = None
            timer.join()
            time.sleep(0.01)  # the interrupt lands by now (the flag is checked between bytecodes)
        except KeyboardInterrupt:
            interrupts += 1
            if syncing is not None:
                cut_short[syncing] += 1
            if current is not None and current[0] == "task":
                uncertain.add(current[1])  # interrupted on its way into the queue
            elif current is not None and current[0] == "buf":
                dirty.add(current[1])
        timer.join()
    # every interrupt propagated (none was swallowed into a task failure)
    assert interrupts == trials, f"{trials - interrupts} of {trials} interrupts were swallowed"
    for s in streams:  # no stream is wedged: all of them finish
        RUNTIME.streams.get(s).synchronize(timeout_ms=30_000, report_errors=False)
    counts = {}
    for i in ran:
        counts[i] = counts.get(i, 0) + 1
    twice = [i for i, c in counts.items() if c > 1]
    assert not twice, f"tasks ran twice: {twice[:10]}"
    lost = (enqueued - set(counts)) - uncertain
    # a task can be missing if its enqueue was interrupted (uncertain), or if an interrupt
    # landed while the main thread ran it inline before its body began: that task fails
    # ("interrupted") without running; at most one per interrupt of a synchronize of its stream
    per_stream = {h: sum(1 for i in lost if task_stream[i] == h) for h in streams}
    too_many = {h: n for h, n in per_stream.items() if n > cut_short[h]}
    assert not too_many, (f"enqueued tasks never ran: {sorted(lost)[:10]}; per stream {per_stream}, "
                          f"interrupts while synchronizing it {cut_short}")
    for i, (addr, model) in enumerate(bufs):
        out = np.empty(4096, np.uint8)
        ok(acl.rt.memcpy(out.ctypes.data, 4096, addr, 4096, D2H), "memcpy D2H")
        if i not in dirty:
            assert np.array_equal(out, model), f"buffer {i} differs from the model"
    background.join(300)
    assert not background.is_alive(), "the background thread hung"
    return (f"{interrupts} interrupts, {len(counts)} tasks ran, {len(uncertain)} enqueues interrupted, "
            f"{len(lost)} tasks cut short before their body ran")


def _host_task(ran, task_id):
    from npurt.runtime.tasks import HostFuncTask

    def body():
        ran.append(task_id)
        x = 0
        for k in range(500):  # Python work: an interrupt may land inside a task run inline
            x += k
    return HostFuncTask(body)


def _background_load(ctx, ops, seed):
    """Another thread's model workload, sharing the device with the interrupted one."""
    stats = {"ops": 0, "checks": 0, "hand_offs": 0}
    ModelThread(0, ctx, ops // 4, seed + 7, [queue.Queue()], stats).run()


# ---------------------------------------------------------------- fork
def scenario_fork(ops, seed):
    ctx = setup()
    rnd = random.Random(seed)
    stats = {"ops": 0, "checks": 0, "hand_offs": 0}
    stop = threading.Event()

    errors = []

    def load(i):
        try:
            while not stop.is_set():
                ModelThread(0, ctx, 50, rnd.random(), [queue.Queue()], stats).run()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(repr(exc))

    threads = [threading.Thread(target=load, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    forks = 0
    for _ in range(max(2, ops // 400)):
        time.sleep(rnd.random() * 0.05)
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)
            status = 1
            try:
                child_ctx = setup()
                child_stats = {"ops": 0, "checks": 0, "hand_offs": 0}
                ModelThread(0, child_ctx, 100, seed, [queue.Queue()], child_stats).run()
                status = 0
            except BaseException:  # noqa: BLE001
                import traceback
                traceback.print_exc()
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        assert status == 0, f"a forked child failed (status {status})"
        forks += 1
    stop.set()
    for t in threads:
        t.join(300)
        assert not t.is_alive(), "a parent thread hung"
    assert not errors, errors
    return f"{forks} forks, {stats['ops']} parent ops"


# ---------------------------------------------------------------- fuzz
GARBAGE = [None, "x", -1, 0, 1, 2 ** 70, 1.5, [1], (), object(), b"\x00" * 8, np.arange(3), np.int64(7),
           float("nan")]
_SKIP = {"process_report", "finalize", "init", "reset_device", "reset_device_force", "finalize_reference",
         "set_device", "destroy_context", "set_context", "stop_thread", "start_thread", "device_task_abort"}


def scenario_fuzz(ops, seed):
    setup()
    import inspect
    fns = []
    for module in (acl, acl.rt, acl.util, acl.mdl, acl.op, acl.media, acl.prof):
        for name in getattr(module, "__all__", dir(module)):  # not the helpers a module imports
            fn = getattr(module, name)
            if callable(fn) and not name.startswith("_") and not name.isupper() and name not in _SKIP \
                    and not inspect.ismodule(fn) and not inspect.isclass(fn):
                fns.append(fn)
    escaped = []
    calls = [0]

    def fuzz(rnd):
        acl.rt.set_device(0)
        for _ in range(ops // 4):
            fn = rnd.choice(fns)
            try:
                n = len([p for p in inspect.signature(fn).parameters.values()
                         if p.kind is p.POSITIONAL_OR_KEYWORD])
            except (TypeError, ValueError):
                n = rnd.randrange(4)
            args = [rnd.choice(GARBAGE) for _ in range(n)]
            try:
                import warnings
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fn(*args)
            except (TypeError, ValueError):
                pass  # what the real extension raises for arguments it cannot parse
            except Exception as exc:  # noqa: BLE001 - what the suite forbids
                escaped.append(f"{fn.__name__}{tuple(map(type, args))}: {type(exc).__name__}: {exc}")
            calls[0] += 1

    rnd = random.Random(seed)
    run_threads([lambda r=random.Random(rnd.random()): fuzz(r) for _ in range(4)], timeout=600)
    assert not escaped, escaped[:5]
    # the runtime is still usable
    acl.rt.set_device(0)
    s = call(acl.rt.create_stream)
    d = call(acl.rt.malloc, 64, 0)
    ok(acl.rt.memset_async(d, 64, 5, 64, s), "memset_async")
    ok(acl.rt.synchronize_stream(s), "synchronize_stream")
    return f"{calls[0]} garbage calls"


# ---------------------------------------------------------------- fragment (issue 29, item 2)
def scenario_fragment(ops, seed):
    ctx = setup()
    mem = RUNTIME.device(0).memory
    before = mem.stats()["allocated_bytes"]
    lock = threading.Lock()
    spans = {}   # addr -> (size, tag) of every live block, all threads

    def check_and_free(ptr, step):
        size, tag = spans[ptr]
        if ptr % 7 == 0 or step >= 0:  # the fill phase checks a sample (most of its time is frees)
            out = np.empty(size, np.uint8)
            ok(acl.rt.memcpy(out.ctypes.data, size, ptr, size, D2H), "memcpy D2H")
            assert (out == tag).all(), f"step {step}: block 0x{ptr:x} lost its bytes"
        with lock:
            del spans[ptr]
        ok(acl.rt.free(ptr), "free")

    def worker(rnd):
        ok(acl.rt.set_context(ctx), "set_context")
        mine = []
        # first many small blocks, most of them freed in random order: the pool is fragmented
        for _ in range(ops // 8):
            size = rnd.choice((64, 200, 480, 1000))
            ptr = call(acl.rt.malloc, size, 0)
            tag = rnd.randrange(1, 256)
            ok(acl.rt.memset(ptr, size, tag, size), "memset")
            with lock:
                spans[ptr] = (size, tag)
            mine.append(ptr)
        rnd.shuffle(mine)
        for _ in range(len(mine) * 9 // 10):
            check_and_free(mine.pop(), -1)
        # then everything mixed, with large mallocs only merging can serve
        for step in range(ops // 8):
            r = rnd.random()
            if r < 0.6 or not mine:
                size = rnd.choice((64, 200, 480, 1000, 3000))
                ptr = call(acl.rt.malloc, size, 0)
                tag = rnd.randrange(1, 256)
                ok(acl.rt.memset(ptr, size, tag, size), "memset")
                with lock:
                    spans[ptr] = (size, tag)
                mine.append(ptr)
            elif r < 0.97:
                check_and_free(mine.pop(rnd.randrange(len(mine))), step)
            else:  # a large malloc: after many frees only a merge of freed neighbours serves it
                big = call(acl.rt.malloc, rnd.choice((600_000, 1_000_000)), 0)
                ok(acl.rt.free(big), "free")
        for ptr in mine:
            with lock:
                del spans[ptr]
            ok(acl.rt.free(ptr), "free")

    rnd = random.Random(seed)
    run_threads([lambda r=random.Random(rnd.random()): worker(r) for _ in range(4)], timeout=600)
    assert not spans, "blocks left"
    assert mem.stats()["allocated_bytes"] == before, "device memory leaked"
    ok(acl.rt.synchronize_device(), "synchronize_device")
    RUNTIME.device(0).memory.empty_cache()
    frees = mem.stats()["num_frees"]
    return f"{frees} frees, {mem.stats()['reserved_bytes']} bytes still reserved"


# ---------------------------------------------------------------- models (issue 29, items 1 and 5)
def _convert_models(tmp):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import onnx_models as M
    endless = M.atc(M.save(M.endless_model(), os.path.join(tmp, "endless.onnx")), os.path.join(tmp, "endless"))
    mlp_onnx = M.save(M.mlp(), os.path.join(tmp, "mlp.onnx"))
    return endless, M.atc(mlp_onnx, os.path.join(tmp, "mlp"), input_shape="x:3,16"), mlp_onnx, M


def _io(model_id):
    desc = acl.mdl.create_desc()
    ok(acl.mdl.get_desc(desc, model_id), "get_desc")
    sets = []
    for count, size_of in ((acl.mdl.get_num_inputs(desc), acl.mdl.get_input_size_by_index),
                           (acl.mdl.get_num_outputs(desc), acl.mdl.get_output_size_by_index)):
        ds, ptrs = acl.mdl.create_dataset(), []
        for i in range(count):
            n = size_of(desc, i)
            ptr = call(acl.rt.malloc, n, 0)
            ptrs.append((ptr, n))
            acl.mdl.add_dataset_buffer(ds, acl.create_data_buffer(ptr, n))
        sets.append((ds, ptrs))
    return sets


def scenario_models(ops, seed):
    import _thread
    import tempfile
    from npurt.ge import constants as G
    ctx = setup()
    tmp = tempfile.mkdtemp()
    endless_om, mlp_om, mlp_onnx, M = _convert_models(tmp)
    mlp = call(acl.mdl.load_from_file, mlp_om)
    rnd = random.Random(seed)
    stats = {"stopped": 0, "checked": 0, "unloads": 0, "interrupts": 0}
    config = acl.mdl.create_exec_config_handle()
    ok(acl.mdl.set_exec_config_opt(config, G.ACL_MDL_STREAM_SYNC_TIMEOUT, 60), "set_exec_config_opt")

    def checker(r):
        acl.rt.set_context(ctx)
        (ins, in_ptrs), (outs, out_ptrs) = _io(mlp)
        stream = call(acl.rt.create_stream)
        for _ in range(max(2, ops // 8)):
            x = np.asarray([[r.uniform(-1, 1) for _ in range(16)] for _ in range(3)], np.float32)
            ok(acl.rt.memcpy(in_ptrs[0][0], x.nbytes, x.ctypes.data, x.nbytes, H2D), "memcpy H2D")
            if r.random() < 0.5:
                ok(acl.mdl.execute(mlp, ins, outs), "execute")
            else:
                ok(acl.mdl.execute_async(mlp, ins, outs, stream), "execute_async")
                ok(acl.rt.synchronize_stream(stream), "synchronize_stream")
            y = np.empty(out_ptrs[0][1] // 4, np.float32)
            ok(acl.rt.memcpy(y.ctypes.data, y.nbytes, out_ptrs[0][0], y.nbytes, D2H), "memcpy D2H")
            np.testing.assert_allclose(y.reshape(3, -1), M.reference(mlp_onnx, {"x": x})[0], rtol=1e-5, atol=1e-6)
            stats["checked"] += 1

    def stopper(r):
        acl.rt.set_context(ctx)
        model = call(acl.mdl.load_from_file, endless_om)
        (ins, _), (outs, _) = _io(model)
        stream = call(acl.rt.create_stream)
        for _ in range(max(2, ops // 8)):
            what = r.random()
            if what < 0.5:  # an execute_v2 stream timeout stops it; the stream goes on
                ret = acl.mdl.execute_v2(model, ins, outs, stream, config)
                assert ret == C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, ret
                assert acl.rt.synchronize_stream(stream) == C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
                stats["stopped"] += 1
            else:  # unload while it runs: stopped (107022 at the stream's synchronize), then reload
                ok(acl.mdl.execute_async(model, ins, outs, stream), "execute_async")
                time.sleep(r.uniform(0, 0.05))
                ok(acl.mdl.unload(model), "unload")
                assert acl.rt.synchronize_stream(stream) in (C.ACL_ERROR_RT_DEVICE_TASK_ABORT,
                                                              C.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID,
                                                              C.ACL_ERROR_RT_MODEL_EXECUTE)
                model = call(acl.mdl.load_from_file, endless_om)
                stats["unloads"] += 1
        return model, ins, outs, stream

    results = []
    run_threads([lambda r=random.Random(rnd.random()): checker(r) for _ in range(2)] +
                [lambda r=random.Random(rnd.random()): results.append(stopper(r))], timeout=600)
    # Ctrl-C during a synchronous execute of the endless model, in the main thread
    endless = call(acl.mdl.load_from_file, endless_om)
    (ins, _), (outs, _) = _io(endless)
    for _ in range(max(1, ops // 40)):
        timer = threading.Timer(rnd.uniform(0.01, 0.2), _thread.interrupt_main)
        timer.start()
        try:
            acl.mdl.execute(endless, ins, outs)
            raise AssertionError("an endless synchronous execute returned")
        except KeyboardInterrupt:
            stats["interrupts"] += 1
        timer.join()
    # leave with executions running: the interpreter's exit must stop them, not abort
    for model, m_ins, m_outs, stream in results:
        ok(acl.mdl.execute_async(model, m_ins, m_outs, stream), "execute_async")
    stream = call(acl.rt.create_stream)
    ok(acl.mdl.execute_async(endless, ins, outs, stream), "execute_async")
    time.sleep(0.1)
    return (f"{stats['checked']} checked executions, {stats['stopped']} stopped by timeouts, "
            f"{stats['unloads']} unloads while running, {stats['interrupts']} Ctrl-C; exit with models running")


# ---------------------------------------------------------------- launch (issue 29, item 3)
LAUNCHED = """
import sys, time
import npurt
import npurt.hccl as hccl
steps, bad, at = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])


def rank_main(rank):
    comm = hccl.Communicator.world()
    x = npurt.ones(1024)
    for step in range(steps):
        if rank == bad and step == at:
            raise RuntimeError(f"rank {rank} failed at step {step}")
        comm.all_reduce(x)
        npurt.synchronize()
    time.sleep(600)  # a rank that finished waits: only the abort can end it


hccl.spawn(rank_main)
"""


def scenario_launch(ops, seed):
    import subprocess
    import tempfile
    rnd = random.Random(seed)
    steps = max(4, ops // 100)
    bad, at = rnd.randrange(3), rnd.randrange(steps)
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "ranks.py")
        with open(script, "w") as f:
            f.write(LAUNCHED)
        env = {k: v for k, v in os.environ.items() if k != "NPURT_DEVICE_COUNT"}
        env["HCCL_EXEC_TIMEOUT"] = "1800"  # the default: only the abort ends the others in time
        proc = subprocess.Popen([sys.executable, "-m", "npurt.cli", "launch", "-n", "3", script, str(steps),
                                 str(bad), str(at)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=env, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            raise AssertionError(f"rank {bad} raised at step {at} but the job did not end:\n{out[-3000:]}")
    assert proc.returncode != 0, out[-3000:]
    assert f"RuntimeError: rank {bad} failed at step {at}" in out, out[-3000:]
    assert f"rank {bad} raised RuntimeError" in out, out[-3000:]
    return f"rank {bad} raised at step {at} of {steps}: the job ended (status {proc.returncode})"


NORMAL_EXIT = {"models"}  # scenarios that end through the interpreter's own exit (its atexit hooks)

if __name__ == "__main__":
    scenario, ops, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    # a rerun from a background shell starts with SIGINT ignored (tests/conftest.py)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    t0 = time.monotonic()
    summary = globals()[f"scenario_{scenario}"](ops, seed)
    print(f"OK {scenario} seed {seed}: {summary} in {time.monotonic() - t0:.1f} s", flush=True)
    if scenario in NORMAL_EXIT:
        sys.exit(0)
    os._exit(0)  # leave at once: a check that passed must not wait for daemon threads at exit
