"""Element-wise reductions over numpy views of device memory, for every HCCL data type.

Integer sums and products wrap, as on the device. float16 and bfloat16 are computed in
float32 and rounded once per combine (round to nearest even); bfloat16 is stored as uint16
and converted with integer arithmetic, so no optional package is needed. Work goes in
blocks that fit the cache, so the float32 temporaries stay small whatever the size.
"""
from __future__ import annotations

import numpy as np

from .types import (HCCL_DATA_TYPE_BFP16, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_MAX, HCCL_REDUCE_MIN,
                    HCCL_REDUCE_PROD, HCCL_REDUCE_SUM)

UFUNCS = {HCCL_REDUCE_SUM: np.add, HCCL_REDUCE_PROD: np.multiply, HCCL_REDUCE_MAX: np.maximum,
          HCCL_REDUCE_MIN: np.minimum}
BLOCK = 1 << 16  # elements per block of the widened (float32) path: 256 KiB of float32


def bf16_to_f32(bits: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """float32 values of bfloat16 bit patterns (uint16): the high half of a float32."""
    wide = np.left_shift(bits, 16, dtype=np.uint32)
    if out is None:
        return wide.view(np.float32)
    out.view(np.uint32)[...] = wide
    return out


def f32_to_bf16(values: np.ndarray, out: np.ndarray) -> None:
    """Round float32 values to bfloat16 bit patterns (nearest even) into uint16 `out`."""
    bits = values.view(np.uint32)
    rounded = bits + (np.uint32(0x7FFF) + ((bits >> 16) & 1))
    out[...] = (rounded >> 16).astype(np.uint16)
    nan = np.isnan(values)
    if nan.any():
        out[nan] = 0x7FC0


def _widen(src: np.ndarray, dtype_code: int) -> np.ndarray:
    if dtype_code == HCCL_DATA_TYPE_BFP16:
        return bf16_to_f32(src)
    return src.astype(np.float32)


def _narrow(acc: np.ndarray, dst: np.ndarray, dtype_code: int) -> None:
    if dtype_code == HCCL_DATA_TYPE_BFP16:
        f32_to_bf16(acc, dst)
    else:
        dst[...] = acc


def is_wide(dtype_code: int) -> bool:
    """True for the 16-bit float types that are reduced in float32."""
    return dtype_code in (HCCL_DATA_TYPE_FP16, HCCL_DATA_TYPE_BFP16)


def combine(dst: np.ndarray, a: np.ndarray, b: np.ndarray, op: int, dtype_code: int) -> None:
    """dst = a op b element-wise; dst may be a or b (same memory, same position)."""
    ufunc = UFUNCS[op]
    if not is_wide(dtype_code):
        ufunc(a, b, out=dst)
        return
    for lo in range(0, dst.size, BLOCK):
        hi = lo + BLOCK
        acc = _widen(a[lo:hi], dtype_code)
        ufunc(acc, _widen(b[lo:hi], dtype_code), out=acc)
        _narrow(acc, dst[lo:hi], dtype_code)


def reduce_many(dst: np.ndarray, sources: list[np.ndarray], op: int, dtype_code: int) -> None:
    """dst = sources[0] op sources[1] op ... in that order (every rank gets the same bits).

    dst may share memory with any source: each block is combined in a temporary first.
    float16/bfloat16 accumulate in float32 across all sources and round once."""
    ufunc = UFUNCS[op]
    wide = is_wide(dtype_code)
    step = BLOCK if wide else max(BLOCK, (1 << 18) // max(dst.itemsize, 1))
    for lo in range(0, dst.size, step):
        hi = lo + step
        if wide:
            acc = _widen(sources[0][lo:hi], dtype_code)  # a new array
            for src in sources[1:]:
                ufunc(acc, _widen(src[lo:hi], dtype_code), out=acc)
            _narrow(acc, dst[lo:hi], dtype_code)
        else:
            acc = sources[0][lo:hi].copy()
            for src in sources[1:]:
                ufunc(acc, src[lo:hi], out=acc)
            dst[lo:hi] = acc
