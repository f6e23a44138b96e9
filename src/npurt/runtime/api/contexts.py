"""Contexts: explicit contexts (create, destroy, make current), the primary context's state,
and the options set per context (ctx_set_sys_param_opt).

A device's default context is made by set_device (api/devices.py); explicit contexts are
made here and bound to the calling thread, as aclrtCreateContext does.
"""
from __future__ import annotations

from .. import constants as C
from ..context import Context, bind, current_context, peek_context, retire
from ..errors import ContextError, InvalidHandleError, InvalidValueError, NpuError
from ..runtime import RUNTIME
from .devices import _check_sys_param

rt = RUNTIME


def create_context(device_id: int) -> Context:
    """An explicit context on `device_id`, made current for the calling thread."""
    device = rt.device(device_id)
    ctx = Context(device, is_default=False)
    ctx.handle = rt.contexts.add(ctx)
    with device.lock:
        device.contexts.add(ctx)
    bind(ctx)
    return ctx


def destroy_context(ctx: Context) -> None:
    if ctx.is_default:
        raise InvalidValueError("the default context of a device cannot be destroyed; use reset_device")
    device = ctx.device
    with device.lock:  # from here on no stream can be created in it, and one destroyer wins
        if not ctx.alive or ctx.closing:
            raise InvalidHandleError("this context was already destroyed")
        ctx.closing = True
        streams = [ctx.default_stream, *ctx.streams]
    for stream in streams:
        try:
            stream.synchronize(report_errors=False)
        except NpuError:
            stream.abort()
        device.release_stream(stream)
    retire(ctx)
    with device.lock:
        device.contexts.discard(ctx)
    rt.contexts.remove(ctx.handle)
    if peek_context() is None:
        bind(None)


def set_context(ctx: Context) -> None:
    if not ctx.alive:
        raise ContextError(f"cannot set a destroyed context (device {ctx.device.id}); create a new one")
    bind(ctx)


def get_context() -> Context:
    return current_context()


def get_primary_ctx_state(device_id: int) -> tuple[int, int]:
    """(active, flags) of the device's default context."""
    ctx = rt.device(device_id).default_context
    return int(ctx is not None and ctx.alive), 0


def ctx_set_sys_param_opt(opt: int, value: int) -> None:
    """Option of the current context (last call wins)."""
    ctx = current_context()
    _check_sys_param(opt, value)
    ctx.sys_params[opt] = value


def ctx_get_sys_param_opt(opt: int) -> int:
    """The current context's option; SYSPARAMOPT_NOT_SET (107021) when never set there."""
    ctx = current_context()
    _check_sys_param(opt)
    if opt not in ctx.sys_params:
        raise NpuError(f"system parameter option {opt} was never set in this context "
                       "(ctx_set_sys_param_opt first)", C.ACL_ERROR_RT_SYSPARAMOPT_NOT_SET)
    return ctx.sys_params[opt]
