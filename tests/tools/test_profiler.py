"""The profiler (npurt.profiler, npurt.tools.profiler): what a profile records, the trace it
writes, and that the summary tables agree with the trace."""
from __future__ import annotations

import csv
import json
import threading
import time

import numpy as np
import pytest

import npurt
from npurt.runtime import constants as C
from npurt.runtime.observers import HOOKS
from npurt.runtime.tasks import Task
from npurt.tools.profiler.session import ProfilerError

H2D, D2H = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST
MiB = 1 << 20


def _trace(out_dir):
    with open(out_dir / "msprof.json") as f:
        return json.load(f)


def _csv(out_dir, name):
    with open(out_dir / f"{name}.csv", newline="") as f:
        return list(csv.DictReader(f))


def _spans(doc, pid=None, cat=None):
    return [e for e in doc["traceEvents"] if e["ph"] == "X" and (pid is None or e["pid"] == pid)
            and (cat is None or e["cat"] == cat)]


def _task_spans(doc):
    """Spans of device tasks (not waits, steps or ranges)."""
    return [e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] >= 1
            and e["cat"] not in ("wait", "step")]


@pytest.fixture
def pipeline(rt, tmp_path):
    """A small two-stream pipeline through the runtime API, profiled into tmp_path:
    H2D on s1, record, s2 waits, relu kernel on s2, D2H on s2. Returns (profile, dir, info)."""
    from npurt.ops import launch
    s1, s2 = rt.create_stream(), rt.create_stream()
    n = 1 << 18
    host = rt.malloc_host(n * 4)
    out = rt.malloc_host(n * 4)
    d_in, d_out = rt.malloc(n * 4, 0), rt.malloc(n * 4, 0)
    ev = rt.create_event()
    with npurt.profiler.profile(tmp_path) as prof:
        rt.memcpy_async(d_in, n * 4, host, n * 4, H2D, s1)
        rec_seq = rt.record_event(ev, s1)
        rt.stream_wait_event(s2, ev)
        launch.elementwise("relu", d_out, d_in, None, n, np.float32, stream=s2, num_blocks=2)
        rt.memcpy_async(out, n * 4, d_out, n * 4, D2H, s2)
        rt.synchronize_stream(s2)
    return prof, tmp_path, {"s1": s1, "s2": s2, "record_seq": rec_seq, "bytes": n * 4}


# ---------------------------------------------------------------- the trace's structure
def test_trace_is_chrome_trace_json_with_named_processes_and_stream_tracks(pipeline):
    _, out, info = pipeline
    doc = _trace(out)
    assert isinstance(doc["traceEvents"], list) and doc["displayTimeUnit"] == "ms"
    meta = {(e["name"], e["pid"], e.get("tid")): e["args"] for e in doc["traceEvents"] if e["ph"] == "M"}
    assert meta[("process_name", 0, None)]["name"].startswith("Host")
    assert meta[("process_name", 1, None)]["name"].startswith("NPU 0")
    for s in (info["s1"], info["s2"]):
        assert meta[("thread_name", 1, s.stream_id)]["name"] == f"Stream {s.stream_id}"
    for e in doc["traceEvents"]:
        assert e["ph"] in ("M", "X", "s", "f", "i", "C")
        if e["ph"] == "X":
            assert e["dur"] >= 0 and e["ts"] >= 0
            assert ("thread_name", e["pid"], e["tid"]) in meta  # every track is named


def test_every_task_is_one_span_on_its_streams_track_named_by_what_it_did(pipeline):
    _, out, info = pipeline
    tasks = _task_spans(_trace(out))
    got = sorted((e["tid"], e["args"]["task id"], e["cat"], e["name"]) for e in tasks)
    s1, s2 = info["s1"].stream_id, info["s2"].stream_id
    assert got == sorted([(s1, 1, "memcpy_async", "memcpy_async H2D"), (s1, 2, "record_event", "record_event"),
                          (s2, 1, "stream_wait_event", "stream_wait_event"), (s2, 2, "kernel", "relu"),
                          (s2, 3, "memcpy_async", "memcpy_async D2H")])


def test_copy_spans_carry_bytes_and_bandwidth_and_kernels_their_blocks(pipeline):
    _, out, info = pipeline
    by_name = {e["name"]: e for e in _task_spans(_trace(out))}
    h2d = by_name["memcpy_async H2D"]
    assert h2d["args"]["bytes"] == info["bytes"]
    assert h2d["args"]["bandwidth (GB/s)"] == pytest.approx(info["bytes"] / (h2d["dur"] * 1000), rel=1e-2)
    assert by_name["relu"]["args"]["blocks"] == 2 and by_name["relu"]["args"]["kernel"] == "unary"


def test_host_track_has_the_api_calls_of_the_thread_that_made_them(rt, tmp_path):
    import npurt.acl as acl
    acl.rt.set_device(0)
    with npurt.profiler.profile(tmp_path):
        ptr, _ = acl.rt.malloc(4096, 0)
        acl.rt.free(ptr)
        worker = threading.Thread(target=lambda: (acl.rt.set_device(0), acl.rt.get_device()), name="helper")
        worker.start()
        worker.join()
    doc = _trace(tmp_path)
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["pid"] == 0
             and e["name"] == "thread_name"}
    calls = [(names[e["tid"]], e["name"]) for e in _spans(doc, pid=0, cat="acl")]
    main = threading.current_thread().name
    assert (main, "acl.rt.malloc") in calls and (main, "acl.rt.free") in calls
    assert ("helper", "acl.rt.get_device") in calls and (main, "acl.rt.get_device") not in calls


def test_api_functions_are_wrapped_only_while_profiling(rt):
    import npurt.acl as acl
    before = acl.rt.memcpy_async, npurt.DeviceArray.to_host, npurt.ops.relu
    with npurt.profiler.profile():
        assert acl.rt.memcpy_async is not before[0]
    assert (acl.rt.memcpy_async, npurt.DeviceArray.to_host, npurt.ops.relu) == before
    assert not HOOKS.active


# ---------------------------------------------------------------- times agree with events
def test_task_spans_agree_with_event_timestamps_of_the_same_run(rt, tmp_path):
    s = rt.create_stream()
    start, end = rt.create_event(), rt.create_event()
    with npurt.profiler.profile(tmp_path) as prof:
        rt.record_event(start, s)
        rt.launch_host_func(s, time.sleep, 0.02, name="sleep")
        rt.record_event(end, s)
        rt.synchronize_stream(s)
    elapsed_us = rt.event_elapsed_time(start, end) * 1000
    doc = _trace(tmp_path)
    t0 = doc["otherData"]["start_ns"]
    rec = sorted((e for e in _task_spans(doc) if e["cat"] == "record_event"), key=lambda e: e["ts"])
    sleep = next(e for e in _task_spans(doc) if e["name"] == "sleep")
    for span, ev in zip(rec, (start, end)):  # each event's timestamp lies inside its record task's span
        ts_us = (ev.timestamp_ns() - t0) / 1000
        assert span["ts"] - 0.001 <= ts_us <= span["ts"] + span["dur"] + 0.001
    assert rec[0]["ts"] + rec[0]["dur"] <= sleep["ts"] and sleep["ts"] + sleep["dur"] <= rec[1]["ts"]
    assert sleep["dur"] <= elapsed_us + 0.001
    assert rec[1]["ts"] - (rec[0]["ts"] + rec[0]["dur"]) - 0.002 <= elapsed_us
    assert elapsed_us <= rec[1]["ts"] + rec[1]["dur"] - rec[0]["ts"] + 0.002
    assert sleep["dur"] >= 20_000 and prof.timeline.duration >= 20_000_000


# ---------------------------------------------------------------- flows
def test_each_enqueue_flow_starts_in_the_host_call_that_enqueued_the_task_and_ends_at_the_task(rt, tmp_path):
    import npurt.acl as acl
    acl.rt.set_device(0)
    stream, _ = acl.rt.create_stream()
    dev, _ = acl.rt.malloc(4096, 0)
    host, _ = acl.rt.malloc_host(4096)
    with npurt.profiler.profile(tmp_path):
        acl.rt.memcpy_async(dev, 4096, host, 4096, H2D, stream)
        acl.rt.memset_async(dev, 4096, 0, 4096, stream)
        acl.rt.synchronize_stream(stream)
    doc = _trace(tmp_path)
    flows = {}
    for e in doc["traceEvents"]:
        if e["ph"] in ("s", "f") and e["cat"] == "enqueue":
            flows.setdefault(e["id"], {})[e["ph"]] = e
    tasks = {(e["pid"], e["tid"], e["ts"]): e for e in _task_spans(doc)}
    calls = _spans(doc, pid=0, cat="acl")
    assert len(flows) == 2
    for pair in flows.values():
        task = tasks[(pair["f"]["pid"], pair["f"]["tid"], pair["f"]["ts"])]  # ends at the task's start
        call = next(c for c in calls if c["tid"] == pair["s"]["tid"] and c["ts"] <= pair["s"]["ts"] <= c["ts"] + c["dur"])
        assert (task["name"], call["name"]) in {("memcpy_async H2D", "acl.rt.memcpy_async"),
                                                ("memset_async", "acl.rt.memset_async")}
        assert pair["s"]["ts"] <= pair["f"]["ts"]  # enqueued before it ran


def test_event_flow_links_the_record_a_wait_captured_to_that_wait(rt, tmp_path):
    s1, s2, s3 = rt.create_stream(), rt.create_stream(), rt.create_stream()
    ev = rt.create_event()
    with npurt.profiler.profile(tmp_path):
        rt.record_event(ev, s1)                     # an earlier record on s1
        rt.synchronize_stream(s1)
        rt.launch_host_func(s3, time.sleep, 0.01)
        seq = rt.record_event(ev, s3)               # the record the wait captures
        rt.stream_wait_event(s2, ev)
        rt.synchronize_stream(s2)
    doc = _trace(tmp_path)
    pairs = {}
    for e in doc["traceEvents"]:
        if e["ph"] in ("s", "f") and e["cat"] == "event":
            pairs.setdefault(e["id"], {})[e["ph"]] = e
    assert len(pairs) == 1
    (pair,) = pairs.values()
    spans = {(e["tid"], e["ts"]): e for e in _task_spans(doc)}
    source, target = spans[(pair["s"]["tid"], pair["s"]["ts"])], spans[(pair["f"]["tid"], pair["f"]["ts"])]
    assert (source["cat"], source["tid"], source["args"]["task id"]) == ("record_event", s3.stream_id, seq)
    assert (target["cat"], target["tid"]) == ("stream_wait_event", s2.stream_id)


def test_a_stream_parked_on_a_wait_shows_a_wait_span_saying_what_it_waited_for(rt, tmp_path):
    s1, s2 = rt.create_stream(), rt.create_stream()
    ev = rt.create_event()
    with npurt.profiler.profile(tmp_path):
        rt.launch_host_func(s1, time.sleep, 0.1, name="slow")  # long enough for s2 to reach its wait first
        rt.record_event(ev, s1)
        rt.stream_wait_event(s2, ev)
        rt.synchronize_stream(s2)
    doc = _trace(tmp_path)
    (wait,) = _spans(doc, cat="wait")
    assert wait["tid"] == s2.stream_id and wait["dur"] >= 10_000
    assert f"stream {s1.stream_id}" in wait["args"]["waiting on"]
    summary = {int(r["Stream ID"]): r for r in _csv(tmp_path, "stream_summary")}
    assert float(summary[s2.stream_id]["Wait Time(us)"]) == pytest.approx(wait["dur"], abs=0.002)
    gaps = [g for g in _csv(tmp_path, "idle_gaps") if int(g["Stream ID"]) == s2.stream_id]
    assert gaps and gaps[0]["Reason"].startswith("waiting for stream")


# ---------------------------------------------------------------- the summaries add up to the trace
def test_op_statistic_totals_are_the_sums_of_the_trace_spans(pipeline):
    _, out, _ = pipeline
    spans = _task_spans(_trace(out))
    for row in _csv(out, "op_statistic"):
        mine = [e for e in spans if e["name"] == row["OP Type"]]
        assert int(row["Count"]) == len(mine)
        assert float(row["Total Time(us)"]) == pytest.approx(sum(e["dur"] for e in mine), abs=0.002 * len(mine))
        assert float(row["Max Time(us)"]) == pytest.approx(max(e["dur"] for e in mine), abs=0.002)
        if row["Bytes"] != "N/A":
            assert int(row["Bytes"]) == sum(e["args"]["bytes"] for e in mine)
    assert sum(float(r["Ratio(%)"]) for r in _csv(out, "op_statistic")) == pytest.approx(100, abs=0.05)


def test_op_summary_and_task_time_list_the_trace_tasks(pipeline):
    _, out, _ = pipeline
    spans = _task_spans(_trace(out))
    task_time = _csv(out, "task_time")
    assert sorted((int(r["stream_id"]), int(r["task_id"]), r["kernel_name"]) for r in task_time) == \
        sorted((e["tid"], e["args"]["task id"], e["name"]) for e in spans)
    work = [e for e in spans if e["cat"] not in ("record_event", "stream_wait_event")]
    rows = _csv(out, "op_summary")
    assert len(rows) == len(work)
    for r in rows:
        e = next(e for e in work if e["tid"] == int(r["Stream ID"]) and e["args"]["task id"] == int(r["Task ID"]))
        assert float(r["Task Start Time(us)"]) == pytest.approx(e["ts"], abs=0.001)
        assert float(r["Task Duration(us)"]) == pytest.approx(e["dur"], abs=0.001)


def test_stream_busy_time_and_overlap_follow_from_the_spans(rt, tmp_path):
    s1, s2 = rt.create_stream(), rt.create_stream()
    both = threading.Barrier(2)

    def together():  # both streams' tasks start at the same moment, then sleep
        both.wait(timeout=10)
        time.sleep(0.03)
    with npurt.profiler.profile(tmp_path):
        rt.launch_host_func(s1, together, name="a")
        rt.launch_host_func(s2, together, name="b")
        rt.synchronize_stream(s1)
        rt.synchronize_stream(s2)
    spans = _task_spans(_trace(tmp_path))
    streams = {int(r["Stream ID"]): r for r in _csv(tmp_path, "stream_summary")}
    busy = {}
    for s in (s1, s2):
        busy[s.stream_id] = sum(e["dur"] for e in spans if e["tid"] == s.stream_id)
        assert float(streams[s.stream_id]["Busy Time(us)"]) == pytest.approx(busy[s.stream_id], abs=0.01)
    (whole,) = [r for r in _csv(tmp_path, "overlap") if r["Step"] == "all"]
    lo = min(e["ts"] for e in spans)
    hi = max(e["ts"] + e["dur"] for e in spans)
    assert float(whole["Duration(us)"]) == pytest.approx(hi - lo, abs=0.01)
    union = float(whole["Busy(us)"])
    # two streams: the time both were busy is what their busy times count twice
    assert float(whole["Overlapped(us)"]) == pytest.approx(sum(busy.values()) - union, abs=0.01)
    assert float(whole["Overlapped(us)"]) >= 20_000  # they did run side by side
    assert float(whole["Free(us)"]) == pytest.approx(hi - lo - union, abs=0.01)


def test_api_statistic_counts_and_times_are_those_of_the_host_spans(rt, tmp_path):
    import npurt.acl as acl
    acl.rt.set_device(0)
    with npurt.profiler.profile(tmp_path):
        for _ in range(3):
            acl.rt.free(acl.rt.malloc(1024, 0)[0])
    spans = _spans(_trace(tmp_path), pid=0, cat="acl")
    for row in _csv(tmp_path, "api_statistic"):
        mine = [e["dur"] for e in spans if e["name"] == row["API Name"]]
        assert int(row["Count"]) == len(mine) and row["Level"] == "acl"
        assert float(row["Time(us)"]) == pytest.approx(sum(mine), abs=0.002 * len(mine))
    assert {r["API Name"]: int(r["Count"]) for r in _csv(tmp_path, "api_statistic")} == \
        {"acl.rt.malloc": 3, "acl.rt.free": 3}


def test_idle_gaps_run_from_one_task_of_a_stream_to_the_next(rt, tmp_path):
    s = rt.create_stream()
    with npurt.profiler.profile(tmp_path):
        rt.launch_host_func(s, lambda: None, name="first")
        rt.synchronize_stream(s)
        time.sleep(0.02)  # the host queues nothing for a while
        rt.launch_host_func(s, lambda: None, name="second")
        rt.synchronize_stream(s)
    spans = {e["name"]: e for e in _task_spans(_trace(tmp_path))}
    gap = _csv(tmp_path, "idle_gaps")[0]  # the largest
    first, second = spans["first"], spans["second"]
    assert float(gap["Start(us)"]) == pytest.approx(first["ts"] + first["dur"], abs=0.002)
    assert float(gap["Duration(us)"]) == pytest.approx(second["ts"] - first["ts"] - first["dur"], abs=0.002)
    assert gap["Next Task"] == "second" and gap["Reason"].startswith("nothing queued")


def test_synchronous_copies_are_host_spans_and_statistics_with_bytes(rt, tmp_path):
    dev = rt.malloc(MiB, 0)
    a = np.ones(MiB // 4, np.float32)
    with npurt.profiler.profile(tmp_path):
        rt.memcpy(dev, MiB, a.ctypes.data, MiB, H2D)
    (span,) = _spans(_trace(tmp_path), pid=0, cat="host_copy")
    assert span["name"] == "memcpy H2D" and span["args"]["bytes"] == MiB
    (row,) = [r for r in _csv(tmp_path, "op_statistic") if r["Device_id"] == "host"]
    assert (row["OP Type"], row["Core Type"], int(row["Bytes"])) == ("memcpy H2D", "HOST_COPY", MiB)


def test_device_memory_counter_follows_allocations(rt, tmp_path):
    with npurt.profiler.profile(tmp_path):
        ptr = rt.malloc(8 * MiB, 0)
        rt.free(ptr)
    counters = [e["args"]["allocated (MiB)"] for e in _trace(tmp_path)["traceEvents"] if e["ph"] == "C"]
    assert counters[-2] - counters[0] == pytest.approx(8) and counters[-1] == pytest.approx(counters[0])


# ---------------------------------------------------------------- ranges, marks, any task kind
def test_ranges_and_marks_appear_in_msprof_tx_and_as_steps_of_the_overlap_table(rt, tmp_path):
    s = rt.create_stream()
    with npurt.profiler.profile(tmp_path):
        with npurt.profiler.range("outer"):
            with npurt.profiler.range("inner"):
                rt.launch_host_func(s, time.sleep, 0.005)
                rt.synchronize_stream(s)
            npurt.profiler.mark("here")
    rows = _csv(tmp_path, "msprof_tx")
    assert [(r["event_type"], r["message"]) for r in rows] == [("push/pop", "outer"), ("push/pop", "inner"),
                                                               ("marker", "here")]
    outer, inner = rows[0], rows[1]
    assert float(outer["Start_time(us)"]) <= float(inner["Start_time(us)"]) <= float(inner["End_time(us)"]) \
        <= float(outer["End_time(us)"])
    assert {r["Step"] for r in _csv(tmp_path, "overlap")} == {"all", "outer", "inner"}


def test_range_decorator_and_ranges_without_a_profile_cost_nothing_and_fail_nothing(rt):
    @npurt.profiler.range("decorated")
    def f(x):
        return x + 1
    assert f(1) == 2 and not npurt.profiler.is_profiling()
    with npurt.profiler.profile() as prof:
        f(2)
    assert [r.name for r in prof.timeline.ranges] == ["decorated"]
    with pytest.raises(TypeError, match="str"):
        npurt.profiler.range(3)


class _ModelRun(Task):
    """A task kind the profiler has never heard of (as a model execution is to it)."""

    __slots__ = ()
    kind = "model_execute"

    def run(self):
        time.sleep(0.002)

    def details(self):
        return {"name": "resnet50", "model_id": 1}


class _Bare(Task):
    __slots__ = ()
    kind = "collective"

    def run(self):
        pass


def test_any_task_kind_shows_up_by_its_kind_and_name(rt, tmp_path):
    from npurt.runtime import api
    s = rt.create_stream()
    with npurt.profiler.profile(tmp_path):
        api.enqueue(s, _ModelRun())
        api.enqueue(s, _Bare())
        rt.synchronize_stream(s)
    got = {(e["cat"], e["name"]) for e in _task_spans(_trace(tmp_path))}
    assert got == {("model_execute", "resnet50"), ("collective", "collective")}
    stats = {(r["OP Type"], r["Core Type"]) for r in _csv(tmp_path, "op_statistic")}
    assert stats == {("resnet50", "MODEL_EXECUTE"), ("collective", "COLLECTIVE")}
    (row,) = [r for r in _csv(tmp_path, "op_summary") if r["Op Name"] == "resnet50"]
    assert row["Model ID"] == "1"


# ---------------------------------------------------------------- the report and bad use
def test_report_names_the_ops_streams_overlap_and_api_calls(pipeline):
    prof, out, _ = pipeline
    text = prof.report()
    for words in ("relu", "memcpy_async H2D", "stream_summary", "Overlapped", "idle_gaps"):
        assert words in text
    assert (out / "summary.txt").read_text() == text


def test_a_second_profile_while_one_runs_is_refused_and_the_first_goes_on(rt, tmp_path):
    with npurt.profiler.profile() as first:
        with pytest.raises(ProfilerError, match="already running") as info:
            npurt.profiler.profile().start()
        assert info.value.code == C.ACL_ERROR_PROF_ALREADY_RUN
        s = rt.create_stream()
        rt.launch_host_func(s, lambda: None, name="still here")
        rt.synchronize_stream(s)
    assert [t.name for t in first.timeline.tasks] == ["still here"]


def test_results_before_stop_and_a_stop_twice_are_clear_errors(rt):
    prof = npurt.profiler.profile().start()
    with pytest.raises(ProfilerError, match="stopped"):
        prof.report()
    prof.stop()
    with pytest.raises(ProfilerError, match="not running") as info:
        prof.stop()
    assert info.value.code == C.ACL_ERROR_PROF_NOT_RUN


def test_an_unwritable_output_directory_is_refused_before_any_work(rt, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(npurt.InvalidValueError, match="not a directory"):
        npurt.profiler.profile(blocker)
    assert not npurt.profiler.is_profiling() and not HOOKS.active


def test_a_profile_stopped_by_an_exception_still_writes_its_files(rt, tmp_path):
    s = rt.create_stream()
    with pytest.raises(ZeroDivisionError):
        with npurt.profiler.profile(tmp_path):
            rt.launch_host_func(s, lambda: None, name="before")
            rt.synchronize_stream(s)
            1 / 0
    assert (tmp_path / "msprof.json").exists() and not HOOKS.active
    assert [r["kernel_name"] for r in _csv(tmp_path, "task_time")] == ["before"]


# ---------------------------------------------------------------- the interval arithmetic behind the tables
def _spans_strategy():
    from hypothesis import strategies as st
    span = st.tuples(st.integers(0, 200), st.integers(1, 40)).map(lambda p: (p[0], p[0] + p[1]))
    return st.lists(st.lists(span, max_size=8), min_size=1, max_size=4)


def _covered(spans, t) -> bool:
    return any(a <= t < b for a, b in spans)


def test_overlap_arithmetic_matches_counting_time_unit_by_unit():
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from npurt.tools.profiler import summary as S

    @settings(max_examples=60, deadline=None)
    @given(_spans_strategy(), st.integers(0, 150), st.integers(1, 150))
    def check(streams, lo, width):
        hi = lo + width
        merged = [S.union(v) for v in streams]
        busy = {i: m for i, m in enumerate(merged)}
        units = range(0, 300)
        assert S.measure(S.at_least_two(merged)) == sum(
            1 for t in units if sum(_covered(m, t) for m in merged) >= 2)
        alone = S._alone(busy)
        for i, m in busy.items():
            assert alone.get(i, 0) == sum(1 for t in units if _covered(m, t)
                                          and not any(_covered(o, t) for j, o in busy.items() if j != i))
        everything = S.union([s for m in merged for s in m])
        assert S.measure(S.clip(everything, lo, hi)) == sum(1 for t in range(lo, hi) if _covered(everything, t))
    check()


def test_collectives_show_up_on_each_devices_stream_and_count_as_communication(fresh_runtime, monkeypatch, tmp_path):
    import npurt.acl as acl
    import npurt.hccl as hccl
    monkeypatch.setenv("NPURT_DEVICE_COUNT", "2")
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    assert acl.init() == 0
    root_info, _ = hccl.get_root_info()
    done = []

    def rank(r):
        assert acl.rt.set_device(r) == 0
        comm, _ = hccl.comm_init_root_info(2, root_info, r)
        stream, _ = acl.rt.create_stream()
        buf, _ = acl.rt.malloc(1 << 16, 0)
        assert hccl.all_reduce(buf, buf, 1 << 14, hccl.HCCL_DATA_TYPE_FP32, hccl.HCCL_REDUCE_SUM, comm, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        hccl.comm_destroy(comm)
        done.append(r)
    with npurt.profiler.profile(tmp_path):
        threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert sorted(done) == [0, 1]
    spans = [e for e in _task_spans(_trace(tmp_path)) if e["cat"].startswith("hccl")]
    assert sorted(e["pid"] for e in spans) == [1, 2]  # one collective task on each device
    assert all(e["name"].startswith("hccl ") and e["args"]["bytes"] == 1 << 16 for e in spans)
    alls = {r["Device_id"]: r for r in _csv(tmp_path, "overlap") if r["Step"] == "all"}
    assert all(float(alls[d]["Communication(us)"]) > 0 for d in ("0", "1"))


def test_a_profile_that_fails_to_start_leaves_nothing_wrapped_and_the_next_one_works(rt, monkeypatch):
    import npurt.acl as acl
    from npurt.tools.profiler import apicalls
    original = acl.rt.malloc

    def broken(sink, threads, *limits):
        setattr(acl.rt, "malloc", lambda *a: None)  # half done when it fails
        apicalls._installed.append((acl.rt, "malloc", original))
        raise RuntimeError("boom")
    monkeypatch.setattr(apicalls, "install", broken)
    with pytest.raises(RuntimeError, match="boom"):
        npurt.profiler.profile().start()
    assert acl.rt.malloc is original and not npurt.profiler.is_profiling() and not HOOKS.active
    monkeypatch.undo()
    with npurt.profiler.profile() as prof:
        pass
    assert prof.timeline.tasks == [] and not npurt.profiler.is_profiling()


# ---------------------------------------------------------------- bounded memory (issue 29)
def test_a_profile_keeps_at_most_max_records_tasks_and_calls_and_says_how_many_it_dropped(rt):
    # each task cost ~710 B until the profile stopped, with no bound
    import npurt.acl as acl
    from npurt.tools.profiler import Profile
    acl.rt.set_device(0)
    dev = rt.malloc(64)
    stream = rt.create_stream()
    with Profile(max_records=50) as prof:
        for _ in range(120):
            rt.memset_async(dev, 64, 0, 64, stream)
            acl.rt.get_device()
        stream.synchronize()
    assert len(prof.timeline.tasks) == 50
    assert len(prof.timeline.calls) == 50
    assert prof.dropped == {"tasks": 70, "calls": 70}
    assert "NOT RECORDED: 70 task(s) and 70 API call(s) after the first 50" in prof.report()
    rt.free(dev)
    with pytest.raises(npurt.InvalidValueError):
        Profile(max_records=0)


def test_a_profile_under_its_limit_drops_nothing(rt):
    from npurt.tools.profiler import Profile
    dev = rt.malloc(64)
    with Profile() as prof:
        rt.memset(dev, 64, 0, 64)
    assert prof.dropped == {"tasks": 0, "calls": 0} and "NOT RECORDED" not in prof.report()
    rt.free(dev)
