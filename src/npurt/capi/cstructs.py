"""C structures the kernel functions of acl_rt.h take by pointer, read with ctypes
(layouts from the runtime's acl_rt.h, as the spec records them)."""
from __future__ import annotations

import ctypes

from .. import runtime as rt
from ..runtime import constants as C


class _AttrValue(ctypes.Union):
    _fields_ = [("u8", ctypes.c_uint8), ("u16", ctypes.c_uint16), ("u32", ctypes.c_uint32),
                ("timeout_us", ctypes.c_uint32 * 2), ("rsv", ctypes.c_uint32 * 4)]


class _Attr(ctypes.Structure):  # aclrtLaunchKernelAttr {aclrtLaunchKernelAttrId id; value}
    _fields_ = [("id", ctypes.c_int32), ("value", _AttrValue)]


class _Cfg(ctypes.Structure):  # aclrtLaunchKernelCfg {aclrtLaunchKernelAttr *attrs; size_t numAttrs}
    _fields_ = [("attrs", ctypes.POINTER(_Attr)), ("numAttrs", ctypes.c_size_t)]


_U8 = {C.ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, C.ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH,
       C.ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP, C.ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING}


def launch_cfg(addr: int):
    """aclrtLaunchKernelCfg* -> the runtime's list of {"id", "value"} (None for NULL)."""
    if not addr:
        return None
    cfg = _Cfg.from_address(addr)
    if cfg.numAttrs and not cfg.attrs:
        raise rt.InvalidValueError("cfg->attrs is NULL but cfg->numAttrs is not 0")
    out = []
    for i in range(cfg.numAttrs):
        a = cfg.attrs[i]
        if a.id in _U8:
            v = a.value.u8
        elif a.id == C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT:
            v = a.value.u16
        elif a.id == C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US:
            v = a.value.timeout_us[0] | (a.value.timeout_us[1] << 32)
        else:
            v = a.value.u32
        out.append({"id": a.id, "value": v})
    return out


class _OptValue(ctypes.Union):
    _fields_ = [("u32", ctypes.c_uint32), ("i32", ctypes.c_int32), ("rsv", ctypes.c_uint32 * 4)]


class _Opt(ctypes.Structure):  # aclrtBinaryLoadOption {aclrtBinaryLoadOptionType type; value}
    _fields_ = [("type", ctypes.c_int32), ("value", _OptValue)]


class _Opts(ctypes.Structure):  # aclrtBinaryLoadOptions {aclrtBinaryLoadOption *options; size_t numOpt}
    _fields_ = [("options", ctypes.POINTER(_Opt)), ("numOpt", ctypes.c_size_t)]


def load_options(addr: int):
    """aclrtBinaryLoadOptions* -> the runtime's list of {"type", "value"} (None for NULL)."""
    if not addr:
        return None
    opts = _Opts.from_address(addr)
    if opts.numOpt and not opts.options:
        raise rt.InvalidValueError("options->options is NULL but options->numOpt is not 0")
    return [{"type": opts.options[i].type, "value": opts.options[i].value.i32 if opts.options[i].type ==
             C.ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE else opts.options[i].value.u32} for i in range(opts.numOpt)]


class _PlaceHolder(ctypes.Structure):  # aclrtPlaceHolderInfo {uint32_t addrOffset; uint32_t dataOffset}
    _fields_ = [("addrOffset", ctypes.c_uint32), ("dataOffset", ctypes.c_uint32)]


def place_holders(addr: int, count: int) -> list[dict]:
    if not count:
        return []
    if not addr:
        raise rt.InvalidValueError(f"placeHolderArray is NULL but placeHolderNum is {count}")
    arr = (_PlaceHolder * count).from_address(addr)
    return [{"addrOffset": p.addrOffset, "dataOffset": p.dataOffset} for p in arr]


def c_string(addr: int, what: str) -> str:
    if not addr:
        raise rt.InvalidValueError(f"{what} is NULL")
    return ctypes.string_at(addr).decode("utf-8", "replace")
