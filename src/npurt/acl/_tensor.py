"""Top-level `acl` functions of the graph engine: data buffers (aclDataBuffer), data type
sizes, and tensor descriptions (aclTensorDesc).

Arguments are parsed as the real extension does (py_init_acl.cpp); behaviour follows the C
implementation (the runtime's data_buffer.cpp, GE's tensor_desc_internal_om2.cpp): creating a
data buffer validates nothing, getters of a null handle return their sentinel (0, -1, ''),
and `set_tensor_format` / `set_tensor_shape` set the storage format / shape.
"""
from __future__ import annotations

from ..ge import constants as G
from ..ge.dtypes import type_size
from ..ge.tensor import DataBuffer, TensorDesc
from ..runtime import InvalidValueError, NpuError, constants as C, host_bytes
from . import _handles as H
from ._args import Api, int64_list, pair_list

acl = Api("acl")
_buffers, _descs = H.buffers, H.tensor_descs


# ---------------------------------------------------------------- aclDataBuffer
@acl.fn("kk", "value", 0)
def create_data_buffer(data, size):
    """An aclDataBuffer for `size` bytes at `data`; no validation ((0, 0) is an empty buffer)."""
    return _buffers.register(DataBuffer(data, size))


@acl.fn("k", "ret")
def destroy_data_buffer(data_buffer):
    """Frees the record only, never the memory it describes."""
    _buffers.drop(_buffers.get(data_buffer))


@acl.fn("k", "value", 0)
def get_data_buffer_addr(data_buffer):
    return _buffers.get(data_buffer).data if data_buffer else 0


@acl.fn("k", "value", 0)
def get_data_buffer_size(data_buffer):
    """Deprecated (uint32 in C): the size modulo 2**32."""
    return _buffers.get(data_buffer).size & 0xFFFFFFFF if data_buffer else 0


@acl.fn("k", "value", 0)
def get_data_buffer_size_v2(data_buffer):
    return _buffers.get(data_buffer).size if data_buffer else 0


@acl.fn("kkk", "ret")
def update_data_buffer(data_buffer, data, size):
    buf = _buffers.get(data_buffer)
    buf.data, buf.size = data, size


@acl.fn("i", "value", 0)
def data_type_size(data_type):
    """Bytes per element of an aclDataType (sub-byte types 1, strings 0, unknown values 8)."""
    return type_size(data_type)


# ---------------------------------------------------------------- aclTensorDesc
def desc_of(handle) -> TensorDesc:
    return _descs.get(handle)


@acl.fn("iOi", "value", 0)
def create_tensor_desc(data_type, dims, format):  # noqa: A002 - pyACL's parameter name
    """aclCreateTensorDesc: note the argument order, dtype, dims (a list; [] is a scalar), format.
    Returns the desc handle (0 on failure)."""
    return _descs.register(TensorDesc(data_type, int64_list(dims), format))


@acl.fn("k", "none")
def destroy_tensor_desc(desc):
    if desc:
        _descs.drop(_descs.get(desc))


@acl.fn("k", "value", C.ACL_DT_UNDEFINED)
def get_tensor_desc_type(desc):
    return desc_of(desc).data_type if desc else C.ACL_DT_UNDEFINED


@acl.fn("k", "value", G.ACL_FORMAT_UNDEFINED)
def get_tensor_desc_format(desc):
    return desc_of(desc).format if desc else G.ACL_FORMAT_UNDEFINED


@acl.fn("k", "value", 0)
def get_tensor_desc_size(desc):
    return desc_of(desc).size() if desc else 0


@acl.fn("k", "value", 0)
def get_tensor_desc_element_count(desc):
    return desc_of(desc).element_count() if desc else 0


@acl.fn("k", "value", 0)
def get_tensor_desc_num_dims(desc):
    return desc_of(desc).num_dims() if desc else 0


@acl.fn("kk", "value", -1)
def get_tensor_desc_dim(desc, index):
    """Deprecated: dim `index`, -1 when out of range."""
    if not desc:
        return -1
    d = desc_of(desc)
    return d.dims[index] if index < len(d.dims) else -1


@acl.fn("kk", "one", 0)
def get_tensor_desc_dim_v2(desc, index):
    if not desc:
        raise NpuError("the tensor desc is null (0)", C.ACL_ERROR_INVALID_PARAM)
    return desc_of(desc).dim(index)


@acl.fn("kkk", "one", None, bang=True)
def get_tensor_desc_dim_range(desc, index, dim_range_num):
    """[min, max] of dim `index` (dim_range_num values, normally 2)."""
    if dim_range_num > 4096:
        raise InvalidValueError(f"dim_range_num {dim_range_num} is larger than 4096")
    return desc_of(desc).dim_range(index, dim_range_num)


@acl.fn("k", "value", "")
def get_tensor_desc_name(desc):
    return desc_of(desc).name if desc else ""


@acl.fn("ks", "none")
def set_tensor_desc_name(desc, name):
    desc_of(desc).name = name


@acl.fn("ki", "one", 0)
def trans_tensor_desc_format(desc, format):  # noqa: A002
    """Not supported by current CANN builds either: ACL_ERROR_API_NOT_SUPPORT (200001)."""
    raise NpuError("trans_tensor_desc_format is not supported (CANN returns ACL_ERROR_API_NOT_SUPPORT too); "
                   "create a desc in the target format with create_tensor_desc", C.ACL_ERROR_API_NOT_SUPPORT)


@acl.fn("ki", "ret", bang=True)
def set_tensor_storage_format(desc, format):  # noqa: A002
    if desc:
        desc_of(desc).storage_format = format


@acl.fn("ki", "ret", bang=True)
def set_tensor_format(desc, format):  # noqa: A002
    """As GE does: sets the storage format."""
    if desc:
        desc_of(desc).storage_format = format


@acl.fn("ki", "ret", bang=True)
def set_tensor_origin_format(desc, format):  # noqa: A002
    """Sets the format get_tensor_desc_format reports."""
    if desc:
        desc_of(desc).format = format


@acl.fn("kO", "ret", bang=True)
def set_tensor_storage_shape(desc, dims):
    values = int64_list(dims)
    desc_of(desc).storage_dims = values


@acl.fn("kO", "ret", bang=True)
def set_tensor_shape(desc, dims):
    """As GE does: sets the storage shape."""
    values = int64_list(dims)
    desc_of(desc).storage_dims = values


@acl.fn("kO", "ret", bang=True)
def set_tensor_origin_shape(desc, dims):
    """Sets the dims the getters report."""
    values = int64_list(dims)
    desc_of(desc).dims = values


@acl.fn("kO", "ret", bang=True)
def set_tensor_shape_range(desc, ranges):
    """[[min, max], ...] per dim (max -1: unbounded)."""
    values = pair_list(ranges, "argument 2 is not list")
    desc_of(desc).shape_range = values


@acl.fn("kO", "ret", bang=True)
def set_tensor_value_range(desc, ranges):
    values = pair_list(ranges, "int64_t argument is not list")
    desc_of(desc).value_range = values


@acl.fn("ks", "ret", bang=True)
def set_tensor_dynamic_input(desc, name):
    desc_of(desc).dynamic_input = name


@acl.fn("kkk", "ret")
def set_tensor_const(desc, data, size):
    """Marks the tensor const; its value (`size` bytes of host memory at `data`) is copied."""
    d = desc_of(desc)
    if not data:
        raise InvalidValueError("set_tensor_const: the data pointer is null")
    if size == 0:
        raise InvalidValueError("set_tensor_const: the length must not be 0")
    d.set_const(host_bytes(data, size, "set_tensor_const data"))


@acl.fn("ki", "ret")
def set_tensor_place_ment(desc, mem_type):
    """aclMemType: 0 device, 1 host, 2 host (compile independent)."""
    desc_of(desc).memtype = mem_type


@acl.fn("k", "value", 0, bang=True)
def get_tensor_desc_address(desc):
    return desc_of(desc).address


@acl.fn("kk", "value", 0, bang=True)
def get_tensor_desc_by_index(desc, index):
    """Element `index` of an array of descs (the arrays compile callbacks and exception
    analysis hand out); a desc made by create_tensor_desc is an array of one."""
    d = desc_of(desc)
    array = d.array or [d]
    if index >= len(array):
        raise InvalidValueError(f"index {index} is past the end of this array of {len(array)} tensor desc(s)")
    return array[index].handle


__all__ = list(acl.names)
