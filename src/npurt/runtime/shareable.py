"""Shareable handles of physical memory: the host-wide records that let another process
import memory this process exported (aclrtMemExportToShareableHandle / SetPidToShareableHandle
/ ImportFromShareableHandle).

A shareable handle is `(pid << 24) | n`: unique on the host while the exporter lives. Its
record is a small JSON file in a per-user directory of the host's shared-memory filesystem
(/dev/shm/npurt-vmm-<uid>, or the temporary directory), written atomically: the exporter's
pid, the file descriptor through which it holds the physical memory (a memfd), the size, the
physical device, the memory's properties, and the pid allow-list. The importer reads the
record, checks the allow-list, and opens /proc/<pid>/fd/<fd>: the same pages, mapped by each
process at its own reserved address. The record goes when the exporter frees the memory or
exits (the records of an exporter that was killed are swept by the next export or import; the
directory goes with the last record); the pages live on while any process holds them (the documented rule: physical memory
is released once every process sharing it has freed it).
"""
from __future__ import annotations

import atexit
import itertools
import json
import os
import tempfile

from . import constants as C
from ..driver import vmm as drv
from .errors import NpuError, ParamInvalidError
from .forking import fork_safe_lock

_lock = fork_safe_lock()
_counter = itertools.count(1)
_mine: dict[int, int] = {}  # shareable handle -> pid that published it (a forked child owns none)


def directory() -> str:
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    path = os.path.join(base, f"npurt-vmm-{os.getuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _path(handle: int) -> str:
    return os.path.join(directory(), f"{handle}.json")


def _write(handle: int, record: dict) -> None:
    path = _path(handle)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.replace(tmp, path)


def _read(handle: int) -> dict | None:
    try:
        with open(_path(handle)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def sweep() -> None:
    """Remove the records of exporters that died without withdrawing them (kill -9)."""
    try:
        names = os.listdir(directory())
    except OSError:
        return
    for name in names:
        stem = name.split(".", 1)[0]
        if stem.isdigit() and not _alive(int(stem) >> 24):
            try:
                os.unlink(os.path.join(directory(), name))
            except OSError:
                pass


def publish(fd: int, size: int, device: int, prop: dict, validate: bool) -> int:
    """A new shareable handle for memory this process holds as `fd`."""
    pid = os.getpid()
    sweep()
    with _lock:
        handle = (pid << 24) | (next(_counter) & 0xFFFFFF)
        _write(handle, {"pid": pid, "fd": fd, "size": size, "device": device, "prop": prop,
                        "validate": validate, "pids": []})
        _mine[handle] = pid
    return handle


def allow(handle: int, pids: list[int]) -> None:
    """aclrtMemSetPidToShareableHandle: add pids to the allow-list (exporter only)."""
    with _lock:
        record = _read(handle)
        if record is None or _mine.get(handle) != os.getpid():
            raise ParamInvalidError(f"shareable handle {handle} was not exported by this process (or was freed)")
        record["pids"] = sorted(set(record["pids"]) | set(pids))
        _write(handle, record)


def withdraw(handle: int) -> None:
    """Remove a record this process published (its memory was freed)."""
    with _lock:
        if _mine.pop(handle, None) == os.getpid():
            try:
                os.unlink(_path(handle))
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def open_shared(handle: int):
    """(PhysicalMemory, record) of an exported handle, for this process."""
    sweep()
    record = _read(handle)
    if record is None:
        raise ParamInvalidError(f"shareable handle {handle} names no exported physical memory (stale, freed by "
                                "its exporter, or not a shareable handle)")
    me = os.getpid()
    if record["pid"] == me:
        raise ParamInvalidError("aclrtMemImportFromShareableHandle: the memory was exported by this process; "
                                "import is across processes only (use the handle itself here)")
    if not _alive(record["pid"]):
        try:
            os.unlink(_path(handle))
        except OSError:
            pass
        raise ParamInvalidError(f"shareable handle {handle}: its exporting process {record['pid']} has exited")
    if record["validate"] and me not in record["pids"]:
        raise NpuError(f"process {me} is not on the allow-list of shareable handle {handle} "
                       "(the exporter adds it with aclrtMemSetPidToShareableHandle, or exports with "
                       "ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION)", C.ACL_ERROR_RT_NO_PERMISSION)
    try:
        memory = drv.open_physical(record["pid"], record["fd"], record["size"])
    except OSError as exc:
        raise ParamInvalidError(f"shareable handle {handle}: cannot reach the exporter's memory ({exc})") from None
    return memory, record


@atexit.register
def _withdraw_all() -> None:
    if not _mine:
        return
    for handle in list(_mine):
        withdraw(handle)
    try:
        os.rmdir(directory())  # the last exporter out leaves nothing behind
    except OSError:
        pass
