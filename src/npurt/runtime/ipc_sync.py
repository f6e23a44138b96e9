"""IPC events and notifies: the stream-to-stream signals one process shares with others (acl_rt.h).

Events (aclrtIpcGetEventHandle / OpenEventHandle): an event created with ACL_EVENT_IPC
becomes shared when its handle is taken (64 bytes holding the key). Its record count and
completed count then live in a shared word file; a record in any process bumps the first, the
record task the second; waits, queries and synchronizes in any process compare them. A parked
stream looks again every few milliseconds (another process cannot wake it).

Notifies (aclrtNotifyGetExportKey / ImportByKey / SetImportPid; their flags are 0 and 2,
ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION and _IMPORT_FLAG_ENABLE_PEER_ACCESS): the flag of an exported
notify is a shared word; a record in any process sets it, a wait in any process clears it as
it passes (under an flock, so one record releases one wait).

The keys, allow-lists and lifetimes are those of IPC memory (ipc.py).
"""
from __future__ import annotations

import fcntl
import mmap
import os
import time

import numpy as np

from . import constants as C
from .api.devices import current_device
from .errors import InvalidHandleError, NpuError, ParamInvalidError
from .event import Event, Record, RecordTask
from .ipc import (EVENT_HANDLE_SIZE, _Export, _check_importer, _exports, _key_arg, _lock, _read, _registry,
                  _set_pids)
from .notify import Notify
from .runtime import RUNTIME
from .scheduler import Blocker
from .tasks import NopTask, Task
from .watchdog import WATCHDOG
from ..driver.ipc import IpcRegistry, NoRecord

NOTIFY_EXPORT_FLAG_DEFAULT, NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION = 0x0, 0x2  # ACL_RT_NOTIFY_EXPORT_FLAG_*
NOTIFY_IMPORT_FLAG_DEFAULT, NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS = 0x0, 0x2     # ACL_RT_NOTIFY_IMPORT_FLAG_*
_POLL_S = 0.002   # how often a parked stream looks at a shared word again
_SYNC_BYTES = 4096


# ---------------------------------------------------------------- shared words
class _Words:
    """A small shared file of int64 words next to an export's record (`<key>.sync`)."""

    def __init__(self, path: str, create: bool):
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        self.fd = os.open(path, flags, 0o600)
        if create:
            os.ftruncate(self.fd, _SYNC_BYTES)
        self.mm = mmap.mmap(self.fd, _SYNC_BYTES, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        self.words = np.frombuffer(self.mm, dtype=np.int64)

    def locked(self):
        return _Flock(self.fd)


class _Flock:
    __slots__ = ("fd",)

    def __init__(self, fd):
        self.fd = fd

    def __enter__(self):
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)


def _words_path(registry: IpcRegistry, key: str) -> str:
    return registry.path(key) + ".sync"


class _WordBlocker(Blocker):
    """A parked stream waiting for a shared word: polled, since another process cannot wake it."""

    __slots__ = ("met", "what")

    def __init__(self, met, what: str):
        self.met, self.what = met, what

    def register(self) -> bool:
        if self.met():
            return False
        WATCHDOG.call_at(time.monotonic() + _POLL_S, self.fire)
        return True

    def describe(self) -> str:
        return self.what


# ---------------------------------------------------------------- events
class IpcRecord(Record):
    __slots__ = ("generation",)


class IpcEvent(Event):
    """An event shared between processes: the class an ACL_EVENT_IPC event takes when its
    handle is exported, and the class of the event an importer opens."""

    ipc_key: str
    _sync: _Words

    def _shared_counts(self) -> tuple[int, int]:
        w = self._sync.words
        return int(w[0]), int(w[1])

    def record_on(self, stream) -> int:
        rec = IpcRecord(stream)
        rec.generation = 0

        def publish(seq: int) -> None:
            rec.seq = seq
            with self._sync.locked():
                rec.generation = int(self._sync.words[0]) + 1
                self._sync.words[0] = rec.generation
            with self.lock:
                self.record = rec
                self.has_reset = False
                self.cond.notify_all()

        return stream.enqueue(RecordTask(self, rec), on_seq=publish)

    def completed(self, rec) -> None:
        generation = getattr(rec, "generation", 0)
        if generation:
            with self._sync.locked():
                if self._sync.words[1] < generation:
                    self._sync.words[1] = generation
        super().completed(rec)

    def wait_on(self, stream) -> int:
        target = self._shared_counts()[0]
        if target == 0:
            return stream.enqueue(NopTask())  # nothing recorded anywhere yet: nothing to wait for
        return stream.enqueue(_SharedEventWait(self, target))

    def _done(self, target: int) -> bool:
        return self._shared_counts()[1] >= target

    def status_complete(self) -> bool:
        recorded, completed = self._shared_counts()
        return completed >= recorded

    query_complete = is_complete = status_complete

    def synchronize(self, timeout_ms: int = -1) -> None:
        target = self._shared_counts()[0]
        rec = self.record
        if rec is not None and getattr(rec, "generation", 0) == target:  # our own record: run it here
            super().synchronize(timeout_ms)
            return
        deadline = None if timeout_ms in (-1, None) else time.monotonic() + timeout_ms / 1000
        while not self._done(target):
            if deadline is not None and time.monotonic() > deadline:
                raise NpuError(f"synchronize_event timed out after {timeout_ms} ms waiting for IPC event "
                               f"{self.ipc_key}", C.ACL_ERROR_RT_EVENT_SYNC_TIMEOUT)
            time.sleep(_POLL_S)


class _SharedEventWait(Task):
    __slots__ = ("event", "target")
    kind = "stream_wait_event"
    may_block = True

    def __init__(self, event: IpcEvent, target: int):
        self.event, self.target = event, target

    def blocker(self):
        if self.event._done(self.target):
            return None
        return _WordBlocker(lambda: self.event._done(self.target),
                            f"IPC event {self.event.ipc_key} record #{self.target} (another process)")

    def run(self) -> None:
        pass

    def describe(self) -> str:
        return f"stream_wait_event (IPC) {self.event.ipc_key}"


def ipc_get_event_handle(event: Event) -> bytes:
    """The 64-byte handle of an ACL_EVENT_IPC event (another process opens it)."""
    what = "ipc_get_event_handle"
    if event.destroyed:
        raise InvalidHandleError(f"{what}: event {event.event_id} was destroyed")
    if not event.flags & C.ACL_EVENT_IPC:
        raise ParamInvalidError(f"{what}: event {event.event_id} was not created with ACL_EVENT_IPC "
                                f"(flags {event.flags:#x}); create it with create_event_ex_with_flag(ACL_EVENT_IPC)")
    if isinstance(event, IpcEvent):
        return event.ipc_key.encode().ljust(EVENT_HANDLE_SIZE, b"\0")
    registry = _registry(event.device)
    key = registry.create("evt", event.device.backend.physical_id, {"validate": False})
    words = _Words(_words_path(registry, key), create=True)
    rec = event.record
    with event.lock:
        event.__class__ = IpcEvent
        event.ipc_key, event._sync = key, words
        if rec is not None:  # a record made before the export counts as generation 1
            if isinstance(rec, Record) and not isinstance(rec, IpcRecord):
                words.words[0] = 1
                words.words[1] = 1 if rec.ran else 0
                if not rec.ran:  # it completes later: mirror it then
                    rec.stream.on_retired(rec.seq, lambda: _complete_word(words, 1))
    with _lock:
        _exports[key] = _Export(key, event.device, "evt", obj=event)
    return key.encode().ljust(EVENT_HANDLE_SIZE, b"\0")


def _complete_word(words: _Words, generation: int) -> None:
    with words.locked():
        if words.words[1] < generation:
            words.words[1] = generation


def ipc_open_event_handle(handle) -> IpcEvent:
    """The event another process exported with ipc_get_event_handle."""
    what = "ipc_open_event_handle"
    raw = bytes(handle)[:EVENT_HANDLE_SIZE] if isinstance(handle, (bytes, bytearray, memoryview)) else None
    if raw is None:
        raise ParamInvalidError(f"{what}: the handle must be the 64 bytes ipc_get_event_handle gave, "
                                f"got {type(handle).__name__}")
    key = _key_arg(raw, what)
    device = current_device()
    registry = _registry(device)
    record = _read(registry, key, "evt", what)
    _check_importer(record, key, what)
    target = RUNTIME.device_by_physical.get(record["device"]) or device
    try:
        words = _Words(_words_path(registry, key), create=False)
        registry.add_importer(key)
    except (FileNotFoundError, NoRecord):
        raise ParamInvalidError(f"{what}: the IPC event {key!r} went away while it was being opened") from None
    event = IpcEvent.__new__(IpcEvent)
    Event.__init__(event, target, C.ACL_EVENT_IPC, ex=True, counted=False)
    event.ipc_key, event._sync = key, words
    event.handle = RUNTIME.events.add(event)
    return event


# ---------------------------------------------------------------- notifies
class _PolledWatchers(list):
    """The watchers of a shared notify: each parked wait is polled (a record in another
    process cannot fire it)."""

    def __init__(self, notify: "IpcNotify"):
        super().__init__()
        self.notify = notify

    def append(self, blocker) -> None:
        super().append(blocker)
        WATCHDOG.call_at(time.monotonic() + _POLL_S, lambda: self._poll(blocker))

    def _poll(self, blocker) -> None:
        if blocker not in self:
            return
        if self.notify._sync.words[0]:
            try:
                self.remove(blocker)
            except ValueError:
                return
            blocker.fire()
        else:
            WATCHDOG.call_at(time.monotonic() + _POLL_S, lambda: self._poll(blocker))


class IpcNotify(Notify):
    """A notify shared between processes: its flag is a shared word."""

    ipc_key: str
    _sync: _Words

    @property
    def set(self) -> bool:  # noqa: A003 - the attribute Notify reads
        return bool(self._sync.words[0])

    @set.setter
    def set(self, value: bool) -> None:
        self._sync.words[0] = 1 if value else 0

    def consume(self) -> bool:
        with self.lock, self._sync.locked():
            if self._sync.words[0]:
                self._sync.words[0] = 0
                return True
            return False


def _share_notify(notify: Notify, key: str, words: _Words) -> None:
    with notify.lock:
        was_set = notify.set
        notify.__class__ = IpcNotify
        notify.ipc_key, notify._sync = key, words
        pending = list(notify.watchers)
        notify.watchers = _PolledWatchers(notify)
        if was_set:
            words.words[0] = 1
    for blocker in pending:
        notify.watchers.append(blocker)


def notify_get_export_key(notify: Notify, flags: int = NOTIFY_EXPORT_FLAG_DEFAULT) -> str:
    """Share a notify with other processes; its key (aclrtNotifyGetExportKey)."""
    what = "notify_get_export_key"
    if type(flags) is not int or flags not in (NOTIFY_EXPORT_FLAG_DEFAULT, NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION):
        raise ParamInvalidError(f"{what}: flags {flags!r} is not ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT (0) or "
                                "_DISABLE_PID_VALIDATION (2)")
    if notify.destroyed:
        raise InvalidHandleError(f"{what}: notify {notify.notify_id} was destroyed")
    if isinstance(notify, IpcNotify):
        raise ParamInvalidError(f"{what}: notify {notify.notify_id} is shared already ({notify.ipc_key})")
    registry = _registry(notify.device)
    key = registry.create("ntf", notify.device.backend.physical_id, {"validate": flags == NOTIFY_EXPORT_FLAG_DEFAULT})
    _share_notify(notify, key, _Words(_words_path(registry, key), create=True))
    with _lock:
        _exports[key] = _Export(key, notify.device, "ntf", obj=notify)
    return key


def notify_set_import_pid(notify: Notify, pids) -> None:
    key = getattr(notify, "ipc_key", None)
    if key is None or key not in _exports:
        raise ParamInvalidError(f"notify_set_import_pid: notify {notify.notify_id} is not one this process "
                                "exported (notify_get_export_key first)")
    _set_pids(key, pids, "notify_set_import_pid")


def notify_import_by_key(key, flags: int = NOTIFY_IMPORT_FLAG_DEFAULT) -> IpcNotify:
    """The notify another process exported (aclrtNotifyImportByKey)."""
    what = "notify_import_by_key"
    key = _key_arg(key, what)
    if type(flags) is not int or flags not in (NOTIFY_IMPORT_FLAG_DEFAULT, NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS):
        raise ParamInvalidError(f"{what}: flags {flags!r} is not ACL_RT_NOTIFY_IMPORT_FLAG_DEFAULT (0) or "
                                "_ENABLE_PEER_ACCESS (2)")
    device = current_device()
    registry = _registry(device)
    record = _read(registry, key, "ntf", what)
    _check_importer(record, key, what)
    try:
        words = _Words(_words_path(registry, key), create=False)
        registry.add_importer(key)
    except (FileNotFoundError, NoRecord):
        raise ParamInvalidError(f"{what}: the IPC notify {key!r} went away while it was being imported") from None
    notify = Notify(device, 0)
    _share_notify(notify, key, words)
    return notify



__all__ = ["IpcEvent", "IpcNotify", "ipc_get_event_handle", "ipc_open_event_handle", "notify_get_export_key",
           "notify_set_import_pid", "notify_import_by_key", "NOTIFY_EXPORT_FLAG_DEFAULT",
           "NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION", "NOTIFY_IMPORT_FLAG_DEFAULT",
           "NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS"]
