"""The host's registry of IPC exports: what one process shares with the others of a namespace.

An export (IPC memory, an IPC event, an IPC notify) is one small JSON record in the namespace's
shared directory, named by its key (`mem<N>-<32 hex digits>`, `evt<N>-...`, `ntf<N>-...`:
the kind, the physical device, a random token, so a key cannot be guessed); events and notifies
keep their shared state in `<key>.sync` next to it. The record says
where the shared object lives on device N, who exported it (pid and start time), whether pids
are checked and which are allowed, and who imported it. Every change takes an flock(2) of the
record file; the record goes away when its exporter closed it and no live process holds an
import, or when the device's last process leaves.

The registry keeps facts; the rules (who may import, what each error code is) are the runtime's
(`npurt.runtime.ipc`).
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import secrets

from .processes import alive, me

KINDS = ("mem", "evt", "ntf")
KEY_PATTERN = re.compile(r"(mem|evt|ntf)(\d{1,2})-[0-9a-f]{32}")
KEY_LEN = 65  # the key buffers of the C API (aclrtIpcMemGetExportKey's len): 64 characters and a NUL


class NoRecord(LookupError):
    """No export has this key (never made, forged, or already gone)."""


class IpcRegistry:
    """The export records of one namespace directory."""

    def __init__(self, directory: str):
        self.directory = directory

    def path(self, key: str) -> str:
        if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
            raise NoRecord(key)
        return os.path.join(self.directory, key)

    # ------------------------------------------------------------ records
    def create(self, kind: str, physical_id: int, record: dict) -> str:
        """A new record (the exporter is this process); its key."""
        key = f"{kind}{physical_id}-{secrets.token_hex(16)}"
        record = {**record, "kind": kind, "device": physical_id, "owner": me(), "allowed": [],
                  "importers": [], "closed": False}
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        tmp = os.path.join(self.directory, f".{key}.tmp")
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.rename(tmp, os.path.join(self.directory, key))  # appears whole or not at all
        return key

    def read(self, key: str) -> dict:
        try:
            with open(self.path(key)) as f:
                return json.load(f)
        except (FileNotFoundError, json.JSONDecodeError):
            raise NoRecord(key) from None

    def update(self, key: str, change) -> dict:
        """Apply change(record) -> record | None (None: remove the record) under the record's
        lock; the record as it was before the change."""
        path = self.path(key)
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            raise NoRecord(key) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_nlink == 0:  # removed while we waited for the lock
                raise NoRecord(key)
            raw = b""
            while chunk := os.read(fd, 1 << 16):
                raw += chunk
            before = json.loads(raw)
            after = change(dict(before, importers=list(before["importers"]), allowed=list(before["allowed"])))
            if after is None:
                _unlink(path)
            else:
                data = json.dumps(after).encode()
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, data)
            return before
        finally:
            os.close(fd)

    def keys(self, physical_id: int | None = None) -> list[str]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            m = KEY_PATTERN.fullmatch(name)
            if m and (physical_id is None or int(m.group(2)) == physical_id):
                out.append(name)
        return out

    # ------------------------------------------------------------ rules of lifetime
    @staticmethod
    def held(record: dict) -> bool:
        """Whether a live process still holds the export: its exporter (until it closed it)
        or an importer."""
        if not record["closed"] and alive(record["owner"]):
            return True
        return any(alive(who) for who in record["importers"])

    def add_importer(self, key: str) -> dict:
        who = me()
        return self.update(key, lambda r: dict(r, importers=r["importers"] + [who]))

    def drop_importer(self, key: str) -> dict:
        """Forget one import of this process; the record goes once nobody holds it."""
        who = me()

        def change(r):
            if who in r["importers"]:
                r["importers"].remove(who)
            r["importers"] = [w for w in r["importers"] if alive(w)]
            return r if self.held(r) else None
        return self.update(key, change)

    def close_export(self, key: str) -> dict:
        def change(r):
            r["closed"] = True
            r["importers"] = [w for w in r["importers"] if alive(w)]
            return r if self.held(r) else None
        return self.update(key, change)

    def sweep(self, physical_id: int) -> list[dict]:
        """Remove the records of device N that nobody holds any more (their exporter died or
        closed, their importers are gone); the records still held, for the arena to keep their
        memory."""
        held = []
        for key in self.keys(physical_id):
            try:
                record = self.read(key)
            except NoRecord:
                continue
            if self.held(record):
                held.append(record)
                continue
            try:
                self.update(key, lambda r: r if self.held(r) else None)
            except NoRecord:
                pass
        return held

    def remove_all(self, physical_id: int) -> None:
        """The device's last process left: its records go with it."""
        for key in self.keys(physical_id):
            _unlink(os.path.join(self.directory, key))


def _unlink(path: str) -> None:
    """Remove a record and the shared words next to it (`<key>.sync`: events, notifies)."""
    for name in (path, path + ".sync"):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass
