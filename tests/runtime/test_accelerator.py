"""The optional C accelerator (npurt._speedups, npurt.runtime.accel): the pool's records and
bins in C and malloc/free as C entry points behave exactly as the pure-Python pool, which
stays the slow path and the tools' view. Each behaviour is checked against both
implementations where it can be (the C one where a compiler is found)."""
from __future__ import annotations

import json
import shutil
import sys
import threading

import pytest

import npurt.acl as acl
from npurt import runtime as rt
from npurt.runtime import HOOKS, accel, bind, constants as C, current_context, empty_cache, memory_stats
from npurt.runtime import RUNTIME
from npurt.runtime.memory import Block
from tests.isolation import run_isolated

HAVE_C = accel.SPEEDUPS is not None
BIN_KINDS = [accel._PyBin] + ([accel.SPEEDUPS.Bin] if HAVE_C else [])
BLOCK_KINDS = [accel._PyBlockBase] + ([accel.SPEEDUPS.BlockBase] if HAVE_C else [])


def _blocks(base, n):
    kind = type("B", (base,), {"__slots__": ()})
    return [kind(0x1000 * (i + 1), 512, None, None) for i in range(n)]


@pytest.mark.parametrize("bin_kind, block_kind", list(zip(BIN_KINDS, BLOCK_KINDS)))
def test_a_bin_is_an_ordered_set_whose_popitem_takes_the_block_cached_last(bin_kind, block_kind):
    b1, b2, b3 = _blocks(block_kind, 3)
    lst = bin_kind()
    assert not lst and len(lst) == 0 and lst.untracked is False
    for b in (b1, b2, b3):
        lst[b] = None
    lst[b1] = None  # already there: keeps its place
    assert len(lst) == 3 and list(lst) == [b1, b2, b3] and b2 in lst
    assert lst.popitem() == (b3, None)
    assert lst.pop(b1, False) is None and lst.pop(b1, False) is False  # claimed once only
    assert list(lst) == [b2]
    assert lst.popitem()[0] is b2
    with pytest.raises(KeyError):
        lst.popitem()
    lst.untracked = True
    assert lst.untracked is True


@pytest.mark.parametrize("block_kind", BLOCK_KINDS)
def test_a_block_record_starts_free_with_no_uses(block_kind):
    (b,) = _blocks(block_kind, 1)
    assert (b.addr, b.size, b.requested, b.align32, b.state, b.uses, b.prev, b.next) == \
        (0x1000, 512, 0, False, 0, None, None, None)
    b.size += 512
    b.uses = {"s": 3}
    assert b.size == 1024 and b.uses == {"s": 3}


@pytest.mark.skipif(not HAVE_C, reason="no C compiler: the pure-Python pool runs")
def test_a_c_bin_moves_a_block_it_receives_from_another_bin():
    (b,) = _blocks(accel.SPEEDUPS.BlockBase, 1)
    one, two = accel.SPEEDUPS.Bin(), accel.SPEEDUPS.Bin()
    one[b] = None
    two[b] = None
    assert len(one) == 0 and list(two) == [b]


def test_the_pool_runs_the_c_accelerator_where_it_can_be_built():
    if accel._disabled():
        assert accel.SPEEDUPS is None and "NPURT_SPEEDUPS=0" in accel.describe()
    elif shutil.which("cc") or shutil.which("gcc"):
        assert HAVE_C, accel.describe()
        assert issubclass(Block, accel.SPEEDUPS.BlockBase)


_SCRIPT = """
import json, npurt.acl as acl
from npurt import runtime as rt
acl.init(); acl.rt.set_device(0)
out = []
ptrs = [acl.rt.malloc(n, 0) for n in (1, 100, 4096, 4096, 70000, 3 << 20)]
out.append([r for _, r in ptrs])
base = ptrs[0][0]
out.append([p - base for p, _ in ptrs])
out.append([acl.rt.free(p) for p, _ in ptrs[1:4]])
again = [acl.rt.malloc(4096, 0)[0] - base, rt.malloc(100) - base, rt.malloc(4096, 0, False) - base]
out.append(again)
twice = acl.rt.malloc(4096, 0)[0]
acl.rt.free(twice)
out.append([acl.rt.free(base + 7), acl.rt.free(twice), acl.rt.free(0), acl.rt.free(12345)])
out.append(acl.rt.malloc(-1, 0)[1])
out.append(list(acl.rt.malloc(4096, 99)[1:]))
out.append(acl.rt.malloc(True, 0)[1])
st = rt.memory_stats()
out.append({k: st[k] for k in ("allocated_bytes", "active_blocks", "num_allocs", "num_frees", "pool_hits")})
print("RESULT", json.dumps(out))
"""


def _run_script(speedups: str):
    code, text = run_isolated(_SCRIPT, env={"NPURT_SPEEDUPS": speedups})
    assert code == 0, text
    return json.loads(next(line[7:] for line in text.splitlines() if line.startswith("RESULT ")))


@pytest.mark.skipif(not HAVE_C, reason="no C compiler: only the pure-Python pool runs")
def test_every_face_allocates_the_same_addresses_codes_and_stats_with_and_without_the_accelerator():
    with_c, without = _run_script("1"), _run_script("0")
    assert with_c == without
    assert with_c[0] == [0] * 6 and with_c[2] == [0, 0, 0]
    assert all(code != 0 for code in with_c[4])  # inside an allocation, double free, null, a host address
    assert with_c[5] != 0 and with_c[6][-1] == 0 and with_c[7] == 0  # -1 refused; policy 99, True as 1 served


_ARRAYS = """
import gc, json, numpy as np, npurt
from npurt import runtime as rt
out = []
keep = [npurt.empty(1024) for _ in range(3)]
base = keep[0].ptr
for _ in range(3):
    npurt.empty(1024, np.float32)  # made and dropped: the same block each time
    x = npurt.empty((4, 256), "float32")
    out.append([x.ptr - base, x.nbytes, list(x.strides)])
    del x
ys = [npurt.empty(n) for n in (0, 1, 300, 70000)]
out.append([y.ptr - base for y in ys])
del keep[1]
out.append(npurt.empty(1024).ptr - base)
st = rt.memory_stats()
out.append({k: st[k] for k in ("allocated_bytes", "active_blocks", "num_allocs", "num_frees", "pool_hits")})
del ys, keep
gc.collect()
st = rt.memory_stats()
out.append({k: st[k] for k in ("allocated_bytes", "active_blocks", "num_allocs", "num_frees", "pool_hits")})
print("RESULT", json.dumps(out))
"""


@pytest.mark.skipif(not HAVE_C, reason="no C compiler: only the pure-Python pool runs")
def test_pythonic_arrays_get_the_same_addresses_and_stats_with_and_without_the_accelerator():
    results = []
    for speedups in ("1", "0"):
        code, text = run_isolated(_ARRAYS, env={"NPURT_SPEEDUPS": speedups})
        assert code == 0, text
        results.append(json.loads(next(line[7:] for line in text.splitlines() if line.startswith("RESULT "))))
    with_c, without = results
    assert with_c == without
    assert with_c[-1]["allocated_bytes"] == 0 and with_c[-1]["num_allocs"] == with_c[-1]["num_frees"]


def test_a_listening_tool_sees_every_malloc_and_free_of_the_facade(pyacl_device):
    seen = []

    def observer(name, **fields):
        if name in ("mem_alloc", "mem_free"):
            seen.append((name, fields["addr"]))

    warm, _ = acl.rt.malloc(4096, 0)
    acl.rt.free(warm)  # cached: the fast path would serve the next malloc
    HOOKS.add(observer)
    try:
        ptr, ret = acl.rt.malloc(4096, 0)
        assert ret == 0 and acl.rt.free(ptr) == 0
    finally:
        HOOKS.remove(observer)
    assert seen == [("mem_alloc", ptr), ("mem_free", ptr)]


def test_a_free_with_unfinished_work_waits_for_it_on_every_path(pyacl_device):
    stream, _ = acl.rt.create_stream()
    gate, _ = acl.rt.create_event_with_flag(1)
    try:
        src, _ = acl.rt.malloc(4096, 0)
        dst, _ = acl.rt.malloc(4096, 0)
        assert acl.rt.stream_wait_event(stream, gate) == 0  # nothing behind this runs yet
        assert acl.rt.memcpy_async(dst, 64, src, 64, C.ACL_MEMCPY_DEVICE_TO_DEVICE, stream) == 0
        assert acl.rt.free(dst) == 0
        again, _ = acl.rt.malloc(4096, 0)
        assert again != dst  # dst waits for the queued copy: not reused
        assert acl.rt.record_event(gate, acl.rt.create_stream()[0]) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        acl.rt.free(again)
        acl.rt.free(src)
    finally:
        acl.rt.destroy_event(gate)
        acl.rt.destroy_stream(stream)


@pytest.fixture
def pyacl_device():
    if RUNTIME.initialized:
        RUNTIME.finalized = False
        RUNTIME.finalize(timeout_s=5.0)
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    yield
    acl.rt.reset_device(0)
    acl.finalize()


def test_the_python_pool_is_the_slow_path_of_each_c_entry():
    for entry in (rt.malloc, rt.free, acl.rt.malloc, acl.rt.free):
        slow = getattr(entry, "__wrapped__", entry)
        assert callable(slow) and entry.__name__ == slow.__name__ and entry.__doc__ == slow.__doc__
    if HAVE_C:
        assert type(acl.rt.malloc) is accel.SPEEDUPS.Entry
    assert sys.modules.get("npurt._speedups") is accel.SPEEDUPS or not HAVE_C


def test_fast_and_slow_paths_racing_from_threads_lose_and_duplicate_no_block(pyacl_device):
    """acl.rt.malloc/free (the C entries' fast path), the Python pool's locked slow path
    (sizes that miss, empty_cache's coalescing) and a tool-free stats reader all at once."""
    ctx = current_context()
    errors, handed_out = [], []
    stop = threading.Event()

    def churn(sizes):
        bind(ctx)
        mine = []
        try:
            for i in range(1500):
                if mine and i % 3 == 2:
                    assert acl.rt.free(mine.pop(0)) == 0
                else:
                    ptr, ret = acl.rt.malloc(sizes[i % len(sizes)], 0)
                    assert ret == 0
                    mine.append(ptr)
                    handed_out.append(ptr)
            for p in mine:
                assert acl.rt.free(p) == 0
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def trim():
        bind(ctx)
        while not stop.is_set():
            empty_cache()
            memory_stats()

    workers = [threading.Thread(target=churn, args=(sizes,))
               for sizes in ([4096], [64, 4096, 700], [70_000, 4096], [3 << 20, 64])]
    trimmer = threading.Thread(target=trim)
    trimmer.start()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    trimmer.join()
    assert not errors, errors
    st = memory_stats()
    assert st["allocated_bytes"] == 0 and st["active_blocks"] == 0 and st["num_allocs"] == st["num_frees"]
    empty_cache()
    assert memory_stats()["reserved_bytes"] == 0  # every block came back, none twice


def test_each_thread_allocates_on_its_own_current_device_and_follows_set_device(pyacl_device):
    """The C entries remember each thread's context pool: a thread on device 1 beside one on
    device 0 gets device 1's memory, and set_device moves a thread's next malloc at once."""
    results, errors = {}, []

    def on(device, key):
        try:
            assert acl.rt.set_device(device) == 0
            ptrs = []
            for _ in range(50):  # warm: the later ones are cached blocks (the fast path)
                ptr, ret = acl.rt.malloc(4096, 0)
                assert ret == 0
                ptrs.append(ptr)
                acl.rt.free(ptr)
            results[key] = {rt.address.physical_device(p) for p in ptrs}
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=on, args=(d, d)) for d in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert results == {0: {0}, 1: {1}}
    for device in (1, 0, 1):
        assert acl.rt.set_device(device) == 0
        ptr, ret = acl.rt.malloc(4096, 0)
        assert ret == 0 and rt.address.physical_device(ptr) == device
        assert acl.rt.free(ptr) == 0
        rt.free(rt.malloc(4096))
    acl.rt.reset_device(1)


def test_a_malloc_after_the_context_died_is_refused_not_served_from_a_cache(pyacl_device):
    for _ in range(3):  # cached blocks and the thread's pool remembered
        acl.rt.free(acl.rt.malloc(4096, 0)[0])
    ctx, ret = acl.rt.create_context(0)
    assert ret == 0
    acl.rt.free(acl.rt.malloc(4096, 0)[0])
    assert acl.rt.destroy_context(ctx) == 0
    ptr, ret = acl.rt.malloc(4096, 0)
    assert ret != 0 and ptr == 0  # the thread's current context was destroyed
    assert acl.rt.set_device(0) == 0
    ptr, ret = acl.rt.malloc(4096, 0)
    assert ret == 0 and acl.rt.free(ptr) == 0
    assert acl.rt.reset_device_force(0) == 0
    assert acl.rt.malloc(4096, 0)[1] != 0  # the device was reset
    with pytest.raises(rt.NpuError):
        rt.malloc(4096)
    assert acl.rt.set_device(0) == 0


def test_a_cached_block_is_answered_as_a_fresh_pair_each_time(pyacl_device):
    first = acl.rt.malloc(4096, 0)
    acl.rt.free(first[0])
    again = acl.rt.malloc(4096, 0)
    assert type(again) is tuple and again == first and again[1] == 0
    acl.rt.free(again[0])


def test_a_thread_whose_context_another_thread_destroyed_is_refused_its_next_malloc(pyacl_device):
    """The device's pool outlives the context (other contexts share it, its bins stay warm),
    so a remembered thread -> pool answer must die with the context."""
    ctx, ret = acl.rt.create_context(0)
    assert ret == 0
    acl.rt.set_device(0)  # the main thread back on the default context
    warmed, destroyed, answers = threading.Event(), threading.Event(), []

    def worker():
        acl.rt.set_context(ctx)
        for _ in range(3):
            acl.rt.free(acl.rt.malloc(4096, 0)[0])
        warmed.set()
        destroyed.wait(10)
        answers.append(acl.rt.malloc(4096, 0))

    t = threading.Thread(target=worker)
    t.start()
    assert warmed.wait(10)
    acl.rt.free(acl.rt.malloc(4096, 0)[0])  # a cached 4 KiB block waits in the shared pool
    acl.rt.free(acl.rt.malloc(4096, 0)[0])
    assert acl.rt.destroy_context(ctx) == 0
    destroyed.set()
    t.join()
    (ptr, ret), = answers
    assert ret != 0 and ptr == 0


# ---------------------------------------------------------------- the uses of a block
class _Retiring:
    """A stand-in stream: its work up to `completed_seq` has retired."""

    def __init__(self, done: int):
        self.completed_seq = done


def _python_uses():
    import importlib
    src = importlib.import_module("npurt.runtime.memory")
    ns: dict = {}
    text = open(src.__file__).read()
    start, end = text.index("def note_use("), text.index("if SPEEDUPS is not None:  # the same three in C")
    exec(compile(text[start:end], src.__file__, "exec"), ns)  # the Python definitions themselves
    return ns["note_use"], ns["note_uses"], ns["prune_uses"]


USE_KINDS = [("python", _python_uses())] + (
    [("C", (accel.SPEEDUPS.note_use, accel.SPEEDUPS.note_uses, accel.SPEEDUPS.prune_uses))] if HAVE_C else [])


@pytest.mark.parametrize("kind, fns", USE_KINDS, ids=[k for k, _ in USE_KINDS])
@pytest.mark.parametrize("block_kind", BLOCK_KINDS)
def test_a_block_remembers_the_last_use_per_stream_and_forgets_retired_ones_as_it_grows(kind, fns, block_kind):
    note_use, note_uses, prune_uses = fns
    (b,) = _blocks(block_kind, 1)
    busy, done = _Retiring(0), [_Retiring(10) for _ in range(6)]
    note_use(None, busy, 1)  # pageable host memory: nothing to hold
    note_use(b, busy, 1)
    note_use(b, busy, 2)
    assert b.uses == {busy: 2}
    for s in done:
        note_use(b, s, 5)
    assert len(b.uses) == 7
    note_use(b, _Retiring(0), 1)  # the 8th entry: the retired ones are forgotten
    assert set(b.uses) == {busy} | {s for s in b.uses if s.completed_seq == 0} and len(b.uses) == 2
    note_uses([b, None, b], busy, 3)
    assert b.uses[busy] == 3
    late = _Retiring(3)
    b.uses[late] = 3
    prune_uses(b.uses)
    assert late not in b.uses and busy in b.uses


@pytest.mark.parametrize("kind, fns", USE_KINDS, ids=[k for k, _ in USE_KINDS])
def test_a_pinned_range_records_its_uses_as_a_block_does(kind, fns):
    note_use = fns[0]

    class Pinned:
        uses = None

    p, s = Pinned(), _Retiring(0)
    note_use(p, s, 4)
    assert p.uses == {s: 4}


LOCK_KINDS = [threading.Lock] + ([accel.SPEEDUPS.Lock] if HAVE_C else [])


@pytest.mark.parametrize("make", LOCK_KINDS)
def test_a_streams_enqueue_lock_behaves_as_threading_lock(make):
    lock = make()
    assert lock.acquire() is True and lock.locked()
    assert lock.acquire(False) is False and lock.acquire(timeout=0.01) is False
    lock.release()
    assert not lock.locked()
    with pytest.raises(RuntimeError):
        lock.release()
    with pytest.raises(ValueError):
        lock.acquire(False, 1.0)
    count = [0]

    def add():
        for _ in range(20_000):
            with lock:
                count[0] += 1

    threads = [threading.Thread(target=add) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert count[0] == 60_000 and not lock.locked()


@pytest.mark.skipif(not HAVE_C, reason="no C compiler: threading.Lock is the enqueue lock")
def test_a_stream_adds_no_object_for_the_collector_to_walk_with_its_enqueue_lock(pyacl_device):
    import gc
    s = rt.create_stream()
    try:
        assert type(s.enq_lock) is accel.SPEEDUPS.Lock and not gc.is_tracked(s.enq_lock)
    finally:
        rt.destroy_stream(s)


_FAILED_ALLOCATION = """
import gc, json, sys, npurt
unraisable = []
sys.unraisablehook = lambda info: unraisable.append(repr(info.exc_value))
npurt.faults.inject("alloc@1")
try:
    npurt.empty(16)
    outcome = "allocated"
except npurt.OutOfMemoryError:
    outcome = "OutOfMemoryError"
npurt.faults.clear()
gc.collect()
after = npurt.empty(16).size  # the runtime stays usable
print("RESULT " + json.dumps([outcome, unraisable, after]))
"""


@pytest.mark.parametrize("speedups", ["1", "0"])
def test_an_array_whose_allocation_fails_leaves_no_record_behind_to_free(speedups):
    # (the Python record used to exist before its malloc ran: collecting it raised
    # AttributeError 'ptr' in __del__, reported as an ignored exception)
    code, text = run_isolated(_FAILED_ALLOCATION, env={"NPURT_SPEEDUPS": speedups})
    assert code == 0, text
    outcome, unraisable, after = json.loads(next(line[7:] for line in text.splitlines() if line.startswith("RESULT ")))
    assert outcome == "OutOfMemoryError" and unraisable == [] and after == 16
