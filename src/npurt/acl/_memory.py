"""acl.rt memory: device and host allocation, copies and sets, pointer attributes.

The rules (memcpy kind checking, 64-byte alignment of memcpy_async, pageable host memory
making memcpy_async synchronous, stream-ordered free) live in the runtime
(`npurt.runtime.memops`, `memory`, `hostmem`); these functions only convert.
"""
from __future__ import annotations

from .. import runtime as api  # the runtime's operations: its published surface
from ._wrap import Group, Raise, computed, field, not_supported, stream_of

rt = Group("acl.rt")


# ---------------------------------------------------------------- device memory
# the hot paths: the runtime operations themselves
malloc = rt.one(0, args="ki", hot="policy")(api.malloc)  # the runtime compares policy with ==
free = rt.ret(args="k", names="dev_ptr", hot=True)(api.free)
# with the C accelerator: C entry points that serve a cached block themselves, and call the
# wrappers above for anything else (npurt.runtime.entries)
malloc = api.fast_entry("acl_malloc", malloc)
free = api.fast_entry("acl_free", free)


@rt.one(0, args="ki")
def malloc_align32(size, policy):
    """As malloc, with the size rounded up to 32 bytes only (no extra 32)."""
    return api.malloc(size, policy, True)


@rt.one(0, args="ki")
def malloc_cached(size, policy):
    """Same as malloc: simulated device memory is coherent with itself."""
    return api.malloc(size, policy)


def _malloc_config(cfg, where: str):
    """An aclrtMallocConfig dict read as the real wrapper reads it (rt_memory.cpp): {} is no
    config; otherwise "attrs" (a list of {"attr", "value": {"moduleId" | "deviceId" |
    "rsv"}}) whose length must equal "numAttrs"."""
    if not isinstance(cfg, dict):
        raise Raise(TypeError("pyCfg is not dict!"))
    if not cfg:
        return None
    attrs = cfg.get("attrs")
    if attrs is None:
        raise Raise(TypeError("the aclrtMallocAttrValue argument is not dict"))
    if not isinstance(attrs, list):
        raise Raise(SystemError(f"{where}: 'attrs' must be a list"))
    if len(attrs) != field(cfg, "numAttrs", "u64"):
        raise Raise(KeyError("The numAttrs inputed does not match the expected numAttrs"))
    out = []
    for item in attrs:
        if item is not None and not isinstance(item, dict):
            raise Raise(TypeError("the aclrtMallocWithCfg argument is not dict"))
        item = item or {}
        attr = item.get("attr") if isinstance(item.get("attr"), int) else 0
        value = item.get("value")
        if value is not None and not isinstance(value, dict):
            raise Raise(TypeError("the aclrtMallocAttrValue argument is not dict"))
        converted = {}
        if value is not None:
            if "moduleId" in value:
                converted["moduleId"] = field(value, "moduleId", "uint16")
            elif "deviceId" in value:
                converted["deviceId"] = field(value, "deviceId", "uint32")
            elif "rsv" in value:
                converted["rsv"] = [field({"b": b}, "b", "uint8") for b in list(value["rsv"])[:8]]
            else:
                raise Raise(KeyError("No valid key found in aclrtMallocAttrValue"))
        out.append({"attr": attr, "value": converted})
    return {"attrs": out, "numAttrs": len(out)}


@rt.one(0, args="kiO", message="acl.rt.malloc_with_cfg args parse failed!")
def malloc_with_cfg(size, policy, cfg):
    return api.malloc_with_cfg(size, policy, _malloc_config(cfg, "acl.rt.malloc_with_cfg"))


@rt.one(0, args="kiO", message="acl.rt.malloc_for_task_scheduler args parse failed!")
def malloc_for_task_scheduler(size, policy, cfg):
    """Same memory as malloc_with_cfg: the simulated task scheduler reads any device memory."""
    return api.malloc_with_cfg(size, policy, _malloc_config(cfg, "acl.rt.malloc_for_task_scheduler"))


@rt.ret(args="kk")
def mem_flush(dev_ptr, size):
    """No-op after validation: there is no device cache to write back."""
    api.check_device_range(dev_ptr, size, "mem_flush")


@rt.ret(args="kk")
def mem_invalidate(dev_ptr, size):
    """No-op after validation: there is no device cache to invalidate."""
    api.check_device_range(dev_ptr, size, "mem_invalidate")


@rt.many(0, 0, args="i")
def get_mem_info(attr):
    """(free, total) bytes of the current device for an aclrtMemAttr."""
    return api.get_mem_info(attr)


# ---------------------------------------------------------------- host memory
@rt.one(0, args="k")
def malloc_host(size):
    """Page-locked host memory: a real host pointer; memcpy_async with it is asynchronous."""
    return api.malloc_host(size)


@rt.one(0, args="kO")
def malloc_host_with_cfg(size, cfg):
    return api.malloc_host_with_cfg(size, _malloc_config(cfg, "acl.rt.malloc_host_with_cfg"))


@rt.ret(args="k")
def free_host(host_ptr):
    api.free_host(host_ptr)


@rt.one(0, args="kki")
def host_register(ptr, size, type):  # noqa: A002 - pyACL's parameter name
    """Pin a 4 KiB-aligned host range; returns its device-side alias (for kernel args)."""
    return api.host_register(ptr, size, type)


@rt.ret(args="KKI")
def host_register_v2(ptr, size, flag):
    api.host_register(ptr, size, flag)


@rt.one(0, args="KI", message="acl.rt.host_get_device_pointer parse failed")
def host_get_device_pointer(ptr_host, flag):
    return api.host_get_device_pointer(ptr_host, flag)


@rt.ret(args="k")
def host_unregister(ptr):
    api.host_unregister(ptr)


# ---------------------------------------------------------------- copies and sets
memcpy = rt.ret(args="kkkki", hot=True)(api.memcpy)
memcpy_async = rt.ret(args="kkkkiT", hot=True)(api.memcpy_async)
memset_async = rt.ret(args="kkikT", names="dev_ptr max_count value count stream", hot=True)(
    api.memset_async)


@rt.ret(args="kkkkiT")
def memcpy_async_with_condition(dst, dest_max, src, count, kind, stream):
    """Deprecated form of memcpy_async (same behaviour)."""
    api.memcpy_async(dst, dest_max, src, count, kind, stream)


@rt.ret(args="kkkkkki")
def memcpy2d(dst, dpitch, src, spitch, width, height, kind):
    """Synchronous pitched copy; host to device or device to host only."""
    api.memcpy2d(dst, dpitch, src, spitch, width, height, kind)


@rt.ret(args="kkkkkkiT")
def memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream):
    api.memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream)


@rt.ret(args="kkik")
def memset(dev_ptr, max_count, value, count):
    api.memset(dev_ptr, max_count, value, count)


# ---------------------------------------------------------------- addressing, cache, stream memory ops
_NO_ATTRIBUTES = {"location": {"id": 0, "type": 0}, "page_size": 0, "rsv": [0, 0, 0, 0]}


@rt.one(_NO_ATTRIBUTES, args="k")
def pointer_get_attributes(ptr):
    """{"location": {"id", "type"}, "page_size", "rsv"} plus npurt's "allocation" and "size"."""
    return api.pointer_get_attributes(ptr)


@rt.ret(args="kkiT", message="acl.rt.cmo_async args parse failed!")
def cmo_async(src, size, cmo_type, stream):
    """Prefetch hint: validated, then nothing to do on the simulated device."""
    api.cmo_async(src, size, cmo_type, stream)


_DESC = "memcpy descriptors (aclrtMemcpyAsyncWithDesc) are not simulated"
get_memcpy_desc_size = not_supported("acl.rt.get_memcpy_desc_size", _DESC, "one", 0, args="i")
set_memcpy_desc = not_supported("acl.rt.set_memcpy_desc", _DESC, "one", computed(lambda desc, *_: desc),
                                args="kikkkk")  # the real wrapper returns the desc it was given
memcpy_async_with_desc = not_supported("acl.rt.memcpy_async_with_desc", _DESC, args="kik")


@rt.ret(args="kKIk")
def value_write(dev_addr, value, flag, stream):
    """A stream-ordered store of the 64-bit value (npurt.runtime.notify.value_write)."""
    api.value_write(dev_addr, value, flag, stream_of(stream))


@rt.ret(args="kKIk")
def value_wait(dev_addr, value, flag, stream):
    """The stream waits until the 64-bit word meets flag (GEQ, EQ, AND, NOR) with value."""
    api.value_wait(dev_addr, value, flag, stream_of(stream))


@rt.one(0, args="kOK")
def malloc_physical(size, prop, flags):
    """A physical memory handle (prop: an aclrtPhysicalMemProp dict)."""
    return api.malloc_physical(size, prop, flags)


@rt.ret(args="k")
def free_physical(handle):
    """Free physical memory; memory still mapped is released at its last unmap."""
    api.free_physical(handle)


@rt.one(0, args="kkkK")
def reserve_mem_address(size, alignment, expect_ptr, flags):
    """Reserve device addresses on the current device (nothing is mapped yet)."""
    return api.reserve_mem_address(size, alignment, expect_ptr, flags)


@rt.ret(args="k")
def release_mem_address(vir_ptr):
    api.release_mem_address(vir_ptr)


@rt.ret(args="kkkkK")
def map_mem(vir_ptr, size, offset, handle, flags):
    api.map_mem(vir_ptr, size, offset, handle, flags)


@rt.ret(args="k")
def unmap_mem(vir_ptr):
    api.unmap_mem(vir_ptr)


@rt.one(0, args="kiK")
def mem_export_to_shareable_handle(handle, handle_type, flags):
    return api.mem_export_to_shareable_handle(handle, handle_type, flags)


@rt.ret(args="KO")
def mem_set_pid_to_shareable_handle(shareable_handle, pid):
    if not isinstance(pid, (list, tuple)):
        raise Raise(TypeError("pid must be a list"))
    api.mem_set_pid_to_shareable_handle(shareable_handle, list(pid))


@rt.one(0, args="Ki")
def mem_import_from_shareable_handle(shareable_handle, device_id):
    return api.mem_import_from_shareable_handle(shareable_handle, device_id)


@rt.one(0, args="Oi")
def mem_get_allocation_granularity(prop, option):
    return api.mem_get_allocation_granularity(prop, option)


# IPC memory between the processes that share a device (npurt.runtime.ipc)
_length = len


@rt.one("", args="kkkK")
def ipc_mem_get_export_key(dev_ptr, size, len, flags):  # noqa: A002 - pyACL's parameter name
    key = api.ipc_mem_get_export_key(dev_ptr, size, flags)
    if len <= _length(key.encode()):  # the C buffer could not hold it and its NUL
        api.ipc_mem_close(key)
        raise api.ParamInvalidError(f"ipc_mem_get_export_key: len {len} cannot hold the key and its NUL "
                                    f"(pass {api.ipc.KEY_LEN})")
    return key


@rt.ret(args="sO")
def ipc_mem_set_import_pid(key, pid):
    if not isinstance(pid, list):
        raise Raise(TypeError("pid must be a list"))
    api.ipc_mem_set_import_pid(key, pid)


@rt.one(0, args="sK")
def ipc_mem_import_by_key(key, flags):
    return api.ipc_mem_import_by_key(key, flags)


@rt.ret(args="s")
def ipc_mem_close(key):
    api.ipc_mem_close(key)


NOT_SUPPORTED = [
    "get_memcpy_desc_size", "set_memcpy_desc", "memcpy_async_with_desc",
]
__all__ = [*rt.names, *NOT_SUPPORTED]
