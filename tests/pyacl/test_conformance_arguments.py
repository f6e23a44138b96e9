"""Conformance, issue 10 item 3: arguments are handled as the real pyACL extension handles
them. Each wrapper of python/pyACL/**/*.cpp parses with PyArg_ParseTuple and, when that
fails, raises TypeError with its own message (`CHECK_NULL(PyArg_ParseTuple(...), "...")`,
utils_methods.h); wrappers without parameters never parse, so surplus arguments are ignored.
"""
from __future__ import annotations

import inspect
import threading

import numpy as np
import pytest

import npurt.acl as acl
from npurt.acl import constants as C
from npurt._cstyle.parse import Format, convert


@pytest.fixture
def ready(fresh_runtime):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    acl.rt.get_last_error(0)
    acl.get_recent_err_msg()
    yield


def _all_facade_functions():
    fns = [(f"acl.{n}", getattr(acl, n)) for n in acl._other.__all__]
    fns += [(f"acl.rt.{n}", getattr(acl.rt, n)) for n in acl.rt.FUNCTIONS]
    fns += [(f"acl.util.{n}", getattr(acl.util, n)) for n in acl.util.__all__]
    return fns


# ---------------------------------------------------------------- wrong types and counts
def test_every_runtime_function_declares_the_format_of_the_real_wrapper():
    undeclared = [name for name, fn in _all_facade_functions()
                  if not (fn.parse_format is None or isinstance(fn.parse_format, str))]
    assert not undeclared


@pytest.mark.parametrize("call, message", [
    # rt_memory.cpp WrapAclRtMalloc: PyArg_ParseTuple(args, "ki", ...), "acl.rt.malloc args parse failed"
    (lambda: acl.rt.malloc("64", 0), "acl.rt.malloc args parse failed"),
    # rt_synchronize.cpp WrapAclRtSynchronizeStream: "k"
    (lambda: acl.rt.synchronize_stream(None), "acl.rt.synchronize_stream args parse failed"),
    # rt_stream.cpp WrapAclRtStreamQuery: "acl.rt.stream_query args parse failed!"
    (lambda: acl.rt.stream_query("s"), "acl.rt.stream_query args parse failed!"),
    # rt_device.cpp WrapAclRtGetDevicesTopo: the message names reset_device_res_limit
    (lambda: acl.rt.get_devices_topo(0, "1"), "acl.rt.reset_device_res_limit args parse failed"),
    # rt_context.cpp WrapAclRtSetSysParamOpt: "... args parse faild"
    (lambda: acl.rt.set_sys_param_opt(0, "1"), "acl.rt.set_sys_param_opt args parse faild"),
    # rt_memory.cpp WrapAclRtHostGetDevicePointer: "acl.rt.host_get_device_pointer parse failed"
    (lambda: acl.rt.host_get_device_pointer(None, 0), "acl.rt.host_get_device_pointer parse failed"),
    # py_init_acl.cpp WrapAclInit: "|s"
    (lambda: acl.init(5), "acl.init args parse failed"),
])
def test_a_wrong_argument_type_raises_the_wrappers_type_error(ready, call, message):
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == message
    assert acl.rt.get_last_error(0) == 0  # nothing reached the runtime


@pytest.mark.parametrize("args", [(64,), (64, 0, 0), ()])
def test_a_wrong_argument_count_raises_the_same_type_error(ready, args):
    # PyArg_ParseTuple fails for a wrong count too; CHECK_NULL replaces its message
    with pytest.raises(TypeError, match="^acl.rt.malloc_align32 args parse failed$"):
        acl.rt.malloc_align32(*args)


def test_a_wrong_argument_count_of_a_hot_function_is_still_a_type_error(ready):
    # malloc, memcpy_async, ... take exactly their parameters (a specialised call in
    # CPython): the count error is CPython's own TypeError text
    with pytest.raises(TypeError):
        acl.rt.malloc(64)
    with pytest.raises(TypeError):
        acl.rt.memcpy_async(1, 2, 3)


def test_keyword_arguments_are_refused_as_by_a_meth_varargs_function(ready):
    with pytest.raises(TypeError):
        acl.rt.malloc(size=64, policy=0)


def test_get_event_id_keeps_cpythons_own_message(ready):
    # rt_synchronize.cpp WrapAclRtGetEventId passes its message to PyArg_ParseTuple by
    # mistake (CHECK_NULL(PyArg_ParseTuple(args, "k", &event, "...")) has one argument)
    with pytest.raises(TypeError) as info:
        acl.rt.get_event_id("e")
    assert "args parse failed" not in str(info.value) and "must be int" in str(info.value)


# ---------------------------------------------------------------- functions without parameters
@pytest.mark.parametrize("call", [
    lambda: acl.rt.synchronize_device(0),              # rt_synchronize.cpp: /* args */ unused
    lambda: acl.rt.get_device_count("ignored", 1),     # rt_device.cpp WrapAclRtGetDeviceCount
    lambda: acl.rt.get_run_mode(None),                 # rt_device.cpp WrapAclRtGetRunMode
    lambda: acl.rt.create_stream(3),                   # rt_stream.cpp WrapAclRtCreateStream
    lambda: acl.rt.get_context(1, 2, 3),               # rt_context.cpp WrapAclRtGetCurrentContext
    lambda: acl.get_soc_name("x"),                     # py_init_acl.cpp WrapAclRtGetSocName
])
def test_a_function_without_parameters_ignores_surplus_arguments(ready, call):
    result = call()
    ret = result[-1] if isinstance(result, tuple) else result
    assert ret == 0 or isinstance(ret, str)


def test_synchronize_device_with_the_device_id_works_as_real_code_calls_it(ready):
    dev, _ = acl.rt.malloc(64, 0)
    assert acl.rt.memset_async(dev, 64, 1, 64, 0) == 0
    assert acl.rt.synchronize_device(0) == 0


# ---------------------------------------------------------------- conversions of PyArg_ParseTuple
def test_pointer_arguments_take_python_ints_only_as_format_k_does(ready):
    # format "k" (CPython getargs.c): PyLong_Check, so a numpy integer is a TypeError
    with pytest.raises(TypeError):
        acl.rt.malloc(np.int64(64), 0)
    with pytest.raises(TypeError):
        acl.rt.free(float(1 << 48))


def test_bool_is_an_int_for_every_integer_format(ready):
    dev, ret = acl.rt.malloc(True, False)
    assert ret == 0 and dev != 0


def test_enum_arguments_take_anything_with_index_but_floats_as_format_i_does(ready):
    dev, ret = acl.rt.malloc(64, np.int32(0))
    assert ret == 0
    with pytest.raises(TypeError):
        acl.rt.malloc(64, 0.0)


def test_format_k_masks_negative_numbers_to_64_bits(ready):
    # -1 passed as a size is SIZE_MAX in C: an allocation that cannot succeed
    _, ret = acl.rt.malloc(-1, 0)
    assert ret == C.ACL_ERROR_RT_MEMORY_ALLOCATION


def test_format_i_out_of_range_is_a_type_error(ready):
    with pytest.raises(TypeError, match="acl.rt.set_device args parse failed"):
        acl.rt.set_device(1 << 31)


def test_format_capital_i_masks_to_32_bits(ready):
    # create_event_with_flag "I": 2**32 + 1 is flag 1 (ACL_EVENT_SYNC)
    event, ret = acl.rt.create_event_with_flag((1 << 32) | C.ACL_EVENT_SYNC)
    assert ret == 0 and event != 0


@pytest.mark.parametrize("unit, value, expected", [
    ("k", -1, (1 << 64) - 1), ("K", 1 << 64, 0), ("I", -1, 0xFFFFFFFF), ("H", 0x12345, 0x2345),
    ("i", np.int16(-5), -5), ("L", -(1 << 63), -(1 << 63)), ("f", 0.1, 0.10000000149011612), ("O", [1], [1]),
    ("b", 200, -56),
    ("z", None, None), ("s", "ok", "ok"), ("p", [], False),
])
def test_parse_units_convert_as_cpython(unit, value, expected):
    assert convert(unit, value) == expected


@pytest.mark.parametrize("unit, value", [("k", np.uint64(1)), ("i", 1.0), ("i", 1 << 40), ("s", "a\0b"),
                                         ("s", None), ("b", 256), ("f", "1.0")])
def test_parse_units_refuse_as_cpython(unit, value):
    from npurt._cstyle.parse import _Mismatch
    with pytest.raises(_Mismatch):
        convert(unit, value)


def test_optional_units_may_be_left_out():
    fmt = Format("|O")
    assert fmt.required == 0 and fmt.text == "|O"


# ---------------------------------------------------------------- the extension's own checks
def test_util_numpy_helpers_raise_value_error_for_a_non_ndarray():
    # numpy_convert.cpp: CHECK_NULL(PyArray_Check(inArg), "needs an ndarray as argument", PyExc_ValueError)
    with pytest.warns(Warning, match="will be deprecated"):
        with pytest.raises(ValueError, match="needs an ndarray as argument"):
            acl.util.numpy_to_ptr([1, 2, 3])
    with pytest.warns(Warning, match="will be deprecated"):
        with pytest.raises(ValueError, match="needs an ndarray as argument"):
            acl.util.numpy_contiguous_to_ptr(b"123")


def test_util_bytes_to_ptr_raises_value_error_for_a_non_bytes():
    # bytes_convert.cpp: CHECK_NULL(PyBytes_Check(inBytes), "needs an byte as argument", PyExc_ValueError)
    with pytest.raises(ValueError, match="needs an byte as argument"):
        acl.util.bytes_to_ptr(bytearray(b"abc"))


def test_util_ptr_to_numpy_takes_its_shape_as_a_tuple(ready):
    host, _ = acl.rt.malloc_host(64)
    with pytest.warns(Warning, match="ptr_to_numpy will be deprecated"):
        assert acl.util.ptr_to_numpy(host, (4, 2), 11).shape == (4, 2)
    # numpy_convert.cpp: PyTuple_Size of a list is -1 -> "shape is empty"
    with pytest.warns(Warning), pytest.raises(ValueError, match="shape is empty"):
        acl.util.ptr_to_numpy(host, [4, 2], 11)


def test_launch_callback_refuses_a_non_callable_with_type_error(ready):
    # rt_synchronize.cpp WrapAclRtLaunchCallback: CHECK_NULL(PyCallable_Check(fn), "parameter must be callable")
    stream, _ = acl.rt.create_stream()
    with pytest.raises(TypeError, match="parameter must be callable"):
        acl.rt.launch_callback("f", [], 0, stream)


def test_set_exception_info_callback_refuses_a_non_callable_and_clears_with_none(ready):
    # rt_synchronize.cpp WrapAclRtSetExceptionInfoCallback: "|O"; callable, None/absent, else TypeError
    with pytest.raises(TypeError, match="acl.rt.set_exception_info_callback args parse failed"):
        acl.rt.set_exception_info_callback(5)
    assert acl.rt.set_exception_info_callback(None) == 0
    assert acl.rt.set_exception_info_callback() == 0


def test_malloc_with_cfg_refuses_a_config_that_is_not_a_dict(ready):
    # rt_memory.cpp WrapAclRtMallocWithCfg: CHECK_NULL(PyDict_Check(pyCfg), "pyCfg is not dict!")
    with pytest.raises(TypeError, match="pyCfg is not dict!"):
        acl.rt.malloc_with_cfg(64, 0, [])
    with pytest.raises(KeyError, match="numAttrs"):
        acl.rt.malloc_with_cfg(64, 0, {"attrs": [{"attr": 1, "value": {"moduleId": 3}}]})
    dev, ret = acl.rt.malloc_with_cfg(64, 0, {"attrs": [{"attr": 1, "value": {"moduleId": 3}}], "numAttrs": 1})
    assert ret == 0 and dev != 0


def test_binary_load_options_must_be_a_list(tmp_path):
    # rt_binary.cpp GetBinOptionsFromPyList: "argument 2 only support the format of list" (ValueError)
    acl.init()
    with pytest.raises(ValueError, match="argument 2 only support the format of list"):
        acl.rt.binary_load_from_file(str(tmp_path / "k.py"), {})


def test_get_function_name_refuses_a_max_len_of_1024_or_more(ready):
    # rt_binary.cpp WrapAclRtGetFunctionName: CHECK_NULL(maxLen < 1024, ..., PyExc_ValueError)
    with pytest.raises(ValueError, match="maxLen should be less than 1024"):
        acl.rt.get_function_name(1, 1024)


def test_stream_attribute_dicts_follow_the_union_as_the_wrapper_reads_it(ready):
    # rt_stream.cpp GetStreamAttrValueFromPyUnion / GetPyUnionFromStreamAttrValue: priority
    # and cache-op info go through "reserved"; a missing key leaves 0
    stream, _ = acl.rt.create_stream()
    assert acl.rt.set_stream_attribute(stream, C.ACL_STREAM_ATTR_PRIORITY, {"reserved": [4]}) == 0
    assert acl.rt.get_stream_attribute(stream, C.ACL_STREAM_ATTR_PRIORITY) == ({"reserved": [4, 0, 0, 0]}, 0)
    assert acl.rt.set_stream_attribute(stream, C.ACL_STREAM_ATTR_USER_CUSTOM_TAG, {}) == 0
    assert acl.rt.get_stream_attribute(stream, C.ACL_STREAM_ATTR_USER_CUSTOM_TAG) == ({"userCustomTag": 0}, 0)
    with pytest.raises(TypeError, match="the aclrtStreamAttrValue argument is not dict"):
        acl.rt.set_stream_attribute(stream, C.ACL_STREAM_ATTR_USER_CUSTOM_TAG, 5)


def test_a_failed_dict_query_returns_the_zeroed_dict_of_its_shape(ready):
    # rt_stream.cpp WrapAclRtGetStreamAttribute builds the dict whatever ret is
    value, ret = acl.rt.get_stream_attribute(12345, C.ACL_STREAM_ATTR_FAILURE_MODE)
    assert ret != 0 and value == {"failureMode": 0}


def test_pointer_attributes_use_the_extensions_keys(ready):
    # rt_memory.cpp GetPyDictFromPtrAttributes: "location", "page_size", "rsv" (4 x uint32)
    dev, _ = acl.rt.malloc(64, 0)
    attrs, ret = acl.rt.pointer_get_attributes(dev)
    assert ret == 0 and attrs["page_size"] > 0 and attrs["rsv"] == [0, 0, 0, 0]
    assert attrs["location"] == {"id": 0, "type": C.ACL_MEM_LOCATION_TYPE_DEVICE}


def test_device_uuid_bytes_are_a_list_of_16_ints(ready):
    # rt_device.cpp GetPydictFromUuid: GetPyListFromArray(uuid.bytes, 16)
    uuid, ret = acl.rt.device_get_uuid(0)
    assert ret == 0 and len(uuid["bytes"]) == 16 and all(-128 <= b <= 127 for b in uuid["bytes"])


def test_event_elapsed_time_is_a_c_float(ready):
    # rt_synchronize.cpp WrapAclRtEventElapsedTime: Py_BuildValue("fi", ms, ret)
    start, _ = acl.rt.create_event()
    end, _ = acl.rt.create_event()
    stream, _ = acl.rt.create_stream()
    acl.rt.record_event(start, stream)
    acl.rt.record_event(end, stream)
    acl.rt.synchronize_stream(stream)
    ms, ret = acl.rt.event_elapsed_time(start, end)
    assert ret == 0 and ms == float(np.float32(ms))


def test_start_thread_calls_without_argument_when_args_is_none_and_stop_thread_reports_errors():
    # thread.cpp ThrFunc: Py_BuildValue("(O)") only when pyFuncArgs is not None; WrapStopThread
    # raises RuntimeError with the collected messages
    seen = []
    tid, ret = acl.util.start_thread(lambda: seen.append("called"), None)
    assert ret == 0 and acl.util.stop_thread(tid) == 0 and seen == ["called"]

    def boom(args):
        raise ValueError("no")

    tid, _ = acl.util.start_thread(boom, [1])
    with pytest.raises(RuntimeError, match="exception=ValueError,msg=thread call failed;"):
        acl.util.stop_thread(tid)
    assert acl.util.stop_thread(threading.get_ident()) == 3  # ESRCH: not a thread of start_thread


def test_get_recent_err_msg_is_none_when_there_is_no_message(ready):
    # acl.cpp aclGetRecentErrMsgImpl returns nullptr; Py_BuildValue("s", NULL) is None
    assert acl.get_recent_err_msg() is None


# ---------------------------------------------------------------- 207000 stubs have real arities
def test_an_unsupported_function_parses_its_real_arity(ready):
    # rt_notify.cpp WrapAclRtWaitAndResetNotify: "kkL", then its own range checks (implemented
    # since issue 25: handle 1 is no notify)
    assert acl.rt.wait_and_reset_notify(1, 0, 10) == C.ACL_ERROR_RT_INVALID_HANDLE
    with pytest.raises(TypeError, match="acl.rt.wait_and_reset_notify args parse failed"):
        acl.rt.wait_and_reset_notify(1, 2, 3, 4)
    with pytest.raises(TypeError, match="timeout can't be a negative number!"):
        acl.rt.wait_and_reset_notify(1, 0, -1)


def test_unsupported_functions_keep_the_real_placeholders(ready):
    # rt_memory.cpp WrapAclRtSetMemcpyDesc returns the desc it was given; a failed ipc export
    # returns the key "" (its zeroed buffer)
    assert acl.rt.set_memcpy_desc(77, 0, 0, 0, 0, 0) == (77, C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
    assert acl.rt.ipc_mem_get_export_key(0, 0, 65, 0) == ("", C.ACL_ERROR_RT_PARAM_INVALID)


def test_signatures_show_pyacls_parameter_names():
    assert list(inspect.signature(acl.rt.memset_async).parameters) == \
        ["dev_ptr", "max_count", "value", "count", "stream"]
