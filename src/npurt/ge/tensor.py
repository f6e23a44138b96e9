"""aclTensorDesc and aclDataBuffer: the small host-side records models and operators take.

A DataBuffer is (address, size) and never owns memory. A TensorDesc describes a tensor:
data type, dims (-1 an unknown dim, [-2] unknown rank), format, and the extras single
operators match on (storage format and shape, shape range, const value, placement). The
semantics follow GE's tensor_desc_internal_om2.cpp, including its quirks: `set_format` and
`set_shape` set the *storage* format and shape, `set_origin_format` / `set_origin_shape` the
logical ones that `format` / `dims` report.
"""
from __future__ import annotations

import numpy as np

from ..runtime import InvalidValueError
from . import constants as G
from .dtypes import to_numpy, type_size

UNKNOWN_DIM = -1
UNKNOWN_RANK = -2


class DataBuffer:
    """aclDataBuffer: `size` bytes at `data` (0, 0 is an empty buffer)."""

    __slots__ = ("data", "size", "handle")

    def __init__(self, data: int = 0, size: int = 0):
        self.data, self.size, self.handle = data, size, 0

    def __repr__(self) -> str:
        return f"<DataBuffer 0x{self.data:x}, {self.size} B>"


class TensorDesc:
    """aclTensorDesc."""

    __slots__ = ("data_type", "dims", "format", "name", "storage_format", "storage_dims", "shape_range",
                 "value_range", "dynamic_input", "const_data", "memtype", "address", "handle", "array")

    def __init__(self, data_type: int, dims, fmt: int, name: str = ""):
        self.data_type = data_type
        self.dims = [int(d) for d in dims]
        self.format = fmt
        self.name = name
        self.storage_format = G.ACL_FORMAT_UNDEFINED
        self.storage_dims = list(self.dims)
        self.shape_range: list[tuple[int, int]] = []
        self.value_range: list[tuple[int, int]] = []
        self.dynamic_input = ""
        self.const_data: bytes | None = None
        self.memtype = G.ACL_MEMTYPE_DEVICE
        self.address = 0
        self.handle = 0
        self.array: list | None = None  # the descs of an array this desc heads (get_tensor_desc_by_index)

    def __repr__(self) -> str:
        return f"<TensorDesc type {self.data_type} dims {self.dims} format {self.format}>"

    def copy(self) -> "TensorDesc":
        new = TensorDesc(self.data_type, self.dims, self.format, self.name)
        for slot in ("storage_format", "storage_dims", "shape_range", "value_range", "dynamic_input",
                     "const_data", "memtype", "address"):
            value = getattr(self, slot)
            setattr(new, slot, list(value) if isinstance(value, list) else value)
        return new

    # ------------------------------------------------------------ queries (aclGetTensorDesc*)
    @property
    def is_dynamic(self) -> bool:
        return any(d < 0 for d in self.dims) or bool(self.value_range)

    @property
    def unknown_rank(self) -> bool:
        return bool(self.dims) and self.dims[0] == UNKNOWN_RANK

    def element_count(self) -> int:
        """Product of dims; [] is a scalar (1); any negative dim gives 0."""
        count = 1
        for d in self.dims:
            if d < 0:
                return 0
            count *= d
        return count

    def size(self) -> int:
        return self.element_count() * type_size(self.data_type)

    def num_dims(self) -> int:
        return G.ACL_UNKNOWN_RANK if self.unknown_rank else len(self.dims)

    def shape(self) -> tuple[int, ...]:
        return tuple(self.dims)

    def numpy_dtype(self) -> np.dtype:
        return to_numpy(self.data_type)

    def dim(self, index: int) -> int:
        if not 0 <= index < len(self.dims):
            raise InvalidValueError(f"dim index {index} is out of range: the desc has {len(self.dims)} dims")
        return self.dims[index]

    def dim_range(self, index: int, count: int) -> list[int]:
        if not 0 <= index < len(self.shape_range):
            raise InvalidValueError(f"index {index} is out of range: the desc has {len(self.shape_range)} shape "
                                    "ranges (set them with set_tensor_shape_range)")
        if count < G.ACL_TENSOR_SHAPE_RANGE_NUM:
            raise InvalidValueError(f"dim_range_num {count} cannot be less than 2 ([min, max])")
        lo, hi = self.shape_range[index]
        return [lo, hi] + [0] * (count - 2)

    # ------------------------------------------------------------ setters
    def set_const(self, data: bytes) -> None:
        if not data:
            raise InvalidValueError("set_tensor_const: the const value must not be empty (length 0)")
        self.const_data = bytes(data)

    def const_array(self) -> np.ndarray | None:
        if self.const_data is None:
            return None
        arr = np.frombuffer(self.const_data, self.numpy_dtype())
        count = self.element_count()
        if count and arr.size >= count:
            arr = arr[:count].reshape(self.shape())
        return arr


def check_dims(dims) -> list[int]:
    """dims as a list of ints (the facade has already checked it is a list of ints)."""
    return [int(d) for d in dims]
