"""Data types and formats: aclDataType <-> numpy <-> ONNX <-> the names ATC's files use.

`SIZES` is aclDataTypeSize of the runtime's data_buffer.cpp (sub-byte types report 1, any
unknown value 8: the C switch's default branch). bfloat16 maps to ml_dtypes' type when that
package is installed.
"""
from __future__ import annotations

import numpy as np

from ..runtime import InvalidValueError, constants as R
from . import constants as G

SIZES = {R.ACL_STRING: 0, R.ACL_DT_UNDEFINED: 0, G.ACL_UINT1: 1, G.ACL_INT4: 1, R.ACL_BOOL: 1, R.ACL_INT8: 1,
         R.ACL_UINT8: 1, G.ACL_HIFLOAT8: 1, G.ACL_FLOAT8_E5M2: 1, G.ACL_FLOAT8_E4M3FN: 1, G.ACL_FLOAT8_E8M0: 1,
         G.ACL_FLOAT6_E3M2: 1, G.ACL_FLOAT6_E2M3: 1, G.ACL_FLOAT4_E2M1: 1, G.ACL_FLOAT4_E1M2: 1,
         R.ACL_FLOAT16: 2, R.ACL_INT16: 2, R.ACL_UINT16: 2, R.ACL_BF16: 2, R.ACL_FLOAT: 4, R.ACL_INT32: 4,
         R.ACL_UINT32: 4, G.ACL_COMPLEX32: 4, R.ACL_COMPLEX128: 16}


def type_size(data_type: int) -> int:
    """Bytes per element (aclDataTypeSize): 8 for anything the table does not name."""
    return SIZES.get(data_type, 8)


_NUMPY = {R.ACL_FLOAT: np.float32, R.ACL_FLOAT16: np.float16, R.ACL_INT8: np.int8, R.ACL_INT32: np.int32,
          R.ACL_UINT8: np.uint8, R.ACL_INT16: np.int16, R.ACL_UINT16: np.uint16, R.ACL_UINT32: np.uint32,
          R.ACL_INT64: np.int64, R.ACL_UINT64: np.uint64, R.ACL_DOUBLE: np.float64, R.ACL_BOOL: np.bool_,
          R.ACL_COMPLEX64: np.complex64, R.ACL_COMPLEX128: np.complex128}
_NUMPY = {k: np.dtype(v) for k, v in _NUMPY.items()}


def _bfloat16():
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def to_numpy(data_type: int) -> np.dtype:
    """The numpy dtype of an aclDataType; an InvalidValueError names the unsupported ones."""
    dt = _NUMPY.get(data_type)
    if dt is not None:
        return dt
    if data_type == R.ACL_BF16:
        dt = _bfloat16()
        if dt is not None:
            _NUMPY[data_type] = dt
            return dt
        raise InvalidValueError("ACL_BF16 data needs the ml_dtypes package: pip install ml_dtypes")
    raise InvalidValueError(f"aclDataType {data_type} ({NAMES.get(data_type, 'unknown')}) has no host "
                            "representation in npurt")


def from_numpy(dtype) -> int:
    """The aclDataType of a numpy dtype."""
    dt = np.dtype(dtype)
    for code, known in _NUMPY.items():
        if known == dt:
            return code
    if dt.name == "bfloat16":
        return R.ACL_BF16
    raise InvalidValueError(f"numpy dtype {dt} has no aclDataType")


NAMES = {R.ACL_DT_UNDEFINED: "ACL_DT_UNDEFINED", R.ACL_FLOAT: "ACL_FLOAT", R.ACL_FLOAT16: "ACL_FLOAT16",
         R.ACL_INT8: "ACL_INT8", R.ACL_INT32: "ACL_INT32", R.ACL_UINT8: "ACL_UINT8", R.ACL_INT16: "ACL_INT16",
         R.ACL_UINT16: "ACL_UINT16", R.ACL_UINT32: "ACL_UINT32", R.ACL_INT64: "ACL_INT64",
         R.ACL_UINT64: "ACL_UINT64", R.ACL_DOUBLE: "ACL_DOUBLE", R.ACL_BOOL: "ACL_BOOL",
         R.ACL_STRING: "ACL_STRING", R.ACL_COMPLEX64: "ACL_COMPLEX64", R.ACL_COMPLEX128: "ACL_COMPLEX128",
         R.ACL_BF16: "ACL_BF16", G.ACL_INT4: "ACL_INT4", G.ACL_UINT1: "ACL_UINT1"}

# ONNX TensorProto.DataType values (fixed by the ONNX spec) <-> aclDataType
ONNX_TO_ACL = {1: R.ACL_FLOAT, 2: R.ACL_UINT8, 3: R.ACL_INT8, 4: R.ACL_UINT16, 5: R.ACL_INT16, 6: R.ACL_INT32,
               7: R.ACL_INT64, 8: R.ACL_STRING, 9: R.ACL_BOOL, 10: R.ACL_FLOAT16, 11: R.ACL_DOUBLE,
               12: R.ACL_UINT32, 13: R.ACL_UINT64, 14: R.ACL_COMPLEX64, 15: R.ACL_COMPLEX128, 16: R.ACL_BF16}
ACL_TO_ONNX = {v: k for k, v in ONNX_TO_ACL.items()}

# type names in ATC's single-op JSON ("type") and --output_type
JSON_TYPES = {"float": R.ACL_FLOAT, "float32": R.ACL_FLOAT, "float16": R.ACL_FLOAT16, "fp16": R.ACL_FLOAT16,
              "half": R.ACL_FLOAT16, "int8": R.ACL_INT8, "uint8": R.ACL_UINT8, "int16": R.ACL_INT16,
              "uint16": R.ACL_UINT16, "int32": R.ACL_INT32, "uint32": R.ACL_UINT32, "int64": R.ACL_INT64,
              "uint64": R.ACL_UINT64, "double": R.ACL_DOUBLE, "float64": R.ACL_DOUBLE, "bool": R.ACL_BOOL,
              "complex64": R.ACL_COMPLEX64, "complex128": R.ACL_COMPLEX128, "bfloat16": R.ACL_BF16,
              "bf16": R.ACL_BF16, "int4": G.ACL_INT4, "uint1": G.ACL_UINT1, "undefined": R.ACL_DT_UNDEFINED,
              "string": R.ACL_STRING}
OUTPUT_TYPES = {"FP32": R.ACL_FLOAT, "FP16": R.ACL_FLOAT16, "UINT8": R.ACL_UINT8, "INT8": R.ACL_INT8,
                "UINT16": R.ACL_UINT16, "INT16": R.ACL_INT16, "UINT32": R.ACL_UINT32, "INT32": R.ACL_INT32,
                "UINT64": R.ACL_UINT64, "INT64": R.ACL_INT64, "DOUBLE": R.ACL_DOUBLE}

FORMATS = {"NCHW": G.ACL_FORMAT_NCHW, "NHWC": G.ACL_FORMAT_NHWC, "ND": G.ACL_FORMAT_ND,
           "NC1HWC0": G.ACL_FORMAT_NC1HWC0, "FRACTAL_Z": G.ACL_FORMAT_FRACTAL_Z,
           "NC1HWC0_C04": G.ACL_FORMAT_NC1HWC0_C04, "HWCN": G.ACL_FORMAT_HWCN, "NDHWC": G.ACL_FORMAT_NDHWC,
           "FRACTAL_NZ": G.ACL_FORMAT_FRACTAL_NZ, "NCDHW": G.ACL_FORMAT_NCDHW,
           "NDC1HWC0": G.ACL_FORMAT_NDC1HWC0, "FRACTAL_Z_3D": G.ACL_FRACTAL_Z_3D, "NC": G.ACL_FORMAT_NC,
           "NCL": G.ACL_FORMAT_NCL, "RESERVED": G.FORMAT_RESERVED, "UNDEFINED": G.ACL_FORMAT_UNDEFINED}
FORMAT_NAMES = {v: k for k, v in FORMATS.items()}
