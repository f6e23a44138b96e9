"""Devices and contexts: init/finalize, set/reset device, contexts and the thread-local
current context (issue 2, scope 6), and the lifecycle bad inputs."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.errors import (ContextError, InvalidDeviceError, InvalidHandleError,
                                  InvalidValueError, NpuError)
from npurt.runtime.runtime import RUNTIME


def _in_thread(fn):
    """Run fn() in a new host thread; its result, or the exception it raised."""
    box = []

    def body():
        try:
            box.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box.append(exc)

    t = threading.Thread(target=body)
    t.start()
    t.join(30)
    assert box, "the thread did not finish"
    return box[0]


# ---------------------------------------------------------------- init / finalize
def test_init_then_finalize(fresh_runtime):
    fresh_runtime.init()
    assert RUNTIME.initialized
    fresh_runtime.finalize()
    assert not RUNTIME.initialized


def test_second_init_is_repeat_initialize_and_counts_a_reference(fresh_runtime):
    fresh_runtime.init()
    with pytest.raises(NpuError) as info:
        fresh_runtime.init()
    assert info.value.code == C.ACL_ERROR_REPEAT_INITIALIZE == 100002
    assert fresh_runtime.finalize_reference() == 1
    assert RUNTIME.initialized
    assert fresh_runtime.finalize_reference() == 0
    assert not RUNTIME.initialized


def test_finalize_drops_every_reference_at_once(fresh_runtime):
    fresh_runtime.init()
    with pytest.raises(NpuError):
        fresh_runtime.init()
    fresh_runtime.finalize()
    assert not RUNTIME.initialized


def test_finalize_twice_is_repeat_finalize(fresh_runtime):
    fresh_runtime.init()
    fresh_runtime.finalize()
    with pytest.raises(NpuError) as info:
        fresh_runtime.finalize()
    assert info.value.code == C.ACL_ERROR_REPEAT_FINALIZE


def test_init_reads_an_empty_json_config(fresh_runtime, tmp_path):
    path = tmp_path / "acl.json"
    path.write_text("{}")
    fresh_runtime.init(str(path))
    assert RUNTIME.initialized


def test_init_with_deeply_nested_json_is_a_parse_error(fresh_runtime, tmp_path):
    cfg = tmp_path / "deep.json"
    cfg.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(NpuError) as info:
        fresh_runtime.init(str(cfg))
    assert info.value.code == C.ACL_ERROR_PARSE_FILE
    fresh_runtime.init()  # the runtime is still usable


def test_init_with_a_missing_config_file_fails_and_leaves_the_runtime_down(fresh_runtime, tmp_path):
    with pytest.raises(NpuError) as info:
        fresh_runtime.init(str(tmp_path / "missing.json"))
    assert info.value.code == C.ACL_ERROR_INVALID_FILE
    assert not RUNTIME.initialized


def test_init_with_bad_json_is_a_parse_error(fresh_runtime, tmp_path):
    path = tmp_path / "acl.json"
    path.write_text("{not json")
    with pytest.raises(NpuError) as info:
        fresh_runtime.init(str(path))
    assert info.value.code == C.ACL_ERROR_PARSE_FILE


@pytest.mark.parametrize("call", [
    lambda rt: rt.get_device_count(),
    lambda rt: rt.set_device(0),
    lambda rt: rt.get_soc_name(),
    lambda rt: rt.get_run_mode(),
])
def test_operations_after_finalize_start_the_runtime_again(fresh_runtime, call):
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    fresh_runtime.finalize()
    call(fresh_runtime)  # no init gate: the runtime starts lazily, as CANN's does
    assert RUNTIME.initialized


@pytest.mark.parametrize("call", [
    lambda rt: rt.malloc(100),
    lambda rt: rt.malloc_host(100),
    lambda rt: rt.create_stream(),
])
def test_operations_after_finalize_need_a_device_again(fresh_runtime, call):
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    fresh_runtime.finalize()
    with pytest.raises(ContextError) as info:  # finalize released the thread's context
        call(fresh_runtime)
    assert info.value.code == C.ACL_ERROR_RT_CONTEXT_NULL == 107002


def test_runtime_initializes_again_after_finalize(fresh_runtime):
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    fresh_runtime.malloc(100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        fresh_runtime.finalize()
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    assert fresh_runtime.memory_stats()["allocated_bytes"] == 0
    assert fresh_runtime.malloc(100)


# ---------------------------------------------------------------- devices
def test_get_device_count(rt):
    assert rt.get_device_count() == 2


def test_get_run_mode_is_host(rt):
    assert rt.get_run_mode() == C.ACL_HOST == 1


def test_get_soc_name(rt):
    assert rt.get_soc_name() == "Ascend910B3"


def test_set_device_makes_it_the_threads_device(rt):
    rt.set_device(1)
    assert rt.get_device() == 1
    rt.set_device(0)
    assert rt.get_device() == 0


@pytest.mark.parametrize("device_id", [2, -1, 100, "0", 0.0, None])
def test_invalid_device_id(rt, device_id):
    with pytest.raises(InvalidDeviceError) as info:
        rt.set_device(device_id)
    assert info.value.code == C.ACL_ERROR_RT_INVALID_DEVICEID == 107001
    assert "0..1" in str(info.value)
    assert rt.get_device() == 0  # nothing changed


def test_get_device_before_set_device_is_context_null(fresh_runtime):
    fresh_runtime.init()
    with pytest.raises(ContextError) as info:
        fresh_runtime.get_device()
    assert info.value.code == C.ACL_ERROR_RT_CONTEXT_NULL == 107002
    assert "set_device" in str(info.value)


@pytest.mark.parametrize("call", [
    lambda rt: rt.malloc(100),
    lambda rt: rt.create_stream(),
    lambda rt: rt.create_event(),
    lambda rt: rt.get_mem_info(C.ACL_HBM_MEM),
    lambda rt: rt.synchronize_device(),
])
def test_operations_before_set_device_are_context_null(fresh_runtime, call):
    fresh_runtime.init()
    with pytest.raises(ContextError) as info:
        call(fresh_runtime)
    assert info.value.code == C.ACL_ERROR_RT_CONTEXT_NULL


def test_set_device_is_reference_counted(rt):
    rt.set_device(0)  # count 2
    ptr = rt.malloc(100)
    rt.reset_device(0)  # count 1: nothing released
    assert rt.memory_stats(rt.device_by_id(0))["active_blocks"] == 1
    rt.set_device(0)
    rt.free(ptr)


def test_all_threads_share_a_devices_default_context(rt):
    mine = rt.get_context()

    def other():
        rt.set_device(0)
        ctx = rt.get_context()
        rt.reset_device(0)
        return ctx

    assert _in_thread(other) is mine


def test_reset_device_frees_everything_of_the_device(rt):
    s = rt.create_stream()
    e = rt.create_event()
    for size in (100, 1 << 20, 64 << 20):
        rt.malloc(size)
    device = rt.current_device()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        rt.reset_device(0)
    assert device.backend.arena.committed_bytes == 0
    assert device.memory.stats()["active_blocks"] == 0
    assert s.destroyed and e.destroyed
    with pytest.raises(InvalidHandleError):
        rt.synchronize_stream(s)


def test_reset_device_waits_for_queued_work(rt):
    s = rt.create_stream()
    done = []
    gate = threading.Event()
    rt.launch_host_func(s, gate.wait, 5)
    rt.launch_host_func(s, done.append, 1)
    threading.Timer(0.05, gate.set).start()
    rt.reset_device(0)
    assert done == [1]


def test_reset_with_live_allocations_frees_them_and_warns_naming_them(rt):
    a = rt.malloc(1000)
    b = rt.malloc(5000)
    with pytest.warns(ResourceWarning) as record:
        rt.reset_device(0)
    msg = str(record[0].message)
    assert "2 device allocation(s)" in msg
    assert f"0x{a:x}" in msg and f"0x{b:x}" in msg
    assert "6000 bytes" in msg


def test_runtime_keeps_working_after_a_reset_with_live_allocations(rt):
    rt.malloc(1000)
    with pytest.warns(ResourceWarning):
        rt.reset_device(0)
    rt.set_device(0)
    data = np.arange(256, dtype=np.uint8)
    ptr = rt.malloc(256)
    rt.memcpy(ptr, 256, data.ctypes.data, 256, C.ACL_MEMCPY_HOST_TO_DEVICE)
    out = np.zeros(256, np.uint8)
    rt.memcpy(out.ctypes.data, 256, ptr, 256, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert np.array_equal(out, data)
    s = rt.create_stream()
    rt.memset_async(ptr, 256, 0, 256, s)
    rt.synchronize_stream(s)


def test_reset_without_live_allocations_does_not_warn(rt):
    rt.free(rt.malloc(1000))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        rt.reset_device(0)


def test_reset_unbinds_the_calling_threads_context(rt):
    rt.reset_device(0)
    with pytest.raises(ContextError):
        rt.get_device()


def test_reset_of_a_device_that_is_not_set_is_a_context_release_error(rt):
    with pytest.raises(NpuError, match="not set") as info:  # runtime.cc: RT_ERROR_CONTEXT_DEL
        rt.reset_device(1)
    assert info.value.code == C.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR == 507007


def test_extra_reset_is_a_context_release_error(rt):
    rt.reset_device(0)
    with pytest.raises(NpuError) as info:
        rt.reset_device(0)
    assert info.value.code == C.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR


def test_reset_device_force_ignores_the_reference_count(rt):
    rt.set_device(0)
    rt.set_device(0)  # count 3
    ptr = rt.malloc(100)
    with pytest.warns(ResourceWarning):
        rt.reset_device_force(0)
    assert rt.device_by_id(0).memory.stats()["active_blocks"] == 0
    with pytest.raises(NpuError):
        rt.reset_device(0)  # after a force reset the count is gone
    with pytest.raises(NpuError):
        rt.reset_device_force(0)  # and a second force reset is an error
    rt.set_device(0)
    with pytest.raises(InvalidValueError, match="reset"):
        rt.free(ptr)


def test_other_threads_see_their_context_of_a_reset_device_as_gone(rt):
    ctx = rt.get_context()
    ready, resume = threading.Event(), threading.Event()

    def other():
        rt.set_context(ctx)
        ready.set()
        resume.wait(10)
        return rt.get_device()

    box = []
    t = threading.Thread(target=lambda: box.append(_catch(other)))
    t.start()
    ready.wait(10)
    rt.reset_device(0)
    resume.set()
    t.join(10)
    assert isinstance(box[0], ContextError)
    assert "reset" in str(box[0])


def _catch(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        return exc


# ---------------------------------------------------------------- contexts
def test_create_context_makes_it_current(rt):
    ctx = rt.create_context(1)
    assert rt.get_context() is ctx
    assert rt.get_device() == 1
    rt.destroy_context(ctx)


def test_each_context_has_its_own_default_stream(rt):
    default_ctx = rt.get_context()
    ctx = rt.create_context(0)
    assert ctx.default_stream is not default_ctx.default_stream
    rt.destroy_context(ctx)


def test_set_context_switches_the_threads_context(rt):
    first = rt.get_context()
    second = rt.create_context(1)
    rt.set_context(first)
    assert rt.get_context() is first and rt.get_device() == 0
    rt.set_context(second)
    assert rt.get_device() == 1
    rt.destroy_context(second)


def test_the_current_context_is_thread_local(rt):
    mine = rt.get_context()
    other_ctx = rt.create_context(1)
    rt.set_context(mine)

    def other():
        rt.set_context(other_ctx)
        return rt.get_device()

    assert _in_thread(other) == 1
    assert rt.get_context() is mine  # the other thread's set_context did not touch ours
    rt.destroy_context(other_ctx)


def test_a_new_thread_starts_without_a_context(rt):
    result = _in_thread(rt.get_context)
    assert isinstance(result, ContextError)
    assert "new thread" in str(result)


def test_a_new_thread_cannot_malloc_until_it_sets_a_device(rt):
    assert isinstance(_in_thread(lambda: rt.malloc(100)), ContextError)

    def ok():
        rt.set_device(0)
        ptr = rt.malloc(100)
        rt.free(ptr)
        rt.reset_device(0)
        return ptr

    assert isinstance(_in_thread(ok), int)


def test_the_default_context_cannot_be_destroyed(rt):
    with pytest.raises(InvalidValueError, match="default context"):
        rt.destroy_context(rt.get_context())


def test_destroying_a_context_twice_is_an_invalid_handle(rt):
    ctx = rt.create_context(0)
    rt.destroy_context(ctx)
    with pytest.raises(InvalidHandleError):
        rt.destroy_context(ctx)


def test_set_context_of_a_destroyed_context_is_refused(rt):
    ctx = rt.create_context(0)
    rt.destroy_context(ctx)
    with pytest.raises(ContextError, match="destroyed"):
        rt.set_context(ctx)


def test_destroying_the_current_context_leaves_the_thread_without_one(rt):
    ctx = rt.create_context(0)
    rt.destroy_context(ctx)
    with pytest.raises(ContextError):
        rt.get_context()


def test_destroy_context_destroys_its_streams(rt):
    ctx = rt.create_context(0)
    s = rt.create_stream()
    done = []
    rt.launch_host_func(s, done.append, 1)
    rt.destroy_context(ctx)
    assert done == [1]  # queued work ran first
    assert s.destroyed


def test_create_context_on_an_invalid_device(rt):
    with pytest.raises(InvalidDeviceError):
        rt.create_context(7)


def test_primary_context_state(rt):
    assert rt.get_primary_ctx_state(0) == (1, 0)
    assert rt.get_primary_ctx_state(1) == (0, 0)


def test_the_config_default_device_is_used_by_threads_that_never_chose_one(fresh_runtime, tmp_path):
    rt = fresh_runtime
    config = tmp_path / "acl.json"
    config.write_text('{"defaultDevice": {"default_device": "1"}}')
    rt.init(str(config))
    assert rt.get_device() == 1
    rt.set_device(0)  # an explicit choice wins
    assert rt.get_device() == 0
