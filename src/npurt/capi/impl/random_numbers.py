"""The random-number task (acl_rt.h: aclrtRandomNumAsync): a stream-ordered task filling
device memory with random numbers: a dropout bit mask, a uniform, normal or truncated normal
distribution, in float32, float16, bfloat16, int32 (uniform) or as bits (the mask).

The task description is read when the call is made (the C struct may live on the caller's
stack); parameters given by device address (`isAddr`) are read when the task runs. Numbers come
from numpy's Philox generator keyed by (seed, counter): the counter at randomCounterAddr (a
uint64, when given) is read and advanced by the count, so successive tasks continue the sequence.
"""
from __future__ import annotations

import numpy as np

from ... import runtime as rt
from ...runtime import InvalidValueError, constants as C
from .. import cdata
from ..registry import c_function
from ._common import note_task, null, stream_of

DROPOUT, UNIFORM, NORMAL, TRUNCATED = 0, 1, 2, 3   # aclrtRandomNumFuncType
_BF16 = C.ACL_BF16


def _decode(raw: bytes, dtype: int) -> float:
    if dtype == C.ACL_FLOAT16:
        return float(np.frombuffer(raw[:2], np.float16)[0])
    if dtype == _BF16:
        return float(np.frombuffer(b"\0\0" + raw[:2], np.float32)[0])
    if dtype == C.ACL_INT32:
        return float(np.frombuffer(raw[:4], np.int32)[0])
    if dtype in (C.ACL_INT64, C.ACL_UINT64):
        return float(int.from_bytes(raw[:8], "little", signed=dtype == C.ACL_INT64))
    return float(np.frombuffer(raw[:4], np.float32)[0])


class _Param:
    """An aclrtRandomParaInfo: a value (in `size` bytes) or the device address of one."""

    def __init__(self, info):
        self.is_addr = bool(info.isAddr)
        self.raw = bytes(cdata.ffi.buffer(info.valueOrAddr, 8))
        self.size = int(info.size)

    def read(self) -> bytes:
        if not self.is_addr:
            return self.raw
        addr = int.from_bytes(self.raw, "little")
        box = cdata.ffi.new("char[8]")
        rt.memcpy(int(cdata.ffi.cast("uintptr_t", box)), 8, addr, self.size or 8, C.ACL_MEMCPY_DEVICE_TO_HOST)
        return bytes(cdata.ffi.buffer(box, 8))

    def number(self, dtype: int) -> float:
        return _decode(self.read(), dtype)

    def integer(self) -> int:
        return int.from_bytes(self.read()[: self.size or 8], "little")


def _encode(values: np.ndarray, dtype: int) -> bytes:
    if dtype == C.ACL_FLOAT16:
        return values.astype(np.float16).tobytes()
    if dtype == _BF16:
        bits = values.astype(np.float32).view(np.uint32)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16).tobytes()  # round to nearest even
    if dtype == C.ACL_INT32:
        return values.astype(np.int32).tobytes()
    if dtype == C.ACL_FLOAT:
        return values.astype(np.float32).tobytes()
    raise InvalidValueError(f"dataType {dtype} is not one the random-number task produces (float, float16, bf16, int32)")


@c_function("aclrtRandomNumAsync")
def aclrtRandomNumAsync(taskInfo, stream, reserve):
    if not taskInfo:
        raise null("taskInfo")
    t = cdata.struct("aclrtRandomNumTaskInfo *", taskInfo)
    kind, dtype = int(t.randomNumFuncParaInfo.funcType), int(t.dataType)
    out = int(cdata.ffi.cast("uintptr_t", t.randomResultAddr))
    counter_addr = int(cdata.ffi.cast("uintptr_t", t.randomCounterAddr))
    if not out:
        raise null("taskInfo->randomResultAddr")
    p = t.randomNumFuncParaInfo.paramInfo
    params = {DROPOUT: (_Param(p.dropoutBitmaskInfo.dropoutRation),),
              UNIFORM: (_Param(p.uniformDisInfo.min), _Param(p.uniformDisInfo.max)),
              NORMAL: (_Param(p.normalDisInfo.mean), _Param(p.normalDisInfo.stddev)),
              TRUNCATED: (_Param(p.normalDisInfo.mean), _Param(p.normalDisInfo.stddev))}.get(kind)
    if params is None:
        raise InvalidValueError(f"funcType {kind} is not an aclrtRandomNumFuncType")
    if kind != DROPOUT and dtype not in (C.ACL_FLOAT, C.ACL_FLOAT16, _BF16, C.ACL_INT32):
        raise InvalidValueError(f"dataType {dtype} is not float, float16, bf16 or int32")
    seed, count = _Param(t.randomSeed), _Param(t.randomNum)

    def run():
        n = count.integer()
        offset = 0
        box = cdata.ffi.new("uint64_t[1]")
        box_addr = int(cdata.ffi.cast("uintptr_t", box))
        if counter_addr:
            rt.memcpy(box_addr, 8, counter_addr, 8, C.ACL_MEMCPY_DEVICE_TO_HOST)
            offset = int(box[0])
        gen = np.random.Generator(np.random.Philox(key=seed.integer() & (2**64 - 1), counter=offset))
        if kind == DROPOUT:
            keep = gen.random(n) >= params[0].number(dtype if dtype != C.ACL_UINT8 else C.ACL_FLOAT)
            data = np.packbits(keep, bitorder="little").tobytes()
        elif kind == UNIFORM:
            lo, hi = params[0].number(dtype), params[1].number(dtype)
            values = gen.integers(int(lo), int(hi), n) if dtype == C.ACL_INT32 else gen.uniform(lo, hi, n)
            data = _encode(values, dtype)
        else:
            mean, std = params[0].number(dtype), params[1].number(dtype)
            values = gen.normal(mean, std, n)
            if kind == TRUNCATED:   # redraw what falls outside two standard deviations
                bad = np.abs(values - mean) > 2 * std
                while bad.any():
                    values[bad] = gen.normal(mean, std, int(bad.sum()))
                    bad = np.abs(values - mean) > 2 * std
            data = _encode(values, dtype)
        host = cdata.ffi.new("char[]", max(len(data), 1))
        cdata.ffi.memmove(host, data, len(data))
        rt.memcpy(out, len(data), int(cdata.ffi.cast("uintptr_t", host)), len(data), C.ACL_MEMCPY_HOST_TO_DEVICE)
        if counter_addr:
            box[0] = offset + n
            rt.memcpy(counter_addr, 8, box_addr, 8, C.ACL_MEMCPY_HOST_TO_DEVICE)

    note_task(rt.launch_host_func(stream_of(stream), run, name="aclrtRandomNumAsync"))
    return 0
