"""IPC: device memory, events and notifies that one process shares with others (acl_rt.h).

The processes of a device namespace share the simulated devices (npurt.driver.shared), so an
allocation has the same device address everywhere; IPC only has to say who may use what.
An export is a record in the namespace's registry (npurt.driver.ipc), named by its key.

Memory (aclrtIpcMemGetExportKey / SetImportPid / ImportByKey / Close):
* `ipc_mem_get_export_key(ptr, size, flags)`: [ptr, ptr + size) of a live allocation of this
  process becomes importable. flags 0 (ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT) checks importers
  against the pid allow-list that `ipc_mem_set_import_pid` fills; 1 (_DISABLE_PID_VALIDATION)
  lets any process of the namespace import it. Other flags, a size of 0 or past the
  allocation, a host or foreign pointer: ACL_ERROR_RT_PARAM_INVALID (107000).
* `ipc_mem_import_by_key(key, flags)`: the importer gets the exporter's address (equal in every
  process); it reads and writes the memory with copies and kernels like its own, and cannot
  free it (107000: close it). A process not on the allow-list: ACL_ERROR_RT_NO_PERMISSION
  (207006: the driver's DRV_ERROR_OPER_NOT_PERMITTED, errcode_manage.cc). A key nobody
  exported, forged, already closed by its exporter, or whose exporter died: 107000 (the
  driver's DRV_ERROR_INVALID_VALUE). Importing the same key twice is allowed (api_impl's
  vaList): the same address, closed once per import. The exporter importing its own key: 107000.
* `ipc_mem_close(key)`: in an importer, ends one import; in the exporter, ends the export (no
  new imports). The runtime documents importers closing first; if the exporter closes or frees
  first, the memory stays reserved until the last import is closed (its block waits, as a
  stream-ordered free does; if the exporter exits, its chunks stay the importers' orphans), so
  no later allocation of anyone aliases memory another process still imports.

Events (aclrtIpcGetEventHandle / OpenEventHandle): an event created with ACL_EVENT_IPC
becomes shared when its handle is taken (64 bytes holding the key). Its record count and
completed count then live in a shared word file; a record in any process bumps the first, the
record task the second; waits, queries and synchronizes in any process compare them. A parked
stream looks again every few milliseconds (another process cannot wake it).

Notifies (aclrtNotifyGetExportKey / ImportByKey / SetImportPid; their flags are 0 and 2,
ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION and _IMPORT_FLAG_ENABLE_PEER_ACCESS): the flag of an exported
notify is a shared word; a record in any process sets it, a wait in any process clears it as
it passes (under an flock, so one record releases one wait).

A device reset, finalize or exit closes this process's exports and imports of that device.
"""
from __future__ import annotations

import bisect
import fcntl
import mmap
import os
import time

import numpy as np

from . import constants as C
from .address import locate
from .api.devices import current_device
from .errors import FeatureNotSupportedError, InvalidHandleError, InvalidValueError, NpuError, ParamInvalidError
from .event import Event, Record, RecordTask
from .forking import fork_safe_lock, on_fork_child
from .memory import LIVE, Block, Segment
from .notify import Notify
from .runtime import RUNTIME
from .scheduler import Blocker
from .stream import Stream
from .tasks import NopTask, Task
from .watchdog import WATCHDOG
from ..driver.ipc import KEY_LEN, IpcRegistry, NoRecord
from ..driver.processes import alive
from ..driver.shared import namespace_dir

EXPORT_FLAG_DEFAULT, EXPORT_FLAG_DISABLE_PID_VALIDATION = 0x0, 0x1   # ACL_RT_IPC_MEM_EXPORT_FLAG_*
IMPORT_FLAG_DEFAULT, IMPORT_FLAG_ENABLE_PEER_ACCESS = 0x0, 0x1       # ACL_RT_IPC_MEM_IMPORT_FLAG_*
NOTIFY_EXPORT_FLAG_DEFAULT, NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION = 0x0, 0x2  # ACL_RT_NOTIFY_EXPORT_FLAG_*
NOTIFY_IMPORT_FLAG_DEFAULT, NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS = 0x0, 0x2     # ACL_RT_NOTIFY_IMPORT_FLAG_*
EVENT_HANDLE_SIZE = 64                                                # ACL_IPC_EVENT_HANDLE_SIZE
_POLL_S = 0.002   # how often a parked stream looks at a shared word again
_SYNC_BYTES = 4096

_lock = fork_safe_lock()
_exports: dict[str, "_Export"] = {}    # key -> what this process exported
_imports: dict[str, "_Import"] = {}    # key -> what this process imported (memory)


class _Export:
    __slots__ = ("key", "device", "block", "pin", "kind", "obj")

    def __init__(self, key, device, kind, block=None, obj=None):
        self.key, self.device, self.kind, self.block, self.obj = key, device, kind, block, obj
        self.pin = None


class _Import:
    __slots__ = ("key", "device", "block", "count")

    def __init__(self, key, device, block):
        self.key, self.device, self.block, self.count = key, device, block, 1


# ---------------------------------------------------------------- the namespace
def _registry(device) -> IpcRegistry:
    backend = device.backend
    if not getattr(backend, "shared", False):
        raise FeatureNotSupportedError(
            "IPC needs devices shared between processes: this process has private devices "
            "(NPURT_SHARED_DEVICES=0, or the null driver); unset NPURT_SHARED_DEVICES")
    return IpcRegistry(backend.arena.directory)


def _key_arg(key, what: str) -> str:
    if isinstance(key, (bytes, bytearray)):
        key = bytes(key).split(b"\0", 1)[0].decode("ascii", "replace")
    if not isinstance(key, str) or not key:
        raise ParamInvalidError(f"{what}: the key must be a non-empty string, got {key!r}")
    return key


def _read(registry: IpcRegistry, key: str, kind: str, what: str) -> dict:
    try:
        record = registry.read(key)
    except NoRecord:
        raise ParamInvalidError(
            f"{what}: no {_KIND_NAMES[kind]} has the key {key!r} in device namespace "
            f"{os.path.basename(registry.directory)!r}: it was never exported, was closed, or its process "
            "exited (a key is only valid while its exporter keeps it open)") from None
    if record["kind"] != kind:
        raise ParamInvalidError(f"{what}: the key {key!r} names {_KIND_NAMES[record['kind']]}, "
                                f"not {_KIND_NAMES[kind]}")
    return record


_KIND_NAMES = {"mem": "IPC memory", "evt": "IPC event", "ntf": "IPC notify"}


def _check_importer(record: dict, key: str, what: str) -> None:
    if record["closed"] or not alive(record["owner"]):
        raise ParamInvalidError(f"{what}: the key {key!r} is stale: its exporter (pid {record['owner'][0]}) "
                                + ("closed it" if record["closed"] else "has exited"))
    pid = os.getpid()
    if record["owner"][0] == pid:
        raise ParamInvalidError(f"{what}: process {pid} exported {key!r} itself; use the original "
                                "handle or pointer instead of importing it")
    if record["validate"] and pid not in record["allowed"]:
        raise NpuError(
            f"{what}: process {pid} is not on the allow-list of {key!r} (allowed: "
            f"{record['allowed'] or 'none yet'}); the exporter adds importers with "
            "SetImportPid (aclrtDeviceGetBareTgid gives an importer its pid), or exports with "
            "the DISABLE_PID_VALIDATION flag", C.ACL_ERROR_RT_NO_PERMISSION)


def _set_pids(key: str, pids, what: str) -> None:
    export = _exports.get(key)
    if export is None:
        raise ParamInvalidError(f"{what}: {key!r} is not a key this process exported")
    if isinstance(pids, int):
        pids = [pids]
    pids = list(pids)
    if not pids:
        raise ParamInvalidError(f"{what}: num must be in (0, {2**31 - 1}]; no pid given")
    for pid in pids:
        if type(pid) is not int or not 0 < pid < 2**31:
            raise ParamInvalidError(f"{what}: {pid!r} is not a process id")
    _registry(export.device).update(key, lambda r: dict(r, allowed=r["allowed"] + [p for p in pids
                                                                                 if p not in r["allowed"]]))


# ---------------------------------------------------------------- memory
class _ImportPin:
    """Stands in `block.uses` of exported memory as a stream whose work never finishes while
    the export is open or another process imports the memory, so that freeing it parks the
    block (as a stream-ordered free waits for queued work) instead of handing it to a new
    allocation."""

    __slots__ = ("registry", "key", "stream_id", "device", "block", "close_on_free")

    def __init__(self, registry: IpcRegistry, key: str, device, block):
        self.registry, self.key, self.device, self.block = registry, key, device, block
        self.stream_id = f"ipc:{key}"
        self.close_on_free = False

    @property
    def completed_seq(self) -> int:
        try:
            record = self.registry.read(self.key)
        except NoRecord:
            return 1
        if self.close_on_free and self.block.state != LIVE and not any(alive(w) for w in record["importers"]):
            _close_freed(self.key)  # freed by its owner and imported by nobody now: the export ends
            return 1
        return 0 if IpcRegistry.held(record) else 1

    def synchronize(self, *_args, **_kwargs):
        raise NpuError(f"memory exported as {self.key} is still imported by another process",
                       C.ACL_ERROR_RT_MEMORY_ALLOCATION)

    def __repr__(self) -> str:
        return f"<IPC export {self.key}>"


def ipc_mem_get_export_key(ptr, size, flags: int = EXPORT_FLAG_DEFAULT) -> str:
    """Make [ptr, ptr + size) of this process's device memory importable; its key."""
    what = "ipc_mem_get_export_key"
    if type(flags) is not int or flags not in (EXPORT_FLAG_DEFAULT, EXPORT_FLAG_DISABLE_PID_VALIDATION):
        raise ParamInvalidError(f"{what}: flags {flags!r} is not ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT (0) or "
                                "_DISABLE_PID_VALIDATION (1)")
    if type(size) is not int or size <= 0:
        raise ParamInvalidError(f"{what}: size {size!r} must be a positive number of bytes")
    RUNTIME.ensure_initialized()
    try:
        span = locate(RUNTIME, ptr, size, "exported")
    except InvalidValueError as exc:  # the driver refuses what is not one allocation: DRV_ERROR_INVALID_VALUE
        raise ParamInvalidError(f"{what}: {exc.message}") from None
    if span.device is None:
        raise ParamInvalidError(f"{what}: 0x{ptr:x} is host memory; only device memory can be exported")
    block = span.block
    if block.pool is None:
        raise ParamInvalidError(f"{what}: 0x{ptr:x} is memory this process imported; only its exporter "
                                "can export it")
    device = span.device
    registry = _registry(device)
    backend = device.backend
    key = registry.create("mem", backend.physical_id, {
        "va": ptr, "offset": ptr - backend.va_base, "size": size,
        "validate": flags == EXPORT_FLAG_DEFAULT})
    export = _Export(key, device, "mem", block=block)
    export.pin = _ImportPin(registry, key, device, block)
    uses = block.uses
    if uses is None:
        block.uses = {export.pin: 1}
    else:
        uses[export.pin] = 1
    with _lock:
        _exports[key] = export
    return key


def export_open(key: str) -> bool:
    """Whether `key` is an export of this process that is still open."""
    return key in _exports


def close_when_freed(key: str) -> None:
    """End the export of `key` by itself once its owner freed the memory and no process
    imports it (torch.multiprocessing's rule: the sender keeps a tensor alive while it is used)."""
    export = _exports.get(key)
    if export is None or export.pin is None:
        raise ParamInvalidError(f"close_when_freed: {key!r} is not memory this process exported")
    export.pin.close_on_free = True


def _close_freed(key: str) -> None:
    with _lock:
        export = _exports.pop(key, None)
    if export is not None:
        _close_export(export)


def ipc_mem_set_import_pid(key, pids) -> None:
    """Allow the processes `pids` to import `key` (its exporter only)."""
    _set_pids(_key_arg(key, "ipc_mem_set_import_pid"), pids, "ipc_mem_set_import_pid")


def ipc_mem_import_by_key(key, flags: int = IMPORT_FLAG_DEFAULT) -> int:
    """Import the memory another process exported; its device address (the exporter's)."""
    what = "ipc_mem_import_by_key"
    key = _key_arg(key, what)
    if type(flags) is not int or flags not in (IMPORT_FLAG_DEFAULT, IMPORT_FLAG_ENABLE_PEER_ACCESS):
        raise ParamInvalidError(f"{what}: flags {flags!r} is not ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT (0) or "
                                "_ENABLE_PEER_ACCESS (1)")
    here = current_device()
    registry = _registry(here)
    with _lock:
        held = _imports.get(key)
        if held is not None:
            held.count += 1
            registry.add_importer(key)
            return held.block.addr
    record = _read(registry, key, "mem", what)
    _check_importer(record, key, what)
    device = RUNTIME.device_by_physical.get(record["device"])
    if device is None:
        raise ParamInvalidError(f"{what}: {key!r} is memory of physical device {record['device']}, which "
                                "this process does not see (ASCEND_RT_VISIBLE_DEVICES)")
    try:
        registry.add_importer(key)
    except NoRecord:
        raise ParamInvalidError(f"{what}: the key {key!r} was closed while it was being imported") from None
    block = _adopt(device, record["va"], record["size"])
    with _lock:
        _imports[key] = _Import(key, device, block)
    return block.addr


def _adopt(device, va: int, size: int) -> Block:
    """Enter imported memory in the device's tables as a live block no pool owns, so copies,
    kernels and lookups resolve it like this process's own memory."""
    memory = device.memory
    seg = Segment(va, size, 4096)
    block = Block(va, size, seg, None)
    block.state, block.requested, block.align32 = LIVE, size, True
    seg.first, seg.starts = block, [va]
    with memory.lock:
        memory.blocks[va] = block
        memory.segment_at[va] = seg
        bisect.insort(memory.segment_starts, va)
        memory.live[va] = block
    return block


def _disown(device, block: Block) -> None:
    memory = device.memory
    with memory.lock:
        if memory.live.get(block.addr) is block:
            del memory.live[block.addr]
        if memory.blocks.get(block.addr) is block:
            del memory.blocks[block.addr]
        if memory.segment_at.get(block.addr) is block.segment:
            del memory.segment_at[block.addr]
            i = bisect.bisect_left(memory.segment_starts, block.addr)
            if i < len(memory.segment_starts) and memory.segment_starts[i] == block.addr:
                del memory.segment_starts[i]


def ipc_mem_close(key) -> None:
    """End one import of `key` (importer) or the export (exporter)."""
    what = "ipc_mem_close"
    key = _key_arg(key, what)
    with _lock:
        held = _imports.get(key)
        export = _exports.get(key) if held is None else None
        if held is not None:
            held.count -= 1
            if held.count == 0:
                del _imports[key]
        elif export is not None and export.kind == "mem":
            del _exports[key]
    if held is not None:
        if held.count == 0:
            _wait_for_uses(held.block)
            _disown(held.device, held.block)
        _drop_import(held.device, key)
        return
    if export is None:
        raise ParamInvalidError(f"{what}: {key!r} is neither memory this process imported nor a key it "
                                "exported (or it was closed already)")
    _close_export(export)


def _wait_for_uses(block: Block) -> None:
    """Work queued on the imported memory finishes before the import goes."""
    for stream, seq in list((block.uses or {}).items()):
        if isinstance(stream, Stream):
            try:
                stream.synchronize(seq, report_errors=False)
            except NpuError:
                pass


def _drop_import(device, key: str) -> None:
    try:
        _registry(device).drop_importer(key)
    except NoRecord:
        pass
    device.backend.arena.reclaim()  # memory of an exporter that left is freed with its last import


def _close_export(export: "_Export") -> None:
    try:
        _registry(export.device).close_export(export.key)
    except NoRecord:
        pass


_attributes: dict[str, dict] = {}   # key -> attributes set on it here (aclrtIpcMemSetAttr)


def set_attribute(key, name: str, value: int) -> None:
    """Remember an attribute of IPC memory (aclrtIpcMemSetAttr's access link: the simulated
    device has one link kind, so it changes nothing); the key must exist."""
    key = _key_arg(key, "ipc_mem_set_attr")
    _read(_registry(current_device()), key, "mem", "ipc_mem_set_attr")
    _attributes.setdefault(key, {})[name] = value


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


# ---------------------------------------------------------------- lifetime
def _release(device, reason: str) -> None:
    """A device reset or finalize: this process's exports and imports of it end."""
    with _lock:
        exports = [e for e in _exports.values() if e.device is device]
        imports = [i for i in _imports.values() if i.device is device]
        for e in exports:
            del _exports[e.key]
        for i in imports:
            del _imports[i.key]
    for export in exports:
        _close_export(export)
    for held in imports:
        _disown(held.device, held.block)
        for _ in range(held.count):
            try:
                _registry(device).drop_importer(held.key)
            except (NoRecord, NpuError):
                break


def _forget() -> None:
    with _lock:
        _exports.clear()
        _imports.clear()
        _attributes.clear()


RUNTIME.release_hooks.append(_release)
on_fork_child(_forget)


def imported(ptr: int) -> bool:
    """Whether `ptr` is the address of IPC memory this process imported."""
    return any(i.block.addr == ptr for i in list(_imports.values()))


__all__ = ["ipc_mem_get_export_key", "ipc_mem_set_import_pid", "ipc_mem_import_by_key", "ipc_mem_close",
           "ipc_get_event_handle", "ipc_open_event_handle", "notify_get_export_key", "notify_set_import_pid",
           "notify_import_by_key", "IpcEvent", "IpcNotify", "KEY_LEN", "EVENT_HANDLE_SIZE", "imported",
           "EXPORT_FLAG_DEFAULT", "EXPORT_FLAG_DISABLE_PID_VALIDATION", "IMPORT_FLAG_DEFAULT",
           "IMPORT_FLAG_ENABLE_PEER_ACCESS", "NOTIFY_EXPORT_FLAG_DEFAULT", "NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION",
           "NOTIFY_IMPORT_FLAG_DEFAULT", "NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS"]
