"""npurt.Stream, the current stream, and asyncio waits (issue 6, scope 2).

Streams are held back in these tests with an event that has never been recorded: under ACL
semantics a stream waiting on it parks until a record of it completes, without any thread
sleeping, so "work still pending" states are deterministic.
"""
from __future__ import annotations

import asyncio
import gc
import threading

import numpy as np
import pytest

import npurt
from gates import Gate
from npurt.runtime import api as rt
from npurt.runtime import constants as C


@pytest.fixture(autouse=True)
def _fresh(fresh_runtime):
    yield


def _held(stream: npurt.Stream) -> Gate:
    """Hold `stream` until the returned gate is recorded (gate.record(any stream))."""
    return Gate(stream)


def test_current_stream_defaults_to_the_default_stream():
    assert npurt.current_stream() == npurt.default_stream()
    assert npurt.current_stream().runtime_stream.is_default


def test_with_stream_sets_and_restores_the_current_stream():
    s1, s2 = npurt.Stream(), npurt.Stream()
    with npurt.stream(s1):
        assert npurt.current_stream() is s1
        with npurt.stream(s2):
            assert npurt.current_stream() is s2
        assert npurt.current_stream() is s1
    assert npurt.current_stream() == npurt.default_stream()


def test_stream_object_is_a_context_manager_too():
    with npurt.Stream() as s:
        assert npurt.current_stream() is s
    assert npurt.current_stream() != s


def test_stream_of_another_device_switches_the_device_for_the_block():
    s = npurt.Stream(device=1)
    assert s.device == 1
    with npurt.stream(s):
        assert npurt.current_device() == 1
        assert npurt.current_stream() is s
    assert npurt.current_device() == 0
    assert npurt.current_stream(1) == npurt.default_stream(1)


def test_a_stream_made_current_lives_while_it_is_current():
    npurt.set_stream(npurt.Stream())          # nobody else holds it
    gc.collect()
    s = npurt.current_stream()
    assert not s.runtime_stream.destroyed and not s.runtime_stream.is_default
    assert npurt.current_stream() is s        # one npurt.Stream per runtime stream
    npurt.set_stream(npurt.default_stream())
    assert npurt.current_stream() == npurt.default_stream()


def test_current_stream_is_per_thread():
    s = npurt.Stream()
    seen = []
    with npurt.stream(s):
        t = threading.Thread(target=lambda: seen.append(npurt.current_stream() == npurt.default_stream()))
        t.start()
        t.join()
    assert seen == [True]


def test_array_work_goes_to_the_current_stream():
    s = npurt.Stream()
    gate = _held(s)
    with npurt.stream(s):
        x = npurt.zeros((256,))
    assert not s.query()            # the memset waits behind the gate on s
    assert npurt.default_stream().query()
    gate.record()
    s.synchronize()
    assert s.query()
    assert not x.to_host(stream=s).any()


def test_priority_is_kept_and_must_be_an_int():
    assert npurt.Stream(priority=3).priority == 3
    with pytest.raises(npurt.InvalidValueError):
        npurt.Stream(priority="high")


def test_wait_stream_orders_work_after_the_other_stream():
    producer, consumer = npurt.Stream(), npurt.Stream()
    gate = _held(producer)
    x = npurt.zeros((1000,), dtype=np.uint8, stream=producer)
    consumer.wait_stream(producer)
    rt.memset_async(x.ptr, 1000, 7, 1000, consumer.runtime_stream)
    assert not consumer.query()      # blocked behind the producer
    gate.record()
    consumer.synchronize()
    assert (x.to_host(stream=consumer) == 7).all()  # the memset ran after the zeros


def test_wait_event_orders_work_after_the_record():
    a, b = npurt.Stream(), npurt.Stream()
    gate = _held(a)
    done = a.record_event()
    b.wait_event(done)
    assert not b.query()
    gate.record()
    b.synchronize()
    assert done.query()


def test_record_event_returns_the_given_event():
    s = npurt.Stream()
    e = npurt.Event()
    assert s.record_event(e) is e
    s.synchronize()
    assert e.query()


def test_synchronize_raises_a_task_failure_as_npu_error():
    s = npurt.Stream()

    def boom():
        raise RuntimeError("kernel-ish failure")
    rt.launch_host_func(s.runtime_stream, boom)
    with pytest.raises(npurt.TaskError) as info:
        s.synchronize()
    assert "kernel-ish failure" in str(info.value)
    assert isinstance(info.value, npurt.NpuError)
    s.synchronize()  # reported once; the stream stays usable


def test_add_done_callback_runs_after_the_queued_work():
    s = npurt.Stream()
    gate = _held(s)
    called = threading.Event()
    got = []
    s.add_done_callback(lambda st: (got.append(st), called.set()))
    assert not called.wait(0.05)
    gate.record()
    assert called.wait(5)
    assert got == [s]


def test_add_done_callback_on_an_idle_stream_runs_at_once():
    s = npurt.Stream()
    got = []
    s.add_done_callback(got.append)
    assert got == [s]


def test_await_stream_wait_does_not_block_the_event_loop():
    s = npurt.Stream()
    gate = _held(s)
    x = npurt.zeros((64,), stream=s)
    order = []

    async def waiter():
        await s.wait()
        order.append("stream done")

    async def other():
        order.append("loop still running")
        gate.record()  # from inside the loop: only possible if the waiter did not block it

    async def main():
        await asyncio.wait_for(asyncio.gather(waiter(), other()), timeout=10)

    asyncio.run(main())
    assert order == ["loop still running", "stream done"]
    assert s.query()
    del x


def test_await_stream_directly_works():
    s = npurt.Stream()
    npurt.zeros((16,), stream=s)

    async def main():
        await s
        return s.query()
    assert asyncio.run(main())


def test_await_stream_raises_the_stream_failure():
    s = npurt.Stream()
    rt.launch_host_func(s.runtime_stream, lambda: 1 / 0)

    async def main():
        await asyncio.wait_for(s.wait(), timeout=10)
    with pytest.raises(npurt.TaskError):
        asyncio.run(main())


def test_await_a_stream_that_stops_on_failure_raises_instead_of_hanging():
    s = npurt.Stream()
    rt.set_stream_failure_mode(s.runtime_stream, C.ACL_STOP_ON_FAILURE)
    gate = _held(s)
    rt.launch_host_func(s.runtime_stream, lambda: 1 / 0)
    npurt.zeros((8,), stream=s)  # dropped when the stream stops

    async def main():
        task = asyncio.ensure_future(s.wait())
        await asyncio.sleep(0)
        gate.record()
        await asyncio.wait_for(task, timeout=10)
    with pytest.raises(npurt.TaskError):
        asyncio.run(main())


def test_a_dropped_stream_is_destroyed_after_its_work_ran():
    s = npurt.Stream()
    inner = s.runtime_stream
    gate = _held(s)
    del s
    gc.collect()
    assert not inner.destroyed       # work is still queued
    gate.record()
    npurt.synchronize()
    assert inner.destroyed


def test_stream_methods_reject_wrong_types_with_invalid_value():
    s = npurt.Stream()
    with pytest.raises(npurt.InvalidValueError):
        s.wait_event(s)
    with pytest.raises(npurt.InvalidValueError):
        s.wait_stream(object())
    with pytest.raises(npurt.InvalidValueError):
        npurt.stream("not a stream")
    with pytest.raises(npurt.InvalidValueError):
        s.add_done_callback(42)
