"""Building and editing ACL graphs (issue 25 items 3-4): built models with bound streams, stream
activation and switches, labels; task groups and their updates; conditional tasks (IF, WHILE,
SWITCH) whose condition is a device word read at replay; external event records and waits;
abort, names and destroy callbacks; the codes of bad use."""
from __future__ import annotations

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime import graph as G
from npurt.runtime import graph_cond as GC
from npurt.runtime import graph_edit as GE
from npurt.runtime import model_build as MB
from npurt.runtime.errors import InvalidHandleError, NpuError, ParamInvalidError
from npurt.runtime.kernel import GM, kernel
from npurt.runtime.kernel import function_of
from npurt.runtime.kernel.operations import enqueue_launch, set_kernel_task_params


def _word(rt, value=0, dtype=np.uint64):
    addr = rt.malloc(8)
    _set(rt, addr, value, dtype)
    return addr


def _set(rt, addr, value, dtype=np.uint64):
    arr = np.array([value], dtype)
    rt.memcpy(addr, arr.nbytes, arr.ctypes.data, arr.nbytes, C.ACL_MEMCPY_HOST_TO_DEVICE)


def _persistent(rt):
    return rt.create_stream(0, C.ACL_STREAM_PERSISTENT)


def _model(rt):
    ctx = rt.current_context()
    return MB.build_begin(ctx.device, ctx)


def _run(rt, model):
    s = rt.create_stream()
    rt.execute_async(model, s)
    rt.synchronize_stream(s)
    rt.destroy_stream(s)


# ------------------------------------------------------------------ built models
def test_a_built_model_runs_its_head_streams_and_the_streams_they_activate(rt):
    head, second, idle = _persistent(rt), _persistent(rt), _persistent(rt)
    order = []
    model = _model(rt)
    MB.bind_stream(model, head, MB.STREAM_FLAG_HEAD)
    MB.bind_stream(model, second, MB.STREAM_FLAG_DEFAULT)
    MB.bind_stream(model, idle, MB.STREAM_FLAG_DEFAULT)
    rt.launch_host_func(head, lambda: order.append("head"))
    MB.active_stream(second, head)
    rt.launch_host_func(second, lambda: order.append("second"))
    MB.end_task(model, second)
    rt.launch_host_func(idle, lambda: order.append("never activated"))
    assert order == []                       # recorded, not run
    MB.build_end(model)
    _run(rt, model)
    _run(rt, model)
    assert order == ["head", "second"] * 2
    for s in (head, second, idle):
        MB.unbind_stream(model, s)
    rt.destroy_graph(model)


def test_a_stream_switch_activates_its_stream_when_the_words_compare_true_at_run_time(rt):
    head, taken = _persistent(rt), _persistent(rt)
    left, right = _word(rt, 1, np.int32), _word(rt, 1, np.int32)
    order = []
    model = _model(rt)
    MB.bind_stream(model, head, MB.STREAM_FLAG_HEAD)
    MB.bind_stream(model, taken, MB.STREAM_FLAG_DEFAULT)
    MB.switch_stream(left, 0, right, MB.SWITCH_INT32, taken, head)      # ACL_RT_EQUAL
    rt.launch_host_func(head, lambda: order.append("head"))             # the head goes on either way
    rt.launch_host_func(taken, lambda: order.append("taken"))
    MB.end_task(model, taken)
    MB.build_end(model)
    _run(rt, model)
    assert order == ["head", "taken"]
    order.clear()
    _set(rt, right, 2, np.int32)             # now 1 != 2: not taken, so the end is never reached
    s = rt.create_stream()
    rt.execute_async(model, s)
    with pytest.raises(NpuError, match="stopped before its end task") as e:
        rt.synchronize_stream(s)
    assert e.value.code == C.ACL_ERROR_RT_MODEL_EXECUTE and order == ["head"]
    rt.synchronize_stream(s)                 # reported once; the stream goes on
    MB.unbind_stream(model, head)
    MB.unbind_stream(model, taken)
    rt.destroy_graph(model)


def test_a_label_switch_jumps_to_the_label_the_index_word_names(rt):
    s = _persistent(rt)
    index = _word(rt, 1, np.uint32)
    labels = [MB.create_label() for _ in range(3)]
    order = []
    model = _model(rt)
    MB.bind_stream(model, s, MB.STREAM_FLAG_HEAD)
    MB.switch_label_by_index(index, 3, MB.create_label_list(labels), s)
    for i, label in enumerate(labels):
        MB.set_label(label, s)
        rt.launch_host_func(s, lambda i=i: order.append(i))
    MB.end_task(model, s)
    MB.build_end(model)
    _run(rt, model)
    assert order == [1, 2]
    order.clear()
    _set(rt, index, 7, np.uint32)            # beyond maxValue: no jump
    _run(rt, model)
    assert order == [0, 1, 2]
    MB.unbind_stream(model, s)
    rt.destroy_graph(model)


def test_streams_of_a_model_wait_for_each_others_records_within_a_run(rt):
    head, other = _persistent(rt), _persistent(rt)
    ev = rt.create_event()
    order = []
    model = _model(rt)
    MB.bind_stream(model, head, MB.STREAM_FLAG_HEAD)
    MB.bind_stream(model, other, MB.STREAM_FLAG_DEFAULT)
    MB.active_stream(other, head)
    rt.stream_wait_event(head, ev)           # recorded by `other`, which runs after head parks
    rt.launch_host_func(head, lambda: order.append("after the record"))
    MB.end_task(model, head)
    rt.launch_host_func(other, lambda: order.append("other"))
    rt.record_event(ev, other)
    MB.build_end(model)
    _run(rt, model)
    assert order == ["other", "after the record"]
    MB.unbind_stream(model, head)
    MB.unbind_stream(model, other)
    rt.destroy_graph(model)


def test_bad_model_building_gets_the_runtimes_codes(rt):
    plain, s = rt.create_stream(), _persistent(rt)
    model = _model(rt)
    with pytest.raises(ParamInvalidError, match="ACL_STREAM_PERSISTENT"):
        MB.bind_stream(model, plain, MB.STREAM_FLAG_HEAD)
    with pytest.raises(ParamInvalidError, match="flag"):
        MB.bind_stream(model, s, 5)
    with pytest.raises(NpuError) as e:       # control tasks need a bound stream
        MB.active_stream(s, plain)
    assert e.value.code == C.ACL_ERROR_RT_STREAM_MODEL
    MB.bind_stream(model, s, MB.STREAM_FLAG_HEAD)
    with pytest.raises(ParamInvalidError, match="already bound"):
        MB.bind_stream(_model(rt), s, MB.STREAM_FLAG_HEAD)
    with pytest.raises(ParamInvalidError, match="still being built"):
        rt.execute_async(model, plain)
    with pytest.raises(ParamInvalidError, match="no end task"):
        MB.build_end(model)
    label = MB.create_label()
    MB.switch_label_by_index(_word(rt), 1, MB.create_label_list([label]), s)
    MB.end_task(model, s)
    with pytest.raises(ParamInvalidError, match="is not set"):
        MB.build_end(model)                  # the switch's label was never set
    with pytest.raises(ParamInvalidError, match="condition"):
        MB.switch_stream(_word(rt), 9, _word(rt), MB.SWITCH_INT32, s, s)
    with pytest.raises(NpuError) as e:       # a synchronize of a bound stream would never end
        rt.synchronize_stream(s)
    assert e.value.code == C.ACL_ERROR_RT_STREAM_CAPTURED
    MB.unbind_stream(model, s)
    rt.synchronize_stream(s)                 # an ordinary stream again
    rt.destroy_graph(model)


# ------------------------------------------------------------------ task groups
def test_a_task_group_update_replaces_its_tasks_for_the_replays_after_it(rt):
    s, upd = rt.create_stream(), rt.create_stream()
    order = []
    rt.capture_begin(s, G.RELAXED)
    rt.launch_host_func(s, lambda: order.append("before"))
    GE.capture_task_group_begin(s)
    rt.launch_host_func(s, lambda: order.append("old"))
    group = GE.capture_task_group_end(s)
    graph = rt.capture_end(s)
    rt.execute_async(graph, s)
    rt.synchronize_stream(s)
    GE.capture_task_update_begin(upd, group)
    rt.launch_host_func(upd, lambda: order.append("new"))
    GE.capture_task_update_end(upd)
    rt.synchronize_stream(upd)
    rt.execute_async(graph, s)
    rt.synchronize_stream(s)
    assert order == ["before", "old", "before", "new"]
    # an update must keep the number and kinds of tasks; a refused one changes nothing
    GE.capture_task_update_begin(upd, group)
    rt.memset_async(rt.malloc(64), 64, 0, 64, upd)
    with pytest.raises(ParamInvalidError, match="number and kinds"):
        GE.capture_task_update_end(upd)
    assert upd.capture is None
    order.clear()
    rt.execute_async(graph, s)
    rt.synchronize_stream(s)
    assert order == ["before", "new"]
    rt.destroy_graph(graph)
    with pytest.raises(InvalidHandleError):
        GE.capture_task_update_begin(upd, group)


def test_group_calls_outside_a_capture_are_refused(rt):
    s = rt.create_stream()
    with pytest.raises(NpuError) as e:
        GE.capture_task_group_begin(s)
    assert e.value.code == C.ACL_ERROR_RT_STREAM_NOT_CAPTURED
    with pytest.raises(NpuError) as e:
        GE.capture_task_update_end(s)
    assert e.value.code == C.ACL_ERROR_RT_STREAM_NOT_CAPTURED


# ------------------------------------------------------------------ conditional tasks
def _cond_graph(rt, s, sub, type_, size, flag=0, default=0):
    order = []
    rt.capture_begin(s, G.THREAD_LOCAL)
    _, graph = rt.capture_info(s)
    cond = GC.cond_handle_create(graph, default, flag)
    bodies = GC.add_cond_task(cond, type_, size, s)
    for i, body in enumerate(bodies):
        rt.capture_begin(sub, G.THREAD_LOCAL, into=body)
        rt.launch_host_func(sub, lambda i=i: order.append(i))
        if type_ == GC.COND_WHILE:        # the body counts the word down
            rt.launch_host_func(sub, lambda: _set(rt, cond.addr, cond.value() - 1))
        assert rt.capture_end(sub) is body
    assert rt.capture_end(s) is graph
    return graph, cond, order


def test_if_runs_the_first_body_on_a_nonzero_word_and_the_second_on_zero(rt):
    s, sub = rt.create_stream(), rt.create_stream()
    graph, cond, order = _cond_graph(rt, s, sub, GC.COND_IF, 2)
    for value in (1, 0, 5):
        _set(rt, cond.addr, value)
        rt.execute_async(graph, s)
        rt.synchronize_stream(s)
    assert order == [0, 1, 0]
    rt.destroy_graph(graph)


def test_while_runs_its_body_while_the_word_is_nonzero_and_switch_picks_by_value(rt):
    s, sub = rt.create_stream(), rt.create_stream()
    graph, cond, order = _cond_graph(rt, s, sub, GC.COND_WHILE, 1)
    _set(rt, cond.addr, 3)
    rt.execute_async(graph, s)
    rt.synchronize_stream(s)
    assert order == [0, 0, 0] and cond.value() == 0
    rt.destroy_graph(graph)
    graph, cond, order = _cond_graph(rt, s, sub, GC.COND_SWITCH, 3)
    for value in (2, 0, 9):                  # 9: out of range, no body
        _set(rt, cond.addr, value)
        rt.execute_async(graph, s)
        rt.synchronize_stream(s)
    assert order == [2, 0]
    rt.destroy_graph(graph)


def test_assign_default_resets_the_word_at_each_launch(rt):
    """acl_rt.h: with ACL_MODEL_RI_COND_HANDLE_ASSIGN_DEFAULT the condition is set to the
    default at the start of each model execution, so the host's value before it is lost
    (the runtime's sample model_ri/3_cond_model shows the false branch twice)."""
    s, sub = rt.create_stream(), rt.create_stream()
    graph, cond, order = _cond_graph(rt, s, sub, GC.COND_IF, 2, flag=GC.COND_ASSIGN_DEFAULT, default=0)
    _set(rt, cond.addr, 1)
    rt.execute_async(graph, s)
    rt.synchronize_stream(s)
    assert order == [1]
    rt.destroy_graph(graph)


def test_bad_conditional_tasks_are_refused(rt):
    s = rt.create_stream()
    rt.capture_begin(s, G.GLOBAL)
    _, graph = rt.capture_info(s)
    cond = GC.cond_handle_create(graph, 0, 0)
    with pytest.raises(ParamInvalidError, match="WHILE"):
        GC.add_cond_task(cond, GC.COND_WHILE, 2, s)
    with pytest.raises(ParamInvalidError, match="type"):
        GC.add_cond_task(cond, 7, 1, s)
    with pytest.raises(ParamInvalidError, match="flag"):
        GC.cond_handle_create(graph, 0, 3)
    rt.capture_end(s)
    with pytest.raises(NpuError) as e:       # not capturing any more
        GC.add_cond_task(cond, GC.COND_IF, 1, s)
    assert e.value.code == C.ACL_ERROR_RT_STREAM_NOT_CAPTURED
    with pytest.raises(NpuError) as e:       # a captured graph is no empty body
        rt.capture_begin(s, G.GLOBAL, into=graph)
    assert e.value.code == C.ACL_ERROR_RT_MODEL_CAPTURED
    rt.destroy_graph(graph)
    with pytest.raises(InvalidHandleError):
        GC.cond_handle_of(cond.handle)


# ------------------------------------------------------------------ external events
def test_a_replayed_wait_on_a_flag_event_waits_for_the_record_after_its_reset(rt):
    """The pattern of model_ri/1_model_update: the graph waits for an ACL_EVENT_EXTERNAL event
    and resets it, so each replay waits for the host's next record (here: after an update)."""
    s, other = rt.create_stream(), rt.create_stream()
    ev = rt.create_event(C.ACL_EVENT_EXTERNAL)
    order = []
    rt.capture_begin(s, G.RELAXED)
    rt.stream_wait_event(s, ev)
    rt.reset_event(ev, s)
    rt.launch_host_func(s, lambda: order.append("replay"))
    graph = rt.capture_end(s)
    for k in range(2):
        rt.execute_async(graph, s)
        rt.launch_host_func(other, lambda k=k: order.append(f"host {k}"))
        rt.record_event(ev, other)
        rt.synchronize_stream(s)
    assert order == ["host 0", "replay", "host 1", "replay"]
    rt.destroy_graph(graph)


def test_an_external_record_in_a_graph_records_the_event_at_each_replay(rt):
    s, other = rt.create_stream(), rt.create_stream()
    ev = rt.create_event(C.ACL_EVENT_SYNC, ex=True)
    order = []
    rt.capture_begin(s, G.RELAXED)
    rt.launch_host_func(s, lambda: order.append("graph"))
    s.capture.record_external(s, ev)
    graph = rt.capture_end(s)
    assert ev.record is None                 # recorded by replays, not by the capture
    rt.execute_async(graph, s)
    rt.stream_wait_event(other, ev)
    rt.launch_host_func(other, lambda: order.append("after"))
    rt.synchronize_stream(other)
    assert order == ["graph", "after"]
    rt.destroy_graph(graph)


# ------------------------------------------------------------------ names, callbacks, abort
def test_names_ids_destroy_callbacks_and_abort(rt):
    s = rt.create_stream()
    rt.capture_begin(s, G.GLOBAL)
    rt.launch_host_func(s, lambda: None)
    graph = rt.capture_end(s)
    other = rt.capture_begin(s, G.GLOBAL) or rt.capture_end(s)
    assert graph.model_id != other.model_id
    G.set_name(graph, "decode")
    assert graph.name == "decode"
    seen = []
    G.register_destroy_callback(graph, seen.append, "gone")
    G.abort_graph(graph)                     # nothing in flight: the next replay runs in full
    rt.execute_async(graph, s)
    rt.synchronize_stream(s)
    rt.destroy_graph(graph)
    assert seen == ["gone"]
    with pytest.raises(InvalidHandleError):
        G.abort_graph(graph)
    rt.destroy_graph(other)


# ------------------------------------------------------------------ the stream budget
def _capture_with_a_joined_lane(rt, s, side):
    fork, back = rt.create_event(), rt.create_event()
    rt.capture_begin(s, G.GLOBAL)
    rt.record_event(fork, s)
    rt.stream_wait_event(side, fork)
    rt.launch_host_func(side, lambda: None)
    rt.record_event(back, side)
    rt.stream_wait_event(s, back)
    return rt.capture_end(s)


def test_out_of_streams_says_who_holds_them_and_a_failed_capture_leaks_none(rt):
    device = rt.current_context().device
    s, side = rt.create_stream(), rt.create_stream()
    saved = device.max_streams
    device.max_streams = device.stream_count + 1      # room for one lane stream
    try:
        graph = _capture_with_a_joined_lane(rt, s, side)
        with pytest.raises(NpuError) as e:
            rt.create_stream()
        assert e.value.code == C.ACL_ERROR_RT_NO_STREAM_RESOURCE
        msg = str(e.value)
        assert f"{device.stream_count:,} of {device.max_streams:,} in use" in msg
        assert "1 held by 1 captured graph(s)" in msg and "created by the application" in msg
        before = device.stream_count
        with pytest.raises(NpuError) as e:             # this capture's lane finds no stream
            _capture_with_a_joined_lane(rt, s, side)
        assert e.value.code == C.ACL_ERROR_RT_NO_STREAM_RESOURCE
        assert device.stream_count == before and s.capture is None and side.capture is None
        rt.destroy_graph(graph)                        # its lane stream goes back
        rt.destroy_stream(rt.create_stream())
    finally:
        device.max_streams = saved


# ------------------------------------------------------------------ per-task queries and parameters
def test_tasks_of_a_graphs_streams_can_be_changed_or_disabled_and_an_update_applies_them(rt):
    s = rt.create_stream()
    w1, w2 = _word(rt), _word(rt)
    rt.capture_begin(s, G.GLOBAL)
    rt.value_write(w1, 5, 0, s)
    rt.value_write(w2, 6, 0, s)
    graph = rt.capture_end(s)
    [stream] = GE.graph_streams(graph)            # one lane: its stream is the execute stream
    t1, t2 = GE.tasks_of_stream(stream)
    assert t1.task_type() == GE.TASK_VALUE_WRITE and GE.task_params(t1) == {"type": GE.TASK_VALUE_WRITE,
                                                                         "addr": w1, "value": 5}
    GE.set_task_params(t1, value=50)
    GE.disable_task(t2)
    rt.execute_async(graph, s)                   # not applied yet
    rt.synchronize_stream(s)
    assert _read(rt, w1) == 5 and _read(rt, w2) == 6
    _set(rt, w2, 0)
    GE.update_graph(graph)
    rt.execute_async(graph, s)
    rt.synchronize_stream(s)
    assert _read(rt, w1) == 50 and _read(rt, w2) == 0
    with pytest.raises(ParamInvalidError, match="can set"):
        GE.set_task_params(t1, flag=1)            # a value write has no flag
    with pytest.raises(ParamInvalidError, match="keeps its type"):
        GE.set_task_params(t1, type=GE.TASK_KERNEL, num_blocks=2)
    rt.destroy_graph(graph)
    with pytest.raises(InvalidHandleError):
        GE.model_task_of(t1.handle)


def _read(rt, addr):
    out = np.zeros(1, np.uint64)
    rt.memcpy(out.ctypes.data, 8, addr, 8, C.ACL_MEMCPY_DEVICE_TO_HOST)
    return int(out[0])


def test_runs_of_one_built_model_on_two_streams_are_ordered(rt):
    s = _persistent(rt)
    order = []
    model = _model(rt)
    MB.bind_stream(model, s, MB.STREAM_FLAG_HEAD)
    rt.launch_host_func(s, lambda: order.append("run"))
    MB.end_task(model, s)
    MB.build_end(model)
    a, b = rt.create_stream(), rt.create_stream()
    gate = rt.create_event(C.ACL_EVENT_SYNC)
    rt.stream_wait_event(a, gate)                  # the first run cannot start yet
    rt.execute_async(model, a)
    rt.execute_async(model, b)                     # waits for the first
    rt.launch_host_func(b, lambda: order.append("after the second run"))
    other = rt.create_stream()
    rt.launch_host_func(other, lambda: order.append("gate"))
    rt.record_event(gate, other)
    rt.synchronize_stream(b)
    assert order == ["gate", "run", "run", "after the second run"]
    MB.unbind_stream(model, s)
    rt.destroy_graph(model)


def test_a_capture_whose_stream_a_device_reset_destroys_ends_with_it(rt):
    s = rt.create_stream()
    rt.capture_begin(s, G.GLOBAL)            # never ended: the reset takes the stream
    rt.reset_device(0)
    rt.set_device(0)
    a = rt.malloc(64)
    out = np.zeros(16, np.float32)
    rt.memcpy(out.ctypes.data, 64, a, 64, C.ACL_MEMCPY_DEVICE_TO_HOST)   # no GLOBAL capture refuses it
    assert G._active == []


def test_the_capture_mode_limits_async_copies_of_pageable_host_memory(rt):
    """acl_rt.h's aclmdlRICaptureBegin: the mode limits aclrtMemset, aclrtMemcpy, aclrtMemcpy2d
    and asynchronous copies of non-pinned host memory (aclrtMemcpyAsync)."""
    s = rt.create_stream()
    dev = rt.malloc(64)
    host = np.zeros(16, np.float32)
    rt.capture_begin(s, G.GLOBAL)
    with pytest.raises(NpuError) as e:
        rt.memcpy_async(dev, 64, host.ctypes.data, 64, C.ACL_MEMCPY_HOST_TO_DEVICE, s)
    assert e.value.code == C.ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT
    rt.destroy_graph(rt.capture_end(s))           # the refusal left the capture going on
    rt.capture_begin(s, G.RELAXED)                # allowed: recorded, reads the host memory at replay
    rt.memcpy_async(dev, 64, host.ctypes.data, 64, C.ACL_MEMCPY_HOST_TO_DEVICE, s)
    graph = rt.capture_end(s)
    out = np.zeros(16, np.float32)
    for k in (3.0, 4.0):
        host[:] = k
        rt.execute_async(graph, s)
        rt.synchronize_stream(s)
        rt.memcpy(out.ctypes.data, 64, dev, 64, C.ACL_MEMCPY_DEVICE_TO_HOST)
        assert (out == k).all()
    rt.destroy_graph(graph)


@kernel
def _fill_one(ctx, out: GM, n: np.int32):
    ctx.gm(out, np.float32, n)[:] = 1


def test_a_captured_kernels_launch_attributes_and_blocks_can_be_read_and_its_blocks_set(rt):
    # GetKernelAttribute (kernel_utils.cc): the attributes a kernel task keeps
    s = rt.create_stream()
    out = rt.malloc(64)
    rt.capture_begin(s, G.GLOBAL)
    enqueue_launch(_fill_one, 1, s, (out, 16), cfg={C.ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET: 1,
                                                      C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US: 5_000_000,
                                                      C.ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE: 1,
                                                      C.ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE: 1024,
                                                      C.ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP: 1})
    enqueue_launch(_fill_one, 1, s, (out, 16))
    graph = rt.capture_end(s)
    task, plain = GE.tasks_of_stream(GE.graph_streams(graph)[0])
    assert task.task_type() == GE.TASK_KERNEL
    attr = GE.kernel_task_attribute
    assert attr(task, C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US) == 5_000_000
    assert attr(task, C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT) == 5
    assert attr(task, C.ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE) == 1
    assert attr(task, C.ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE) == 1024
    assert attr(task, C.ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP) == 1
    # a launch without a config: the defaults, and the op execute timeout in effect
    assert [attr(plain, a) for a in (C.ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, C.ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE,
                                     C.ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP)] == [0, 0, 0]
    assert attr(plain, C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US) == rt.effective_op_execute_timeout_us()
    for refused in (C.ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE, C.ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET,
                    C.ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH, C.ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING, 0, 10):
        with pytest.raises(ParamInvalidError):
            attr(task, refused)
    GE.set_task_params(task, num_blocks=2)
    GE.update_graph(graph)
    assert GE.task_params(GE.tasks_of_stream(GE.graph_streams(graph)[0])[0])["num_blocks"] == 2
    rt.execute_async(graph, s)
    rt.synchronize_stream(s)
    got = np.zeros(16, np.float32)
    rt.memcpy(got.ctypes.data, 64, out, 64, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert (got == 1).all()
    rt.destroy_graph(graph)


@kernel
def _fill_value(ctx, out: GM, n: np.int32, value: np.float32):
    ctx.gm(out, np.float32, n)[:] = value


def test_a_kernel_task_takes_a_new_function_args_config_and_blocks(rt):
    # UpdateKernelParams (kernel_utils.cc): every field of aclmdlRIKernelTaskParams
    s = rt.create_stream()
    a, b = rt.malloc(64), rt.malloc(64)
    rt.capture_begin(s, G.GLOBAL)
    enqueue_launch(_fill_one, 1, s, (a, 16))
    graph = rt.capture_end(s)
    [task] = GE.tasks_of_stream(GE.graph_streams(graph)[0])
    fill_value = function_of(_fill_value)
    host = np.frombuffer(fill_value.struct.pack(b, 16, 3.0), np.uint8).copy()
    set_kernel_task_params(task, fill_value, 1, host.ctypes.data, host.nbytes, host_args=True,
                              cfg={C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT: 7}, op_info=b"shape")
    host[:] = 0  # host args are copied at the call
    GE.update_graph(graph)
    info = GE.task_params(task)
    assert info["func"] is fill_value and info["op_info"] == b"shape"
    assert GE.kernel_task_attribute(task, C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT) == 7
    rt.execute_async(graph, s)
    rt.synchronize_stream(s)
    got = np.zeros(16, np.float32)
    rt.memcpy(got.ctypes.data, 64, b, 64, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert (got == 3).all()
    # device args are read at each replay
    dev_args = rt.malloc(fill_value.args_size)
    packed = np.frombuffer(fill_value.struct.pack(a, 16, 5.0), np.uint8).copy()
    rt.memcpy(dev_args, packed.nbytes, packed.ctypes.data, packed.nbytes, C.ACL_MEMCPY_HOST_TO_DEVICE)
    set_kernel_task_params(task, fill_value, 2, dev_args, fill_value.args_size)
    GE.update_graph(graph)
    assert GE.task_params(task)["op_info"] is None  # no shape info: cleared
    rt.execute_async(graph, s)
    rt.synchronize_stream(s)
    rt.memcpy(got.ctypes.data, 64, a, 64, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert (got == 5).all()
    # bad input: the runtime's 107000, the graph unchanged
    for bad in (dict(args=0), dict(args_size=0), dict(group=object()), dict(cfg={99: 1}),
                dict(args=host.ctypes.data)):  # host memory with isHostArgs 0
        kw = dict(args=dev_args, args_size=fill_value.args_size) | bad
        with pytest.raises(ParamInvalidError if "cfg" not in bad else NpuError):
            set_kernel_task_params(task, fill_value, 1, kw.pop("args"), kw.pop("args_size"), **kw)
    with pytest.raises(InvalidHandleError):
        set_kernel_task_params(task, 12345, 1, dev_args, fill_value.args_size)
    rt.destroy_graph(graph)


def test_only_kernel_and_value_tasks_take_parameters(rt):
    # ApiImpl::TaskSetParams: event record / wait / reset tasks are refused (107000)
    s, side = rt.create_stream(), rt.create_stream()
    out = rt.malloc(64)
    ev = rt.create_event()
    rt.capture_begin(s, G.GLOBAL)
    enqueue_launch(_fill_one, 1, s, (out, 16))
    rt.record_event(ev, s)
    rt.stream_wait_event(side, ev)
    rt.record_event(ev, side)
    rt.stream_wait_event(s, ev)
    graph = rt.capture_end(s)
    tasks = [t for st in GE.graph_streams(graph) for t in GE.tasks_of_stream(st)]
    kinds = {t.task_type() for t in tasks}
    assert GE.TASK_KERNEL in kinds and GE.TASK_EVENT_RECORD in kinds, kinds
    for t in tasks:
        if t.task_type() in (GE.TASK_EVENT_RECORD, GE.TASK_EVENT_WAIT):
            with pytest.raises(ParamInvalidError, match="only kernel"):
                GE.set_task_params(t, type=t.task_type(), event=ev)
        elif t.task_type() == GE.TASK_KERNEL:
            with pytest.raises(ParamInvalidError, match="keeps its type"):
                GE.set_task_params(t, type=GE.TASK_EVENT_RECORD)
            with pytest.raises(ParamInvalidError, match="set_kernel_task_params"):
                GE.set_task_params(t, args=1)
    rt.destroy_graph(graph)


def test_the_debug_print_names_groups_conditions_and_a_built_models_control_tasks(rt):
    s, sub = rt.create_stream(), rt.create_stream()
    rt.capture_begin(s, G.GLOBAL)
    GE.capture_task_group_begin(s)
    rt.launch_host_func(s, lambda: None)
    GE.capture_task_group_end(s)
    _, graph = rt.capture_info(s)
    cond = GC.cond_handle_create(graph, 0, 0)
    GC.add_cond_task(cond, GC.COND_WHILE, 1, s)
    rt.capture_end(s)
    kinds = [n["kind"] for n in graph.as_json()["nodes"]]
    assert kinds == ["group", "cond"] and graph.as_json()["nodes"][1]["type"] == "WHILE"
    assert "task group" in graph.describe() and "WHILE on the word" in graph.describe()
    rt.destroy_graph(graph)
    p = _persistent(rt)
    model = _model(rt)
    MB.bind_stream(model, p)
    MB.switch_label_by_index(_word(rt), 1, MB.create_label_list([MB.create_label()]), p)
    MB.end_task(model, p)
    ops = model.as_json()["streams"][0]["ops"]
    assert ops[0].startswith("jump to label") and ops[1] == "end of the model"
    MB.unbind_stream(model, p)
    rt.destroy_graph(model)
