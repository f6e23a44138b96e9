"""acl.rt functions of groups the simulated NPU does not have.

Each one exists (a pyACL script that calls it gets a return code, never an AttributeError),
parses its arguments as the real wrapper does (python/pyACL/rt/rt_device.cpp,
rt_stream.cpp, rt_notify.cpp), records the failure, and returns
ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000) in the shape of the real function.
docs/compatibility.md lists them.
"""
from __future__ import annotations

from .. import runtime as _api
from ..runtime import FeatureNotSupportedError
from ._wrap import Group, Raise, stream_of


_NOTIFY = "notifies (aclrtNotify) are not simulated; use events (create_event, stream_wait_event)"

# the notify wrappers that check their arguments further before calling C (rt_notify.cpp)
def _int_list(value, not_list: str, bad_item: str) -> None:
    if not isinstance(value, list):
        raise Raise(ValueError(not_list))
    if not all(isinstance(v, int) for v in value):
        raise Raise(ValueError(bad_item))


def wait_and_reset_notify(notify, stream, timeout):
    if timeout < 0:
        raise Raise(TypeError("timeout can't be a negative number!"))
    if timeout >= 1 << 32:
        raise Raise(TypeError("timeout should be less than 2**32!"))
    _api.wait_and_reset_notify(_api.notify_of(notify), stream_of(stream), timeout)


def notify_batch_reset(notifies):
    _int_list(notifies, "argument only support the format of list", "get notify pointers from PyList failed")
    raise FeatureNotSupportedError(_NOTIFY)


def notify_get_export_key(notify, length, flag):
    if length >= 1024:
        raise Raise(ValueError("key len should be less than 1024"))
    key = _api.notify_get_export_key(_api.notify_of(notify), flag)
    if length <= len(key.encode()):
        raise _api.ParamInvalidError(f"notify_get_export_key: a key of {length} bytes cannot hold {key!r} "
                                     f"(pass {_api.ipc.KEY_LEN})")
    return key


def notify_set_import_pid(notify, pids):
    _int_list(pids, "argument 2 only support the format of list", "get values from PyList failed")
    _api.notify_set_import_pid(_api.notify_of(notify), pids)


def notify_import_by_key(key, flags):
    """The notify another process shared (npurt.runtime.ipc); its handle."""
    return _api.notify_import_by_key(key, flags).handle


_rt = Group("acl.rt")
wait_and_reset_notify = _rt.ret(args="kkL")(wait_and_reset_notify)


@_rt.one(0, args="K")
def create_notify(flag):
    """A notify (npurt.runtime.notify): record_notify sets it, wait_and_reset_notify waits and clears it."""
    return _api.create_notify(flag).handle


@_rt.ret(args="k")
def destroy_notify(notify):
    _api.destroy_notify(_api.notify_of(notify))


@_rt.ret(args="kk")
def record_notify(notify, stream):
    _api.record_notify(_api.notify_of(notify), stream_of(stream))


@_rt.one(0, args="k")
def get_notify_id(notify):
    return _api.notify_of(notify).notify_id


notify_batch_reset = _rt.ret(args="O")(notify_batch_reset)
notify_get_export_key = _rt.one("", args="kkK")(notify_get_export_key)
notify_set_import_pid = _rt.ret(args="kO")(notify_set_import_pid)
notify_import_by_key = _rt.one(0, args="sK")(notify_import_by_key)
notify_batch_reset.not_supported = True

_SUPPORTED = ["wait_and_reset_notify", "create_notify", "destroy_notify", "record_notify", "get_notify_id",
              "notify_get_export_key", "notify_set_import_pid", "notify_import_by_key"]
NOT_SUPPORTED = [n for n in _rt.names if n not in _SUPPORTED]
__all__ = [*NOT_SUPPORTED, *_SUPPORTED]
