"""Contexts (acl_rt.h: aclrtCreateContext ... aclrtCtxGetCurrentDefaultStream). The current
context is per C thread: cffi keeps one Python thread state for each C thread for its whole
life, and the runtime's current context is thread-local Python state."""
from __future__ import annotations

from ... import runtime as rt
from ..registry import c_function
from ._common import context_of, null


@c_function("aclrtCreateContext")
def aclrtCreateContext(context, deviceId):
    if not context:
        raise null("context")
    context[0] = rt.create_context(deviceId).handle
    return 0


@c_function("aclrtDestroyContext")
def aclrtDestroyContext(context):
    rt.destroy_context(context_of(context))
    return 0


@c_function("aclrtSetCurrentContext")
def aclrtSetCurrentContext(context):
    rt.set_context(context_of(context))
    return 0


@c_function("aclrtGetCurrentContext")
def aclrtGetCurrentContext(context):
    if not context:
        raise null("context")
    context[0] = rt.get_context().handle
    return 0


@c_function("aclrtCtxGetCurrentDefaultStream")
def aclrtCtxGetCurrentDefaultStream(stream):
    if not stream:
        raise null("stream")
    stream[0] = rt.get_context().default_stream.handle
    return 0


@c_function("aclrtGetPrimaryCtxState")
def aclrtGetPrimaryCtxState(deviceId, flags, active):
    """As hicann/runtime's acl context.cpp: `active` is required, `flags` is reserved and must
    be NULL."""
    if not active:
        raise null("active")
    if flags:
        raise rt.InvalidValueError("flags is a reserved parameter and must be NULL")
    is_active, _ = rt.get_primary_ctx_state(deviceId)
    active[0] = is_active
    return 0
