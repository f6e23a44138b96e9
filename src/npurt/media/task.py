"""DVPP operations as ordinary stream tasks, and the pictures they work on.

An operation is checked and snapshotted when it is called: every picture is located in
DVPP memory for the bytes its layout needs (`memory.locate`, the runtime's memory checks),
the allocations it touches are recorded for stream-ordered free, and a `DvppTask` holding
addresses and geometry is queued. When the task runs it takes byte views of those
addresses, does the work in numpy (or Pillow for the codecs) and writes the result fields
back into the descriptions. Tools see what a task touches through `accesses()` (declared
when it is queued, as copies do) and `details()`. DVPP work runs on the AI CPU in ACL, so a failure while
running is an AI CPU exception unless the operation reports a more specific code (an
unsupported JPEG, a picture that does not fit its buffer); the picture's `ret_code` gets
the same code.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..runtime import NpuError, Span, Task, address, constants as C
from .descs import PicDesc
from .layout import Layout


class Picture:
    """A picture description as an operation saw it when it was called, with its memory."""

    __slots__ = ("desc", "layout", "width", "height", "ws", "hs", "data", "nbytes", "span")

    def __init__(self, desc: PicDesc, layout: Layout, width: int, height: int, ws: int, hs: int,
                 span: Span, nbytes: int):
        self.desc, self.layout = desc, layout
        self.width, self.height, self.ws, self.hs = width, height, ws, hs
        self.data, self.nbytes, self.span = span.addr, nbytes, span

    def view(self, task: "DvppTask") -> np.ndarray:
        """The picture's bytes."""
        return task.view(self.data, self.nbytes, self.span)

    def access(self, mode: str) -> tuple:
        """(addr, nbytes, mode) of the picture's bytes, for DvppTask.accesses."""
        return self.data, self.nbytes, mode

    def __repr__(self) -> str:
        return f"<Picture {self.layout.name} {self.width}x{self.height} stride {self.ws}x{self.hs}>"


class DvppTask(Task):
    """One DVPP operation queued on a stream: `work(task)` runs it; `memory` lists the
    (addr, nbytes, mode) ranges it reads ("r") and writes ("w")."""

    __slots__ = ("kind", "work", "what", "outputs", "memory")
    error_code = C.ACL_ERROR_RT_AICPU_EXCEPTION

    def __init__(self, kind: str, what: str, work: Callable[["DvppTask"], None], outputs=(), memory=()):
        self.kind, self.what, self.work = kind, what, work
        self.outputs = outputs  # PicDescs whose ret_code reports the outcome
        self.memory = tuple(memory)

    def run(self) -> None:
        try:
            self.work(self)
        except NpuError as exc:
            for desc in self.outputs:
                desc.ret_code = exc.code
            raise
        except Exception:
            for desc in self.outputs:
                desc.ret_code = self.error_code
            raise
        for desc in self.outputs:
            desc.ret_code = 0

    def view(self, addr: int, nbytes: int, span: Span | None = None) -> np.ndarray:
        return address.view(addr, nbytes)

    def accesses(self) -> tuple:
        return self.memory

    def describe(self) -> str:
        return f"{self.kind} ({self.what})"

    def details(self) -> dict:
        return {"name": self.kind, "bytes": sum(n for _, n, mode in self.memory if mode == "w"),
                "pictures": len(self.outputs)}


def enqueue(stream, task: DvppTask, spans: list[Span]) -> int:
    """Queue `task` on `stream`, recording its use of `spans` for stream-ordered free."""
    return stream.enqueue(task, holders=[span.block for span in spans])
