"""Notifies and value waits (acl_rt.h: aclrtCreateNotify ... aclrtGetNotifyId, aclrtValueWrite,
aclrtValueWait) over the runtime's notify operations (npurt.runtime.notify): stream tasks that
park the waiting stream, never a worker."""
from __future__ import annotations

from ... import runtime as rt
from ..registry import c_function
from ._common import note_task, null, stream_of


def _notify(handle):
    if not handle:
        raise null("notify")
    return rt.notify_of(handle)


@c_function("aclrtCreateNotify")
def aclrtCreateNotify(notify, flag):
    if not notify:
        raise null("notify")
    notify[0] = rt.create_notify(flag).handle
    return 0


@c_function("aclrtDestroyNotify")
def aclrtDestroyNotify(notify):
    rt.destroy_notify(_notify(notify))
    return 0


@c_function("aclrtRecordNotify")
def aclrtRecordNotify(notify, stream):
    note_task(rt.record_notify(_notify(notify), stream_of(stream)))
    return 0


@c_function("aclrtWaitAndResetNotify")
def aclrtWaitAndResetNotify(notify, stream, timeout):
    note_task(rt.wait_and_reset_notify(_notify(notify), stream_of(stream), timeout))
    return 0


@c_function("aclrtGetNotifyId")
def aclrtGetNotifyId(notify, notifyId):
    n = _notify(notify)
    if not notifyId:
        raise null("notifyId")
    notifyId[0] = n.notify_id
    return 0


@c_function("aclrtValueWrite")
def aclrtValueWrite(devAddr, value, flag, stream):
    if not devAddr:
        raise null("devAddr")
    note_task(rt.value_write(devAddr, value, flag, stream_of(stream)))
    return 0


@c_function("aclrtValueWait")
def aclrtValueWait(devAddr, value, flag, stream):
    if not devAddr:
        raise null("devAddr")
    note_task(rt.value_wait(devAddr, value, flag, stream_of(stream)))
    return 0
