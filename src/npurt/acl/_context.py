"""acl.rt context management (aclrtCreateContext, aclrtSetCurrentContext, ...); argument
formats from python/pyACL/rt/rt_context.cpp."""
from __future__ import annotations

from .. import runtime as api  # the runtime's operations: its published surface
from ._wrap import Group, context_of

rt = Group("acl.rt")


@rt.one(0, args="i")
def create_context(device_id):
    """An explicit context on `device_id`, made current for the calling thread."""
    return api.create_context(device_id).handle


@rt.ret(args="k")
def destroy_context(context):
    api.destroy_context(context_of(context))


@rt.ret(args="k")
def set_context(context):
    api.set_context(context_of(context))


@rt.one(0, args=None)
def get_context():
    return api.get_context().handle


@rt.one(0, args=None)
def ctx_get_current_default_stream():
    return api.get_context().default_stream.handle


@rt.many(0, 0, args="i")
def get_primary_ctx_state(device_id):
    """(active, flags) of the device's default context."""
    return api.get_primary_ctx_state(device_id)


@rt.ret(args="il")
def ctx_set_sys_param_opt(opt, value):
    api.ctx_set_sys_param_opt(opt, value)


@rt.one(0, args="i")
def ctx_get_sys_param_opt(opt):
    return api.ctx_get_sys_param_opt(opt)


__all__ = list(rt.names)
