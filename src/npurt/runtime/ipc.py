"""IPC: what one process shares with the others of its device namespace (acl_rt.h); memory here.

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

Events and notifies shared between processes are in ipc_sync.py.

A device reset, finalize or exit closes this process's exports and imports of that device.
"""
from __future__ import annotations

import bisect
import os

from . import constants as C
from .address import locate
from .api.devices import current_device
from .errors import FeatureNotSupportedError, InvalidValueError, NpuError, ParamInvalidError
from .forking import fork_safe_lock, on_fork_child
from .memory import LIVE, Block, Segment
from .runtime import RUNTIME
from .stream import Stream
from ..driver.ipc import KEY_LEN, IpcRegistry, NoRecord  # noqa: F401 - KEY_LEN: the C key length, published here
from ..driver.processes import alive

EXPORT_FLAG_DEFAULT, EXPORT_FLAG_DISABLE_PID_VALIDATION = 0x0, 0x1   # ACL_RT_IPC_MEM_EXPORT_FLAG_*
IMPORT_FLAG_DEFAULT, IMPORT_FLAG_ENABLE_PEER_ACCESS = 0x0, 0x1       # ACL_RT_IPC_MEM_IMPORT_FLAG_*
EVENT_HANDLE_SIZE = 64                                                # ACL_IPC_EVENT_HANDLE_SIZE

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
           "KEY_LEN", "EVENT_HANDLE_SIZE", "imported", "export_open", "close_when_freed", "set_attribute",
           "EXPORT_FLAG_DEFAULT", "EXPORT_FLAG_DISABLE_PID_VALIDATION", "IMPORT_FLAG_DEFAULT",
           "IMPORT_FLAG_ENABLE_PEER_ACCESS"]
