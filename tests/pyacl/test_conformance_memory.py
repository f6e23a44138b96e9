"""Conformance, issue 10 items 4-6: copies and sets check what CANN checks, in its order and
with the layer's code; the kind is the hardware's business (copies go by address); an
allocation is usable up to its padded size. Sources (hicann/runtime):
src/acl/aclrt_impl/aclrt_memory.cpp (the ACL layer), src/runtime/api/impl/api_error.cc and
api_impl.cc (the runtime layer), src/runtime/driver/npu_driver_mem.cc (the driver),
src/runtime/core/src/common/errcode_manage.cc (code mapping).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import npurt
import npurt.acl as acl
from npurt.acl import constants as C
from npurt.runtime.observers import HOOKS
from npurt.runtime.runtime import RUNTIME

H2H, H2D, D2H, D2D = 0, 1, 2, 3


@pytest.fixture
def ready(fresh_runtime):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    yield


def _dev(n):
    ptr, ret = acl.rt.malloc(n, 0)
    assert ret == 0
    return ptr


def _pinned(n):
    ptr, ret = acl.rt.malloc_host(n)
    assert ret == 0
    return ptr


def _stream():
    s, ret = acl.rt.create_stream()
    assert ret == 0
    return s


def _read(dev, n):
    out = np.zeros(n, np.uint8)
    assert acl.rt.memcpy(out.ctypes.data, n, dev, n, D2H) == 0
    return out


# ---------------------------------------------------------------- item 4: codes and order
def test_a_copy_of_count_0_succeeds_before_any_pointer_or_kind_check(ready):
    # aclrt_memory.cpp:653 (aclrtMemcpy) and 688 (aclrtMemcpyAsync): count 0 returns ACL_SUCCESS first
    assert acl.rt.memcpy(0, 0, 0, 0, 99) == 0
    assert acl.rt.memcpy_async(0, 0, 0, 0, 99, _stream()) == 0
    assert acl.rt.memset(0, 0, 1, 0) == 0  # aclrt_memory.cpp:674
    assert acl.rt.memset_async(0, 0, 1, 0, 0) == 0


def test_null_pointers_and_unknown_kinds_are_the_acl_layers_invalid_param(ready):
    # aclrt_memory.cpp:657-658 ACL_REQUIRES_NOT_NULL, 189-198 MemcpyKindTranslate: ACL_ERROR_INVALID_PARAM
    dev = _dev(64)
    assert acl.rt.memcpy(0, 64, dev, 64, D2D) == C.ACL_ERROR_INVALID_PARAM
    assert acl.rt.memcpy(dev, 64, 0, 64, D2D) == C.ACL_ERROR_INVALID_PARAM
    assert acl.rt.memcpy(dev, 64, dev, 64, C.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE) == C.ACL_ERROR_INVALID_PARAM


def test_count_above_dest_max_is_the_runtimes_param_invalid(ready):
    # api_error.cc:2139 (MemCopySync), 2185 (MemcpyAsync), 3135 (MemsetAsync): RT_ERROR_INVALID_VALUE -> 107000
    dev, src = _dev(128), _dev(128)
    assert acl.rt.memcpy(dev, 64, src, 65, D2D) == C.ACL_ERROR_RT_PARAM_INVALID == 107000
    assert acl.rt.memcpy_async(dev, 64, src, 65, D2D, _stream()) == 107000
    assert acl.rt.memset_async(dev, 64, 0, 65, 0) == 107000


def test_memset_count_above_max_is_param_invalid(ready):
    # npu_driver_mem.cc:768 MemSetSync -> drvMemsetD8 DRV_ERROR_INVALID_VALUE -> errcode_manage.cc:565, 86: 107000
    assert acl.rt.memset(_dev(128), 64, 0, 65) == 107000


def test_the_runtime_stays_usable_after_refused_copies(ready):
    dev = _dev(64)
    data = np.arange(64, dtype=np.uint8)
    assert acl.rt.memcpy(dev, 32, data.ctypes.data, 64, H2D) == 107000
    assert acl.rt.memcpy(dev, 64, data.ctypes.data, 64, H2D) == 0
    assert (_read(dev, 64) == data).all()


# ---------------------------------------------------------------- item 5: the kind
def test_a_contradicting_kind_is_copied_by_address_with_one_warning_per_call_site(ready):
    # api_error.cc:2695-2710, 2738-2760 MemcpyKindAutoCorrect: device and pinned addresses force the kind
    dev, host = _dev(64), _pinned(64)
    data = np.arange(64, dtype=np.uint8)
    assert acl.rt.memcpy(host, 64, data.ctypes.data, 64, H2H) == 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):  # one call site, three calls
            assert acl.rt.memcpy(dev, 64, host, 64, D2H) == 0  # really host -> device
    kind_warnings = [w for w in caught if issubclass(w.category, npurt.MemcpyKindWarning)]
    assert len(kind_warnings) == 1
    assert "ACL_MEMCPY_HOST_TO_DEVICE" in str(kind_warnings[0].message)  # names the right kind
    assert kind_warnings[0].filename == __file__
    assert (_read(dev, 64) == data).all()


def test_a_contradicting_kind_is_told_to_observers(ready):
    dev, host = _dev(64), _pinned(64)
    seen = []

    def observer(name, **fields):
        if name == "memcpy_kind":
            seen.append(fields)
    HOOKS.add(observer)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert acl.rt.memcpy_async(dev, 64, host, 64, D2H, _stream()) == 0
    finally:
        HOOKS.remove(observer)
    assert len(seen) == 1
    assert (seen[0]["op"], seen[0]["kind"], seen[0]["actual"], seen[0]["refused"]) == ("memcpy_async", D2H, H2D, False)
    assert seen[0]["site"][0] == __file__


def test_memcpy_async_with_pageable_memory_refuses_a_kind_the_runtime_does_not_allow(ready):
    # api_error.cc:2711-2714 (Unregistered -> Device: H2D or D2D) and 2777-2783: otherwise RT_ERROR_INVALID_VALUE
    dev = _dev(64)
    page = np.zeros(64, np.uint8)
    assert acl.rt.memcpy_async(dev, 64, page.ctypes.data, 64, D2H, _stream()) == 107000
    assert "accepts only ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_DEVICE" in acl.get_recent_err_msg()


def test_strict_mode_refuses_a_contradicting_kind(ready, monkeypatch):
    monkeypatch.setattr(RUNTIME.settings, "memcpy_kind", "strict")  # NPURT_MEMCPY_KIND=strict
    dev, host = _dev(64), _pinned(64)
    assert acl.rt.memcpy(dev, 64, host, 64, D2H) == C.ACL_ERROR_INVALID_PARAM
    assert "ACL_MEMCPY_HOST_TO_DEVICE" in acl.get_recent_err_msg()


def test_copies_into_freed_memory_are_still_refused(ready):
    dev, host = _dev(64), _pinned(64)
    assert acl.rt.free(dev) == 0
    assert acl.rt.memcpy(dev, 64, host, 64, H2D) == C.ACL_ERROR_INVALID_PARAM
    assert "freed" in acl.get_recent_err_msg()


# ---------------------------------------------------------------- item 6: padding
@pytest.mark.parametrize("n, usable", [(1, 64), (100, 160), (128, 160), (4096, 4128)])
def test_an_allocation_is_usable_up_to_align_up_32_plus_32(ready, n, usable):
    # memory.cpp GetAlignedAndPaddingSize: (n + 32 + 32 - 1) / 32 * 32 bytes are allocated
    dev = _dev(n)
    data = np.arange(usable, dtype=np.uint8)
    assert acl.rt.memcpy(dev, usable, data.ctypes.data, usable, H2D) == 0
    assert (_read(dev, usable) == data).all()
    assert acl.rt.memcpy(dev, usable + 1, data.ctypes.data, usable + 1, H2D) == C.ACL_ERROR_INVALID_PARAM
    assert "past the end" in acl.get_recent_err_msg()


def test_malloc_align32_has_no_extra_32_bytes(ready):
    # memory.cpp aclrtMallocAlign32Impl: aclMallocMemInner(..., isPadding=false)
    dev, ret = acl.rt.malloc_align32(100, 0)
    assert ret == 0
    data = np.zeros(129, np.uint8)
    assert acl.rt.memcpy(dev, 128, data.ctypes.data, 128, H2D) == 0
    assert acl.rt.memcpy(dev, 129, data.ctypes.data, 129, H2D) == C.ACL_ERROR_INVALID_PARAM


def test_huge1g_allocations_have_no_extra_32_bytes(ready):
    # memory.cpp aclMallocMemInner: isPadding = !huge1g
    dev, ret = acl.rt.malloc(100, C.ACL_MEM_MALLOC_HUGE1G_ONLY)
    assert ret == 0
    data = np.zeros(129, np.uint8)
    assert acl.rt.memcpy(dev, 128, data.ctypes.data, 128, H2D) == 0
    assert acl.rt.memcpy(dev, 129, data.ctypes.data, 129, H2D) == C.ACL_ERROR_INVALID_PARAM


def test_the_requested_size_stays_recorded_for_diagnostics(ready):
    dev = _dev(100)
    block = RUNTIME.device(0).memory.live[dev]
    assert block.requested == 100  # what tools (the sanitizer) judge accesses against
