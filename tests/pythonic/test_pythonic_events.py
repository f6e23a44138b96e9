"""npurt.Event: record, wait, query, synchronize, timing, await (issue 6, scope 3)."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

import npurt
from gates import Gate
from npurt.runtime import constants as C


@pytest.fixture(autouse=True)
def _fresh(fresh_runtime):
    yield


def _held(stream):
    return Gate(stream)


def test_event_maps_to_an_ex_sync_event_and_timing_adds_time_line():
    plain, timed = npurt.Event(), npurt.Event(enable_timing=True)
    assert plain.runtime_event.flags == C.ACL_EVENT_SYNC
    assert timed.runtime_event.flags == C.ACL_EVENT_SYNC | C.ACL_EVENT_TIME_LINE
    assert plain.runtime_event.ex and timed.runtime_event.ex  # as torch_npu's NPUEvent


def test_query_is_false_until_the_recorded_work_has_run():
    s = npurt.Stream()
    gate = _held(s)
    e = npurt.Event()
    e.record(s)
    assert not e.query()
    gate.record()
    e.synchronize()
    assert e.query()


def test_never_recorded_event_is_complete():
    assert npurt.Event().query()  # torch_npu: query() of an event not yet created is true


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
    assert end.elapsed_time(start) == -ms  # reversed: negative, as aclrtEventElapsedTime
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


def test_elapsed_time_of_a_never_recorded_event_says_to_record_both():
    a, b = npurt.Event(enable_timing=True), npurt.Event(enable_timing=True)
    a.record()
    with pytest.raises(npurt.EventError, match="recorded"):
        a.elapsed_time(b)


def test_elapsed_time_of_an_unfinished_event_says_to_synchronize():
    s = npurt.Stream()
    gate = _held(s)
    a, b = npurt.Event(enable_timing=True), npurt.Event(enable_timing=True)
    a.record(s)
    b.record(s)
    with pytest.raises(npurt.EventError) as info:
        a.elapsed_time(b)
    assert info.value.code == C.ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID
    assert "synchronize" in str(info.value)
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


def test_await_a_never_recorded_event_returns_at_once():
    e = npurt.Event()
    asyncio.run(asyncio.wait_for(_await(e), timeout=10))  # as synchronize(): nothing to wait for


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


def test_an_interprocess_event_has_a_handle_and_is_not_a_timing_event():
    e = npurt.Event(interprocess=True)
    handle = e.ipc_handle()
    assert isinstance(handle, bytes) and len(handle) == 64 and e.interprocess
    assert e.ipc_handle() == handle                 # the same export each time
    e.record()
    e.synchronize()
    assert e.query()
    with pytest.raises(npurt.NpuError):
        npurt.Event(enable_timing=True, interprocess=True)
    with pytest.raises(npurt.NpuError):
        npurt.Event().ipc_handle()                  # not created as an interprocess event
