"""acl.mdl: offline-model inference, with pyACL's names, argument parsing and return shapes
(python/pyACL/mdl/mdl_wrap.cpp), on npurt's graph engine (npurt.ge).

Load an .om converted by `npurt atc`, describe it, build datasets over device buffers and
execute it, synchronously (`execute`) or as a task on a stream (`execute_async`). Dynamic
batch / image size / dims gears, static and dynamic AIPP, config handles and bundles work as
the sheet describes; the data-dump functions return ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000).
Handles are ints (0 is null: ACL_ERROR_INVALID_PARAM); model ids are process-wide.
"""
from __future__ import annotations

from ..ge import aipp as A
from ..ge import api as GE
from ..ge import constants as G
from ..ge.dataset import Dataset as _Dataset
from ..ge.desc import ModelDesc as _ModelDesc
from ..runtime import (InvalidValueError as _InvalidValueError, NpuError as _NpuError, RUNTIME as _RUNTIME,
                       constants as C)
from . import _handles as H
from ._args import Api as _Api
from ._wrap import stream_of as _stream_of
from ..ge import failures

mdl = _Api("acl.mdl", bang=True)
_datasets, _buffers, _descs, _tdescs = H.datasets, H.buffers, H.model_descs, H.tensor_descs


def _ds(handle) -> _Dataset:
    return _datasets.get(handle)


def _desc(handle) -> _ModelDesc:
    return _descs.get(handle)


def _aipp(handle) -> A.DynamicParams:
    return H.aipps.get(handle)


# ---------------------------------------------------------------- loading
@mdl.fn("s", "one", 0)
def load_from_file(model_path):
    """Load an .om file; the runtime allocates work and weight memory. Returns (model_id, ret)."""
    return GE.load(GE.read_model(model_path))


@mdl.fn("kk", "one", 0)
def load_from_mem(model, model_size):
    """Load an .om image from host memory."""
    return GE.load(GE.model_bytes(model, model_size))


@mdl.fn("skkkk", "one", 0)
def load_from_file_with_mem(model_path, work_ptr, work_size, weight_ptr, weight_size):
    """Load with caller-provided device memory (0: the runtime allocates that part)."""
    return GE.load(GE.read_model(model_path), (work_ptr, work_size), (weight_ptr, weight_size))


@mdl.fn("kkkkkk", "one", 0)
def load_from_mem_with_mem(model, model_size, work_ptr, work_size, weight_ptr, weight_size):
    return GE.load(GE.model_bytes(model, model_size), (work_ptr, work_size), (weight_ptr, weight_size))


@mdl.fn("I", "ret")
def unload(model_id):
    GE.unload(model_id)


@mdl.fn("s", "many", (0, 0))
def query_size(file_name):
    """(work_size, weight_size, ret): device memory the model needs."""
    return GE.query_size(GE.read_model(file_name))


@mdl.fn("kk", "many", (0, 0))
def query_size_from_mem(model, model_size):
    return GE.query_size(GE.model_bytes(model, model_size))


@mdl.fn("k", "one", 0, bang=False)
def load_with_config(handle):
    return H.configs.get(handle).load()


@mdl.fn(None, "value", 0)
def create_config_handle():
    return H.configs.register(GE.ConfigHandle())


@mdl.fn("k", "ret", bang=False)
def destroy_config_handle(handle):
    H.configs.drop(H.configs.get(handle))


_PTR_ATTRS = (G.ACL_MDL_MEM_ADDR_PTR, G.ACL_MDL_WEIGHT_ADDR_PTR, G.ACL_MDL_WORKSPACE_ADDR_PTR,
              G.ACL_MDL_WEIGHT_PATH_PTR)


def set_config_opt(handle, attr, value, *extra):
    """Set one aclmdlConfigAttr; the value is parsed by attr: PRIORITY an int, PATH a str, the
    *_ADDR_PTR ones (and, as the real wrapper does, WEIGHT_PATH_PTR) an address, others uint64."""
    where = "acl.mdl.set_config_opt args parse failed"
    if extra or not isinstance(handle, int) or not isinstance(attr, int) or not -(1 << 31) <= attr < (1 << 31):
        raise TypeError(where)
    inner = where + "!"
    if attr == G.ACL_MDL_PRIORITY_INT32:
        if isinstance(value, float) or not hasattr(value, "__index__") or not -(1 << 31) <= value.__index__() < (1 << 31):
            raise TypeError(inner)
        value = value.__index__()
    elif attr == G.ACL_MDL_PATH_PTR:
        if not isinstance(value, str) or "\0" in value:
            raise TypeError(inner)
    elif attr in _PTR_ATTRS:
        if not isinstance(value, int):
            raise TypeError(inner)
        value &= (1 << 64) - 1
    else:
        if not isinstance(value, int):
            raise TypeError(inner)
        value &= (1 << 64) - 1
    return _set_config_opt(handle & ((1 << 64) - 1), attr, value)


@mdl.fn("kiO", "ret", bang=False, name="set_config_opt")
def _set_config_opt(handle, attr, value):
    H.configs.get(handle).set(attr, value)


set_config_opt.pyacl_parsing = True
mdl.names.append("set_config_opt")


# ---------------------------------------------------------------- model descriptions
@mdl.fn(None, "value", 0)
def create_desc():
    return _descs.register(_ModelDesc())


@mdl.fn("kI", "ret")
def get_desc(model_desc, model_id):
    """Fill a desc with the I/O of a loaded model (note the order: desc first)."""
    GE.get_desc(_desc(model_desc), model_id)


@mdl.fn("ks", "ret")
def get_desc_from_file(model_desc, model_path):
    GE.desc_from(_desc(model_desc), GE.read_model(model_path))


@mdl.fn("kkk", "ret")
def get_desc_from_mem(model_desc, model, model_size):
    GE.desc_from(_desc(model_desc), GE.model_bytes(model, model_size))


@mdl.fn("k", "ret")
def destroy_desc(model_desc):
    _descs.drop(_desc(model_desc))


def _q(model_desc):
    """The desc of a getter whose C function returns a sentinel for null."""
    return _desc(model_desc) if model_desc else None


@mdl.fn("k", "value", 0)
def get_num_inputs(model_desc):
    d = _q(model_desc)
    return d.num(False) if d else 0


@mdl.fn("k", "value", 0)
def get_num_outputs(model_desc):
    d = _q(model_desc)
    return d.num(True) if d else 0


@mdl.fn("kk", "value", 0)
def get_input_size_by_index(model_desc, index):
    """Bytes of input `index` (the largest gear for gear models; 0 for a bad index)."""
    return _desc(model_desc).size(index, False)


@mdl.fn("kk", "value", 0)
def get_output_size_by_index(model_desc, index):
    return _desc(model_desc).size(index, True)


@mdl.fn("kk", "one", {})
def get_input_dims(model_desc, index):
    """({"name", "dimCount", "dims"}, ret); -1 marks the dims a gear or a dynamic shape sets."""
    return _desc(model_desc).dims(index, False)


@mdl.fn("kk", "one", {})
def get_input_dims_v2(model_desc, index):
    """As get_input_dims, but an AIPP input reports the image it is fed (NHWC uint8)."""
    return _desc(model_desc).dims(index, False, v2=True)


@mdl.fn("kk", "one", {})
def get_output_dims(model_desc, index):
    return _desc(model_desc).dims(index, True)


@mdl.fn("kk", "one", {})
def get_cur_output_dims(model_desc, index):
    """Output dims at the gear the latest dynamic setter chose (else the largest gear)."""
    return _desc(model_desc).cur_output_dims(index)


@mdl.fn("kk", "one", {"rangeCount": 0, "range": []})
def get_input_dims_range(model_desc, index):
    return _desc(model_desc).dims_range(index)


@mdl.fn("kk", "value", "")
def get_input_name_by_index(model_desc, index):
    return _desc(model_desc).name(index, False)


@mdl.fn("kk", "value", "")
def get_output_name_by_index(model_desc, index):
    return _desc(model_desc).name(index, True)


@mdl.fn("kk", "value", G.ACL_FORMAT_UNDEFINED)
def get_input_format(model_desc, index):
    return _desc(model_desc).format(index, False)


@mdl.fn("kk", "value", G.ACL_FORMAT_UNDEFINED)
def get_output_format(model_desc, index):
    return _desc(model_desc).format(index, True)


@mdl.fn("kk", "value", C.ACL_DT_UNDEFINED)
def get_input_data_type(model_desc, index):
    return _desc(model_desc).data_type(index, False)


@mdl.fn("kk", "value", C.ACL_DT_UNDEFINED)
def get_output_data_type(model_desc, index):
    return _desc(model_desc).data_type(index, True)


@mdl.fn("ks", "one", 0)
def get_input_index_by_name(model_desc, name):
    """(index, ret); (0, 100000) when there is none (how acllite detects a gear model)."""
    return _desc(model_desc).index_by_name(name, False)


@mdl.fn("ks", "one", 0)
def get_output_index_by_name(model_desc, name):
    return _desc(model_desc).index_by_name(name, True)


@mdl.fn("ks", "value", None, bang=False)
def get_tensor_real_name(model_desc, name):
    return _desc(model_desc).real_name(name)


@mdl.fn("kss", "value", None, bang=False)
def get_op_attr(model_desc, op_name, attr):
    return _desc(model_desc).op_attr(op_name, attr)


@mdl.fn("k", "one", {})
def get_dynamic_batch(model_desc):
    """({"batchCount", "batch"}, ret): the --dynamic_batch_size gears (0 of them: not dynamic)."""
    return _desc(model_desc).dynamic_batch()


@mdl.fn("kk", "one", {})
def get_dynamic_hw(model_desc, index):
    """({"hwCount", "hw": [[h, w], ...]}, ret); pass index -1."""
    return _desc(model_desc).dynamic_hw()


@mdl.fn("kk", "one", 0)
def get_input_dynamic_gear_count(model_desc, index):
    return _desc(model_desc).gear_count()


@mdl.fn("kkk", "one", [], name="get_input_dynamic_dims")
def _get_input_dynamic_dims(model_desc, index, gear_count):
    """([dims dict per --dynamic_dims gear], ret); index -1. gear_count > 4096: (None, 100000)."""
    if gear_count > 4096:
        raise _TooMany()
    return _desc(model_desc).dynamic_dims(gear_count)


class _TooMany(_InvalidValueError):
    def __init__(self):
        super().__init__("gear_count must not exceed 4096")


def _wrap_dynamic_dims(fn):
    def get_input_dynamic_dims(*args):
        value, ret = fn(*args)
        if ret == C.ACL_ERROR_INVALID_PARAM and len(args) == 3 and isinstance(args[2], int) and \
                (args[2] & ((1 << 64) - 1)) > 4096:
            return None, ret
        return value, ret
    get_input_dynamic_dims.__doc__ = fn.__doc__
    get_input_dynamic_dims.pyacl_parsing = True
    return get_input_dynamic_dims


get_input_dynamic_dims = _wrap_dynamic_dims(_get_input_dynamic_dims)
mdl.names.append("get_input_dynamic_dims")


# ---------------------------------------------------------------- datasets
@mdl.fn(None, "value", 0)
def create_dataset():
    return _datasets.register(_Dataset())


@mdl.fn("k", "ret")
def destroy_dataset(dataset):
    """Frees the dataset (and the tensor descs it holds), not its buffers nor their memory."""
    ds = _ds(dataset)
    for desc in ds.descs:
        _tdescs.drop(desc)
    _datasets.drop(ds)


@mdl.fn("kk", "echo")
def add_dataset_buffer(dataset, data_buffer):
    """Append a buffer; returns (dataset, ret) (the real wrapper echoes the dataset)."""
    ds = _ds(dataset)
    ds.add(_buffers.get(data_buffer))


@mdl.fn("k", "value", 0)
def get_dataset_num_buffers(dataset):
    return len(_ds(dataset).buffers) if dataset else 0


@mdl.fn("kk", "value", 0)
def get_dataset_buffer(dataset, index):
    ds = _ds(dataset)
    buf = ds.buffer(index)
    if not buf.handle:  # the application destroyed it; hand out a handle for the record again
        _buffers.register(buf)
    return buf.handle


@mdl.fn("kkk", "echo", bang=False)
def set_dataset_tensor_desc(dataset, tensor_desc, index):
    """Attach a copy of a tensor desc (the real shape of a dynamic-shape input)."""
    ds = _ds(dataset)
    desc = _tdescs.get(tensor_desc) if tensor_desc else None
    old = ds.descs[index] if 0 <= index < len(ds.descs) else None
    new = ds.set_desc(desc, index)
    if desc is None:
        _tdescs.drop(old)
    elif new is not None and not new.handle:
        _tdescs.register(new)


@mdl.fn("kk", "value", 0, bang=False)
def get_dataset_tensor_desc(dataset, index):
    """The dataset's tensor desc at `index` (after executing a dynamic-shape model, the output
    dataset holds the real output dims here); 0 if none."""
    ds = _ds(dataset)
    if not 0 <= index < len(ds.buffers):
        raise _InvalidValueError(f"index {index} must be smaller than the dataset's {len(ds.buffers)} buffer(s)")
    desc = ds.descs[index] if index < len(ds.descs) else None
    if desc is None:
        return 0
    if not desc.handle:
        _tdescs.register(desc)
    return desc.handle


# ---------------------------------------------------------------- execution
@mdl.fn("Ikk", "ret")
def execute(model_id, input, output):  # noqa: A002 - pyACL's parameter names
    """Run the model and return when the outputs are written."""
    GE.execute(model_id, _ds(input), _ds(output))


@mdl.fn("Ikkk", "ret")
def execute_async(model_id, input, output, stream):  # noqa: A002
    """Enqueue an execution on `stream` (0: the default stream); synchronize before reading."""
    GE.execute_async(model_id, _ds(input), _ds(output), _stream_of(stream))


@mdl.fn("Ikkkk", "ret")
def execute_v2(model_id, input, output, stream, handle):  # noqa: A002
    """Execute with an exec config (its stream timeout applies); synchronizes the stream."""
    GE.execute_v2(model_id, _ds(input), _ds(output), _stream_of(stream), H.exec_configs.get(handle))


@mdl.fn(None, "value", 0)
def create_exec_config_handle():
    return H.exec_configs.register(GE.ExecConfig())


@mdl.fn("k", "ret", bang=False)
def destroy_exec_config_handle(handle):
    H.exec_configs.drop(H.exec_configs.get(handle))


@mdl.fn("kkI", "ret")
def set_exec_config_opt(handle, attr, value):
    H.exec_configs.get(handle).set(attr, value)


# ---------------------------------------------------------------- dynamic gears
@mdl.fn("IkkK", "ret")
def set_dynamic_batch_size(model_id, dataset, index, batch_size):
    """Choose a --dynamic_batch_size gear; `index` is the ascend_mbatch_shape_data input."""
    GE.set_dynamic_batch_size(model_id, _ds(dataset), index, batch_size)


@mdl.fn("IkkKK", "ret")
def set_dynamic_hw_size(model_id, dataset, index, height, width):
    GE.set_dynamic_hw_size(model_id, _ds(dataset), index, height, width)


def set_input_dynamic_dims(*args):
    """dims = {"name", "dimCount", "dims": [every dim of every input, in input order]}."""
    if len(args) != 4:
        raise TypeError("acl.mdl.set_input_dynamic_dims args parse failed!")
    model_id, dataset, index, dims = args
    if isinstance(model_id, float) or not hasattr(model_id, "__index__") or not isinstance(dataset, int) or \
            not isinstance(index, int):
        raise TypeError("acl.mdl.set_input_dynamic_dims args parse failed!")
    if not isinstance(dims, dict):
        raise TypeError("argument 4 is not dict")
    values = dims.get("dims")
    if not isinstance(values, list):
        raise TypeError("The dims of parameter 4 is not a list.")
    count = dims.get("dimCount", 0)
    count = count if isinstance(count, int) else 0
    if count > len(values):
        raise TypeError("the dims of fourth parameter is not list of int")
    for v in values[:count]:
        if not isinstance(v, int):
            raise TypeError("the dims of fourth parameter is not list of int")
    return _set_input_dynamic_dims(model_id.__index__() & 0xFFFFFFFF, dataset & ((1 << 64) - 1),
                                   index & ((1 << 64) - 1), [int(v) for v in values[:count]])


@mdl.fn("IkkO", "ret", name="set_input_dynamic_dims")
def _set_input_dynamic_dims(model_id, dataset, index, dims):
    GE.set_input_dynamic_dims(model_id, _ds(dataset), index, dims)


set_input_dynamic_dims.pyacl_parsing = True
mdl.names.append("set_input_dynamic_dims")


# ---------------------------------------------------------------- AIPP
@mdl.fn("Ik", "many", (0, G.ACL_INVALID_NODE_INDEX))
def get_aipp_type(model_id, index):
    """(aclmdlInputAippType, index of the attached dynamic AIPP input or 0xFFFFFFFF, ret)."""
    return GE.aipp_type(model_id, index)


@mdl.fn("Ik", "one", None)
def get_first_aipp_info(model_id, index):
    """(aclAippInfo as a dict, ret); no AIPP on the input: (None, 145015)."""
    return GE.first_aipp_info(model_id, index)


@mdl.fn("K", "one", 0, bang=False)
def get_aipp_data_size(batch_size):
    """Bytes of the dynamic AIPP parameters for `batch_size` images."""
    if batch_size == 0:
        raise _InvalidValueError("batch_size must be positive")
    return A.data_size(batch_size)


@mdl.fn("K", "value", 0)
def create_aipp(batch_size):
    return H.aipps.register(A.DynamicParams(batch_size))


@mdl.fn("k", "ret")
def destroy_aipp(aipp_parms_set):
    H.aipps.drop(_aipp(aipp_parms_set))


@mdl.fn("kI", "ret")
def set_aipp_input_format(aipp_parms_set, input_format):
    A.set_input_format(_aipp(aipp_parms_set), input_format)


@mdl.fn("kbhhhhhhhhhBBBBBB", "ret")
def set_aipp_csc_params(aipp_parms_set, csc_switch, r0c0, r0c1, r0c2, r1c0, r1c1, r1c2, r2c0, r2c1, r2c2,
                        output_bias_r0, output_bias_r1, output_bias_r2, input_bias_r0, input_bias_r1, input_bias_r2):
    A.set_csc(_aipp(aipp_parms_set), csc_switch, (r0c0, r0c1, r0c2, r1c0, r1c1, r1c2, r2c0, r2c1, r2c2),
              (output_bias_r0, output_bias_r1, output_bias_r2), (input_bias_r0, input_bias_r1, input_bias_r2))


@mdl.fn("kb", "ret")
def set_aipp_rbuv_swap_switch(aipp_parms_set, rbuv_swap_switch):
    A.set_swap(_aipp(aipp_parms_set), "rbuv_swap_switch", rbuv_swap_switch)


@mdl.fn("kb", "ret")
def set_aipp_ax_swap_switch(aipp_parms_set, ax_swap_switch):
    A.set_swap(_aipp(aipp_parms_set), "ax_swap_switch", ax_swap_switch)


@mdl.fn("kii", "ret")
def set_aipp_src_image_size(aipp_parms_set, src_image_size_w, src_image_size_h):
    A.set_src_size(_aipp(aipp_parms_set), src_image_size_w, src_image_size_h)


@mdl.fn("kbiiiiK", "ret")
def set_aipp_crop_params(aipp_parms_set, crop_switch, load_start_pos_w, load_start_pos_h, crop_size_w,
                         crop_size_h, batch_index):
    A.set_crop(_aipp(aipp_parms_set), crop_switch, load_start_pos_w, load_start_pos_h, crop_size_w, crop_size_h,
               batch_index)


@mdl.fn("kbiiiiK", "ret")
def set_aipp_padding_params(aipp_parms_set, padding_switch, padding_size_top, padding_size_bottom,
                            padding_size_left, padding_size_right, batch_index):
    A.set_padding(_aipp(aipp_parms_set), padding_switch, padding_size_top, padding_size_bottom,
                  padding_size_left, padding_size_right, batch_index)


@mdl.fn("khhhhK", "ret")
def set_aipp_dtc_pixel_mean(aipp_parms_set, mean_chn0, mean_chn1, mean_chn2, mean_chn3, batch_index):
    A.set_channels(_aipp(aipp_parms_set), "mean_chn", (mean_chn0, mean_chn1, mean_chn2, mean_chn3), batch_index)


@mdl.fn("kffffK", "ret")
def set_aipp_dtc_pixel_min(aipp_parms_set, min_chn0, min_chn1, min_chn2, min_chn3, batch_index):
    A.set_channels(_aipp(aipp_parms_set), "min_chn", (min_chn0, min_chn1, min_chn2, min_chn3), batch_index)


@mdl.fn("kffffK", "ret")
def set_aipp_pixel_var_reci(aipp_parms_set, var_reci_chn0, var_reci_chn1, var_reci_chn2, var_reci_chn3,
                            batch_index):
    A.set_channels(_aipp(aipp_parms_set), "var_reci_chn", (var_reci_chn0, var_reci_chn1, var_reci_chn2,
                                                           var_reci_chn3), batch_index)


@mdl.fn("Ikkk", "ret")
def set_input_aipp(model_id, dataset, index, aipp_parms_set):
    """Write dynamic AIPP parameters into the ascend_dynamic_aipp_data buffer at `index`."""
    GE.set_input_aipp(model_id, _ds(dataset), index, _aipp(aipp_parms_set))


@mdl.fn("Ikkk", "ret")
def set_aipp_by_input_index(model_id, dataset, index, aipp_parms_set):
    """As set_input_aipp, addressed by the image input's index."""
    GE.set_aipp_by_input_index(model_id, _ds(dataset), index, _aipp(aipp_parms_set))


# ---------------------------------------------------------------- bundles
@mdl.fn("s", "one", 0)
def bundle_load_from_file(model_path):
    return GE.bundle_load(GE.read_model(model_path))


@mdl.fn("kk", "one", 0)
def bundle_load_from_mem(model, model_size):
    return GE.bundle_load(GE.model_bytes(model, model_size))


@mdl.fn("I", "ret")
def bundle_unload(bundle_id):
    GE.bundle_unload(bundle_id)


@mdl.fn("I", "one", 0)
def bundle_get_model_num(bundle_id):
    return GE.bundle_model_num(bundle_id)


@mdl.fn("Ik", "one", 0)
def bundle_get_model_id(bundle_id, index):
    return GE.bundle_model_id(bundle_id, index)


# ---------------------------------------------------------------- exception analysis
@mdl.fn("IIIk", "many", ("", 0, 0, 0, 0))
def create_and_get_op_desc(device_id, stream_id, task_id, op_name_len):
    """(op_name, input descs, n, output descs, n, ret) of a failed model task: the model's name
    and I/O descs (arrays; index them with acl.get_tensor_desc_by_index)."""
    if op_name_len > 4096:
        raise _InvalidValueError("op_name_len must not exceed 4096")
    name, ins, outs = failures.lookup(device_id, stream_id, task_id)
    return (name[:op_name_len], _desc_array(ins), len(ins), _desc_array(outs), len(outs))


def _desc_array(descs) -> int:
    if not descs:
        return 0
    for d in descs:
        _tdescs.register(d)
        d.array = descs
    return descs[0].handle


# ---------------------------------------------------------------- dump (not simulated)
_DUMP = ("model data dump (acl.mdl.*dump*) is not simulated: npurt writes no dump files; read model inputs "
         "and outputs from device memory instead")


def _no_dump(name: str, fmt, shape: str = "ret"):
    def impl(*_args):
        if not _RUNTIME.acl_initialized and name in ("init_dump", "set_dump", "finalize_dump"):
            # the only calls ACL itself gates on acl.init (dump.cpp: GetAclInitFlag)
            raise _NpuError(f"acl.init must be executed before acl.mdl.{name} is called",
                            C.ACL_ERROR_UNINITIALIZE)
        raise _NpuError(f"acl.mdl.{name}: {_DUMP}", C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
    impl.__name__ = impl.__qualname__ = name
    fn = mdl.fn(fmt, shape)(impl)
    fn.not_supported = True
    return fn


init_dump = _no_dump("init_dump", None)
finalize_dump = _no_dump("finalize_dump", None)
set_dump = _no_dump("set_dump", "|s")
dump_reg_callback = _no_dump("dump_reg_callback", "Oi")
dump_unreg_callback = _no_dump("dump_unreg_callback", None, "none")

__all__ = sorted(set(mdl.names))
