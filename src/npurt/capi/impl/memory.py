"""Memory (acl_rt.h: aclrtMalloc ... aclrtPointerGetAttributes): device and host memory, host
registration, copies and sets, memory info and pointer attributes, over the runtime's memory
operations. The rules (kinds, destMax, alignment, stream-ordered free) are the runtime's."""
from __future__ import annotations

from ... import runtime as rt
from ...runtime import constants as C
from .. import cdata
from ..registry import c_function
from ._common import note_task, null, stream_of

# the hot paths call the runtime's functions bound here once
_malloc, _free, _memcpy, _memcpy_async = rt.malloc, rt.free, rt.memcpy, rt.memcpy_async
_memset, _memset_async = rt.memset, rt.memset_async
_stream_lookup = rt.RUNTIME.streams.lookup


@c_function("aclrtMalloc")
def aclrtMalloc(devPtr, size, policy):
    if not devPtr:
        raise null("devPtr")
    devPtr[0] = _malloc(size, policy)
    return 0


@c_function("aclrtMallocAlign32")
def aclrtMallocAlign32(devPtr, size, policy):
    if not devPtr:
        raise null("devPtr")
    devPtr[0] = rt.malloc(size, policy, True)
    return 0


@c_function("aclrtMallocCached")
def aclrtMallocCached(devPtr, size, policy):
    """Same as aclrtMalloc: simulated device memory is coherent with itself."""
    return aclrtMalloc(devPtr, size, policy)


def _config(cfg) -> dict | None:
    """An aclrtMallocConfig read into the runtime's dict form."""
    if not cfg:
        return None
    c = cdata.struct("aclrtMallocConfig *", cfg)
    attrs = []
    for i in range(c.numAttrs):
        a = c.attrs[i]
        value = {C.ACL_RT_MEM_ATTR_MODULE_ID: {"moduleId": a.value.moduleId},
                 C.ACL_RT_MEM_ATTR_DEVICE_ID: {"deviceId": a.value.deviceId},
                 C.ACL_RT_MEM_ATTR_VA_FLAG: {"vaFlag": a.value.vaFlag}}.get(a.attr, {"rsv": list(a.value.rsv)})
        attrs.append({"attr": a.attr, "value": value})
    return {"attrs": attrs, "numAttrs": len(attrs)}


@c_function("aclrtMallocWithCfg")
def aclrtMallocWithCfg(devPtr, size, policy, cfg):
    if not devPtr:
        raise null("devPtr")
    devPtr[0] = rt.malloc_with_cfg(size, policy, _config(cfg))
    return 0


@c_function("aclrtMallocForTaskScheduler")
def aclrtMallocForTaskScheduler(devPtr, size, policy, cfg):
    return aclrtMallocWithCfg(devPtr, size, policy, cfg)


@c_function("aclrtFree", "aclrtFreeWithDevSync")
def aclrtFree(devPtr):
    _free(devPtr)
    return 0


@c_function("aclrtMallocHost")
def aclrtMallocHost(hostPtr, size):
    if not hostPtr:
        raise null("hostPtr")
    hostPtr[0] = rt.malloc_host(size)
    return 0


@c_function("aclrtMallocHostWithCfg")
def aclrtMallocHostWithCfg(ptr, size, cfg):
    if not ptr:
        raise null("ptr")
    ptr[0] = rt.malloc_host_with_cfg(size, _config(cfg))
    return 0


@c_function("aclrtFreeHost", "aclrtFreeHostWithDevSync")
def aclrtFreeHost(hostPtr):
    rt.free_host(hostPtr)
    return 0


@c_function("aclrtHostRegister")
def aclrtHostRegister(ptr, size, type, devPtr):  # noqa: A002 - the C parameter's name
    if not devPtr:
        raise null("devPtr")
    devPtr[0] = rt.host_register(ptr, size, type)
    return 0


@c_function("aclrtHostRegisterV2")
def aclrtHostRegisterV2(ptr, size, flag):
    rt.host_register(ptr, size, flag)
    return 0


@c_function("aclrtHostGetDevicePointer")
def aclrtHostGetDevicePointer(pHost, pDevice, flag):
    if not pDevice:
        raise null("pDevice")
    pDevice[0] = rt.host_get_device_pointer(pHost, flag)
    return 0


@c_function("aclrtHostUnregister")
def aclrtHostUnregister(ptr):
    rt.host_unregister(ptr)
    return 0


@c_function("aclrtMemcpy")
def aclrtMemcpy(dst, destMax, src, count, kind):
    _memcpy(dst, destMax, src, count, kind)
    return 0


@c_function("aclrtMemcpyAsync", "aclrtMemcpyAsyncWithCondition")
def aclrtMemcpyAsync(dst, destMax, src, count, kind, stream):
    note_task(_memcpy_async(dst, destMax, src, count, kind,
                            (_stream_lookup(stream) or stream_of(stream)) if stream else None))
    return 0


@c_function("aclrtMemcpy2d")
def aclrtMemcpy2d(dst, dpitch, src, spitch, width, height, kind):
    rt.memcpy2d(dst, dpitch, src, spitch, width, height, kind)
    return 0


@c_function("aclrtMemcpy2dAsync")
def aclrtMemcpy2dAsync(dst, dpitch, src, spitch, width, height, kind, stream):
    note_task(rt.memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream_of(stream)))
    return 0


@c_function("aclrtMemset")
def aclrtMemset(devPtr, maxCount, value, count):
    _memset(devPtr, maxCount, value, count)
    return 0


@c_function("aclrtMemsetAsync")
def aclrtMemsetAsync(devPtr, maxCount, value, count, stream):
    note_task(_memset_async(devPtr, maxCount, value, count, stream_of(stream)))
    return 0


@c_function("aclrtGetMemInfo")
def aclrtGetMemInfo(attr, free, total):  # noqa: A002 - the C parameter's name
    if not free:
        raise null("free")
    if not total:
        raise null("total")
    free[0], total[0] = rt.get_mem_info(attr)
    return 0


@c_function("aclrtPointerGetAttributes")
def aclrtPointerGetAttributes(ptr, attributes):
    if not attributes:
        raise null("attributes")
    got = rt.pointer_get_attributes(ptr)
    out = cdata.struct("aclrtPtrAttributes *", attributes)
    out.location.id = got["location"]["id"]
    out.location.type = got["location"]["type"]
    out.pageSize = got["page_size"]
    for i, v in enumerate(got["rsv"][:4]):
        out.rsv[i] = v
    return 0


@c_function("aclrtMemGetAddressRange")
def aclrtMemGetAddressRange(ptr, pbase, psize):
    got = rt.pointer_get_attributes(ptr)
    if not got.get("size"):
        raise rt.InvalidValueError(f"ptr 0x{ptr:x} is not inside an allocation npurt knows")
    if pbase:
        pbase[0] = got["allocation"]
    if psize:
        psize[0] = got["size"]
    return 0


@c_function("aclrtMemFlush")
def aclrtMemFlush(devPtr, size):
    """No-op after validation: there is no device cache to write back."""
    rt.check_device_range(devPtr, size, "aclrtMemFlush")
    return 0


@c_function("aclrtMemInvalidate")
def aclrtMemInvalidate(devPtr, size):
    rt.check_device_range(devPtr, size, "aclrtMemInvalidate")
    return 0


@c_function("aclrtCmoAsync")
def aclrtCmoAsync(src, size, cmoType, stream):
    rt.cmo_async(src, size, cmoType, stream_of(stream))
    return 0
