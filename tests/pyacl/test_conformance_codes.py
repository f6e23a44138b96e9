"""Conformance, issue 10 item 4: a failed check returns the code of the layer that owns it.
The ACL layer (src/acl/aclrt_impl/*.cpp) answers ACL_ERROR_INVALID_PARAM (100000) for what it
checks itself; checks of the runtime layer (src/runtime/api/impl/api_error.cc, runtime.cc)
map through errcode_manage.cc: RT_ERROR_INVALID_VALUE -> ACL_ERROR_RT_PARAM_INVALID (107000),
RT_ERROR_CONTEXT_DEL -> ACL_ERROR_RT_CONTEXT_RELEASE_ERROR (507007). Copies and sets are in
test_conformance_memory.py, events in test_conformance_events.py.
"""
from __future__ import annotations

import pytest

import npurt.acl as acl
from npurt.acl import constants as C

PARAM_INVALID = C.ACL_ERROR_RT_PARAM_INVALID


@pytest.fixture
def ready(fresh_runtime):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    yield


@pytest.mark.parametrize("timeout", [-2, 0])
def test_stream_and_device_synchronize_timeouts_below_minus_1_or_of_0_are_param_invalid(ready, timeout):
    # aclrt_stream.cpp:141-148 and aclrt_device.cpp:173-174 (< -1); api_error.cc:1443 and 3480 (== 0)
    s, _ = acl.rt.create_stream()
    assert acl.rt.synchronize_stream_with_timeout(s, timeout) == PARAM_INVALID
    assert acl.rt.synchronize_device_with_timeout(timeout) == PARAM_INVALID
    assert acl.rt.synchronize_stream_with_timeout(s, -1) == 0  # the runtime stays usable


def test_an_extra_reset_device_is_a_context_release_error(ready):
    # runtime.cc:2931 PrimaryContextRelease: no reference left -> RT_ERROR_CONTEXT_DEL; errcode_manage.cc:221
    assert acl.rt.reset_device(0) == 0
    assert acl.rt.reset_device(0) == C.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR == 507007
    assert acl.rt.reset_device(1) == 507007  # never set
    assert acl.rt.set_device(0) == 0


def test_event_flag_0_is_param_invalid(ready):
    # api_error.cc:1633-1634 (EventCreate): flag & RT_EVENT_FLAG_MAX == 0
    assert acl.rt.create_event_with_flag(0) == (0, PARAM_INVALID)


def test_a_null_stream_for_the_default_stream_and_a_stale_handle_keep_their_codes(ready):
    s, _ = acl.rt.create_stream()
    assert acl.rt.destroy_stream(s) == 0
    assert acl.rt.synchronize_stream(s) == C.ACL_ERROR_RT_INVALID_HANDLE
    assert acl.rt.synchronize_stream(0) == 0  # 0 is the current context's default stream
