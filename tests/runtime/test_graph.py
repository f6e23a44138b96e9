"""ACL graphs (issue 25 items 1-2): capture records work instead of running it, replay runs it
at replay time on the same addresses; cross-stream capture through events; calls a capture
forbids fail with the runtime's codes and invalidate it; bad graph use is refused."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime import graph as G
from npurt.runtime.errors import InvalidHandleError, NpuError, ParamInvalidError


def _put(rt, addr, values):
    arr = np.ascontiguousarray(values, np.float32)
    rt.memcpy(addr, arr.nbytes, arr.ctypes.data, arr.nbytes, C.ACL_MEMCPY_HOST_TO_DEVICE)


def _get(rt, addr, n):
    out = np.zeros(n, np.float32)
    rt.memcpy(out.ctypes.data, out.nbytes, addr, out.nbytes, C.ACL_MEMCPY_DEVICE_TO_HOST)
    return out


@pytest.fixture
def bufs(rt):
    a, b = rt.malloc(64), rt.malloc(64)
    yield a, b
    rt.free(a)
    rt.free(b)


def test_captured_work_runs_only_at_replay_and_reads_the_values_of_replay_time(rt, bufs):
    a, b = bufs
    s = rt.create_stream()
    calls = []
    _put(rt, a, np.arange(16))
    rt.capture_begin(s, G.GLOBAL)
    rt.memcpy_async(b, 64, a, 64, C.ACL_MEMCPY_DEVICE_TO_DEVICE, s)
    rt.launch_host_func(s, lambda: calls.append(1))
    status, graph = rt.capture_info(s)
    assert status == G.STATUS_ACTIVE
    assert rt.capture_end(s) is graph
    assert rt.capture_info(s) == (G.STATUS_NONE, None)
    assert calls == [] and _get(rt, b, 16).sum() == 0
    for k in (1, 2):
        _put(rt, a, np.full(16, k))  # new input in the same place
        rt.execute_async(graph, s)
        rt.synchronize_stream(s)
        assert (_get(rt, b, 16) == k).all()
    assert calls == [1, 1]
    rt.destroy_graph(graph)
    with pytest.raises(InvalidHandleError):
        rt.execute_async(graph, s)


def test_cross_stream_capture_joins_through_events_and_replays_with_the_dependencies(rt, bufs):
    a, b = bufs
    s, side = rt.create_stream(), rt.create_stream()
    fork, back = rt.create_event(), rt.create_event()
    order = []
    rt.capture_begin(s, G.GLOBAL)
    rt.launch_host_func(s, lambda: order.append("main 1"))
    rt.record_event(fork, s)
    rt.stream_wait_event(side, fork)             # side joins the capture
    assert side.capture is s.capture
    rt.launch_host_func(side, lambda: order.append("side"))
    rt.record_event(back, side)
    rt.stream_wait_event(s, back)                # and rejoins
    rt.launch_host_func(s, lambda: order.append("main 2"))
    graph = rt.capture_end(s)
    assert side.capture is None and graph.lanes == 2
    rt.execute_async(graph, s)
    rt.synchronize_stream(s)
    assert order == ["main 1", "side", "main 2"]
    rt.destroy_graph(graph)


def test_a_joined_stream_that_does_not_rejoin_fails_the_end(rt):
    s, side = rt.create_stream(), rt.create_stream()
    e = rt.create_event()
    rt.capture_begin(s, G.GLOBAL)
    rt.record_event(e, s)
    rt.stream_wait_event(side, e)
    rt.launch_host_func(side, lambda: None)
    with pytest.raises(NpuError) as err:
        rt.capture_end(s)
    assert err.value.code == C.ACL_ERROR_RT_STREAM_UNJOINED
    assert s.capture is None and side.capture is None  # both usable again
    rt.launch_host_func(side, lambda: None)
    rt.synchronize_stream(side)


@pytest.mark.parametrize("mode, refused", [(G.GLOBAL, True), (G.THREAD_LOCAL, True), (G.RELAXED, False)])
def test_a_synchronous_copy_during_capture_follows_the_mode(rt, bufs, mode, refused):
    a, b = bufs
    s = rt.create_stream()
    rt.capture_begin(s, mode)
    host = np.zeros(16, np.float32)
    if refused:
        with pytest.raises(NpuError) as err:
            rt.memcpy(host.ctypes.data, 64, a, 64, C.ACL_MEMCPY_DEVICE_TO_HOST)
        assert err.value.code == C.ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT
        assert "memcpy" in err.value.message and "capture began at" in err.value.message
        # the capture goes on, as CANN's CheckCaptureModeSupport leaves it: the refused copy did nothing
        assert rt.capture_info(s)[0] == G.STATUS_ACTIVE
        rt.destroy_graph(rt.capture_end(s))
    else:
        rt.memcpy(host.ctypes.data, 64, a, 64, C.ACL_MEMCPY_DEVICE_TO_HOST)
        rt.destroy_graph(rt.capture_end(s))
    assert s.capture is None


def test_thread_local_capture_leaves_other_threads_free_and_global_does_not(rt, bufs):
    a, _ = bufs
    host = np.zeros(16, np.float32)
    results = {}
    for mode in (G.THREAD_LOCAL, G.GLOBAL):
        s = rt.create_stream()
        rt.capture_begin(s, mode)

        def other():
            rt.set_device(0)
            try:
                rt.memcpy(host.ctypes.data, 64, a, 64, C.ACL_MEMCPY_DEVICE_TO_HOST)
                results[mode] = 0
            except NpuError as exc:
                results[mode] = exc.code
        t = threading.Thread(target=other)
        t.start()
        t.join()
        try:
            rt.destroy_graph(rt.capture_end(s))
        except NpuError:
            pass
    assert results == {G.THREAD_LOCAL: 0, G.GLOBAL: C.ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT}


def test_synchronizing_querying_or_destroying_a_capturing_stream_is_refused(rt):
    s = rt.create_stream()
    for call in (lambda: rt.synchronize_stream(s), lambda: rt.stream_query(s), lambda: rt.destroy_stream(s)):
        rt.capture_begin(s, G.RELAXED)
        with pytest.raises(NpuError) as err:
            call()
        assert err.value.code == C.ACL_ERROR_RT_STREAM_CAPTURED
        assert s.capture is not None                # refused, and the capture goes on (as CANN's)
        rt.destroy_graph(rt.capture_end(s))
    rt.synchronize_stream(s)  # usable again


def test_bad_capture_calls(rt):
    s = rt.create_stream()
    with pytest.raises(NpuError) as err:
        rt.capture_end(s)
    assert err.value.code == C.ACL_ERROR_RT_STREAM_NOT_CAPTURED
    with pytest.raises(ParamInvalidError):
        rt.capture_begin(None)
    with pytest.raises(ParamInvalidError):
        rt.capture_begin(s, 3)
    rt.capture_begin(s)
    with pytest.raises(NpuError) as err:
        rt.capture_begin(s)
    assert err.value.code == C.ACL_ERROR_RT_STREAM_CAPTURED
    g = rt.capture_end(s)
    with pytest.raises(NpuError) as err:  # replaying onto a capturing stream
        rt.capture_begin(s)
        rt.execute_async(g, s)
    assert err.value.code == C.ACL_ERROR_RT_STREAM_CAPTURED
    rt.capture_end(s)


def test_execute_replays_on_the_graphs_own_stream_and_waits(rt, bufs):
    a, b = bufs
    s = rt.create_stream()
    rt.capture_begin(s)
    rt.memset_async(b, 64, 7, 64, s)
    g = rt.capture_end(s)
    rt.execute(g, 5000)
    assert (_get(rt, b, 16).view(np.uint8) == 7).all()
    rt.destroy_graph(g)


def test_a_freed_buffer_waits_for_queued_replays(rt):
    a = rt.malloc(64)
    s = rt.create_stream()
    gate = threading.Event()
    rt.capture_begin(s)
    rt.memset_async(a, 64, 1, 64, s)
    g = rt.capture_end(s)
    rt.launch_host_func(s, gate.wait, 30)
    rt.execute_async(g, s)
    t = threading.Timer(0.05, gate.set)
    t.start()
    rt.free(a)   # stream-ordered: the replay's memset still owns the block until it ran
    rt.synchronize_stream(s)
    t.join()
    rt.destroy_graph(g)


def test_capture_errors_are_runtime_errors_as_the_other_runtime_state_errors():
    # torch code catches RuntimeError for a refused .item() / synchronize during a capture
    assert issubclass(G.CaptureError, RuntimeError) and issubclass(G.CaptureError, NpuError)
