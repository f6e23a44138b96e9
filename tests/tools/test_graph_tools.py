"""The tools on ACL graphs (issue 25 item 8): the profiler shows each replay as one range over
its tasks on each stream it ran on; the sanitizer checks replayed work as ordinary accesses
(a replay racing another stream is reported, one ordered by an event is not)."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

import npurt
import npurt.sanitizer
from npurt.runtime import constants as C
from npurt.runtime import graph as G
from npurt.runtime import graph_cond as GC
from npurt.runtime import graph_edit as GE

H2D, D2H, D2D = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST, C.ACL_MEMCPY_DEVICE_TO_DEVICE
pytestmark = pytest.mark.timeout(60)


def _graph_of_two_copies(rt, s, a, b, c):
    rt.capture_begin(s, G.GLOBAL)
    rt.memcpy_async(b, 4096, a, 4096, D2D, s)
    rt.memcpy_async(c, 4096, b, 4096, D2D, s)
    return rt.capture_end(s)


def test_the_profiler_shows_each_replay_as_one_range_over_its_tasks(rt, tmp_path):
    s = rt.create_stream()
    a, b, c = rt.malloc(4096), rt.malloc(4096), rt.malloc(4096)
    graph = _graph_of_two_copies(rt, s, a, b, c)
    with npurt.profiler.profile(tmp_path):
        for _ in range(2):
            rt.execute_async(graph, s)
        rt.synchronize_stream(s)
    with open(tmp_path / "msprof.json") as f:
        events = json.load(f)["traceEvents"]
    replays = [e for e in events if e.get("cat") == "graph_replay"]
    assert [e["name"] for e in replays] == [f"graph {graph.handle:#x} replay {k}" for k in (1, 2)]
    copies = [e for e in events if e["ph"] == "X" and e.get("cat") == "memcpy_async"]
    for r in replays:
        assert r["args"]["tasks"] == 2
        inside = [e for e in copies if e["tid"] == r["tid"] and r["ts"] <= e["ts"] <= r["ts"] + r["dur"]]
        assert len(inside) == 2
    rt.destroy_graph(graph)


@pytest.fixture
def san(rt):
    s = npurt.sanitizer.enable(echo=False)
    yield s
    s.disable()


def _races(san):
    return [r for r in san.reports if r.tool == "racecheck"]


def test_the_sanitizer_checks_replayed_work_like_any_other(rt, san):
    s, reader = rt.create_stream(), rt.create_stream()
    a, b, c = rt.malloc(4096), rt.malloc(4096), rt.malloc(4096)
    host = rt.malloc_host(4096)
    rt.memset(a, 4096, 1, 4096)
    graph = _graph_of_two_copies(rt, s, a, b, c)
    seq = rt.execute_async(graph, s)
    rt.launch_host_func(reader, lambda: _wait(s, seq))       # really after it, but unordered for the runtime
    rt.memcpy_async(host, 4096, c, 4096, D2H, reader)
    rt.synchronize_device()
    assert [r.kind for r in _races(san)] == ["RAW hazard"]
    san.reports.clear()
    ev = rt.create_event()
    rt.execute_async(graph, s)
    rt.record_event(ev, s)
    rt.stream_wait_event(reader, ev)                          # ordered: no report
    rt.memcpy_async(host, 4096, c, 4096, D2H, reader)
    rt.synchronize_device()
    assert _races(san) == []
    rt.destroy_graph(graph)


def _wait(stream, seq):
    while stream.completed_seq < seq:
        time.sleep(0.001)


def test_a_call_the_capture_refuses_is_reported_with_where_it_was_made_and_where_the_capture_began(rt, san):
    s = rt.create_stream()
    a = rt.malloc(4096)
    host = rt.malloc_host(4096)
    rt.capture_begin(s, G.GLOBAL)                                       # the capture begins here
    with pytest.raises(npurt.runtime.NpuError) as e:
        rt.memcpy(host, 4096, a, 4096, D2H)                             # forbidden in GLOBAL mode
    assert e.value.code == C.ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT
    rt.destroy_graph(rt.capture_end(s))                                 # the capture went on
    [report] = [r for r in san.reports if r.kind == "capture call refused"]
    assert report.tool == "synccheck" and "107030" in report.title
    call, began = report.actors
    assert call.site is not None and began.site is not None
    assert call.site.file == began.site.file == __file__ and call.site.line > began.site.line
    assert "the capture goes on" in report.details[0]


@pytest.mark.parametrize("managed", [True, False])
def test_memory_a_graph_holds_is_its_own_but_an_app_free_of_it_is_a_use_after_free_at_replay(rt, san, managed):
    """A collected array (managed free: a temporary of the captured work) stays the graph's, as
    a private pool; an aclrtFree of memory a graph still uses is a bug on hardware, found when a
    replay touches it. The condition word of a conditional task is a known allocation."""
    s, sub = rt.create_stream(), rt.create_stream()
    tmp = rt.malloc(4096)
    rt.memset(tmp, 4096, 0, 4096)
    rt.capture_begin(s, G.THREAD_LOCAL)
    rt.memset_async(tmp, 4096, 1, 4096, s)
    _, graph = rt.capture_info(s)
    cond = GC.cond_handle_create(graph, 0, 0)
    [body] = GC.add_cond_task(cond, GC.COND_IF, 1, s)
    rt.capture_begin(sub, G.THREAD_LOCAL, into=body)
    rt.memset_async(tmp, 4096, 2, 4096, sub)
    rt.capture_end(sub)
    rt.capture_end(s)
    rt.free(tmp, managed=managed)
    one = np.ones(1, np.uint64)
    rt.memcpy(cond.addr, 8, one.ctypes.data, 8, H2D)
    rt.execute_async(graph, s)
    rt.synchronize_stream(s)
    rt.destroy_graph(graph)
    again = rt.malloc(4096)            # the address may come back: the tools see a fresh allocation
    rt.memset(again, 4096, 0, 4096)
    rt.free(again)
    kinds = [r.kind for r in san.reports]
    assert kinds == ([] if managed else ["use after free"])
