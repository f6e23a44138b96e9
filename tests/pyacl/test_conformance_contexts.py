"""Conformance, issue 10 item 7: contexts as the runtime checks them. Every stream call needs
a current context on the calling thread (api_impl.cc: CurrentContext() then
CHECK_CONTEXT_VALID_WITH_RETURN -> ACL_ERROR_RT_CONTEXT_NULL), unless the init config names a
defaultDevice (runtime.cc Runtime::CurrentContext sets it implicitly); calls that queue work
on a stream need the stream to belong to that context
(COND_RETURN_AND_MSG_INVALID_CONTEXT_STREAM -> ACL_ERROR_RT_STREAM_CONTEXT); peer access is
per direction (current device -> peer), as the sheet says.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import npurt.acl as acl
from npurt.acl import constants as C

NO_CONTEXT, OTHER_CONTEXT = C.ACL_ERROR_RT_CONTEXT_NULL, C.ACL_ERROR_RT_STREAM_CONTEXT


@pytest.fixture
def ready(fresh_runtime):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    yield


def _on_new_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_stream_calls_on_a_thread_without_a_context_are_context_null(ready):
    # api_impl.cc:1706-1707 (StreamSynchronize), 1770-1771 (StreamQuery), 2137-2138 (EventRecord)
    s, _ = acl.rt.create_stream()
    ev, _ = acl.rt.create_event()
    assert _on_new_thread(lambda: acl.rt.synchronize_stream(s)) == NO_CONTEXT == 107002
    assert _on_new_thread(lambda: acl.rt.stream_query(s))[1] == NO_CONTEXT
    assert _on_new_thread(lambda: acl.rt.record_event(ev, s)) == NO_CONTEXT
    assert _on_new_thread(lambda: acl.rt.synchronize_stream_with_timeout(s, 100)) == NO_CONTEXT
    assert acl.rt.synchronize_stream(s) == 0  # the owning thread is unaffected


def test_a_default_device_gives_a_new_thread_its_context(fresh_runtime, tmp_path):
    # runtime.cc Runtime::CurrentContext: with a default device id set, SetDevice(defaultDeviceId)
    config = tmp_path / "acl.json"
    config.write_text('{"defaultDevice": {"default_device": "0"}}')
    assert acl.init(str(config)) == 0
    assert acl.rt.set_device(0) == 0
    s, _ = acl.rt.create_stream()
    assert _on_new_thread(lambda: acl.rt.synchronize_stream(s)) == 0


def test_queueing_on_a_stream_of_another_context_is_stream_context(ready):
    # api_impl.cc:2152 (EventRecord) and MemcpyAsync's COND_RETURN_AND_MSG_INVALID_CONTEXT_STREAM
    s0, _ = acl.rt.create_stream()
    ev, _ = acl.rt.create_event()
    a, _ = acl.rt.malloc(64, 0)
    b, _ = acl.rt.malloc(64, 0)
    assert acl.rt.set_device(1) == 0
    assert acl.rt.record_event(ev, s0) == OTHER_CONTEXT == 107003
    assert acl.rt.memcpy_async(a, 64, b, 64, 3, s0) == OTHER_CONTEXT
    assert acl.rt.memset_async(a, 64, 0, 64, s0) == OTHER_CONTEXT
    assert "set_context" in acl.get_recent_err_msg()


def test_synchronizing_a_stream_of_another_context_switches_to_it(ready):
    # api_impl.cc:1716-1725 (StreamSynchronize): ContextSetCurrent(stream's context) for the call
    s0, _ = acl.rt.create_stream()
    assert acl.rt.set_device(1) == 0
    assert acl.rt.synchronize_stream(s0) == 0
    assert acl.rt.stream_query(s0) == (C.ACL_STREAM_STATUS_COMPLETE, 0)
    assert acl.rt.get_device() == (1, 0)  # and back


def test_peer_access_is_per_direction(ready):
    a, _ = acl.rt.malloc(64, 0)
    assert acl.rt.set_device(1) == 0
    b, _ = acl.rt.malloc(64, 0)
    assert acl.rt.set_device(0) == 0
    assert acl.rt.device_enable_peer_access(1, 0) == 0  # device 0 -> device 1 only
    assert acl.rt.device_peer_access_status(0, 1) == (1, 0)
    assert acl.rt.device_peer_access_status(1, 0) == (0, 0)
    data = np.arange(64, dtype=np.uint8)
    assert acl.rt.memcpy(a, 64, data.ctypes.data, 64, 1) == 0
    assert acl.rt.memcpy(b, 64, a, 64, 3) == 0  # runs on device 0, which may reach device 1
    assert acl.rt.set_device(1) == 0
    assert acl.rt.memcpy(a, 64, b, 64, 3) == C.ACL_ERROR_INVALID_PARAM  # device 1 may not reach device 0
    assert "per direction" in acl.get_recent_err_msg()
    assert acl.rt.device_enable_peer_access(0, 0) == 0
    assert acl.rt.memcpy(a, 64, b, 64, 3) == 0
