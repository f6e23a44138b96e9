"""pyACL namespaces npurt does not have: the hi_mpi media API (acl.himpi), cuBLAS-style
matrix ops (acl.blas) and feature retrieval (acl.fv). (acl.mdl, acl.op, acl.media and
acl.prof are real modules.)

Each namespace holds every function of the real module's method table
(python/pyACL/himpi/pyhimpi_methods.cpp, blas/pyblas_methods.cpp, fv/pyfv_methods.cpp):
it parses its arguments with the real wrapper's PyArg_ParseTuple format and message
(himpi_*.cpp, blas.cpp, fv_retrieval.cpp), then records and returns
ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000) in the real return shape, so
`task_id, ret = acl.himpi.vpc_resize(...)` unpacks. Dict outputs are empty dicts. As in the
real module, a name that is not in the table is an AttributeError.
"""
from __future__ import annotations

import sys
import types
import warnings

from ._wrap import Group, not_supported

_WHY = {
    "acl.himpi": "the hi_mpi media API (acl.himpi) is not simulated; use acl.media (DVPP: acldvpp*), which is",
    "acl.blas": "the CBLAS operators (acl.blas) are not simulated; use npurt.ops.matmul or a kernel",
    "acl.fv": "feature retrieval (acl.fv) is not simulated",
}

# one entry per function: (format or None, shape, value in place of the outputs, message
# ending: "!" after "args parse failed", "" without, or a full message where the real one
# differs). Shapes: "ret", "one", "many" (value is the tuple), "value" (no ret).
_D = {}  # a dict output (a zeroed struct in the real wrapper)
_HIMPI = {
    # common (himpi_common.cpp)
    "sys_init": (None, "ret", None, "!"), "sys_exit": (None, "ret", None, "!"),
    "dvpp_malloc": ("ik", "one", 0, "!"), "dvpp_free": ("k", "ret", None, "!"),
    "dvpp_get_version": (None, "many", (0, 0, 0), "!"), "sys_create_epoll": ("i", "one", 0, "!"),
    "sys_ctl_epoll": ("iiiO", "ret", None, "!"), "sys_wait_epoll": ("iii", "many", ([], 0), "!"),
    "sys_close_epoll": ("i", "ret", None, "!"), "sys_set_chn_csc_matrix": ("iiiO", "ret", None, "!"),
    "sys_get_chn_csc_matrix": ("ii", "many", (0, _D), "!"),
    "sys_get_image_align_info": ("OiO", "one", _D, "!"),
    # video and image decoding (himpi_vdec.cpp)
    "vdec_create_chn": ("iO", "ret", None, "!"), "vdec_destroy_chn": ("i", "ret", None, "!"),
    "vdec_get_chn_attr": ("i", "one", _D, "!"), "vdec_set_chn_attr": ("iO", "ret", None, "!"),
    "vdec_start_recv_stream": ("i", "ret", None, "!"), "vdec_stop_recv_stream": ("i", "ret", None, "!"),
    "vdec_query_status": ("i", "one", _D, "!"), "vdec_reset_chn": ("i", "ret", None, "!"),
    "vdec_set_chn_param": ("iO", "ret", None, "!"), "vdec_get_chn_param": ("i", "one", _D, "!"),
    "vdec_set_protocol_param": ("iO", "ret", None, "!"), "vdec_get_protocol_param": ("i", "one", _D, "!"),
    "vdec_send_stream": ("iOOi", "ret", None, "!"), "vdec_get_frame": ("ii", "many", (_D, _D, _D), "!"),
    "vdec_release_frame": ("iO", "ret", None, "!"), "vdec_get_fd": ("i", "ret", None, "!"),
    "vdec_close_fd": ("i", "ret", None, "!"), "vdec_get_pic_buf_size": ("iO", "value", 0, "!"),
    "vdec_get_tmv_buf_size": ("iII", "value", 0, "!"), "dvpp_get_image_info": ("iO", "one", _D, "!"),
    "vdec_set_jpegd_precision_mode": ("iI", "ret", None, "!"),
    "vdec_get_jpegd_output_info": ("Oi", "one", _D, ""),
    "vdec_set_display_mode": ("iI", "ret", None, "!"), "vdec_get_display_mode": ("i", "one", 0, "!"),
    # video and image encoding (himpi_venc.cpp)
    "venc_create_chn": ("iO", "ret", None, "!"), "venc_destroy_chn": ("i", "ret", None, "!"),
    "venc_start_chn": ("iO", "ret", None, "!"), "venc_stop_chn": ("i", "ret", None, "!"),
    "venc_query_status": ("i", "one", _D, "!"), "venc_get_stream": ("iOi", "one", _D, "!"),
    "venc_release_stream": ("iO", "ret", None, "!"), "venc_send_frame": ("iOi", "ret", None, "!"),
    "venc_send_frame_ex": ("iOi", "ret", None, "!"), "venc_set_mod_param": ("O", "ret", None, "!"),
    "venc_get_mod_param": ("O", "one", _D, "!"), "venc_request_idr": ("ii", "ret", None, "!"),
    "venc_get_fd": ("i", "ret", None, "!"), "venc_close_fd": ("i", "ret", None, "!"),
    "venc_set_jpeg_param": ("iO", "ret", None, "!"), "venc_get_jpeg_param": ("i", "one", _D, "!"),
    "venc_set_chn_param": ("iO", "ret", None, "!"), "venc_get_chn_param": ("i", "one", _D, "!"),
    "venc_set_chn_attr": ("iO", "ret", None, "!"), "venc_get_chn_attr": ("i", "one", _D, "!"),
    "venc_set_scene_mode": ("ii", "ret", None, "!"), "venc_set_rc_param": ("iO", "ret", None, "!"),
    "venc_get_rc_param": ("ii", "one", _D, "!"), "venc_set_jpeg_huffman_param": ("iO", "ret", None, "!"),
    "venc_get_jpeg_huffman_param": ("i", "one", _D, "!"), "venc_compact_jpeg_tables": ("iIi", "ret", None, "!"),
    "venc_send_jpege_frame": ("iOOI", "ret", None, "!"), "venc_get_jpege_predicted_size": ("OO", "one", 0, "!"),
    "venc_get_scene_mode": ("i", "one", 0, ""), "venc_set_cu_pred": ("iO", "ret", None, ""),
    "venc_get_cu_pred": ("i", "one", _D, ""), "venc_set_h264_vui": ("iO", "ret", None, ""),
    "venc_get_h264_vui": ("i", "one", _D, ""), "venc_set_h265_vui": ("iO", "ret", None, ""),
    "venc_get_h265_vui": ("i", "one", _D, ""), "venc_set_intra_refresh": ("iO", "ret", None, ""),
    "venc_get_intra_refresh": ("i", "one", _D, ""), "venc_set_ref_param": ("iO", "ret", None, ""),
    "venc_get_ref_param": ("i", "one", _D, ""), "venc_set_roi_attr": ("iO", "ret", None, ""),
    "venc_get_roi_attr": ("iI", "one", _D, ""), "venc_set_slice_split": ("iO", "ret", None, ""),
    "venc_get_slice_split": ("i", "one", _D, ""), "venc_get_qpmap_stride": ("I", "value", 0, ""),
    "venc_get_qpmap_size": ("iII", "value", 0, ""), "venc_set_streamcopy_param": ("iO", "ret", None, ""),
    "venc_get_streamcopy_param": ("i", "one", _D, ""),
    # image processing (himpi_vpc.cpp); (task_id, ret) for the processing calls
    "vpc_create_chn": ("iO", "ret", None, "!"), "vpc_destroy_chn": ("i", "ret", None, "!"),
    "vpc_resize": ("iOOddIi", "one", 0, "!"), "vpc_crop": ("iOOIi", "one", 0, "!"),
    "vpc_crop_resize": ("iOOIi", "one", 0, "acl.himpi.vpc_crop args parse failed!"),
    "vpc_crop_resize_paste": ("iOOIi", "one", 0, "!"), "vpc_convert_color": ("iOOi", "one", 0, "!"),
    "vpc_convert_color_v2": ("iOOOi", "one", 0, "!"), "vpc_convert_color_to_yuv420": ("iOOi", "one", 0, "!"),
    "vpc_copy_make_border": ("iOOOi", "one", 0, "!"), "vpc_pyrdown": ("iOOIOHOi", "one", 0, "!"),
    "vpc_calc_hist_v2": ("iOik", "one", 0, "!"), "vpc_equalize_hist": ("iOOOi", "one", 0, "!"),
    "vpc_get_process_result": ("iIi", "ret", None, "!"), "vpc_sys_create_chn": ("O", "one", 0, "!"),
    "vpc_crop_resize_make_border": ("iOOIi", "one", 0, "!"),
    "vpc_batch_crop_resize_paste": ("iOIOOi", "one", 0, "!"),
    "vpc_batch_crop_resize_make_border": ("iOIOOi", "one", 0, "!"),
    "vpc_crop_resize_resize_paste": ("iOOii", "one", 0, "!"), "vpc_dilate": ("iOi", "one", 0, "!"),
    "vpc_draw_cover": ("iOi", "one", 0, "!"), "vpc_draw_line": ("iOi", "one", 0, "!"),
    "vpc_draw_mosaic": ("iOi", "one", 0, "!"), "vpc_draw_osd": ("iOi", "one", 0, "!"),
    "vpc_blur": ("iOi", "one", 0, "!"), "vpc_gaussian_blur": ("iOi", "one", 0, "!"),
    "vpc_erode": ("iOi", "one", 0, "!"), "vpc_filter2d": ("iOi", "one", 0, "!"), "vpc_flip": ("iOi", "one", 0, "!"),
    "vpc_get_affine_lut": ("OIO", "one", _D, "!"), "vpc_get_lut_mem_size": ("II", "one", 0, "!"),
    "vpc_get_affine_transform": ("O", "one", _D, "!"), "vpc_get_perspective_lut": ("OIO", "one", _D, "!"),
    "vpc_get_remap_lut": ("OO", "one", _D, "!"), "vpc_get_rotation_matrix": ("Odd", "one", _D, "!"),
    "vpc_lut_remap": ("iOOi", "one", 0, "!"), "vpc_set_chn_workspace": ("iOI", "ret", None, "!"),
    "vpc_median_blur": ("iOi", "one", 0, "!"), "vpc_rotate": ("iOi", "one", 0, "!"),
    "vpc_warp_affine": ("iOOi", "one", 0, "!"), "vpc_set_chn_opt_attr": ("iO", "ret", None, "!"),
    # PNG decoding (himpi_pngd.cpp)
    "pngd_create_chn": ("iO", "ret", None, "!"), "pngd_destroy_chn": ("i", "ret", None, "!"),
    "pngd_send_stream": ("iOOi", "ret", None, "!"), "pngd_get_image_data": ("ii", "many", (_D, _D), "!"),
    "png_get_image_info": ("O", "one", _D, "!"),
}
_BLAS = {
    "gemv_ex": ("iiikkiikiikkiiik", "ret", None, ""), "create_handle_for_gemv_ex": ("iiiiiii", "one", 0, ""),
    "hgemv": ("iiikkikikkiik", "ret", None, ""), "create_handle_for_hgemv": ("iiii", "one", 0, ""),
    "s8gemv": ("iiikkikikkiik", "ret", None, ""), "create_handle_for_s8gemv": ("iiii", "one", 0, ""),
    "gemm_ex": ("iiiiiikkiikiikkiiik", "ret", None, ""), "create_handle_for_gemm_ex": ("iiiiiiiiii", "one", 0, ""),
    "hgemm": ("iiiiiikkikikkiik", "ret", None, ""), "create_handle_for_hgemm": ("iiiiiii", "one", 0, ""),
    "s8gemm": ("iiiiiikkikikkiik", "ret", None, ""), "create_handle_for_s8gemm": ("iiiiiii", "one", 0, ""),
}
_FV = {
    "create_init_para": ("K", "value", 0, "!"),
    "destory_init_para": ("k", "ret", None, "acl.fv.destroy_init_para args parse failed!"),
    "destroy_init_para": ("k", "ret", None, "!"), "set_1n_top_num": ("kI", "ret", None, "!"),
    "set_nm_top_num": ("kI", "ret", None, "!"), "init": ("k", "ret", None, "!"), "release": (None, "ret", None, "!"),
    "repo_add": ("Ik", "ret", None, "!"), "repo_del": ("Ik", "ret", None, "!"),
    "create_feature_info": ("IIIIIkI", "value", 0, "!"), "destroy_feature_info": ("k", "ret", None, "!"),
    "create_repo_range": ("IIII", "value", 0, "!"), "destroy_repo_range": ("k", "ret", None, "!"),
    "delete": ("k", "ret", None, "!"), "modify": ("k", "ret", None, "!"),
    "create_query_table": ("IIkI", "value", 0, "!"), "destroy_query_table": ("k", "ret", None, "!"),
    "create_search_input": ("kkI", "value", 0, "!"), "destroy_search_input": ("k", "ret", None, "!"),
    "create_search_result": ("IkIkkkkI", "value", 0, "!"), "destroy_search_result": ("k", "ret", None, "!"),
    "search": ("Ikk", "ret", None, "!"),
}
KNOWN = {"acl.himpi": _HIMPI, "acl.blas": _BLAS, "acl.fv": _FV}


def _message(where: str, ending: str) -> str:
    return ending if ending not in ("", "!") else f"{where} args parse failed{ending}"


def _namespace(name: str) -> types.ModuleType:
    module = types.ModuleType(f"npurt.{name}", f"{name}: not supported by npurt. {_WHY[name]}.")
    for fn, (fmt, shape, value, ending) in KNOWN[name].items():
        where = f"{name}.{fn}"
        module.__dict__[fn] = not_supported(where, _WHY[name], shape, value, args=fmt,
                                            message=_message(where, ending))
    module.__all__ = sorted(KNOWN[name])
    sys.modules[module.__name__] = module
    return module


himpi = _namespace("acl.himpi")
blas = _namespace("acl.blas")
fv = _namespace("acl.fv")


# vpc_calc_hist is deprecated: the real wrapper warns, calls nothing and returns a zero
# histogram with task id 0 and ret 0 (himpi_vpc.cpp WrapHiMpiVpcCalcHist)
def _calc_hist(chn, source_pic, milli_sec):
    warnings.warn("acl.himpi.vpc_calc_hist will be deprecated. Please use acl.himpi.vpc_calc_hist_v2 instead.",
                  Warning, stacklevel=3)
    return {"histogram_y_or_r": [0] * 256, "histogram_u_or_g": [0] * 256, "histogram_v_or_b": [0] * 256}, 0


_calc_hist.__name__ = _calc_hist.__qualname__ = "vpc_calc_hist"
himpi.vpc_calc_hist = Group("acl.himpi").many({}, 0, args="iOi", message="acl.himpi.vpc_calc_hist args parse failed!")(
    _calc_hist)
himpi.__all__ = sorted([*himpi.__all__, "vpc_calc_hist"])

get_cann_version = not_supported(
    "acl.get_cann_version", "CANN package versions (aclCANNPackageName) do not exist in npurt; use "
    "acl.get_version_str('runtime')", "one",
    {"version": "", "major_version": "", "minor_version": "", "release_version": "", "patch_version": "",
     "reserved": ""}, args="I")
