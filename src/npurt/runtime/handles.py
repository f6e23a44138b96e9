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
        # the object of a handle or None, in one dict lookup (hot paths; `get` raises the
        # descriptive InvalidHandleError). Valid for the table's life: `clear` empties in place.
        self.lookup = self._objects.get

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

    def __len__(self) -> int:
        return len(self._objects)

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
        "args": 0xA1, "notify": 0x4E, "physical memory": 0x9A, "memory pool": 0x9B, "model ri": 0x4D, "task group": 0x47, "cond handle": 0x43,
        "label": 0x4C, "label list": 0x4B, "model ri task": 0x4F, "param": 0xA2, "exception info": 0xE1, "thread": 0x7D,
        # graph engine objects (npurt.ge, through the facade's acl.mdl / acl.op / acl.*)
        "data buffer": 0xDB, "tensor desc": 0xD5, "dataset": 0xDA, "model desc": 0xDE, "aipp": 0xA9,
        "model config": 0xC9, "exec config": 0xEC, "op attr": 0x0A, "op handle": 0x0B,
        "kernel desc": 0x0C, "allocator desc": 0xAD,
        # media (npurt.media, through acl.media)
        "dvpp channel desc": 0x61, "dvpp pic desc": 0x62, "dvpp batch pic desc": 0x63,
        "dvpp roi config": 0x64, "dvpp resize config": 0x65, "dvpp border config": 0x66,
        "dvpp jpege config": 0x67, "dvpp stream desc": 0x68,
        # profiling (acl.prof)
        "profiling config": 0x9C, "msproftx stamp": 0x9D, "step info": 0x9E, "subscribe config": 0x9F,
        # collectives (npurt.hccl)
        "hccl comm": 0xCC,
        # aclnn objects (npurt.capi.aclnn)
        "aclnn tensor": 0x31, "aclnn scalar": 0x32, "aclnn array": 0x33, "aclnn executor": 0x34}
TAG_KINDS = {tag: kind for kind, tag in TAGS.items()}
assert len(TAG_KINDS) == len(TAGS), "two kinds of handle share a tag"


def table(kind: str, cls: type = HandleTable) -> HandleTable:
    """The handle table of one kind of object (its tag from TAGS, the one registry of every
    int-handle kind of npurt: runtime objects, graph engine, media, profiling, collectives).
    `cls` is a HandleTable subclass for a face whose errors differ (acl's ge handles)."""
    return cls(kind, TAGS[kind])
