"""The one dtype table: aclDataType codes <-> numpy dtypes, their names and sizes, bfloat16.

Everything in npurt that turns a data type into another spelling goes through here: the
kernels (`resolve`: a numpy dtype or a name, "bfloat16" included), the graph engine and the
facade (`to_numpy` / `from_numpy` of aclDataType, `type_size`), reduce_async, the C interface.

`SIZES` is aclDataTypeSize of the runtime's data_buffer.cpp (sub-byte types report 1, any
unknown value 8: the C switch's default branch). bfloat16 is ml_dtypes' type (the optional
`npurt[ops]` extra), looked up on first use.
"""
from __future__ import annotations

import numpy as np

from . import constants as C
from .errors import InvalidValueError

SIZES = {C.ACL_STRING: 0, C.ACL_DT_UNDEFINED: 0, C.ACL_UINT1: 1, C.ACL_INT4: 1, C.ACL_BOOL: 1, C.ACL_INT8: 1,
         C.ACL_UINT8: 1, C.ACL_HIFLOAT8: 1, C.ACL_FLOAT8_E5M2: 1, C.ACL_FLOAT8_E4M3FN: 1, C.ACL_FLOAT8_E8M0: 1,
         C.ACL_FLOAT6_E3M2: 1, C.ACL_FLOAT6_E2M3: 1, C.ACL_FLOAT4_E2M1: 1, C.ACL_FLOAT4_E1M2: 1,
         C.ACL_FLOAT16: 2, C.ACL_INT16: 2, C.ACL_UINT16: 2, C.ACL_BF16: 2, C.ACL_FLOAT: 4, C.ACL_INT32: 4,
         C.ACL_UINT32: 4, C.ACL_COMPLEX32: 4, C.ACL_COMPLEX128: 16}

NAMES = {C.ACL_DT_UNDEFINED: "ACL_DT_UNDEFINED", C.ACL_FLOAT: "ACL_FLOAT", C.ACL_FLOAT16: "ACL_FLOAT16",
         C.ACL_INT8: "ACL_INT8", C.ACL_INT32: "ACL_INT32", C.ACL_UINT8: "ACL_UINT8", C.ACL_INT16: "ACL_INT16",
         C.ACL_UINT16: "ACL_UINT16", C.ACL_UINT32: "ACL_UINT32", C.ACL_INT64: "ACL_INT64",
         C.ACL_UINT64: "ACL_UINT64", C.ACL_DOUBLE: "ACL_DOUBLE", C.ACL_BOOL: "ACL_BOOL",
         C.ACL_STRING: "ACL_STRING", C.ACL_COMPLEX64: "ACL_COMPLEX64", C.ACL_COMPLEX128: "ACL_COMPLEX128",
         C.ACL_BF16: "ACL_BF16", C.ACL_INT4: "ACL_INT4", C.ACL_UINT1: "ACL_UINT1"}

_NUMPY = {C.ACL_FLOAT: np.float32, C.ACL_FLOAT16: np.float16, C.ACL_INT8: np.int8, C.ACL_INT32: np.int32,
          C.ACL_UINT8: np.uint8, C.ACL_INT16: np.int16, C.ACL_UINT16: np.uint16, C.ACL_UINT32: np.uint32,
          C.ACL_INT64: np.int64, C.ACL_UINT64: np.uint64, C.ACL_DOUBLE: np.float64, C.ACL_BOOL: np.bool_,
          C.ACL_COMPLEX64: np.complex64, C.ACL_COMPLEX128: np.complex128}
_NUMPY = {k: np.dtype(v) for k, v in _NUMPY.items()}


def type_size(data_type: int) -> int:
    """Bytes per element (aclDataTypeSize): 8 for anything the table does not name."""
    return SIZES.get(data_type, 8)


def bfloat16(what: str = "bfloat16") -> np.dtype:
    """ml_dtypes' bfloat16; InvalidValueError naming the package when it is not installed."""
    try:
        import ml_dtypes
    except ImportError:
        raise InvalidValueError(f"{what} needs the ml_dtypes package: pip install ml_dtypes "
                                "(or npurt[ops])") from None
    return np.dtype(ml_dtypes.bfloat16)


def to_numpy(data_type: int) -> np.dtype:
    """The numpy dtype of an aclDataType; an InvalidValueError names the unsupported ones."""
    dt = _NUMPY.get(data_type)
    if dt is not None:
        return dt
    if data_type == C.ACL_BF16:
        dt = _NUMPY[data_type] = bfloat16("ACL_BF16 data")
        return dt
    raise InvalidValueError(f"aclDataType {data_type} ({NAMES.get(data_type, 'unknown')}) has no host "
                            "representation in npurt")


def from_numpy(dtype) -> int:
    """The aclDataType of a numpy dtype."""
    dt = np.dtype(dtype)
    for code, known in _NUMPY.items():
        if known == dt:
            return code
    if dt.name == "bfloat16":
        return C.ACL_BF16
    raise InvalidValueError(f"numpy dtype {dt} has no aclDataType")


RESOLVED: dict = {}  # dtype argument -> np.dtype: hot paths look here first (one dict lookup)


def resolve(dtype) -> np.dtype:
    """np.dtype for anything np.dtype() accepts, plus "bfloat16" / "bf16" (needs ml_dtypes)."""
    try:
        return RESOLVED[dtype]
    except (KeyError, TypeError):
        pass
    if isinstance(dtype, str) and dtype.lower() in ("bfloat16", "bf16"):
        dt = bfloat16()
    else:
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise InvalidValueError(f"{dtype!r} is not a data type (use a numpy dtype or 'bfloat16')") from None
    try:
        RESOLVED[dtype] = dt
    except TypeError:
        pass
    return dt
