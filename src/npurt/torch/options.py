"""torch_npu's option switches: `torch.npu.set_option`, `torch.npu.conv.allow_hf32`,
`torch.npu.matmul.allow_hf32` / `cube_math_type`, `set_mm_bmm_format_nd`.

Validated as torch_npu validates them (torch_npu/npu/npu_config.py: the same option names,
allowed values and errors) and recorded, so code that sets and reads them back runs. They
configure CANN's operator compiler and the cube unit's precision; npurt has neither (ops run
CPU kernels in float32 or wider), so they change no result here. `get_option(name)` reads a
recorded value (torch_npu's `_npu_getOption`).
"""
from __future__ import annotations

import inspect
import warnings
from enum import IntEnum

from ..runtime import fork_safe_lock

OPTION_VALUES = {
    "ACL_PRECISION_MODE": ["allow_fp32_to_fp16", "must_keep_origin_dtype"],
    "ACL_OP_SELECT_IMPL_MODE": ["high_performance", "high_precision"],
    "ACL_AICORE_NUM": (lambda value: value.isdigit() and 1 <= int(value) <= 32),
    "ACL_OPTYPELIST_FOR_IMPLMODE": None,
    "ACL_OP_DEBUG_LEVEL": ["0", "1", "2", "3", "4"],
    "ACL_DEBUG_DIR": None,
    "ACL_OP_COMPILER_CACHE_MODE": ["disable", "enable", "force"],
    "ACL_OP_COMPILER_CACHE_DIR": None,
    "ACL_OP_DEBUG_OPTION": None,
}
DEPRECATED = {"ACL_OP_SELECT_IMPL_MODE", "ACL_OPTYPELIST_FOR_IMPLMODE"}

_options: dict[str, str] = {}
_lock = fork_safe_lock()
_mm_bmm_nd = True


class CubeMathType(IntEnum):
    KEEP_DTYPE = 0
    ALLOW_FP32_DOWN_PRECISION = 1
    USE_FP16 = 2
    USE_HF32 = 3
    USE_FP32_ADD = 4


def _allowed(name: str, value: str) -> bool:
    rule = OPTION_VALUES.get(name)
    if rule is None:
        return True
    return rule(value) if callable(rule) else value in rule


def set_option(option: dict) -> None:
    """Record torch_npu options; a value outside an option's set raises ValueError."""
    if not isinstance(option, dict):
        raise TypeError("npu option must be a dict.")
    if option.get("MM_BMM_ND_ENABLE") == "enable":
        set_mm_bmm_format_nd(True)
    elif option.get("MM_BMM_ND_ENABLE") == "disable":
        set_mm_bmm_format_nd(False)
    checked = {}
    for name, value in option.items():
        value = str(value)
        if not _allowed(name, value):
            rule = OPTION_VALUES[name]
            shown = inspect.getsource(rule) if callable(rule) else rule
            raise ValueError(f"value of {name} should be in {shown} but got {value}")
        if name in DEPRECATED:
            warnings.warn(f"{name} will be deprecated in a future version. The accuracy or performance may not be "
                          "optimal when configuring this option. We do not recommend setting it.")
        checked[name] = value
    with _lock:
        _options.update(checked)


def get_option(name: str) -> bytes | None:
    """A recorded option's value (bytes, as torch_npu._C._npu_getOption returns), or None."""
    with _lock:
        value = _options.get(name)
    return None if value is None else value.encode()


def set_mm_bmm_format_nd(is_nd: bool = True) -> None:
    global _mm_bmm_nd
    _mm_bmm_nd = bool(is_nd)


def get_mm_bmm_format_nd() -> bool:
    return _mm_bmm_nd


def _set_hf32(option: str, value) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"allow_hf32 must be a bool, but got {type(value).__name__}")
    set_option({option: "enable" if value else "disable"})


class _MatmulSwitches:
    """torch.npu.matmul: `allow_hf32` (default False) and `cube_math_type`."""

    def __setattr__(self, name, value):
        if name == "allow_hf32":
            _set_hf32("ALLOW_MATMUL_HF32", value)
        elif name == "cube_math_type":
            if not isinstance(value, CubeMathType):
                raise TypeError("value should be one of Enum CubeMathType when setting cube_math_type, "
                                f"but got {type(value)}")
            set_option({"CUBE_MATH_TYPE": str(value.value)})
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        if name == "allow_hf32":
            return get_option("ALLOW_MATMUL_HF32") == b"enable"
        if name == "cube_math_type":
            value = get_option("CUBE_MATH_TYPE")
            return CubeMathType(int(value)) if value else None
        raise AttributeError(name)


class _ConvSwitches:
    """torch.npu.conv: `allow_hf32` (default True)."""

    def __setattr__(self, name, value):
        if name == "allow_hf32":
            _set_hf32("ALLOW_CONV_HF32", value)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        if name == "allow_hf32":
            value = get_option("ALLOW_CONV_HF32")
            return value in (None, b"", b"enable")
        raise AttributeError(name)


matmul = _MatmulSwitches()
conv = _ConvSwitches()
