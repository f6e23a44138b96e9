"""Rank table files (comm_init_cluster_info): which device of which server each rank uses.

The format is HCCL's rank table, version "1.0"::

    {"version": "1.0", "status": "completed", "server_count": "1",
     "server_list": [{"server_id": "node-0",
                      "device": [{"device_id": "0", "device_ip": "192.168.100.101", "rank_id": "0"},
                                 {"device_id": "1", "device_ip": "192.168.100.102", "rank_id": "1"}]}]}

Numbers may be strings (as HCCL writes them) or ints. Rank ids must be 0..n-1, each once.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

from .types import HCCL_E_PARA, HcclError


@dataclass(frozen=True)
class RankEntry:
    rank: int
    server: str
    device_id: int


@dataclass(frozen=True)
class RankTable:
    path: str
    key: bytes              # identifies the table (its content): ranks that read it meet by it
    ranks: list[RankEntry]  # indexed by rank id

    @property
    def size(self) -> int:
        return len(self.ranks)

    @property
    def servers(self) -> list[str]:
        return sorted({e.server for e in self.ranks})


def _int(value, what: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise HcclError(f"rank table: {what} {value!r} is not an integer", HCCL_E_PARA) from None
    if number < 0:
        raise HcclError(f"rank table: {what} {value!r} is negative", HCCL_E_PARA)
    return number


def load(path) -> RankTable:
    """Read and check a rank table; HcclError(HCCL_E_PARA) saying what is wrong."""
    if not isinstance(path, str) or not path:
        raise HcclError(f"the rank table path must be a non-empty str, got {path!r}", HCCL_E_PARA)
    if not os.path.isfile(path):
        raise HcclError(f"rank table file {path!r} does not exist", HCCL_E_PARA)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        doc = json.loads(text)
    except (OSError, ValueError) as exc:
        raise HcclError(f"rank table file {path!r} is not valid JSON ({exc})", HCCL_E_PARA) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("server_list"), list):
        raise HcclError(f"rank table {path!r} has no server_list (expected HCCL's version 1.0 format)", HCCL_E_PARA)
    if doc.get("status", "completed") != "completed":
        raise HcclError(f"rank table {path!r} has status {doc.get('status')!r}; it must be 'completed'", HCCL_E_PARA)
    entries = []
    for server in doc["server_list"]:
        if not isinstance(server, dict) or not isinstance(server.get("device"), list):
            raise HcclError(f"rank table {path!r}: every server needs a device list", HCCL_E_PARA)
        name = str(server.get("server_id", ""))
        for dev in server["device"]:
            if not isinstance(dev, dict):
                raise HcclError(f"rank table {path!r}: device entries must be objects", HCCL_E_PARA)
            entries.append(RankEntry(_int(dev.get("rank_id"), "rank_id"), name, _int(dev.get("device_id"), "device_id")))
    ranks = sorted(e.rank for e in entries)
    if not entries or ranks != list(range(len(entries))):
        raise HcclError(f"rank table {path!r}: rank ids must be 0..n-1, each once; got {ranks}", HCCL_E_PARA)
    if "server_count" in doc and _int(doc["server_count"], "server_count") != len(doc["server_list"]):
        raise HcclError(f"rank table {path!r}: server_count says {doc['server_count']}, the list has "
                        f"{len(doc['server_list'])} servers", HCCL_E_PARA)
    places = [(e.server, e.device_id) for e in entries]
    if len(set(places)) != len(places):
        raise HcclError(f"rank table {path!r}: two ranks use the same device of the same server", HCCL_E_PARA)
    key = b"table:" + hashlib.sha256(text.encode()).digest()
    return RankTable(os.path.realpath(path), key, sorted(entries, key=lambda e: e.rank))
