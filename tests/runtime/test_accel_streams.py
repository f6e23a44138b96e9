"""The C accelerator's stream path (_speedups.enqueue_copy, run_tasks; npurt.runtime.stream and
scheduler): a small copy enqueued, run inline or by a worker, retired, and every case it does
not take (a replaced run(), a failure, an interrupt, a listening tool, a busy enqueue lock) left
to the Python path with the same result. Each test runs with the extension where there is one
and, in a fresh interpreter, without it (NPURT_SPEEDUPS=0)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from npurt.runtime import HOOKS, INLINE_MAX_BYTES, TaskError, accel, memops
from npurt.runtime import constants as C
from npurt.runtime.tasks import CopyTask
from tests.isolation import run_isolated
from tests.runtime.test_inline import rt  # noqa: F401 - the fixture: the runtime with inline execution on

D2D, D2H = C.ACL_MEMCPY_DEVICE_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST
HAVE_C = accel.SPEEDUPS is not None


def _filled(rt, n, value):
    ptr = rt.malloc(n)
    rt.memset(ptr, n, value, n)
    return ptr


def _read(rt, ptr, n):
    host = np.zeros(n, np.uint8)
    rt.memcpy(host.ctypes.data, n, ptr, n, D2H)
    return host


def test_memops_fast_path_is_the_c_enqueue_where_the_extension_is_built():
    assert (memops.enqueue_copy is accel.SPEEDUPS.enqueue_copy) if HAVE_C else memops.enqueue_copy is None


def test_a_burst_of_small_copies_keeps_its_sequence_numbers_order_and_bytes(rt):
    s = rt.create_stream()
    src, dst = [_filled(rt, 4096, v) for v in (1, 2)]
    seqs = [rt.memcpy_async(dst + 64 * (i % 64), 64, src + 64 * (i % 64), 64, D2D, s) for i in range(500)]
    assert seqs == list(range(1, 501)) and s.enqueued_seq == 500
    s.synchronize()
    assert s.completed_seq == 500 and not s.queue and (_read(rt, dst, 4096) == 1).all()
    # overlapping ranges within one block are copied as memmove copies them
    rt.memset(src, 4096, 0, 4096)
    rt.memset(src, 64, 9, 64)
    rt.memcpy_async(src + 64, 128, src, 128, D2D, s)
    s.synchronize()
    got = _read(rt, src, 256)
    assert (got[:128] == 9).all() and (got[128:192] == 0).all()


def test_a_copy_whose_run_is_replaced_runs_the_replacement(rt, monkeypatch):
    calls = []
    real = CopyTask.run

    def run(self):
        calls.append(threading.get_ident())
        real(self)

    monkeypatch.setattr(CopyTask, "run", run)
    s = rt.create_stream()
    src, dst = _filled(rt, 64, 5), _filled(rt, 64, 0)
    rt.memcpy_async(dst, 64, src, 64, D2D, s)
    s.synchronize()
    assert calls == [threading.get_ident()] and (_read(rt, dst, 64) == 5).all()


def test_a_failing_copy_is_reported_at_the_synchronize_and_the_stream_goes_on(rt, monkeypatch):
    def run(self):
        raise ValueError("dma broke")

    infos = []
    rt.set_exception_info_callback(infos.append)
    try:
        s = rt.create_stream()
        src, dst = _filled(rt, 64, 5), _filled(rt, 64, 0)
        monkeypatch.setattr(CopyTask, "run", run)
        seq = rt.memcpy_async(dst, 64, src, 64, D2D, s)  # inline: returns normally
        assert s.completed_seq == seq and len(infos) == 1
        with pytest.raises(TaskError, match="dma broke") as err:
            s.synchronize()
        assert err.value.code == C.ACL_ERROR_RT_SYS_DMA
        monkeypatch.undo()
        assert rt.memcpy_async(dst, 64, src, 64, D2D, s) == seq + 1
        s.synchronize()
        assert (_read(rt, dst, 64) == 5).all()
    finally:
        rt.set_exception_info_callback(None)


def test_an_interrupt_in_an_inline_copy_fails_that_copy_and_the_next_ones_run(rt, monkeypatch):
    state = {"raise": True}
    real = CopyTask.run

    def run(self):
        if state.pop("raise", False):
            raise KeyboardInterrupt
        real(self)

    s = rt.create_stream()
    src, dst = _filled(rt, 64, 3), _filled(rt, 64, 0)
    monkeypatch.setattr(CopyTask, "run", run)
    with pytest.raises(KeyboardInterrupt):
        rt.memcpy_async(dst, 64, src, 64, D2D, s)
    with pytest.raises(TaskError):
        s.synchronize()  # the interrupted copy failed, once
    assert s.completed_seq == 1
    rt.memcpy_async(dst, 64, src, 64, D2D, s)
    s.synchronize()
    assert s.completed_seq == 2 and (_read(rt, dst, 64) == 3).all()


def test_a_listening_tool_sees_every_copy_started_and_finished(rt):
    seen = []

    def observer(name, **fields):
        if name in ("task_enqueued", "task_started", "task_finished"):
            seen.append((name, fields["task"].seq))

    s = rt.create_stream()
    src, dst = _filled(rt, 64, 1), _filled(rt, 64, 0)
    HOOKS.add(observer)
    try:
        for _ in range(3):
            rt.memcpy_async(dst, 64, src, 64, D2D, s)
        s.synchronize()
    finally:
        HOOKS.remove(observer)
    for seq in (1, 2, 3):
        assert [n for n, q in seen if q == seq] == ["task_enqueued", "task_started", "task_finished"]


def test_a_large_copy_goes_through_the_python_copy_and_arrives(rt):
    n = INLINE_MAX_BYTES + 64
    s = rt.create_stream()
    src, dst = _filled(rt, n, 4), _filled(rt, n, 0)
    rt.memcpy_async(dst, n, src, n, D2D, s)
    s.synchronize()
    assert (_read(rt, dst, n) == 4).all()


def _held(stream, gate):
    """Keep a Pythonic stream busy until `gate` is set (what follows is queued, not run inline)."""
    from npurt import runtime
    runtime.launch_host_func(stream.runtime_stream, gate.wait, 30)


def test_the_pythonic_copies_hold_their_host_arrays_until_they_ran(rt):
    """DeviceArray.copy_from_host / copy_to_host go through enqueue_array_copy (the array's
    address read in C, a CopyTask holding the array): queued behind busy work, a copy from an
    array the caller dropped still copies it, and a copy into an array arrives there."""
    import gc

    import npurt
    s = npurt.Stream()
    gate = threading.Event()
    _held(s, gate)
    dev = npurt.empty(1024, np.float32)
    dev.copy_from_host(np.arange(1024, dtype=np.float32) * 3, stream=s)  # held by the task alone
    gc.collect()
    out = np.zeros(1024, np.float32)
    dev.copy_to_host(out, stream=s, blocking=False)
    assert not out.any()  # queued behind the held stream
    gate.set()
    s.synchronize()
    assert (out == np.arange(1024, dtype=np.float32) * 3).all()


def test_a_pythonic_copy_into_an_array_that_a_finalize_freed_is_refused(fresh_runtime):
    import npurt
    from npurt.exceptions import InvalidValueError
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    a = npurt.empty(16, np.float32)
    with pytest.warns(Warning):  # the finalize reports the allocation still in use
        fresh_runtime.finalize()
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    with pytest.raises(InvalidValueError, match="not inside any allocation"):
        a.copy_from_host(np.ones(16, np.float32))


def test_an_elementwise_op_is_enqueued_in_c_and_keeps_its_operands_until_it_ran(rt):
    """`a + b` enqueues one ElementwiseTask through enqueue_task with the three allocations as
    holders: queued behind busy work, dropping the operands does not let their memory be reused
    before the op has read it."""
    import npurt
    from npurt.runtime import enqueue_task
    assert (enqueue_task is not None) == HAVE_C
    s = npurt.Stream()
    gate = threading.Event()
    with npurt.stream(s):
        a, b = npurt.to_device(np.full(1024, 2, np.float32)), npurt.to_device(np.full(1024, 5, np.float32))
        s.synchronize()
        _held(s, gate)
        c = a + b
        del a, b
        junk = [npurt.empty(1024, np.float32) for _ in range(8)]  # would take the freed blocks
        for j in junk:
            j.copy_from_host(np.full(1024, 100, np.float32), stream=s)
        gate.set()
        s.synchronize()
    assert (c.to_host() == 7).all()


_SCRIPT = """
import numpy as np
from npurt import runtime as rt
from npurt.runtime import constants as C, accel
rt.init(); rt.set_device(0)
s = rt.create_stream()
src, dst = rt.malloc(4096), rt.malloc(4096)
rt.memset(src, 4096, 6, 4096)
seqs = [rt.memcpy_async(dst + 64 * (i % 64), 64, src + 64 * (i % 64), 64, C.ACL_MEMCPY_DEVICE_TO_DEVICE, s)
        for i in range(300)]
s.synchronize()
host = np.zeros(4096, np.uint8)
rt.memcpy(host.ctypes.data, 4096, dst, 4096, C.ACL_MEMCPY_DEVICE_TO_HOST)
assert seqs == list(range(1, 301)) and (host == 6).all() and s.completed_seq == 300
print("OK", accel.SPEEDUPS is not None)
"""


@pytest.mark.parametrize("speedups", ["1", "0"])
def test_the_same_burst_with_and_without_the_extension(speedups):
    code, text = run_isolated(_SCRIPT, env={"NPURT_SPEEDUPS": speedups})
    assert code == 0, text
    assert "OK" in text
    if HAVE_C:
        assert ("OK True" in text) == (speedups == "1")
