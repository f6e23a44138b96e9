"""Data types by name, as torch spells them: `npurt.float16`, `npurt.bfloat16`, `npurt.int32`.

Each is a numpy dtype, so it works wherever npurt or numpy takes a dtype. `bfloat16` comes
from the optional ml_dtypes package (`pip install 'npurt[ops]'`) and is looked up on first use.
"""
from __future__ import annotations

import numpy as np

from .runtime import InvalidValueError, dtypes

float16 = half = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = double = np.dtype(np.float64)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8 = np.dtype(np.uint8)
bool_ = np.dtype(np.bool_)

NAMES = ("float16", "half", "float32", "float64", "double", "int8", "int16", "int32", "int64", "uint8", "bool_",
         "bfloat16")


def __getattr__(name: str):
    if name in ("bfloat16", "bf16"):
        try:
            return dtypes.bfloat16("npurt.bfloat16")  # the runtime's dtype table
        except InvalidValueError as exc:
            raise AttributeError(str(exc)) from None
    raise AttributeError(f"module 'npurt.dtypes' has no attribute {name!r}")
