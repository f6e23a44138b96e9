"""acl.rt user allocators (aclrtAllocatorCreateDesc, aclrtAllocatorRegister, ...); argument
formats from python/pyACL/rt/rt_allocator.cpp.

The real wrapper hands the C layer its own trampolines and keeps the Python functions, so a
set_*_func call never fails for a non-null description, whatever is passed as the function.
"""
from __future__ import annotations

from .. import runtime as api  # the runtime's operations: its published surface
from ._wrap import Group

rt = Group("acl.rt")


@rt.value(0, args=None)
def allocator_create_desc():
    """A new allocator description (handle only, no ret)."""
    return api.allocator_create_desc()


@rt.ret(args="k")
def allocator_destroy_desc(allocator_desc):
    api.allocator_destroy_desc(allocator_desc)


@rt.ret(args="kk")
def allocator_set_obj_to_desc(allocator_desc, allocator):
    """The user's allocator object (any int the callbacks receive back)."""
    api.allocator_set(allocator_desc, "obj", allocator)


@rt.ret(args="kO")
def allocator_set_alloc_func_to_desc(allocator_desc, func):
    """func(allocator, size)."""
    api.allocator_set(allocator_desc, "alloc_func", func)


@rt.ret(args="kO")
def allocator_set_free_func_to_desc(allocator_desc, func):
    """func(allocator, block)."""
    api.allocator_set(allocator_desc, "free_func", func)


@rt.ret(args="kO")
def allocator_set_alloc_advise_func_to_desc(allocator_desc, func):
    """func(allocator, size, addr)."""
    api.allocator_set(allocator_desc, "alloc_advise_func", func)


@rt.ret(args="kO")
def allocator_set_get_addr_from_block_func_to_desc(allocator_desc, func):
    """func(block)."""
    api.allocator_set(allocator_desc, "get_addr_from_block_func", func)


@rt.ret(args="kk")
def allocator_register(stream, allocator_desc):
    """Use a complete description for model execution on `stream` (last registration wins)."""
    api.allocator_register(stream, allocator_desc)


@rt.ret(args="k")
def allocator_unregister(stream):
    api.allocator_unregister(stream)


__all__ = list(rt.names)
