"""acl.mdl and acl.op hold exactly the functions of the real extension's method tables
(hicann/runtime python/pyACL/mdl/pymdl_methods.cpp, op/pyop_methods.cpp), each documented."""
from __future__ import annotations

import re
from pathlib import Path

import npurt.acl as acl

MDL = """
add_dataset_buffer bundle_get_model_id bundle_get_model_num bundle_load_from_file bundle_load_from_mem
bundle_unload create_aipp create_and_get_op_desc create_config_handle create_dataset create_desc
create_exec_config_handle destroy_aipp destroy_config_handle destroy_dataset destroy_desc
destroy_exec_config_handle dump_reg_callback dump_unreg_callback execute execute_async execute_v2
finalize_dump get_aipp_data_size get_aipp_type get_cur_output_dims get_dataset_buffer
get_dataset_num_buffers get_dataset_tensor_desc get_desc get_desc_from_file get_desc_from_mem
get_dynamic_batch get_dynamic_hw get_first_aipp_info get_input_data_type get_input_dims
get_input_dims_range get_input_dims_v2 get_input_dynamic_dims get_input_dynamic_gear_count
get_input_format get_input_index_by_name get_input_name_by_index get_input_size_by_index
get_num_inputs get_num_outputs get_op_attr get_output_data_type get_output_dims get_output_format
get_output_index_by_name get_output_name_by_index get_output_size_by_index get_tensor_real_name
init_dump load_from_file load_from_file_with_mem load_from_mem load_from_mem_with_mem load_with_config
query_size query_size_from_mem set_aipp_ax_swap_switch set_aipp_by_input_index set_aipp_crop_params
set_aipp_csc_params set_aipp_dtc_pixel_mean set_aipp_dtc_pixel_min set_aipp_input_format
set_aipp_padding_params set_aipp_pixel_var_reci set_aipp_rbuv_swap_switch set_aipp_src_image_size
set_config_opt set_dataset_tensor_desc set_dump set_dynamic_batch_size set_dynamic_hw_size
set_exec_config_opt set_input_aipp set_input_dynamic_dims unload
""".split()

OP = """
cast create_attr create_handle create_handle_for_cast create_kernel destroy_attr destroy_handle execute
execute_v2 execute_with_handle infer_shape load register_compile_func set_attr_bool set_attr_data_type
set_attr_float set_attr_int set_attr_list_bool set_attr_list_data_type set_attr_list_float
set_attr_list_int set_attr_list_list_int set_attr_list_string set_attr_string set_kernel_args
set_kernel_workspace_sizes set_max_op_queue_num set_model_dir start_dump_args stop_dump_args
unregister_compile_func update_params
""".split()

DOC = (Path(__file__).resolve().parents[2] / "docs" / "compatibility.md").read_text()


def _public_callables(module) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))}


def _section(title: str) -> str:
    start = DOC.index(f"## {title}")
    end = DOC.find("\n## ", start + 1)
    return DOC[start:end if end > 0 else None]


def test_acl_mdl_has_exactly_the_real_method_table():
    assert len(MDL) == 83
    assert sorted(acl.mdl.__all__) == sorted(MDL)
    assert _public_callables(acl.mdl) == set(MDL)


def test_acl_op_has_exactly_the_real_method_table():
    assert len(OP) == 32
    assert sorted(acl.op.__all__) == sorted(OP)
    assert _public_callables(acl.op) == set(OP)


def test_every_mdl_and_op_function_is_in_the_compatibility_table():
    for title, names in (("acl.mdl", MDL), ("acl.op", OP)):
        section = _section(title)
        missing = [n for n in names if not re.search(rf"`{n}[`(]", section)]
        assert not missing, (title, missing)
