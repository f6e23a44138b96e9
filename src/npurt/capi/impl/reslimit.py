"""Device and stream resource limits (acl_rt.h: aclrtSetDeviceResLimit ...
aclrtGetResInCurrentThread): how many cube and vector cores kernels may use.

The limits are recorded and answered as on CANN (a device's limit defaults to its core count;
a stream's to its device's; a thread that took a stream's resources with
aclrtUseStreamResInCurrentThread answers with the stream's), and checked against the core
counts. npurt's simulated cores do not confine kernels to them: a kernel may still use every
core (docs/c-api.md); the pyACL facade reports these calls as not supported.
"""
from __future__ import annotations

import threading

from ... import runtime as rt
from ...runtime import InvalidValueError, constants as C
from ..registry import c_function
from ._common import null, stream_of

CUBE, VECTOR = 0, 1  # aclrtDevResLimitType: ACL_RT_DEV_RES_CUBE_CORE, ACL_RT_DEV_RES_VECTOR_CORE
_ATTR = {CUBE: C.ACL_DEV_ATTR_CUBE_CORE_NUM, VECTOR: C.ACL_DEV_ATTR_VECTOR_CORE_NUM}

_device_limits: dict[tuple[int, int], int] = {}
_stream_limits: dict[tuple[int, int], int] = {}
_thread = threading.local()


def _cores(device_id: int, kind: int) -> int:
    if kind not in _ATTR:
        raise InvalidValueError(f"type {kind} is not an aclrtDevResLimitType (ACL_RT_DEV_RES_CUBE_CORE 0, "
                                "ACL_RT_DEV_RES_VECTOR_CORE 1)")
    return rt.get_device_info(device_id, _ATTR[kind])


def _device_limit(device_id: int, kind: int) -> int:
    return _device_limits.get((device_id, kind), _cores(device_id, kind))


def _stream_limit(stream, kind: int) -> int:
    s = rt.stream_of(stream)
    return _stream_limits.get((s.handle, kind), _device_limit(s.device.id, kind))


def _check(device_id, kind, value):
    cores = _cores(device_id, kind)
    if not 0 < value <= cores:
        raise InvalidValueError(f"value {value} is outside 1..{cores}, the device's cores of that type")


@c_function("aclrtSetDeviceResLimit")
def aclrtSetDeviceResLimit(deviceId, type, value):  # noqa: A002 - the C parameter's name
    _check(deviceId, type, value)
    _device_limits[(deviceId, type)] = value
    return 0


@c_function("aclrtGetDeviceResLimit")
def aclrtGetDeviceResLimit(deviceId, type, value):  # noqa: A002
    if not value:
        raise null("value")
    value[0] = _device_limit(deviceId, type)
    return 0


@c_function("aclrtResetDeviceResLimit")
def aclrtResetDeviceResLimit(deviceId):
    _cores(deviceId, CUBE)
    for kind in _ATTR:
        _device_limits.pop((deviceId, kind), None)
    return 0


@c_function("aclrtSetStreamResLimit")
def aclrtSetStreamResLimit(stream, type, value):  # noqa: A002
    s = rt.stream_of(stream_of(stream))
    _check(s.device.id, type, value)
    _stream_limits[(s.handle, type)] = value
    return 0


@c_function("aclrtGetStreamResLimit")
def aclrtGetStreamResLimit(stream, type, value):  # noqa: A002
    if not value:
        raise null("value")
    value[0] = _stream_limit(stream_of(stream), type)
    return 0


@c_function("aclrtResetStreamResLimit")
def aclrtResetStreamResLimit(stream):
    s = rt.stream_of(stream_of(stream))
    for kind in _ATTR:
        _stream_limits.pop((s.handle, kind), None)
    return 0


@c_function("aclrtUseStreamResInCurrentThread")
def aclrtUseStreamResInCurrentThread(stream):
    _thread.stream = rt.stream_of(stream_of(stream))
    return 0


@c_function("aclrtUnuseStreamResInCurrentThread")
def aclrtUnuseStreamResInCurrentThread(stream):
    _thread.stream = None
    return 0


@c_function("aclrtGetResInCurrentThread")
def aclrtGetResInCurrentThread(type, value):  # noqa: A002
    if not value:
        raise null("value")
    stream = getattr(_thread, "stream", None)
    value[0] = _stream_limit(stream, type) if stream is not None else _device_limit(rt.get_device(), type)
    return 0
