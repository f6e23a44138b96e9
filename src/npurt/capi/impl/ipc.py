"""IPC between the processes that share a simulated device (acl_rt.h): IPC memory
(aclrtIpcMemGetExportKey, SetImportPid, ImportByKey, SetAttr, Close), IPC events
(aclrtIpcGetEventHandle, OpenEventHandle) and IPC notifies (aclrtNotifyGetExportKey,
ImportByKey, SetImportPid), over the runtime's operations (npurt.runtime.ipc).

Keys are C strings of at most 64 characters; the caller's buffer holds `len` bytes (the runtime
documents 65). The super-pod variants (…InterServer) stay stubs: one host is simulated.
"""
from __future__ import annotations

from ... import runtime as rt
from .. import cdata
from ..registry import c_function
from ._common import event_of, null

_IPC_MEM_ATTR_ACCESS_LINK = 0            # aclrtIpcMemAttrType ACL_RT_IPC_MEM_ATTR_ACCESS_LINK
_ACCESS_LINKS = (0, 1, 2, 3)             # ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_SIO ... _UB_MULTI_PORT_PATH


def _put_key(key_ptr: int, length: int, key: str) -> None:
    data = key.encode() + b"\0"
    if type(length) is not int or length < len(data):
        raise rt.ParamInvalidError(f"the key buffer of {length} bytes cannot hold the {len(data)}-byte key "
                                   f"(pass len = {rt.ipc.KEY_LEN})")
    cdata.write(key_ptr, data)


def _key(key_ptr: int) -> str:
    if not key_ptr:
        raise null("key")
    return cdata.string(key_ptr)


def _pids(pid_ptr: int, num: int) -> list[int]:
    if not pid_ptr:
        raise rt.ParamInvalidError("pid is NULL")
    if type(num) is not int or num <= 0:
        raise rt.ParamInvalidError(f"num {num!r} must be in (0, {2**31 - 1}]")
    return cdata.array("int32_t", pid_ptr, num)


def _notify(handle):
    if not handle:
        raise null("notify")
    return rt.notify_of(handle)


@c_function("aclrtIpcMemGetExportKey")
def aclrtIpcMemGetExportKey(devPtr, size, key, len, flags):  # noqa: A002 - the C parameter's name
    if not devPtr:
        raise null("devPtr")
    if not key:
        raise null("key")
    _put_key(key, len, rt.ipc_mem_get_export_key(devPtr, size, flags))
    return 0


@c_function("aclrtIpcMemSetImportPid")
def aclrtIpcMemSetImportPid(key, pid, num):
    rt.ipc_mem_set_import_pid(_key(key), _pids(pid, num))
    return 0


@c_function("aclrtIpcMemImportByKey")
def aclrtIpcMemImportByKey(devPtr, key, flags):
    if not devPtr:
        raise null("devPtr")
    devPtr[0] = rt.ipc_mem_import_by_key(_key(key), flags)
    return 0


@c_function("aclrtIpcMemClose")
def aclrtIpcMemClose(key):
    rt.ipc_mem_close(_key(key))
    return 0


@c_function("aclrtIpcMemSetAttr")
def aclrtIpcMemSetAttr(key, type, attr):  # noqa: A002 - the C parameter's name
    name = _key(key)
    if type != _IPC_MEM_ATTR_ACCESS_LINK:
        raise rt.ParamInvalidError(f"aclrtIpcMemSetAttr: attribute type {type} is not ACL_RT_IPC_MEM_ATTR_ACCESS_LINK (0)")
    if attr not in _ACCESS_LINKS:
        raise rt.ParamInvalidError(f"aclrtIpcMemSetAttr: access link {attr} is not one of "
                                   "ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_SIO/HCCS/UB_ONE_PORT_PATH/UB_MULTI_PORT_PATH (0-3)")
    rt.ipc.set_attribute(name, "access_link", attr)
    return 0


@c_function("aclrtIpcGetEventHandle")
def aclrtIpcGetEventHandle(event, handle):
    if not handle:
        raise null("handle")
    cdata.write(handle, rt.ipc_get_event_handle(event_of(event)))
    return 0


@c_function("aclrtIpcOpenEventHandle")
def aclrtIpcOpenEventHandle(handle, event):
    if not event:
        raise null("event")
    data = cdata.read(handle, rt.ipc.EVENT_HANDLE_SIZE)
    event[0] = rt.ipc_open_event_handle(data).handle
    return 0


@c_function("aclrtNotifyGetExportKey")
def aclrtNotifyGetExportKey(notify, key, len, flags):  # noqa: A002 - the C parameter's name
    if not key:
        raise null("key")
    _put_key(key, len, rt.notify_get_export_key(_notify(notify), flags))
    return 0


@c_function("aclrtNotifyImportByKey")
def aclrtNotifyImportByKey(notify, key, flags):
    if not notify:
        raise null("notify")
    notify[0] = rt.notify_import_by_key(_key(key), flags).handle
    return 0


@c_function("aclrtNotifySetImportPid")
def aclrtNotifySetImportPid(notify, pid, num):
    rt.notify_set_import_pid(_notify(notify), _pids(pid, num))
    return 0
