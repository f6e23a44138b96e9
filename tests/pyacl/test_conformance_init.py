"""Conformance, issue 10 item 2: no init gate where CANN has none. The ACL layer gates only
the dump APIs on aclInit (src/acl/aclrt_impl/toolchain/dump.cpp: GetAclInitFlag); every
other call reaches the runtime, which starts lazily (Runtime::Instance). aclInit and
aclFinalize keep their own reference count and flag (src/acl/aclrt_impl/acl.cpp).
"""
from __future__ import annotations

import pytest

import npurt.acl as acl
from npurt.acl import constants as C
from npurt.runtime.runtime import RUNTIME


def test_device_queries_work_before_acl_init(fresh_runtime):
    # aclrt_device.cpp (aclrtGetRunModeImpl, aclrtGetDeviceCountImpl): no init check
    assert acl.rt.get_run_mode() == (C.ACL_HOST, 0)
    assert acl.rt.get_device_count() == (2, 0)
    assert acl.get_soc_name() == "Ascend910B3"


def test_set_device_and_get_device_work_before_acl_init(fresh_runtime):
    assert acl.rt.set_device(1) == 0
    assert acl.rt.get_device() == (1, 0)
    s, ret = acl.rt.create_stream()
    assert ret == 0 and acl.rt.destroy_stream(s) == 0
    assert acl.rt.reset_device(1) == 0


def test_a_call_that_needs_a_context_before_set_device_is_context_null_not_uninitialize(fresh_runtime):
    # api_impl.cc: CurrentContext() / CHECK_CONTEXT_VALID_WITH_RETURN -> RT_ERROR_CONTEXT_NULL
    assert acl.rt.malloc(64, 0) == (0, C.ACL_ERROR_RT_CONTEXT_NULL)


def test_get_run_mode_never_reports_acl_device(fresh_runtime):
    # aclrt_device.cpp:150-154: ACL_DEVICE only for RT_RUN_MODE_OFFLINE; the simulated NPU is driven from the host
    mode, ret = acl.rt.get_run_mode()
    assert ret == 0 and mode == C.ACL_HOST != C.ACL_DEVICE


@pytest.mark.parametrize("call", [lambda: acl.mdl.init_dump(), lambda: acl.mdl.set_dump("dump.json"),
                                  lambda: acl.mdl.finalize_dump()])
def test_the_dump_apis_are_the_only_calls_gated_on_acl_init(fresh_runtime, call):
    # dump.cpp:106, 142, 194: !GetAclInitFlag() -> ACL_ERROR_UNINITIALIZE
    assert call() == C.ACL_ERROR_UNINITIALIZE == 100001
    assert "acl.init" in acl.get_recent_err_msg()
    assert acl.init() == 0
    assert call() != C.ACL_ERROR_UNINITIALIZE


def test_acl_init_after_the_runtime_started_lazily_succeeds_once(fresh_runtime, tmp_path):
    # acl.cpp:388: only aclInitRefCount > 0 makes aclInit a repeat
    assert acl.rt.set_device(0) == 0
    config = tmp_path / "acl.json"
    config.write_text('{"defaultDevice": {"default_device": "1"}}')
    assert acl.init(str(config)) == 0
    assert RUNTIME.default_device == 1  # its configuration applies to the running runtime
    assert acl.init() == C.ACL_ERROR_REPEAT_INITIALIZE


def test_finalize_without_acl_init_succeeds_and_a_second_is_repeat_finalize(fresh_runtime):
    # acl.cpp:634: only aclFinalizeFlag (set by a finalize, cleared by aclInit) refuses
    assert acl.finalize() == 0
    assert acl.finalize() == C.ACL_ERROR_REPEAT_FINALIZE == 100037
    assert acl.init() == 0
    assert acl.finalize() == 0


def test_finalize_reference_without_acl_init_is_repeat_finalize(fresh_runtime):
    # acl.cpp:667: aclInitRefCount < 1
    assert acl.finalize_reference() == (0, C.ACL_ERROR_REPEAT_FINALIZE)
