"""Stream-ordered memory pools (acl_rt_memory_soma.h: aclrtMemPoolCreate ... aclrtMemPoolTrimTo),
over the runtime's pool operations. An aclrtMemPool is the runtime's memory-pool handle int;
attribute values are uint64 (the release threshold and the statistics) or int (the reuse
flags), as the attribute's type in the runtime's documentation."""
from __future__ import annotations

import struct

from ... import runtime as rt
from ...runtime import constants as C
from .. import cdata
from ..registry import c_function
from ._common import null, stream_of

_INT_ATTRS = (C.ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES, C.ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC,
              C.ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES)


def _format(attr: int) -> str:
    return "<i" if attr in _INT_ATTRS else "<Q"


@c_function("aclrtMemPoolCreate")
def aclrtMemPoolCreate(memPool, poolProps):
    if not memPool:
        raise null("memPool")
    if not poolProps:
        raise null("poolProps")
    p = cdata.struct("aclrtMemPoolProps *", poolProps)
    if any(p.reserved[i] for i in range(32)):
        raise rt.InvalidValueError("poolProps->reserved is a reserved parameter and must be zero")
    memPool[0] = rt.mem_pool_create({"allocType": p.allocType, "handleType": p.handleType,
                                     "location": {"type": p.location.type, "id": p.location.id},
                                     "maxSize": p.maxSize})
    return 0


@c_function("aclrtMemPoolDestroy")
def aclrtMemPoolDestroy(memPool):
    rt.mem_pool_destroy(memPool)
    return 0


@c_function("aclrtMemPoolSetAttr")
def aclrtMemPoolSetAttr(memPool, attr, value):
    if not memPool:
        raise null("memPool")
    if not value:
        raise rt.ParamInvalidError("value is NULL")
    fmt = _format(attr)
    rt.mem_pool_set_attr(memPool, attr, struct.unpack(fmt, cdata.read(value, struct.calcsize(fmt)))[0])
    return 0


@c_function("aclrtMemPoolGetAttr")
def aclrtMemPoolGetAttr(memPool, attr, value):
    if not memPool:
        raise null("memPool")
    if not value:
        raise rt.ParamInvalidError("value is NULL")
    cdata.write(value, struct.pack(_format(attr), rt.mem_pool_get_attr(memPool, attr)))
    return 0


@c_function("aclrtMemPoolMallocAsync")
def aclrtMemPoolMallocAsync(ptr, size, memPool, stream):
    if not ptr:
        raise null("ptr")
    if not memPool:
        raise null("memPool")
    if not stream:
        raise null("stream")
    if size == 0:  # memory.cpp: nothing to do
        return 0
    ptr[0] = rt.mem_pool_malloc_async(size, memPool, stream_of(stream))
    return 0


@c_function("aclrtMemPoolFreeAsync")
def aclrtMemPoolFreeAsync(ptr, stream):
    if not ptr:
        raise null("ptr")
    if not stream:
        raise rt.NpuError("stream is NULL", C.ACL_ERROR_RT_INTERNAL_ERROR)  # RT_ERROR_STREAM_NULL
    rt.mem_pool_free_async(ptr, stream_of(stream))
    return 0


@c_function("aclrtMemPoolTrimTo")
def aclrtMemPoolTrimTo(memPool, minBytesToKeep):
    if not memPool:
        raise null("memPool")
    rt.mem_pool_trim_to(memPool, minBytesToKeep)
    return 0
