"""aclmdlDataset: the ordered data buffers of a model's inputs (or outputs).

Position is the I/O index. A dataset never owns its buffers nor the memory behind them
(destroying it frees neither); it owns the tensor descs attached with `set_tensor_desc`,
which are copies (GE's aclmdlSetDatasetTensorDesc copies the desc it is given). It also
carries the dynamic-gear selection the setters record (`set_dynamic_batch_size`, ...), as
GE's dataset does: execution reads it from here.
"""
from __future__ import annotations

from ..runtime import InvalidValueError
from .tensor import DataBuffer, TensorDesc


class Dataset:
    """aclmdlDataset."""

    __slots__ = ("buffers", "descs", "gear", "aipp", "results", "handle", "__weakref__")

    def __init__(self):
        self.buffers: list[DataBuffer] = []
        self.descs: list[TensorDesc | None] = []
        self.gear: tuple[str, tuple[int, ...]] | None = None  # ("batch" | "hw" | "dims", values)
        self.aipp: dict[int, object] = {}  # image input index -> dynamic AIPP parameters set for it
        self.results: dict[int, object] = {}  # output index -> host array (npurt.Model's collected outputs)
        self.handle = 0

    def __repr__(self) -> str:
        return f"<Dataset of {len(self.buffers)} buffer(s)>"

    def add(self, buffer: DataBuffer) -> None:
        self.buffers.append(buffer)
        self.descs.append(None)

    def buffer(self, index: int) -> DataBuffer:
        if not 0 <= index < len(self.buffers):
            raise InvalidValueError(f"dataset index {index} is out of range: the dataset holds "
                                    f"{len(self.buffers)} buffer(s)")
        return self.buffers[index]

    def set_desc(self, desc: TensorDesc | None, index: int) -> TensorDesc | None:
        """Attach a copy of `desc` at `index` (None removes it); returns the dataset's desc."""
        if not 0 <= index < len(self.buffers):
            raise InvalidValueError(f"set_dataset_tensor_desc: index {index} must be smaller than the number "
                                    f"of buffers in the dataset ({len(self.buffers)})")
        old = self.descs[index]
        if desc is None:
            self.descs[index] = None
            return old
        if old is None:
            self.descs[index] = desc.copy()
        else:  # assigned in place: a handle the application holds stays valid
            fresh = desc.copy()
            for slot in TensorDesc.__slots__:
                if slot not in ("handle", "array"):
                    setattr(old, slot, getattr(fresh, slot))
        return self.descs[index]
