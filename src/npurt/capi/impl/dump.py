"""Dump (acl_dump.h, acl_mdl.h's aclmdlInitDump / SetDump / FinalizeDump): where operator
tensors go, and what a program saves itself for exception dump.

The dump configuration is the `"dump"` object of an aclInit or aclmdlSetDump JSON file
(`dump_path`, `dump_op_switch`, `dump_scene`: `aic_err_brief_dump` and the other exception
scenes enable exception dump); aclopStartDumpArgs turns the operator-args dump on for a path.
acldumpGetPath answers the path of a dump kind that is on (NULL otherwise),
acldumpGetExceptionInfoPath the exception dump directory of the current device, and
acldumpSaveExceptionInfo writes the program's tensors there (`<fileName>.custom.<ms
timestamp>`: a small npurt header per tensor, then its bytes copied from the device).

Operators report their tensors with `dump_op(op_name, tensors)` (tensors: (role, index, bytes)
after the op ran): with data dump on they are written under the dump path, or handed to the
callback registered with acldumpRegCallback as acldumpChunk records, instead of written.
"""
from __future__ import annotations

import json
import os
import struct
import threading
import time

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ... import runtime as rt
from ...runtime import NpuError, constants as C
from .. import cdata
from ..registry import c_function
from ._common import null

V = cdata.enum_values()


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.data_path: str | None = None       # data dump on (dump_op_switch / dump_list)
        self.exception_path: str | None = None  # exception dump on (dump_scene)
        self.args_path: str | None = None       # aclopStartDumpArgs
        self.model_dump = False                 # between aclmdlInitDump and aclmdlFinalizeDump
        self.callback = None
        self.kept: dict = {}


STATE = _State()
_EXCEPTION_SCENES = ("aic_err_brief_dump", "aic_err_norm_dump", "aic_err_detail_dump", "lite_exception")


def configure(path: str | None, where: str) -> None:
    """Read the "dump" object of a JSON configuration file (nothing if it has none)."""
    if not path:
        return
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        config = json.loads(text) if text.strip() else {}
    except (OSError, ValueError) as exc:
        raise NpuError(f"{where}: cannot read the dump configuration {path!r}: {exc}", C.ACL_ERROR_INVALID_DUMP_CONFIG) from None
    dump = config.get("dump") if isinstance(config, dict) else None
    if not isinstance(dump, dict):
        return
    base = os.path.abspath(dump.get("dump_path") or ".")
    with STATE.lock:
        if dump.get("dump_scene") in _EXCEPTION_SCENES:
            STATE.exception_path = base
        elif dump.get("dump_op_switch") == "on" or dump.get("dump_list"):
            STATE.data_path = base


def _device_dir(base: str, device: int | None = None) -> str:
    return os.path.join(base, "npurt_dump", f"device_{rt.get_device() if device is None else device}")


def _after_acl_init(name: str) -> None:
    """hicann/runtime toolchain/dump.cpp: the model dump calls need aclInit (GetAclInitFlag)."""
    if not rt.RUNTIME.acl_initialized:
        raise NpuError(f"aclInit must be executed before {name} is called", C.ACL_ERROR_UNINITIALIZE)


@c_function("aclmdlInitDump")
def aclmdlInitDump():
    _after_acl_init("aclmdlInitDump")
    STATE.model_dump = True
    return 0


@c_function("aclmdlSetDump")
def aclmdlSetDump(dumpCfgPath):
    _after_acl_init("aclmdlSetDump")
    if not dumpCfgPath:
        raise null("dumpCfgPath")
    if not STATE.model_dump:
        raise NpuError("call aclmdlInitDump before aclmdlSetDump", C.ACL_ERROR_DUMP_NOT_RUN)
    configure(cdata.string(dumpCfgPath), "aclmdlSetDump")
    return 0


@c_function("aclmdlFinalizeDump")
def aclmdlFinalizeDump():
    _after_acl_init("aclmdlFinalizeDump")
    if not STATE.model_dump:
        raise NpuError("aclmdlFinalizeDump without aclmdlInitDump", C.ACL_ERROR_DUMP_NOT_RUN)
    with STATE.lock:
        STATE.model_dump = False
        STATE.data_path = None
    return 0


@c_function("aclopStartDumpArgs")
def aclopStartDumpArgs(dumpType, path):
    if not path:
        raise null("path")
    if dumpType != V["ACL_OP_DUMP_OP_AICORE_ARGS"]:
        raise rt.InvalidValueError(f"dumpType {dumpType} is not ACL_OP_DUMP_OP_AICORE_ARGS")
    STATE.args_path = os.path.abspath(cdata.string(path))
    return 0


@c_function("aclopStopDumpArgs")
def aclopStopDumpArgs(dumpType):
    if dumpType != V["ACL_OP_DUMP_OP_AICORE_ARGS"]:
        raise rt.InvalidValueError(f"dumpType {dumpType} is not ACL_OP_DUMP_OP_AICORE_ARGS")
    STATE.args_path = None
    return 0


@c_function("acldumpGetPath")
def acldumpGetPath(dumpType):
    path = {V["DATA_DUMP"]: STATE.data_path or STATE.args_path, V["OVERFLOW_DUMP"]: None,
            V["AIC_ERR_DETAIL_DUMP"]: STATE.exception_path}.get(dumpType)
    if path is None:
        return 0
    return cdata.kept_string(STATE.kept, ("path", dumpType), path)


@c_function("acldumpRegCallback")
def acldumpRegCallback(messageCallback, flag):
    if not messageCallback:
        raise null("messageCallback")
    STATE.callback = cdata.ffi.cast("int32_t (*)(const acldumpChunk *, int32_t)", messageCallback)
    return 0


@c_function("acldumpUnregCallback")
def acldumpUnregCallback():
    STATE.callback = None


@c_function("acldumpGetExceptionInfoPath")
def acldumpGetExceptionInfoPath(path, maxLen):
    if not path:
        raise null("path")
    if STATE.exception_path is None:
        raise NpuError("exception dump is not enabled: set \"dump_scene\": \"aic_err_brief_dump\" in the aclInit "
                       "configuration's \"dump\" object", C.ACL_ERROR_DUMP_NOT_RUN)
    text = _device_dir(STATE.exception_path).encode()
    if len(text) + 1 > maxLen:
        raise rt.InvalidValueError(f"maxLen ({maxLen}) is too small for the path ({len(text) + 1} bytes)")
    cdata.write(path, text + b"\0")
    return 0


_HEADER = struct.Struct("<8sIIiiQI")   # magic, role, index, dataType, format, size, shape dims


@c_function("acldumpSaveExceptionInfo")
def acldumpSaveExceptionInfo(fileName, userTag, tensors, tensorCount):
    name = cdata.string(fileName)
    if not name:
        raise null("fileName")
    if ".." in name.split("/"):
        raise rt.InvalidValueError(f"fileName {name!r} must not contain '..'")
    if not tensors:
        raise null("tensors")
    if not tensorCount:
        raise rt.InvalidValueError("tensorCount must be positive")
    if STATE.exception_path is None:
        raise NpuError("exception dump is not enabled (see acldumpGetExceptionInfoPath)", C.ACL_ERROR_DUMP_NOT_RUN)
    infos = cdata.struct("acldumpTensorInfo *", tensors)
    out = bytearray(f"npurt exception dump\ntag={cdata.string(userTag) or ''}\n".encode())
    for i in range(tensorCount):
        t = infos[i]
        addr = int(cdata.ffi.cast("uintptr_t", t.tensorAddr))
        size = int(t.tensorSize)
        if not addr or not size:
            raise rt.InvalidValueError(f"tensors[{i}] has a NULL tensorAddr or a zero tensorSize")
        if t.shapeNum > 25 or t.originShapeNum > 25:
            raise rt.InvalidValueError(f"tensors[{i}]: shapeNum/originShapeNum exceed ACL_DUMP_MAX_SHAPE_NUM (25)")
        buf = cdata.ffi.new("char[]", size)
        rt.memcpy(int(cdata.ffi.cast("uintptr_t", buf)), size, addr, size, C.ACL_MEMCPY_DEVICE_TO_HOST)
        shape = [int(t.shape[d]) for d in range(t.shapeNum)]
        out += _HEADER.pack(b"NPURTDMP", int(t.type), i, int(t.dataType), int(t.format), size, len(shape))
        out += struct.pack(f"<{len(shape)}Q", *shape) + bytes(cdata.ffi.buffer(buf, size))
    directory = _device_dir(STATE.exception_path)
    target = os.path.join(directory, f"{name}.custom.{time.strftime('%Y%m%d%H%M%S')}{int(time.time() * 1000) % 1000:03d}")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "wb") as f:
        f.write(out)
    return 0


def dumping() -> bool:
    """Whether operators' tensors are dumped now (data dump or the op-args dump is on)."""
    return (STATE.data_path or STATE.args_path) is not None


def _tensor_bytes(t) -> bytes:
    """The elements of an aclnn tensor view, contiguous, read from device memory."""
    if not t.numel:
        return b""
    span = (sum((d - 1) * s for d, s in zip(t.shape, t.strides)) + 1) * t.itemsize
    rt.resolve(rt.RUNTIME, t.address, span, "dumped tensor")  # still live (else NpuError)
    raw = rt.address.view(t.address, span).view(t.dtype)
    return np.ascontiguousarray(as_strided(raw, t.shape, tuple(s * t.itemsize for s in t.strides))).tobytes()


def dump_after(stream, op_name: str, tensors) -> None:
    """Enqueue, after an operator's tasks on `stream`, the dump of its tensors ((role,
    index, aclnn Tensor)): their bytes are read when the op has run, in stream order, as the
    device's dump does, then go to dump_op. A tensor freed before that is left out."""
    def run():
        out = []
        for role, index, t in tensors:
            try:
                out.append((role, index, _tensor_bytes(t)))
            except NpuError:
                continue
        dump_op(op_name, out, device)
    device = rt.stream_of(stream).device.id  # the host function runs on a thread without a context
    rt.launch_host_func(stream, run, name=f"dump of {op_name}")


def dump_op(op_name: str, tensors: list[tuple[str, int, bytes]], device: int | None = None) -> None:
    """An operator's tensors after it ran ("input"/"output", index, bytes) on `device` (default:
    the current one): written under the data dump path, or passed to the registered callback,
    when data dump is on."""
    base = STATE.data_path or STATE.args_path
    if base is None:
        return
    stamp = int(time.time() * 1e6)
    for role, index, data in tensors:
        path = os.path.join(_device_dir(base, device), f"{op_name}.{stamp}.{role}.{index}.bin")
        if STATE.callback is not None:
            # the callback is told sizeof(acldumpChunk) + bufLen, as CANN's; the bytes start at
            # dataBuf, which lies before the struct's tail padding
            size = cdata.ffi.sizeof("acldumpChunk")
            at = cdata.ffi.offsetof("acldumpChunk", "dataBuf")
            chunk = cdata.ffi.new("char[]", size + len(data))
            c = cdata.ffi.cast("acldumpChunk *", chunk)
            c.fileName = path.encode()[:4095]
            c.bufLen, c.isLastChunk, c.offset, c.flag = len(data), 1, 0, 0
            cdata.ffi.memmove(cdata.ffi.cast("char *", chunk) + at, data, len(data))
            STATE.callback(c, size + len(data))
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
