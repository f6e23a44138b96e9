"""Device and stream resource limits (acl_rt.h: aclrtSetDeviceResLimit ...
aclrtGetResInCurrentThread): how many cube and vector cores kernels may use, over the
runtime's limits (npurt.runtime: set_device_res_limit ... core_limit).

As on CANN: a device's limit defaults to its core count, a stream's to its device's; a value
above the device's cores is refused; a thread that took a stream's resources with
aclrtUseStreamResInCurrentThread answers aclrtGetResInCurrentThread with the stream's. The
limit is enforced where the hardware applies it: a kernel launch's blocks run on at most
that many simulated cores (in waves beyond; GetBlockNum is unchanged), its stream's limit
first, then its device's.
"""
from __future__ import annotations

from ... import runtime as rt
from ..registry import c_function
from ._common import null, stream_of

def _stream(handle):
    return rt.stream_of(stream_of(handle))


@c_function("aclrtSetDeviceResLimit")
def aclrtSetDeviceResLimit(deviceId, type, value):  # noqa: A002 - the C parameter's name
    rt.set_device_res_limit(deviceId, type, value)
    return 0


@c_function("aclrtGetDeviceResLimit")
def aclrtGetDeviceResLimit(deviceId, type, value):  # noqa: A002
    if not value:
        raise null("value")
    value[0] = rt.get_device_res_limit(deviceId, type)
    return 0


@c_function("aclrtResetDeviceResLimit")
def aclrtResetDeviceResLimit(deviceId):
    rt.reset_device_res_limit(deviceId)
    return 0


@c_function("aclrtSetStreamResLimit")
def aclrtSetStreamResLimit(stream, type, value):  # noqa: A002
    rt.set_stream_res_limit(_stream(stream), type, value)
    return 0


@c_function("aclrtGetStreamResLimit")
def aclrtGetStreamResLimit(stream, type, value):  # noqa: A002
    if not value:
        raise null("value")
    value[0] = rt.get_stream_res_limit(_stream(stream), type)
    return 0


@c_function("aclrtResetStreamResLimit")
def aclrtResetStreamResLimit(stream):
    rt.reset_stream_res_limit(_stream(stream))
    return 0


@c_function("aclrtUseStreamResInCurrentThread")
def aclrtUseStreamResInCurrentThread(stream):
    rt.use_stream_res_in_current_thread(_stream(stream))
    return 0


@c_function("aclrtUnuseStreamResInCurrentThread")
def aclrtUnuseStreamResInCurrentThread(stream):
    rt.unuse_stream_res_in_current_thread(_stream(stream))  # a stale handle is refused
    return 0


@c_function("aclrtGetResInCurrentThread")
def aclrtGetResInCurrentThread(type, value):  # noqa: A002
    if not value:
        raise null("value")
    value[0] = rt.get_res_in_current_thread(type)
    return 0
