"""npurt.Event: record, wait, query, synchronize, timing, await (issue 6, scope 3)."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

import npurt
from npurt.runtime import constants as C


@pytest.fixture(autouse=True)
def _fresh(fresh_runtime):
    yield


def _held(stream):
    gate = npurt.Event()
    stream.wait_event(gate)
    return gate


def test_event_maps_to_a_sync_event_and_timing_adds_time_line():
    plain, timed = npurt.Event(), npurt.Event(enable_timing=True)
    assert plain.runtime_event.flags == C.ACL_EVENT_SYNC
    assert timed.runtime_event.flags == C.ACL_EVENT_SYNC | C.ACL_EVENT_TIME_LINE


def test_query_is_false_until_the_recorded_work_has_run():
    s = npurt.Stream()
    gate = _held(s)
    e = npurt.Event()
    e.record(s)
    assert not e.query()
    gate.record()
    e.synchronize()
    assert e.query()


def test_never_recorded_event_is_not_complete():
    assert not npurt.Event().query()


def test_record_without_stream_uses_the_current_stream():
    s = npurt.Stream()
    gate = _held(s)
    e = npurt.Event()
    with npurt.stream(s):
        e.record()
    assert not e.query()
    gate.record()
    e.synchronize()
    assert e.query()


def test_event_wait_makes_the_stream_wait():
    a, b = npurt.Stream(), npurt.Stream()
    gate = _held(a)
    e = npurt.Event()
    e.record(a)
    e.wait(b)
    x = npurt.zeros((8,), stream=b)
    assert not b.query()
    gate.record()
    b.synchronize()
    assert not x.to_host(stream=b).any()


def test_elapsed_time_is_milliseconds_between_records():
    s = npurt.Stream()
    start, end = npurt.Event(enable_timing=True), npurt.Event(enable_timing=True)
    start.record(s)
    x = npurt.to_device(np.ones(1 << 20, np.float32), stream=s)
    end.record(s)
    end.synchronize()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and ms >= 0.0
    with pytest.raises(npurt.EventError):
        end.elapsed_time(start)  # reversed: the runtime's timestamp-reversal error
    del x


def test_elapsed_time_without_timing_raises_event_error():
    s = npurt.Stream()
    a, b = npurt.Event(), npurt.Event()
    a.record(s)
    b.record(s)
    s.synchronize()
    with pytest.raises(npurt.EventError) as info:
        a.elapsed_time(b)
    assert "enable_timing=True" in str(info.value)
    assert info.value.code != 0


def test_elapsed_time_of_an_unfinished_event_says_to_synchronize():
    s = npurt.Stream()
    gate = _held(s)
    a, b = npurt.Event(enable_timing=True), npurt.Event(enable_timing=True)
    a.record(s)
    b.record(s)
    with pytest.raises(npurt.EventError) as info:
        a.elapsed_time(b)
    assert info.value.code == C.ACL_ERROR_RT_EVENT_NOT_COMPLETE
    gate.record()


def test_await_event_resumes_once_recorded_work_ran():
    s = npurt.Stream()
    gate = _held(s)
    e = npurt.Event()
    e.record(s)
    order = []

    async def waiter():
        await e
        order.append("event")

    async def main():
        task = asyncio.ensure_future(waiter())
        await asyncio.sleep(0)
        order.append("loop free")
        gate.record()
        await asyncio.wait_for(task, timeout=10)

    asyncio.run(main())
    assert order == ["loop free", "event"]
    assert e.query()


def test_await_a_never_recorded_event_waits_for_its_first_record():
    e = npurt.Event()

    async def main():
        task = asyncio.ensure_future(_await(e))
        await asyncio.sleep(0.01)
        assert not task.done()
        e.record()
        await asyncio.wait_for(task, timeout=10)

    asyncio.run(main())
    assert e.query()


async def _await(e):
    await e


def test_await_an_event_whose_record_was_dropped_raises():
    s = npurt.Stream()
    gate = _held(s)
    e = npurt.Event()
    e.record(s)

    async def main():
        task = asyncio.ensure_future(_await(e))
        await asyncio.sleep(0)
        s.runtime_stream.abort()
        await asyncio.wait_for(task, timeout=10)

    with pytest.raises(npurt.EventError):
        asyncio.run(main())
    del gate


def test_event_methods_reject_wrong_types():
    e = npurt.Event(enable_timing=True)
    with pytest.raises(npurt.InvalidValueError):
        e.record("stream")
    with pytest.raises(npurt.InvalidValueError):
        e.elapsed_time(3)
