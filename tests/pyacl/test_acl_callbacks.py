"""Host callbacks through the facade: report threads, blocking callbacks, the
exception-info callback."""
from __future__ import annotations

import threading

import pytest

import npurt.acl as acl
from npurt.acl import constants as C


@pytest.fixture
def stream(fresh_runtime):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    s, _ = acl.rt.create_stream()
    yield s
    acl.rt.set_exception_info_callback(None)


def _report_thread(state):
    def loop(args):
        while not state["stop"]:
            acl.rt.process_report(20)
    return loop


def test_callbacks_run_on_the_subscribed_thread_in_stream_order(stream):
    state, seen = {"stop": False}, []
    tid, _ = acl.util.start_thread(_report_thread(state), [])
    assert acl.rt.subscribe_report(tid, stream) == 0
    for i in range(5):
        block = C.ACL_CALLBACK_BLOCK if i == 4 else C.ACL_CALLBACK_NO_BLOCK
        assert acl.rt.launch_callback(lambda d: seen.append((d[0], threading.get_ident())), [i], block, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    state["stop"] = True
    assert acl.util.stop_thread(tid) == 0
    assert acl.rt.unsubscribe_report(tid, stream) == 0
    assert seen == [(i, tid) for i in range(5)]


def test_a_blocking_callback_holds_later_tasks_until_it_ran(stream):
    tid = threading.get_ident()
    acl.rt.subscribe_report(tid, stream)
    ran = []
    assert acl.rt.launch_callback(ran.append, ["cb"], C.ACL_CALLBACK_BLOCK, stream) == 0
    dev, _ = acl.rt.malloc(64, 0)
    assert acl.rt.memset_async(dev, 64, 1, 64, stream) == 0
    assert acl.rt.stream_query(stream) == (C.ACL_STREAM_STATUS_NOT_READY, 0)
    assert acl.rt.process_report(1000) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert ran == [["cb"]]


def test_process_report_with_nothing_posted_times_out(stream):
    acl.rt.subscribe_report(threading.get_ident(), stream)
    assert acl.rt.process_report(10) == C.ACL_ERROR_RT_REPORT_TIMEOUT


def test_process_report_on_a_thread_with_no_subscription_is_thread_subscribe(stream):
    assert acl.rt.process_report(10) == C.ACL_ERROR_RT_THREAD_SUBSCRIBE


def test_launch_callback_after_unsubscribe_is_no_cb_reg(stream):
    tid = threading.get_ident()
    acl.rt.subscribe_report(tid, stream)
    acl.rt.unsubscribe_report(tid, stream)
    assert acl.rt.launch_callback(print, [], 0, stream) == C.ACL_ERROR_RT_STREAM_NO_CB_REG


def test_launch_callback_with_a_bad_block_type_is_invalid_param(stream):
    acl.rt.subscribe_report(threading.get_ident(), stream)
    assert acl.rt.launch_callback(print, [], 2, stream) == C.ACL_ERROR_INVALID_PARAM


def test_exception_info_callback_describes_the_failed_task(stream):
    infos = []
    acl.rt.set_exception_info_callback(lambda info: infos.append((
        acl.rt.get_task_id_from_exception_info(info), acl.rt.get_stream_id_from_exception_info(info),
        acl.rt.get_device_id_from_exception_info(info), acl.rt.get_error_code_from_exception_info(info),
        acl.rt.get_thread_id_from_exception_info(info))))
    acl.rt.subscribe_report(threading.get_ident(), stream)
    dev, _ = acl.rt.malloc(64, 0)
    acl.rt.memset_async(dev, 64, 0, 64, stream)  # task 1

    def fails(_):
        raise RuntimeError("on purpose")

    acl.rt.launch_callback(fails, [], C.ACL_CALLBACK_NO_BLOCK, stream)  # task 2
    acl.rt.process_report(1000)
    assert acl.rt.synchronize_stream(stream) == C.ACL_ERROR_RT_AICPU_EXCEPTION
    stream_id, _ = acl.rt.stream_get_id(stream)
    assert len(infos) == 1
    task_id, sid, device_id, code, thread_id = infos[0]
    assert (task_id, sid, device_id, code) == (2, stream_id, 0, C.ACL_ERROR_RT_AICPU_EXCEPTION)
    assert thread_id not in (0, 0xFFFFFFFF)


def test_exception_info_getters_on_a_bad_info_return_all_ones(stream):
    assert acl.rt.get_task_id_from_exception_info(0) == 0xFFFFFFFF
    assert acl.rt.get_error_code_from_exception_info(12345) == 0xFFFFFFFF
