"""HCCL's result codes, data types and reduction ops (values of hccl_types.h), and HcclError.

Which data types each operation accepts depends on the SoC, as in HCCL's parameter checks:
on Atlas A2 parts (Ascend910B3) reductions take int8, int16, int32, int64, float16, float32
and bfloat16, except prod on int16 and bfloat16; operations that only move data take every
type below except int128. An unknown or unsupported value is HCCL_E_NOT_SUPPORT, as in HCCL.
"""
from __future__ import annotations

import numpy as np

from ..runtime import NpuError, register_code_names

# ---------------------------------------------------------------- HcclResult
HCCL_SUCCESS = 0
HCCL_E_PARA = 1
HCCL_E_PTR = 2
HCCL_E_MEMORY = 3
HCCL_E_INTERNAL = 4
HCCL_E_NOT_SUPPORT = 5
HCCL_E_NOT_FOUND = 6
HCCL_E_UNAVAIL = 7
HCCL_E_SYSCALL = 8
HCCL_E_TIMEOUT = 9
HCCL_E_OPEN_FILE_FAILURE = 10
HCCL_E_TCP_CONNECT = 11
HCCL_E_ROCE_CONNECT = 12
HCCL_E_TCP_TRANSFER = 13
HCCL_E_ROCE_TRANSFER = 14
HCCL_E_RUNTIME = 15
HCCL_E_DRV = 16
HCCL_E_PROFILING = 17
HCCL_E_CCE = 18
HCCL_E_NETWORK = 19
HCCL_E_AGAIN = 20
HCCL_E_REMOTE = 21
HCCL_E_SUSPENDING = 22
HCCL_E_OPRETRY_FAIL = 23
HCCL_E_RESERVED = 24

# ---------------------------------------------------------------- HcclReduceOp
HCCL_REDUCE_SUM = 0
HCCL_REDUCE_PROD = 1
HCCL_REDUCE_MAX = 2
HCCL_REDUCE_MIN = 3
HCCL_REDUCE_RESERVED = 255

# ---------------------------------------------------------------- HcclDataType
HCCL_DATA_TYPE_INT8 = 0
HCCL_DATA_TYPE_INT16 = 1
HCCL_DATA_TYPE_INT32 = 2
HCCL_DATA_TYPE_FP16 = 3
HCCL_DATA_TYPE_FP32 = 4
HCCL_DATA_TYPE_INT64 = 5
HCCL_DATA_TYPE_UINT64 = 6
HCCL_DATA_TYPE_UINT8 = 7
HCCL_DATA_TYPE_UINT16 = 8
HCCL_DATA_TYPE_UINT32 = 9
HCCL_DATA_TYPE_FP64 = 10
HCCL_DATA_TYPE_BFP16 = 11
HCCL_DATA_TYPE_INT128 = 12
HCCL_DATA_TYPE_RESERVED = 255

# ---------------------------------------------------------------- sizes and limits
HCCL_ROOT_INFO_BYTES = 4108
COMM_NAME_MAX_LENGTH = 128
SYS_MAX_COUNT = 0x7FFFFFFFF  # the largest element count an operation takes

RESULT_NAMES = {value: name for name, value in dict(globals()).items()
                if name.startswith("HCCL_E_") or name == "HCCL_SUCCESS"}
_DESCRIPTIONS = {
    HCCL_SUCCESS: "success", HCCL_E_PARA: "parameter error", HCCL_E_PTR: "empty pointer",
    HCCL_E_MEMORY: "memory error", HCCL_E_INTERNAL: "internal error",
    HCCL_E_NOT_SUPPORT: "feature not supported", HCCL_E_NOT_FOUND: "not found specific resource",
    HCCL_E_UNAVAIL: "resource unavailable", HCCL_E_SYSCALL: "call system interface error",
    HCCL_E_TIMEOUT: "timeout", HCCL_E_OPEN_FILE_FAILURE: "open file fail",
    HCCL_E_TCP_CONNECT: "tcp connect fail", HCCL_E_ROCE_CONNECT: "roce connect fail",
    HCCL_E_TCP_TRANSFER: "tcp transfer fail", HCCL_E_ROCE_TRANSFER: "roce transfer fail",
    HCCL_E_RUNTIME: "call runtime api fail", HCCL_E_DRV: "call driver api fail",
    HCCL_E_PROFILING: "call profiling api fail", HCCL_E_CCE: "call cce api fail",
    HCCL_E_NETWORK: "call network api fail", HCCL_E_AGAIN: "try again", HCCL_E_REMOTE: "error cqe",
    HCCL_E_SUSPENDING: "error communicator suspending", HCCL_E_OPRETRY_FAIL: "retry constraint",
}
register_code_names({code: name for code, name in RESULT_NAMES.items() if code})

REDUCE_OP_NAMES = {HCCL_REDUCE_SUM: "sum", HCCL_REDUCE_PROD: "prod", HCCL_REDUCE_MAX: "max",
                   HCCL_REDUCE_MIN: "min"}
REDUCE_OPS_BY_NAME = {name: op for op, name in REDUCE_OP_NAMES.items()}

# HcclDataType -> (name, numpy storage dtype). bfloat16 is stored as uint16 and converted
# with integer arithmetic (reduction.py), so the optional ml_dtypes is not needed here.
DATA_TYPES = {
    HCCL_DATA_TYPE_INT8: ("int8", np.dtype(np.int8)),
    HCCL_DATA_TYPE_INT16: ("int16", np.dtype(np.int16)),
    HCCL_DATA_TYPE_INT32: ("int32", np.dtype(np.int32)),
    HCCL_DATA_TYPE_FP16: ("float16", np.dtype(np.float16)),
    HCCL_DATA_TYPE_FP32: ("float32", np.dtype(np.float32)),
    HCCL_DATA_TYPE_INT64: ("int64", np.dtype(np.int64)),
    HCCL_DATA_TYPE_UINT64: ("uint64", np.dtype(np.uint64)),
    HCCL_DATA_TYPE_UINT8: ("uint8", np.dtype(np.uint8)),
    HCCL_DATA_TYPE_UINT16: ("uint16", np.dtype(np.uint16)),
    HCCL_DATA_TYPE_UINT32: ("uint32", np.dtype(np.uint32)),
    HCCL_DATA_TYPE_FP64: ("float64", np.dtype(np.float64)),
    HCCL_DATA_TYPE_BFP16: ("bfloat16", np.dtype(np.uint16)),
    HCCL_DATA_TYPE_INT128: ("int128", np.dtype("V16")),
}
DATA_TYPE_NAMES = {code: name for code, (name, _) in DATA_TYPES.items()}
_MOVABLE = frozenset(DATA_TYPES) - {HCCL_DATA_TYPE_INT128}

# per SoC: (types reductions take, types prod does not take), from HCCL's checks and docs
_A2 = (frozenset({0, 1, 2, 3, 4, 5, 11}), frozenset({HCCL_DATA_TYPE_INT16, HCCL_DATA_TYPE_BFP16}))
_REDUCIBLE = {
    "Ascend910B3": _A2,
    "Ascend910A": (frozenset({0, 2, 3, 4, 5}), frozenset()),
    "Ascend310P3": (frozenset({0, 1, 2, 3, 4}), frozenset()),  # int16: sum only (below)
}


class HcclError(NpuError):
    """A collective failed; `code` is the HcclResult (HCCL_E_PARA, HCCL_E_TIMEOUT, ...)."""

    code = HCCL_E_INTERNAL

    def __str__(self) -> str:
        return f"{self.message} [{RESULT_NAMES.get(self.code, self.code)} {self.code}]"


def get_error_string(code: int) -> str:
    """HcclGetErrorString: a short description of an HcclResult."""
    return _DESCRIPTIONS.get(code, "unknown error")


def data_type(value, reducing: bool = False, soc: str = "Ascend910B3", op: int | None = None) -> np.dtype:
    """The numpy storage dtype of an HcclDataType, or HcclError(HCCL_E_NOT_SUPPORT) naming what
    the operation accepts on this SoC."""
    if type(value) is not int or value not in DATA_TYPES or value not in _MOVABLE:
        accepted = ", ".join(DATA_TYPE_NAMES[t] for t in sorted(_MOVABLE))
        raise HcclError(f"data type {value!r} is not supported (HcclDataType values: {accepted})",
                        HCCL_E_NOT_SUPPORT)
    if reducing:
        allowed, no_prod = _REDUCIBLE.get(soc, _A2)
        if value not in allowed:
            names = ", ".join(DATA_TYPE_NAMES[t] for t in sorted(allowed))
            raise HcclError(f"reductions on {soc} do not support {DATA_TYPE_NAMES[value]}; "
                            f"they take {names}", HCCL_E_NOT_SUPPORT)
        if op == HCCL_REDUCE_PROD and value in no_prod:
            raise HcclError(f"prod on {soc} does not support {DATA_TYPE_NAMES[value]}", HCCL_E_NOT_SUPPORT)
        if soc == "Ascend310P3" and value == HCCL_DATA_TYPE_INT16 and op != HCCL_REDUCE_SUM:
            raise HcclError(f"{soc} supports only sum on int16", HCCL_E_NOT_SUPPORT)
    return DATA_TYPES[value][1]


def reduce_op(value) -> int:
    """A valid HcclReduceOp, or HcclError(HCCL_E_NOT_SUPPORT)."""
    if type(value) is not int or value not in REDUCE_OP_NAMES:
        raise HcclError(f"reduce op {value!r} is not supported; use HCCL_REDUCE_SUM (0), PROD (1), "
                        "MAX (2) or MIN (3)", HCCL_E_NOT_SUPPORT)
    return value


def data_type_of(dtype: np.dtype) -> int:
    """The HcclDataType of a numpy dtype (Pythonic API); HcclError if HCCL has none."""
    name = "bfloat16" if dtype.name == "bfloat16" else dtype.name
    for code, type_name in DATA_TYPE_NAMES.items():
        if type_name == name and code in _MOVABLE:
            return code
    raise HcclError(f"HCCL has no data type for {dtype}", HCCL_E_NOT_SUPPORT)


__all__ = [name for name in dict(globals()) if name.startswith("HCCL_")] + [
    "COMM_NAME_MAX_LENGTH", "SYS_MAX_COUNT", "HcclError"]
