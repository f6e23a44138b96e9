"""acl.rt memory: device and host allocation, copies and sets, pointer attributes.

The rules (memcpy kind checking, 64-byte alignment of memcpy_async, pageable host memory
making memcpy_async synchronous, stream-ordered free) live in the runtime
(`npurt.runtime.memops`, `memory`, `hostmem`); these functions only convert.
"""
from __future__ import annotations

from ..runtime import api
from ._wrap import Group, fail, not_supported, stream_of
from ._wrap import stream_lookup as _stream_lookup

rt = Group("acl.rt")
_streams = api.rt.streams
_malloc = api.malloc
_free = api.free
_memcpy = api.memcpy
_memcpy_async = api.memcpy_async
_memset_async = api.memset_async


# ---------------------------------------------------------------- device memory
def malloc(size, policy):
    """Device memory on the current device: (dev_ptr, ret). 64-byte aligned, uninitialized."""
    try:
        return _malloc(size, policy), 0
    except Exception as exc:
        return 0, fail(exc, "acl.rt.malloc")


def free(dev_ptr):
    """Free device memory at once (queued work that uses it still completes first)."""
    try:
        _free(dev_ptr)
        return 0
    except Exception as exc:
        return fail(exc, "acl.rt.free")


@rt.one(0)
def malloc_align32(size, policy):
    """As malloc, with the size rounded up to 32 bytes only (no extra 32)."""
    return api.malloc(size, policy, True)


@rt.one(0)
def malloc_cached(size, policy):
    """Same as malloc: simulated device memory is coherent with itself."""
    return api.malloc(size, policy)


@rt.one(0)
def malloc_with_cfg(size, policy, cfg):
    return api.malloc_with_cfg(size, policy, cfg)


@rt.one(0)
def malloc_for_task_scheduler(size, policy, cfg):
    """Same memory as malloc_with_cfg: the simulated task scheduler reads any device memory."""
    return api.malloc_with_cfg(size, policy, cfg)


@rt.ret
def mem_flush(dev_ptr, size):
    """No-op after validation: there is no device cache to write back."""
    api.check_device_range(dev_ptr, size, "mem_flush")


@rt.ret
def mem_invalidate(dev_ptr, size):
    """No-op after validation: there is no device cache to invalidate."""
    api.check_device_range(dev_ptr, size, "mem_invalidate")


@rt.many(0, 0)
def get_mem_info(attr):
    """(free, total) bytes of the current device for an aclrtMemAttr."""
    return api.get_mem_info(attr)


# ---------------------------------------------------------------- host memory
@rt.one(0)
def malloc_host(size):
    """Page-locked host memory: a real host pointer; memcpy_async with it is asynchronous."""
    return api.malloc_host(size)


@rt.one(0)
def malloc_host_with_cfg(size, cfg):
    return api.malloc_host_with_cfg(size, cfg)


@rt.ret
def free_host(host_ptr):
    api.free_host(host_ptr)


@rt.one(0)
def host_register(ptr, size, type):  # noqa: A002 - pyACL's parameter name
    """Pin a 4 KiB-aligned host range; returns its device-side alias (for kernel args)."""
    return api.host_register(ptr, size, type)


@rt.ret
def host_register_v2(ptr, size, flag):
    api.host_register(ptr, size, flag)


@rt.one(0)
def host_get_device_pointer(ptr_host, flag):
    return api.host_get_device_pointer(ptr_host, flag)


@rt.ret
def host_unregister(ptr):
    api.host_unregister(ptr)


# ---------------------------------------------------------------- copies and sets
def memcpy(dst, dest_max, src, count, kind):
    """Immediate copy in the calling thread; does not wait for any stream."""
    try:
        _memcpy(dst, dest_max, src, count, kind)
        return 0
    except Exception as exc:
        return fail(exc, "acl.rt.memcpy")


def memcpy_async(dst, dest_max, src, count, kind, stream):
    """Stream-ordered copy; both addresses 64-byte aligned. With pageable host memory the
    call returns only once the copy has run (as ACL's does)."""
    try:
        _memcpy_async(dst, dest_max, src, count, kind,
                      (_stream_lookup(stream) or _streams.get(stream)) if stream else None)
        return 0
    except Exception as exc:
        return fail(exc, "acl.rt.memcpy_async")


@rt.ret
def memcpy_async_with_condition(dst, dest_max, src, count, kind, stream):
    """Deprecated form of memcpy_async (same behaviour)."""
    api.memcpy_async(dst, dest_max, src, count, kind, stream_of(stream))


@rt.ret
def memcpy2d(dst, dpitch, src, spitch, width, height, kind):
    """Synchronous pitched copy; host to device or device to host only."""
    api.memcpy2d(dst, dpitch, src, spitch, width, height, kind)


@rt.ret
def memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream):
    api.memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream_of(stream))


@rt.ret
def memset(dev_ptr, max_count, value, count):
    api.memset(dev_ptr, max_count, value, count)


def memset_async(dev_ptr, max_count, value, count, stream):
    """Stream-ordered fill of `count` bytes with the low byte of `value`."""
    try:
        _memset_async(dev_ptr, max_count, value, count,
                      (_stream_lookup(stream) or _streams.get(stream)) if stream else None)
        return 0
    except Exception as exc:
        return fail(exc, "acl.rt.memset_async")


# ---------------------------------------------------------------- addressing, cache, stream memory ops
@rt.one(None)
def pointer_get_attributes(ptr):
    """{"location": {"id", "type"}, "pageSize", "rsv"} plus npurt's "allocation" and "size"."""
    return api.pointer_get_attributes(ptr)


@rt.ret
def cmo_async(src, size, cmo_type, stream):
    """Prefetch hint: validated, then nothing to do on the simulated device."""
    api.cmo_async(src, size, cmo_type, stream_of(stream))


@rt.ret
def allocator_unregister(stream):
    """No user allocator can be registered here, so there is never one to remove; as in
    ACL, unregistering a stream without one succeeds."""
    stream_of(stream)


_DESC = "memcpy descriptors (aclrtMemcpyAsyncWithDesc) are not simulated"
_VMM = "virtual memory management (reserve/map physical memory) is not simulated"
_IPC = "IPC memory sharing between processes is not simulated (one process owns the simulated device)"
get_memcpy_desc_size = not_supported("acl.rt.get_memcpy_desc_size", _DESC, "one", 0)
set_memcpy_desc = not_supported("acl.rt.set_memcpy_desc", _DESC, "one", 0)
memcpy_async_with_desc = not_supported("acl.rt.memcpy_async_with_desc", _DESC)
value_write = not_supported("acl.rt.value_write", "stream value write/wait tasks are not simulated")
value_wait = not_supported("acl.rt.value_wait", "stream value write/wait tasks are not simulated")
allocator_register = not_supported(
    "acl.rt.allocator_register", "user allocators serve model execution (GE), which npurt does not run")
malloc_physical = not_supported("acl.rt.malloc_physical", _VMM, "one", 0)
free_physical = not_supported("acl.rt.free_physical", _VMM)
reserve_mem_address = not_supported("acl.rt.reserve_mem_address", _VMM, "one", 0)
release_mem_address = not_supported("acl.rt.release_mem_address", _VMM)
map_mem = not_supported("acl.rt.map_mem", _VMM)
unmap_mem = not_supported("acl.rt.unmap_mem", _VMM)
mem_export_to_shareable_handle = not_supported("acl.rt.mem_export_to_shareable_handle", _VMM, "one", 0)
mem_set_pid_to_shareable_handle = not_supported("acl.rt.mem_set_pid_to_shareable_handle", _VMM)
mem_import_from_shareable_handle = not_supported("acl.rt.mem_import_from_shareable_handle", _VMM, "one", 0)
mem_get_allocation_granularity = not_supported("acl.rt.mem_get_allocation_granularity", _VMM, "one", 0)
ipc_mem_get_export_key = not_supported("acl.rt.ipc_mem_get_export_key", _IPC, "one", None)
ipc_mem_set_import_pid = not_supported("acl.rt.ipc_mem_set_import_pid", _IPC)
ipc_mem_import_by_key = not_supported("acl.rt.ipc_mem_import_by_key", _IPC, "one", 0)
ipc_mem_close = not_supported("acl.rt.ipc_mem_close", _IPC)

NOT_SUPPORTED = [
    "get_memcpy_desc_size", "set_memcpy_desc", "memcpy_async_with_desc", "value_write", "value_wait",
    "allocator_register", "malloc_physical", "free_physical", "reserve_mem_address", "release_mem_address",
    "map_mem", "unmap_mem", "mem_export_to_shareable_handle", "mem_set_pid_to_shareable_handle",
    "mem_import_from_shareable_handle", "mem_get_allocation_granularity", "ipc_mem_get_export_key",
    "ipc_mem_set_import_pid", "ipc_mem_import_by_key", "ipc_mem_close",
]
__all__ = [*rt.names, "malloc", "free", "memcpy", "memcpy_async", "memset_async", *NOT_SUPPORTED]
