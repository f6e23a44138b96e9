"""The facade's conventions: pyACL signatures and return shapes, no exception ever escapes,
how exceptions become codes, handles, constants, and rules the runtime decides that a
pyACL script sees through the facade."""
from __future__ import annotations

import inspect
import threading
import warnings

import numpy as np
import pytest

import npurt
import npurt.acl as acl
from npurt.acl import constants as C
from npurt.runtime import api
from npurt.runtime import constants as runtime_constants


@pytest.fixture
def ready(fresh_runtime):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    yield
    acl.rt.set_exception_info_callback(None)


def _facade_functions():
    fns = [(f"acl.{n}", getattr(acl, n)) for n in dir(acl) if callable(getattr(acl, n))
           and not n.startswith("_") and not inspect.ismodule(getattr(acl, n)) and not n.isupper()]
    fns += [(f"acl.rt.{n}", getattr(acl.rt, n)) for n in acl.rt.FUNCTIONS]
    fns += [(f"acl.util.{n}", getattr(acl.util, n)) for n in acl.util.__all__]
    return fns


# ---------------------------------------------------------------- signatures
@pytest.mark.parametrize("fn,params", [
    (acl.rt.malloc, ["size", "policy"]),
    (acl.rt.memcpy, ["dst", "dest_max", "src", "count", "kind"]),
    (acl.rt.memcpy_async, ["dst", "dest_max", "src", "count", "kind", "stream"]),
    (acl.rt.launch_kernel, ["func_handle", "num_blocks", "args_data", "args_size", "stream"]),
    (acl.rt.launch_callback, ["fn", "user_data_list", "block_type", "stream"]),
    (acl.rt.synchronize_stream_with_timeout, ["stream", "timeout"]),
    (acl.rt.reduce_async, ["dst", "src", "count", "kind", "type", "stream", "reserve"]),
    (acl.rt.create_stream_with_config, ["priority", "flag"]),
    (acl.util.ptr_to_numpy, ["ptr", "shape", "type"]),
    (acl.util.start_thread, ["thr_func", "args_list"]),
])
def test_functions_keep_pyacls_parameter_names(fn, params):
    assert list(inspect.signature(fn).parameters) == params


def test_generated_wrappers_keep_their_docs_and_names():
    assert acl.rt.create_stream.__name__ == "create_stream"
    assert "default context" in acl.rt.set_device.__doc__


def test_init_config_path_is_optional(fresh_runtime):
    assert acl.init() == 0


def test_set_exception_info_callback_without_argument_clears_it(ready):
    assert acl.rt.set_exception_info_callback(print) == 0
    assert acl.rt.set_exception_info_callback() == 0
    assert api.rt.exception_callback is None


# ---------------------------------------------------------------- what may escape
GARBAGE = [None, "x", -1, 2 ** 70, 1.5, [1], object(), np.arange(3)]
_BLOCKING = {"acl.rt.process_report"}  # -1 would wait forever if this thread were subscribed
# what the real extension raises itself: TypeError from PyArg_ParseTuple and its own checks,
# ValueError / KeyError from its list and dict readers
_RAISED_BY_THE_EXTENSION = (TypeError, ValueError, KeyError)


@pytest.mark.parametrize("value", GARBAGE, ids=[type(v).__name__ for v in GARBAGE])
def test_garbage_arguments_raise_only_what_the_extension_raises_and_never_break_npurt(ready, value):
    stream, _ = acl.rt.create_stream()
    broken = []
    for name, fn in _facade_functions():
        params = list(inspect.signature(fn).parameters.values())
        if not params or name in ("acl.init", "acl.finalize") or (name in _BLOCKING and isinstance(value, int) and value == -1):
            continue
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fn(*[value] * len(params))
        except _RAISED_BY_THE_EXTENSION:
            continue
        except Exception as exc:  # noqa: BLE001 - collected: this is what the test forbids
            broken.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        ret = result[-1] if isinstance(result, tuple) else result
        if (type(ret) is int and ret == C.ACL_ERROR_INTERNAL_ERROR) or \
                acl.rt.get_last_error(0) == C.ACL_ERROR_INTERNAL_ERROR:
            broken.append(f"{name}: internal error: {acl.get_recent_err_msg()}")
    assert not broken


def test_get_and_peek_last_error_with_an_array_level_raise_type_error(ready):
    # rt_synchronize.cpp WrapAclRtGetLastError: PyArg_ParseTuple(args, "i", ...) fails for an array
    acl.rt.malloc(0, 0)  # records an error
    with pytest.raises(TypeError, match="acl.rt.peek_at_last_error args parse failed!"):
        acl.rt.peek_at_last_error(np.arange(3))
    with pytest.raises(TypeError, match="acl.rt.get_last_error args parse failed!"):
        acl.rt.get_last_error(np.zeros(2))
    assert acl.rt.get_last_error(np.int64(0)) == C.ACL_ERROR_INVALID_PARAM  # still recorded


def test_an_argument_of_the_wrong_type_raises_type_error_as_pyarg_parsetuple_does(ready):
    with pytest.raises(TypeError, match="acl.rt.malloc args parse failed"):
        acl.rt.malloc("1024", 0)
    assert acl.rt.get_last_error(0) == 0  # nothing reached the runtime


def test_unexpected_exception_is_internal_error_with_traceback(ready, monkeypatch):
    def broken():
        raise KeyError("bug")

    monkeypatch.setattr(npurt.runtime, "get_device_count", broken)  # the facade calls the published operation
    count, ret = acl.rt.get_device_count()
    assert (count, ret) == (0, C.ACL_ERROR_INTERNAL_ERROR)
    message = acl.get_recent_err_msg()
    assert "Traceback" in message and "KeyError" in message and "acl.rt.get_device_count" in message


def test_an_npu_error_keeps_its_code(ready):
    assert acl.rt.set_device(7) == C.ACL_ERROR_RT_INVALID_DEVICEID


# ---------------------------------------------------------------- handles
def test_handles_are_ints(ready):
    ctx, _ = acl.rt.create_context(0)
    stream, _ = acl.rt.create_stream()
    event, _ = acl.rt.create_event()
    assert all(type(h) is int and h != 0 for h in (ctx, stream, event))


def test_stream_zero_is_the_current_contexts_default_stream(ready):
    dev, _ = acl.rt.malloc(64, 0)
    host, _ = acl.rt.malloc_host(64)
    assert acl.rt.memcpy_async(dev, 64, host, 64, 1, 0) == 0
    default, _ = acl.rt.ctx_get_current_default_stream()
    assert acl.rt.stream_get_id(0) == acl.rt.stream_get_id(default)
    assert acl.rt.synchronize_stream(0) == 0


def test_a_handle_of_another_kind_is_invalid_handle_naming_its_kind(ready):
    event, _ = acl.rt.create_event()
    assert acl.rt.synchronize_stream(event) == C.ACL_ERROR_RT_INVALID_HANDLE
    assert "event handle" in acl.get_recent_err_msg()


def test_a_stale_handle_is_invalid_handle_saying_it_was_destroyed(ready):
    stream, _ = acl.rt.create_stream()
    acl.rt.destroy_stream(stream)
    assert acl.rt.memset_async(0, 0, 0, 0, stream) == C.ACL_ERROR_RT_INVALID_HANDLE
    assert "destroyed" in acl.get_recent_err_msg()


def test_destroying_a_stream_of_another_context_is_stream_context(ready):
    stream, _ = acl.rt.create_stream()
    acl.rt.create_context(0)  # now current
    assert acl.rt.destroy_stream(stream) == C.ACL_ERROR_RT_STREAM_CONTEXT


def test_handles_are_stale_after_finalize_and_init(ready):
    stream, _ = acl.rt.create_stream()
    acl.finalize()
    acl.init()
    acl.rt.set_device(0)
    assert acl.rt.synchronize_stream(stream) == C.ACL_ERROR_RT_INVALID_HANDLE


# ---------------------------------------------------------------- lifecycle decisions
def test_second_init_returns_repeat_initialize(fresh_runtime):
    assert acl.init() == 0
    assert acl.init() == C.ACL_ERROR_REPEAT_INITIALIZE


def test_finalize_twice_returns_repeat_finalize(fresh_runtime):
    acl.init()
    assert acl.finalize() == 0
    assert acl.finalize() == C.ACL_ERROR_REPEAT_FINALIZE


def test_calls_before_init_and_set_device_return_context_null(fresh_runtime):
    assert acl.rt.malloc(64, 0) == (0, C.ACL_ERROR_RT_CONTEXT_NULL)
    assert acl.rt.create_stream() == (0, C.ACL_ERROR_RT_CONTEXT_NULL)


def test_calls_before_init_work_after_set_device(fresh_runtime):
    assert acl.rt.set_device(0) == 0  # no init gate: the runtime starts lazily
    ptr, ret = acl.rt.malloc(64, 0)
    assert ret == 0 and acl.rt.free(ptr) == 0


def test_finalize_reference_counts_init_calls(fresh_runtime):
    acl.init()
    acl.init()
    assert acl.finalize_reference() == (1, 0)
    assert acl.finalize_reference() == (0, 0)
    assert acl.finalize_reference() == (0, C.ACL_ERROR_REPEAT_FINALIZE)  # no reference left


def test_get_soc_name_names_the_simulated_soc(ready):
    assert acl.get_soc_name() == "Ascend910B3"


# ---------------------------------------------------------------- rules the runtime decides, seen through the facade
def _aligned(n: int) -> np.ndarray:
    """A float32 numpy array (pageable memory) whose data is 64-byte aligned."""
    raw = np.zeros(n * 4 + 64, np.uint8)
    off = -raw.ctypes.data % 64
    return raw[off:off + n * 4].view(np.float32)


def test_memcpy_async_from_pageable_memory_is_done_when_it_returns(ready):
    data = _aligned(1024)
    data[:] = np.random.default_rng().random(1024)
    out = _aligned(1024)
    stream, _ = acl.rt.create_stream()
    dev, _ = acl.rt.malloc(data.nbytes, 0)
    assert acl.rt.memcpy_async(dev, data.nbytes, acl.util.numpy_to_ptr(data), data.nbytes, 1, stream) == 0
    assert acl.rt.memcpy_async(acl.util.numpy_to_ptr(out), out.nbytes, dev, out.nbytes, 2, stream) == 0
    assert np.array_equal(out, data)  # no synchronize: pageable host memory made both synchronous


def test_memcpy_async_needs_64_byte_alignment(ready):
    stream, _ = acl.rt.create_stream()
    dev, _ = acl.rt.malloc(4096, 0)
    host, _ = acl.rt.malloc_host(4096)
    assert acl.rt.memcpy_async(dev, 4096, host + 32, 64, 1, stream) == C.ACL_ERROR_RT_ADDR_UNALIGNED


def test_memcpy_kind_that_contradicts_the_addresses_copies_by_address_with_a_warning(ready):
    dev, _ = acl.rt.malloc(64, 0)
    host, _ = acl.rt.malloc_host(64)
    with pytest.warns(npurt.MemcpyKindWarning, match="ACL_MEMCPY_DEVICE_TO_HOST"):
        assert acl.rt.memcpy(host, 64, dev, 64, C.ACL_MEMCPY_HOST_TO_DEVICE) == 0


def test_memcpy_default_kind_infers_the_direction(ready):
    dev, _ = acl.rt.malloc(64, 0)
    host, _ = acl.rt.malloc_host(64)
    assert acl.rt.memcpy(dev, 64, host, 64, C.ACL_MEMCPY_DEFAULT) == 0


def test_event_status_enums_follow_each_function(ready):
    stream, _ = acl.rt.create_stream()
    event, _ = acl.rt.create_event()
    assert acl.rt.record_event(event, stream) == 0
    assert acl.rt.synchronize_event(event) == 0
    assert acl.rt.query_event_status(event) == (C.ACL_EVENT_RECORDED_STATUS_COMPLETE, 0) == (1, 0)
    assert acl.rt.query_event(event) == (C.ACL_EVENT_STATUS_COMPLETE, 0) == (0, 0)


def test_free_right_after_memcpy_async_keeps_the_queued_copy_valid(ready):
    data = np.arange(1 << 16, dtype=np.int32)
    stream, _ = acl.rt.create_stream()
    src, _ = acl.rt.malloc(data.nbytes, 0)
    dst, _ = acl.rt.malloc(data.nbytes, 0)
    acl.rt.memcpy(src, data.nbytes, acl.util.numpy_to_ptr(data), data.nbytes, 1)
    assert acl.rt.memcpy_async(dst, data.nbytes, src, data.nbytes, 3, stream) == 0
    assert acl.rt.free(src) == 0  # stream-ordered: reused only after the copy ran
    assert acl.rt.synchronize_stream(stream) == 0
    out = np.zeros_like(data)
    acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, dst, out.nbytes, 2)
    assert np.array_equal(out, data)


def test_device_failure_surfaces_at_synchronize_and_in_last_error(ready):
    tid = threading.get_ident()
    stream, _ = acl.rt.create_stream()
    acl.rt.subscribe_report(tid, stream)

    def fails(_):
        raise ValueError("no")

    acl.rt.launch_callback(fails, [], C.ACL_CALLBACK_NO_BLOCK, stream)
    acl.rt.process_report(1000)
    assert acl.rt.synchronize_stream(stream) == C.ACL_ERROR_RT_AICPU_EXCEPTION
    assert acl.rt.get_last_error(0) == C.ACL_ERROR_RT_AICPU_EXCEPTION
    assert "fails" in acl.get_recent_err_msg()


def test_set_op_execute_timeout_v2_rounds_up_to_whole_intervals(ready):
    interval, _ = acl.rt.get_op_timeout_interval()
    actual, ret = acl.rt.set_op_execute_timeout_v2(interval + 1)
    assert (actual, ret) == (2 * interval, 0)
    assert acl.rt.get_op_execute_timeout() == (2 * interval // 1000, 0)


def test_set_op_execute_time_out_takes_seconds(ready):
    interval, _ = acl.rt.get_op_timeout_interval()
    assert acl.rt.set_op_execute_time_out(5) == 0
    ms, _ = acl.rt.get_op_execute_timeout()
    assert ms == -(-5_000_000 // interval) * interval // 1000


def test_device_set_limit_rounds_the_simd_stack_to_16_kib(ready):
    assert acl.rt.device_set_limit(C.ACL_RT_DEV_LIMIT_SIMD_STACK_SIZE, 40 * 1024) == 0
    assert acl.rt.device_get_limit(C.ACL_RT_DEV_LIMIT_SIMD_STACK_SIZE) == (48 * 1024, 0)


def test_get_sys_param_opt_is_zero_until_set_and_then_the_value(ready):
    assert acl.rt.get_sys_param_opt(C.ACL_OPT_DETERMINISTIC) == (0, 0)
    acl.rt.set_sys_param_opt(C.ACL_OPT_DETERMINISTIC, 1)
    assert acl.rt.get_sys_param_opt(C.ACL_OPT_DETERMINISTIC) == (1, 0)


def test_reduce_async_sums_into_dst(ready):
    a = np.random.default_rng().random(256).astype(np.float32)
    b = np.random.default_rng().random(256).astype(np.float32)
    stream, _ = acl.rt.create_stream()
    da, _ = acl.rt.malloc(a.nbytes, 0)
    db, _ = acl.rt.malloc(b.nbytes, 0)
    acl.rt.memcpy(da, a.nbytes, acl.util.numpy_to_ptr(a), a.nbytes, 1)
    acl.rt.memcpy(db, b.nbytes, acl.util.numpy_to_ptr(b), b.nbytes, 1)
    assert acl.rt.reduce_async(da, db, a.nbytes, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, C.ACL_FLOAT, stream, 0) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    out = np.zeros_like(a)
    acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, da, out.nbytes, 2)
    assert np.allclose(out, a + b)


# ---------------------------------------------------------------- constants
def test_constants_are_attributes_of_acl_and_acl_rt():
    assert acl.ACL_MEMCPY_HOST_TO_DEVICE == acl.rt.ACL_MEMCPY_HOST_TO_DEVICE == 1
    assert acl.ACL_ERROR_RT_FEATURE_NOT_SUPPORT == acl.rt.ACL_ERROR_RT_FEATURE_NOT_SUPPORT == 207000


@pytest.mark.parametrize("name,value", [
    ("ACL_MEM_MALLOC_HUGE_FIRST", 0), ("ACL_MEM_MALLOC_NORMAL_ONLY", 2), ("ACL_MEMCPY_DEVICE_TO_DEVICE", 3),
    ("ACL_EVENT_TIME_LINE", 8), ("ACL_STOP_ON_FAILURE", 1), ("ACL_CALLBACK_BLOCK", 1),
    ("ACL_ERROR_INVALID_PARAM", 100000), ("ACL_ERROR_RT_INVALID_HANDLE", 107017),
    ("ACL_ERROR_RT_AICORE_EXCEPTION", 507015), ("ACL_HBM_MEM_HUGE", 4), ("ACL_BF16", 27),
])
def test_constant_has_the_real_value(name, value):
    assert getattr(C, name) == value


def test_constants_module_reexports_every_runtime_constant():
    names = [n for n in dir(runtime_constants) if n.startswith("ACL_")]
    assert all(getattr(C, n) == getattr(runtime_constants, n) for n in names)
    assert set(names) <= set(C.__all__)


def test_constant_groups_cover_every_constant_once():
    grouped = [n for names in C.GROUPS.values() for n in names]
    assert sorted(grouped) == sorted(C.__all__)
    assert "other" not in C.GROUPS


# ---------------------------------------------------------------- documentation
def test_compatibility_table_lists_every_function():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "compatibility.md").read_text()
    names = {name.rsplit(".", 1)[1] for name, _ in _facade_functions()}
    missing = sorted(n for n in names if not re.search(rf"[`.]{n}[`(]", doc))
    assert not missing
