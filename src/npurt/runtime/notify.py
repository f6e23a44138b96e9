"""Notifies and value waits: the lightweight stream-to-stream signals of acl_rt.h.

A notify (aclrtCreateNotify) is one hardware flag of a device. `record_notify(n, s)` queues
a task on `s` that sets the flag; `wait_and_reset_notify(n, s, timeout_ms)` queues a task
that parks `s` until the flag is set and clears it as it passes (wait and reset are one
step, so each record releases one wait). Unlike an event a notify carries no record history:
a wait queued before any record simply waits for one. The timeout is in milliseconds
(acl_rt.h); 0 and UINT32_MAX wait without one (rtsNotifyWaitAndReset sends UINT32_MAX to
rtNotifyWait; the sample stream/2_multi_stream passes 0 on chips whose wait takes no
timeout). An expired wait fails its task with ACL_ERROR_RT_WAIT_TIMEOUT, reported at the
next synchronize of the stream. The create flag must be ACL_NOTIFY_DEFAULT (0) or
ACL_NOTIFY_DEVICE_USE_ONLY (1) (rtsNotifyCreate: RT_ERROR_INVALID_VALUE, 107000, otherwise).

A value wait (aclrtValueWait) parks a stream until a 64-bit word of device memory meets a
condition with `value` (flag: ACL_STREAM_WAIT_VALUE_GEQ word >= value, _EQ word == value,
_AND word & value != 0, _NOR ~(word | value) != 0; ApiErrorDecorator::MemWaitValue refuses
flag >= 4 with 107000); aclrtValueWrite queues a task that stores the 64-bit `value` (flag
must be 0). Both take device memory only (a host address: 107000). The word may be written
by anything (a value write, a kernel, a copy): a parked wait is woken by every value write
of its device and re-checks the word every few milliseconds otherwise.
"""
from __future__ import annotations

import itertools
import threading
import time

import numpy as np

from .forking import fork_safe_lock
from . import constants as C
from . import address
from .address import locate
from .api.devices import current_device
from .api.streams import stream_of
from .errors import InvalidHandleError, ParamInvalidError, TaskError
from .handles import table
from .runtime import RUNTIME
from .scheduler import Blocker
from .tasks import Task
from .watchdog import WATCHDOG

NOTIFIES = table("notify")
NOTIFY_DEFAULT, NOTIFY_DEVICE_USE_ONLY = 0, 1   # acl_rt.h ACL_NOTIFY_DEFAULT, ACL_NOTIFY_DEVICE_USE_ONLY
_NO_TIMEOUT = (0, 0xFFFFFFFF)
_ids = itertools.count(0)
_POLL_S = 0.002   # how often a parked value wait looks at its word again


class Notify:
    """One notify of a device: a flag set by record tasks and cleared by the wait that sees it."""

    def __init__(self, device, flag: int):
        self.device, self.flag = device, flag
        self.notify_id = next(_ids)
        self.lock = threading.Lock()
        self.set = False
        self.watchers: list = []
        self.destroyed = False
        self.handle = NOTIFIES.add(self)

    def __repr__(self) -> str:
        return f"<npurt notify {self.notify_id} on device {self.device.id}: {'set' if self.set else 'clear'}>"

    def signal(self) -> None:
        with self.lock:
            self.set = True
            watchers, self.watchers = self.watchers, []
        for blocker in watchers:
            blocker.fire()

    def consume(self) -> bool:
        """Clear the flag if it is set (the wait's reset): True if it was."""
        with self.lock:
            if self.set:
                self.set = False
                return True
            return False


class NotifySet(Blocker):
    __slots__ = ("notify",)

    def __init__(self, notify: Notify):
        self.notify = notify

    def register(self) -> bool:
        n = self.notify
        with n.lock:
            if n.set:
                return False
            n.watchers.append(self)
            return True

    def waits_for(self):
        return ("notify", self.notify)

    def describe(self) -> str:
        return f"notify {self.notify.notify_id} to be recorded"


class RecordNotifyTask(Task):
    __slots__ = ("notify",)
    kind = "record_notify"

    def __init__(self, notify: Notify):
        self.notify = notify

    def run(self) -> None:
        self.notify.signal()

    def describe(self) -> str:
        return f"record_notify {self.notify.notify_id}"

    def details(self) -> dict:
        return {"notify": self.notify.notify_id}


class WaitNotifyTask(Task):
    __slots__ = ("notify", "timeout_ms", "timed_out", "passed")
    kind = "wait_and_reset_notify"
    may_block = True

    def __init__(self, notify: Notify, timeout_ms: int):
        self.notify, self.timeout_ms = notify, timeout_ms
        self.timed_out = self.passed = False

    def blocker(self):
        if self.timed_out or self.passed:
            return None
        if self.notify.consume():
            self.passed = True
            return None
        blocker = NotifySet(self.notify)
        if self.timeout_ms not in _NO_TIMEOUT:
            def expire():
                self.stream.scheduler.unpark(blocker, expired=self)
            blocker.waiter = self.stream
            WATCHDOG.call_at(time.monotonic() + self.timeout_ms / 1000, expire)
        return blocker

    def run(self) -> None:
        if self.timed_out and not self.passed:
            raise TaskError(f"wait_and_reset_notify on notify {self.notify.notify_id} timed out after "
                            f"{self.timeout_ms} ms: nothing recorded it", C.ACL_ERROR_RT_WAIT_TIMEOUT)

    def describe(self) -> str:
        return f"wait_and_reset_notify {self.notify.notify_id}"

    def details(self) -> dict:
        return {"notify": self.notify.notify_id}


# ---------------------------------------------------------------- operations
def create_notify(flag: int = NOTIFY_DEFAULT, device=None) -> Notify:
    """A new notify on `device` (default: the current context's device)."""
    if type(flag) is not int or flag not in (NOTIFY_DEFAULT, NOTIFY_DEVICE_USE_ONLY):
        raise ParamInvalidError(f"notify flag {flag!r} is not ACL_NOTIFY_DEFAULT (0) or "
                                "ACL_NOTIFY_DEVICE_USE_ONLY (1)")
    return Notify(device or current_device(), flag)


def notify_of(handle) -> Notify:
    """The live notify behind a handle (or a Notify itself)."""
    notify = handle if isinstance(handle, Notify) else NOTIFIES.get(handle)
    if notify.destroyed:
        raise InvalidHandleError(f"notify {notify.notify_id} was destroyed")
    return notify


def destroy_notify(notify: Notify) -> None:
    notify.destroyed = True
    NOTIFIES.remove(notify.handle)


def _same_device(notify: Notify, stream, what: str) -> None:
    if stream.device is not notify.device:
        raise ParamInvalidError(f"{what}: notify {notify.notify_id} belongs to device {notify.device.id}, "
                                f"the stream to device {stream.device.id}")


def record_notify(notify: Notify, stream=None) -> int:
    stream = stream_of(stream)
    _same_device(notify, stream, "record_notify")
    return stream.enqueue(RecordNotifyTask(notify))


def wait_and_reset_notify(notify: Notify, stream=None, timeout_ms: int = 0) -> int:
    stream = stream_of(stream)
    if type(timeout_ms) is not int or not 0 <= timeout_ms <= 0xFFFFFFFF:
        raise ParamInvalidError(f"timeout {timeout_ms!r} is not a uint32 number of milliseconds")
    _same_device(notify, stream, "wait_and_reset_notify")
    return stream.enqueue(WaitNotifyTask(notify, timeout_ms))


# ---------------------------------------------------------------- value write / wait
_CONDITIONS = {
    C.ACL_STREAM_WAIT_VALUE_GEQ: (lambda word, v: word >= v, ">="),
    C.ACL_STREAM_WAIT_VALUE_EQ: (lambda word, v: word == v, "=="),
    C.ACL_STREAM_WAIT_VALUE_AND: (lambda word, v: (word & v) != 0, "&"),
    C.ACL_STREAM_WAIT_VALUE_NOR: (lambda word, v: (~(word | v) & 0xFFFFFFFFFFFFFFFF) != 0, "nor"),
}
_value_watchers: dict = {}   # device -> blockers of value waits parked on it
_watch_lock = fork_safe_lock()


def _word(addr: int) -> int:
    return int(address.view(addr, 8).view(np.uint64)[0])


def _device_word(rt, addr, what: str):
    if type(addr) is not int or addr == 0:
        raise ParamInvalidError(f"{what}: devAddr {addr!r} is not a device address")
    span = locate(rt, addr, 8, "value")
    if span.device is None:
        raise ParamInvalidError(f"{what}: 0x{addr:x} is host memory; the word must be device memory")
    return span


def _uint64(value, what: str) -> int:
    if type(value) is not int or not 0 <= value <= 0xFFFFFFFFFFFFFFFF:
        raise ParamInvalidError(f"{what}: value {value!r} is not a uint64")
    return value


class ValueWriteTask(Task):
    __slots__ = ("addr", "value", "device")
    kind = "value_write"
    batchable = True

    def __init__(self, addr: int, value: int, device):
        self.addr, self.value, self.device = addr, value, device

    def run(self) -> None:
        address.view(self.addr, 8).view(np.uint64)[0] = self.value
        with _watch_lock:
            watchers = _value_watchers.pop(self.device, [])
        for blocker in watchers:
            blocker.fire()

    def accesses(self) -> tuple:
        return ((self.addr, 8, "w"),)

    def describe(self) -> str:
        return f"value_write 0x{self.addr:x} = {self.value}"


class ValueMet(Blocker):
    __slots__ = ("task",)

    def __init__(self, task: "ValueWaitTask"):
        self.task = task

    def register(self) -> bool:
        if self.task.met():
            return False
        with _watch_lock:
            _value_watchers.setdefault(self.task.device, []).append(self)
        WATCHDOG.call_at(time.monotonic() + _POLL_S, self.fire)  # the word may change by other means
        return True

    def waits_for(self):
        return ("value", self.task.addr)

    def describe(self) -> str:
        t = self.task
        return (f"the word at 0x{t.addr:x} ({_word(t.addr)}) to satisfy {_CONDITIONS[t.flag][1]} {t.value}")


class ValueWaitTask(Task):
    __slots__ = ("addr", "value", "flag", "device")
    kind = "value_wait"
    may_block = True

    def __init__(self, addr: int, value: int, flag: int, device):
        self.addr, self.value, self.flag, self.device = addr, value, flag, device

    def met(self) -> bool:
        return _CONDITIONS[self.flag][0](_word(self.addr), self.value)

    def blocker(self):
        return None if self.met() else ValueMet(self)

    def run(self) -> None:
        pass

    def accesses(self) -> tuple:
        return ((self.addr, 8, "r"),)

    def describe(self) -> str:
        return f"value_wait 0x{self.addr:x} {_CONDITIONS[self.flag][1]} {self.value}"


def value_write(addr, value, flag=0, stream=None) -> int:
    """Queue the store of the 64-bit `value` at device address `addr` (aclrtValueWrite)."""
    stream = stream_of(stream)
    span = _device_word(RUNTIME, addr, "value_write")
    value = _uint64(value, "value_write")
    if flag != 0:
        raise ParamInvalidError(f"value_write: flag {flag!r} is reserved and must be 0")
    return stream.enqueue(ValueWriteTask(addr, value, span.device), holders=(span.block,))


def value_wait(addr, value, flag=C.ACL_STREAM_WAIT_VALUE_GEQ, stream=None) -> int:
    """Queue a wait until the 64-bit word at `addr` meets `flag` with `value` (aclrtValueWait)."""
    stream = stream_of(stream)
    span = _device_word(RUNTIME, addr, "value_wait")
    value = _uint64(value, "value_wait")
    if flag not in _CONDITIONS:
        raise ParamInvalidError(f"value_wait: flag {flag!r} is not an ACL_STREAM_WAIT_VALUE_* mode (0..3)")
    return stream.enqueue(ValueWaitTask(addr, value, flag, span.device), holders=(span.block,))
