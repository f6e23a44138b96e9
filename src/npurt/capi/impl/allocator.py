"""Custom allocators (acl_rt_allocator.h): a description of the program's allocator object and
its four C callbacks, registered per stream, over the runtime's allocator descriptions.

A description handle is the runtime's (the same integer pyACL hands out), returned by
aclrtAllocatorCreateDesc as a pointer-sized handle. The callbacks are kept as Python callables
that call the C function pointers (what the runtime's users, model execution, call) and as the
raw pointers, which aclrtAllocatorGetByStream gives back.
"""
from __future__ import annotations

from ... import runtime as rt
from .. import cdata
from ..registry import c_function
from ._common import null

_MEMBERS = {"alloc_func": "aclrtAllocatorAllocFunc", "free_func": "aclrtAllocatorFreeFunc",
            "alloc_advise_func": "aclrtAllocatorAllocAdviseFunc",
            "get_addr_from_block_func": "aclrtAllocatorGetAddrFromBlockFunc"}


class CCallback:
    """A C function pointer as a Python callable taking and returning ints."""

    __slots__ = ("address", "fn")

    def __init__(self, ctype: str, address: int):
        self.address = address
        self.fn = cdata.ffi.cast(ctype, address)

    def __call__(self, *args):
        ffi = cdata.ffi
        out = self.fn(*(ffi.cast("void *", a) for a in args))
        return int(ffi.cast("uintptr_t", out)) if out is not None else None


@c_function("aclrtAllocatorCreateDesc")
def aclrtAllocatorCreateDesc():
    return rt.allocator_create_desc()


@c_function("aclrtAllocatorDestroyDesc")
def aclrtAllocatorDestroyDesc(allocatorDesc):
    rt.allocator_destroy_desc(allocatorDesc)
    return 0


@c_function("aclrtAllocatorSetObjToDesc")
def aclrtAllocatorSetObjToDesc(allocatorDesc, allocator):
    rt.allocator_set(allocatorDesc, "obj", allocator)
    return 0


def _set(desc, member, func):
    rt.allocator_set(desc, member, CCallback(_MEMBERS[member], func) if func else None)
    return 0


@c_function("aclrtAllocatorSetAllocFuncToDesc")
def aclrtAllocatorSetAllocFuncToDesc(allocatorDesc, func):
    return _set(allocatorDesc, "alloc_func", func)


@c_function("aclrtAllocatorSetFreeFuncToDesc")
def aclrtAllocatorSetFreeFuncToDesc(allocatorDesc, func):
    return _set(allocatorDesc, "free_func", func)


@c_function("aclrtAllocatorSetAllocAdviseFuncToDesc")
def aclrtAllocatorSetAllocAdviseFuncToDesc(allocatorDesc, func):
    return _set(allocatorDesc, "alloc_advise_func", func)


@c_function("aclrtAllocatorSetGetAddrFromBlockFuncToDesc")
def aclrtAllocatorSetGetAddrFromBlockFuncToDesc(allocatorDesc, func):
    return _set(allocatorDesc, "get_addr_from_block_func", func)


@c_function("aclrtAllocatorRegister")
def aclrtAllocatorRegister(stream, allocatorDesc):
    rt.allocator_register(stream, allocatorDesc)
    return 0


@c_function("aclrtAllocatorUnregister")
def aclrtAllocatorUnregister(stream):
    rt.allocator_unregister(stream)
    return 0


@c_function("aclrtAllocatorGetByStream")
def aclrtAllocatorGetByStream(stream, allocatorDesc, allocator, allocFunc, freeFunc, allocAdviseFunc,
                              getAddrFromBlockFunc):
    desc = rt.allocator_of(stream)
    if desc is None:
        raise rt.InvalidValueError(f"no allocator is registered for stream 0x{stream:x}")
    outs = ((allocatorDesc, desc.handle), (allocator, desc.obj or 0),
            (allocFunc, desc.alloc_func), (freeFunc, desc.free_func), (allocAdviseFunc, desc.alloc_advise_func),
            (getAddrFromBlockFunc, desc.get_addr_from_block_func))
    for p, v in outs:
        if p:
            p[0] = v.address if isinstance(v, CCallback) else (v or 0)
    return 0
