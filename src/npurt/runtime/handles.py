"""Integer handles for runtime objects, as pyACL hands them out.

Each kind of object gets its own tag in bits 40..47, so a handle of one kind passed where
another is expected (or a stale one) is recognised and refused with a clear message. Handles
stay below 2**48, out of the device address range, and are never 0 (0 means "default").
"""
from __future__ import annotations

import itertools

from .errors import InvalidHandleError


class HandleTable:
    def __init__(self, kind: str, tag: int):
        self.kind = kind
        self.tag = tag << 40
        self._objects: dict[int, object] = {}
        self._ids = itertools.count(1)

    def add(self, obj) -> int:
        handle = self.tag | next(self._ids)
        self._objects[handle] = obj
        return handle

    def get(self, handle):
        obj = self._objects.get(handle)
        if obj is None:
            raise self._error(handle)
        return obj

    def remove(self, handle: int) -> None:
        self._objects.pop(handle, None)

    def keep_newest(self, limit: int) -> None:
        """Forget the oldest handles beyond `limit` (for tables nobody destroys from)."""
        objects = self._objects
        while len(objects) > limit:
            try:
                del objects[next(iter(objects))]
            except (StopIteration, KeyError, RuntimeError):
                break

    def values(self) -> list:
        return list(self._objects.values())

    def clear(self) -> None:
        self._objects.clear()

    def _error(self, handle) -> InvalidHandleError:
        if not isinstance(handle, int) or isinstance(handle, bool):
            return InvalidHandleError(f"expected a {self.kind} handle (int), got {type(handle).__name__}")
        if handle & (0xFF << 40) == self.tag:
            return InvalidHandleError(f"{self.kind} handle 0x{handle:x} is stale: that {self.kind} "
                                      "was destroyed (or its device reset)")
        owner = TAG_KINDS.get((handle >> 40) & 0xFF)
        if owner:
            return InvalidHandleError(f"0x{handle:x} is a {owner} handle, not a {self.kind} handle")
        return InvalidHandleError(f"0x{handle:x} is not a {self.kind} handle")


TAGS = {"context": 0xC0, "stream": 0x57, "event": 0xE7, "binary": 0xB1, "function": 0xF1,
        "args": 0xA1, "param": 0xA2, "exception info": 0xE1, "thread": 0x7D,
        # graph engine objects (npurt.ge, through the facade's acl.mdl / acl.op / acl.*)
        "data buffer": 0xDB, "tensor desc": 0xD5, "dataset": 0xDA, "model desc": 0xDE, "aipp": 0xA9,
        "model config": 0xC9, "exec config": 0xEC, "op attr": 0x0A, "op handle": 0x0B,
        "kernel desc": 0x0C, "allocator desc": 0xAD,
        # collectives (npurt.hccl)
        "hccl comm": 0xCC}
TAG_KINDS = {tag: kind for kind, tag in TAGS.items()}


def table(kind: str) -> HandleTable:
    return HandleTable(kind, TAGS[kind])
