"""Data types and formats as the graph engine spells them: ONNX <-> aclDataType, the names
ATC's files use, tensor formats. aclDataType <-> numpy, names and sizes are the runtime's one
dtype table (`npurt.runtime.dtypes`), re-exported here.
"""
from __future__ import annotations

from ..runtime import constants as R
from ..runtime.dtypes import NAMES, SIZES, from_numpy, to_numpy, type_size  # noqa: F401 - re-exported
from . import constants as G

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
