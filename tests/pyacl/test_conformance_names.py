"""Conformance, issue 10 item 8: the names of the real module, with their real return shapes.

Sources: python/pyACL/rt/pyrt_methods.cpp (the acl.rt method table), rt_allocator.cpp,
rt_device.cpp; src/acl/aclrt_impl/allocator.cpp; src/runtime/api/api_c_device.cc and
runtime.cc (ChgUserDevIdToDeviceId); python/pyACL/himpi, blas, fv method tables.
"""
from __future__ import annotations

import pytest

import npurt
import npurt.acl as acl
from npurt.acl import constants as C
from npurt.runtime import api

NOT_SUPPORTED = C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT

# the acl.rt method table of pyrt_methods.cpp (without the USE_MDL group, not compiled)
RT_METHOD_TABLE = """
binary_load_from_file binary_load_from_data get_function_addr get_function_name register_cpu_func create_binary
destroy_binary binary_load binary_unload binary_get_function launch_kernel kernel_args_init
kernel_args_init_by_user_mem kernel_args_get_mem_size kernel_args_get_handle_mem_size kernel_args_append
kernel_args_append_place_holder kernel_args_get_place_holder_buffer kernel_args_para_update kernel_args_finalize
launch_kernel_with_config set_device reset_device reset_device_force get_device set_device_sat_mode
get_device_sat_mode get_run_mode set_ts_device get_device_count create_context destroy_context set_context
get_context ctx_get_current_default_stream get_overflow_status reset_overflow_status malloc free get_mem_info
malloc_cached mem_flush mem_invalidate malloc_host free_host memcpy memcpy_async memset memset_async create_stream
create_stream_with_config destroy_stream destroy_stream_force set_stream_overflow_switch get_stream_overflow_switch
set_stream_failure_mode stream_query create_event create_event_with_flag create_event_ex_with_flag destroy_event
synchronize_stream synchronize_stream_with_timeout process_report subscribe_report unsubscribe_report
launch_callback synchronize_device record_event reset_event query_event query_event_status
query_event_wait_status synchronize_event synchronize_event_with_timeout event_elapsed_time event_get_timestamp
get_event_id get_event_avail_num stream_wait_event stream_get_id get_stream_available_num set_stream_attribute
get_stream_attribute get_thread_last_task_id reduce_async set_exception_info_callback
get_error_code_from_exception_info get_task_id_from_exception_info get_stream_id_from_exception_info
get_thread_id_from_exception_info get_device_id_from_exception_info set_op_wait_timeout set_op_execute_time_out
memcpy2d memcpy2d_async reserve_mem_address release_mem_address malloc_physical free_physical malloc_with_cfg
malloc_for_task_scheduler malloc_host_with_cfg map_mem unmap_mem mem_export_to_shareable_handle
device_get_bare_tgid mem_set_pid_to_shareable_handle mem_import_from_shareable_handle
mem_get_allocation_granularity get_device_utilization_rate query_device_status ctx_set_sys_param_opt
ctx_get_sys_param_opt set_sys_param_opt get_sys_param_opt malloc_align32 allocator_create_desc
allocator_destroy_desc allocator_set_obj_to_desc allocator_set_alloc_func_to_desc allocator_set_free_func_to_desc
allocator_set_alloc_advise_func_to_desc allocator_set_get_addr_from_block_func_to_desc allocator_register
allocator_unregister peek_at_last_error get_last_error synchronize_device_with_timeout cmo_async
device_task_abort memcpy_async_with_condition stream_abort pointer_get_attributes host_register host_unregister
get_memcpy_desc_size set_memcpy_desc memcpy_async_with_desc value_write value_wait device_can_access_peer
device_enable_peer_access device_disable_peer_access ipc_mem_get_export_key ipc_mem_set_import_pid
ipc_mem_import_by_key ipc_mem_close get_device_info device_get_stream_priority_range get_device_capability
get_device_res_limit set_device_res_limit reset_device_res_limit get_devices_topo create_notify destroy_notify
record_notify wait_and_reset_notify get_notify_id notify_batch_reset notify_get_export_key notify_set_import_pid
notify_import_by_key get_stream_res_limit set_stream_res_limit reset_stream_res_limit
use_stream_res_in_current_thread unuse_stream_res_in_current_thread get_res_in_current_thread
get_primary_ctx_state get_logic_dev_id_by_user_dev_id get_user_dev_id_by_logic_dev_id
get_logic_dev_id_by_phy_dev_id get_phy_dev_id_by_logic_dev_id set_op_execute_timeout_v2 get_op_timeout_interval
get_op_execute_timeout device_get_uuid device_peer_access_status host_register_v2 host_get_device_pointer
""".split()


@pytest.fixture
def ready(fresh_runtime):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    yield


def test_acl_rt_has_every_function_of_the_real_method_table():
    missing = [n for n in RT_METHOD_TABLE if n not in acl.rt.FUNCTIONS]
    assert not missing


# ---------------------------------------------------------------- user allocators
def _complete_desc():
    desc = acl.rt.allocator_create_desc()
    acl.rt.allocator_set_obj_to_desc(desc, 7)
    for setter in (acl.rt.allocator_set_alloc_func_to_desc, acl.rt.allocator_set_free_func_to_desc,
                   acl.rt.allocator_set_get_addr_from_block_func_to_desc):
        assert setter(desc, lambda *a: None) == 0
    return desc


def test_allocator_register_keeps_a_copy_of_a_complete_description_per_stream(ready):
    # allocator.cpp aclrtAllocatorRegisterImpl: obj, allocFunc, freeFunc and
    # getAddrFromBlockFunc must be set; the map keeps a copy (later changes do not reach it)
    stream, _ = acl.rt.create_stream()
    desc = _complete_desc()
    assert acl.rt.allocator_register(stream, desc) == 0
    acl.rt.allocator_set_obj_to_desc(desc, 8)
    assert api.allocator_of(stream).obj == 7
    assert acl.rt.allocator_unregister(stream) == 0
    assert api.allocator_of(stream) is None
    assert acl.rt.allocator_unregister(stream) == 0  # a stream without one: success


def test_allocator_register_refuses_an_incomplete_description(ready):
    stream, _ = acl.rt.create_stream()
    desc = acl.rt.allocator_create_desc()
    acl.rt.allocator_set_obj_to_desc(desc, 7)
    assert acl.rt.allocator_register(stream, desc) == C.ACL_ERROR_INVALID_PARAM
    assert "allocFunc" in acl.get_recent_err_msg()


def test_allocator_calls_with_null_arguments_are_invalid_param(ready):
    # ACL_REQUIRES_NOT_NULL_WITH_INPUT_REPORT -> ACL_ERROR_INVALID_PARAM
    assert acl.rt.allocator_destroy_desc(0) == C.ACL_ERROR_INVALID_PARAM
    assert acl.rt.allocator_register(0, _complete_desc()) == C.ACL_ERROR_INVALID_PARAM
    assert acl.rt.allocator_unregister(0) == C.ACL_ERROR_INVALID_PARAM


def test_allocator_create_desc_returns_the_handle_alone(ready):
    # rt_allocator.cpp WrapAclRtAllocatorCreateDesc: Py_BuildValue("k", desc)
    desc = acl.rt.allocator_create_desc()
    assert type(desc) is int and desc != 0
    assert acl.rt.allocator_destroy_desc(desc) == 0


# ---------------------------------------------------------------- device ids
def test_physical_and_logic_ids_follow_ascend_rt_visible_devices(fresh_runtime, monkeypatch):
    # api_error.cc GetDevicePhyIdByIndex converts its argument as a user id first
    monkeypatch.setenv("NPURT_DEVICE_COUNT", "4")
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "2,3")
    assert acl.init() == 0
    assert acl.rt.get_phy_dev_id_by_logic_dev_id(0) == (2, 0)
    assert acl.rt.get_logic_dev_id_by_phy_dev_id(3) == (1, 0)
    assert acl.rt.get_logic_dev_id_by_phy_dev_id(0) == (0, C.ACL_ERROR_RT_INVALID_DEVICEID)


def test_negative_device_ids_are_refused_by_the_runtime_layer(ready):
    # api_c_device.cc rtsGetLogicDevIdByPhyDevId: phyDevId < 0 -> RT_ERROR_INVALID_VALUE
    assert acl.rt.get_logic_dev_id_by_phy_dev_id(-1) == (0, C.ACL_ERROR_RT_PARAM_INVALID)
    assert acl.rt.get_phy_dev_id_by_logic_dev_id(-1) == (0, C.ACL_ERROR_RT_PARAM_INVALID)


# ---------------------------------------------------------------- namespaces without a simulation
def test_an_unsupported_media_call_unpacks_in_its_real_shape(ready):
    # himpi_vpc.cpp WrapHiMpiVpcResize: Py_BuildValue("II", taskId, ret)
    task_id, ret = acl.himpi.vpc_resize(0, {}, {}, 1.0, 1.0, 0, 100)
    assert (task_id, ret) == (0, NOT_SUPPORTED)
    frame, supplement, stream, ret = acl.himpi.vdec_get_frame(0, 100)
    assert ret == NOT_SUPPORTED and frame == {}
    assert acl.himpi.vdec_get_tmv_buf_size(96, 64, 64) == 0  # a value, no ret


def test_unsupported_blas_and_fv_calls_take_their_real_arity(ready):
    handle, ret = acl.blas.create_handle_for_gemm_ex(0, 0, 0, 4, 4, 4, 0, 0, 0, 0)
    assert (handle, ret) == (0, NOT_SUPPORTED)
    with pytest.raises(TypeError, match="^acl.blas.gemm_ex args parse failed$"):
        acl.blas.gemm_ex(1, 2, 3)
    assert acl.fv.create_init_para(10) == 0
    with pytest.raises(TypeError, match="acl.fv.destroy_init_para args parse failed!"):
        acl.fv.destory_init_para("x")  # the misspelt alias parses with the correct name's message


def test_vpc_calc_hist_is_a_deprecated_no_op_as_in_the_extension(ready):
    # himpi_vpc.cpp WrapHiMpiVpcCalcHist: warns, calls nothing, returns zeros and ret 0
    with pytest.warns(Warning, match="vpc_calc_hist will be deprecated"):
        hist, task_id, ret = acl.himpi.vpc_calc_hist(0, {}, 100)
    assert ret == 0 and task_id == 0 and hist["histogram_y_or_r"] == [0] * 256


def test_get_cann_version_returns_the_zeroed_version_dict(ready):
    version, ret = acl.get_cann_version(0)
    assert ret == NOT_SUPPORTED and version["version"] == "" and set(version) >= {"major_version", "reserved"}


def test_get_mem_info_total_excludes_the_system_reserve(fresh_runtime):
    # item 8: the driver keeps part of the HBM; torch_npu reports 62432 MB for a 64 GiB 910B3
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    free, total, ret = acl.rt.get_mem_info(C.ACL_HBM_MEM)
    assert ret == 0 and total == 62432 << 20 < 64 << 30
    assert 0 < free <= total
    assert npurt.get_device_properties(0).total_memory == total
