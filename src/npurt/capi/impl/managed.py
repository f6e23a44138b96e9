"""Managed memory (acl_rt.h: aclrtMemAllocManaged, aclrtMemManagedPrefetchAsync,
aclrtMemManagedPrefetchBatchAsync, aclrtMemManagedAdvise, aclrtMemManagedGetAttr(s)), over the
runtime's managed-memory operations. aclrtFree frees managed memory (impl/memory.py)."""
from __future__ import annotations

import struct

from ... import runtime as rt
from ...runtime import constants as C
from .. import cdata
from ..registry import c_function
from ._common import note_task, null, stream_of


@c_function("aclrtMemAllocManaged")
def aclrtMemAllocManaged(ptr, size, flag):
    if not ptr:
        raise null("ptr")
    ptr[0] = rt.mem_alloc_managed(size, flag)
    return 0


def _loc(addr: int) -> dict:
    loc = cdata.struct("aclrtMemManagedLocation *", addr)
    return {"type": loc.type, "id": loc.id}


@c_function("aclrtMemManagedPrefetchAsync")
def aclrtMemManagedPrefetchAsync(ptr, size, location, flags, stream):
    note_task(rt.mem_managed_prefetch_async(ptr, size, _loc(location), flags, stream_of(stream)))
    return 0


@c_function("aclrtMemManagedPrefetchBatchAsync")
def aclrtMemManagedPrefetchBatchAsync(ptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,
                                      stream):
    if not ptrs or not sizes or not prefetchLocs or not prefetchLocIdxs:
        raise null("ptrs, sizes, prefetchLocs or prefetchLocIdxs")
    p = cdata.array("uintptr_t", ptrs, count)
    n = cdata.array("size_t", sizes, count)
    locs = [{"type": loc.type, "id": loc.id} for loc in cdata.array("aclrtMemManagedLocation", prefetchLocs,
                                                                      numPrefetchLocs)]
    idx = cdata.array("size_t", prefetchLocIdxs, numPrefetchLocs)
    note_task(rt.mem_managed_prefetch_batch_async([int(x) for x in p], [int(x) for x in n], locs,
                                                  [int(i) for i in idx], flags, stream_of(stream)))
    return 0


@c_function("aclrtMemManagedAdvise")
def aclrtMemManagedAdvise(ptr, size, advise, location):
    rt.mem_managed_advise(ptr, size, advise, _loc(location))
    return 0


def _write_attr(attribute: int, value, data: int, data_size: int) -> None:
    if attribute == C.ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY:  # an array of aclrtMemManagedLocation
        raw = b"".join(struct.pack("<ii", t, i) for t, i in value)
        if len(raw) > data_size:
            raise rt.InvalidValueError(f"dataSize {data_size} is too small for {len(value)} locations")
        cdata.write(data, raw.ljust(data_size // 8 * 8, b"\0")[:data_size])
        return
    if data_size < 4:
        raise rt.InvalidValueError(f"dataSize {data_size} is too small for a 4-byte attribute")
    cdata.write(data, struct.pack("<i", value))


@c_function("aclrtMemManagedGetAttr")
def aclrtMemManagedGetAttr(attribute, ptr, size, data, dataSize):
    if not data:
        raise null("data")
    _write_attr(attribute, rt.mem_managed_get_attr(attribute, ptr, size), data, dataSize)
    return 0


@c_function("aclrtMemManagedGetAttrs")
def aclrtMemManagedGetAttrs(attributes, numAttributes, ptr, size, data, dataSizes):
    if not attributes or not data or not dataSizes:
        raise null("attributes, data or dataSizes")
    attrs = cdata.array("int32_t", attributes, numAttributes)
    outs = cdata.array("uintptr_t", data, numAttributes)
    sizes = cdata.array("size_t", dataSizes, numAttributes)
    for a, out, n in zip(attrs, outs, sizes):
        _write_attr(a, rt.mem_managed_get_attr(a, ptr, size), int(out), int(n))
    return 0
