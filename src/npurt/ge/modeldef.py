"""What a converted model is: its inputs, outputs and gears, as the converter fixes them and
the loader reads them back (the JSON part of an .om payload).

An `IODef` is one model input or output: the name the model reports, the ONNX tensor it maps
to (None for the inputs GE adds: `ascend_mbatch_shape_data`, `ascend_dynamic_aipp_data`),
data type and format as aclDataType / aclFormat, and dims (-1 where a gear or a dynamic shape
decides; [-2] unknown rank). Gear models list the concrete dims of every gear
(`gear_dims`); sizes are those of the largest gear, as GE reports them.
"""
from __future__ import annotations

from math import prod

from . import aipp as A
from .dtypes import to_numpy, type_size

ROLE_DATA, ROLE_MBATCH, ROLE_AIPP_DATA = "data", "mbatch", "aipp_data"


class IODef:
    __slots__ = ("name", "onnx", "dtype", "format", "dims", "role", "gear_dims", "ranges", "aipp", "dyn_aipp",
                 "model_dims", "model_dtype", "size")

    def __init__(self, name: str, onnx: str | None, dtype: int, fmt: int, dims, role: str = ROLE_DATA,
                 gear_dims=None, ranges=None, aipp: dict | None = None, dyn_aipp: dict | None = None,
                 model_dims=None, model_dtype: int | None = None, size: int | None = None):
        self.name, self.onnx, self.dtype, self.format = name, onnx, dtype, fmt
        self.dims = [int(d) for d in dims]
        self.role = role
        self.gear_dims = [list(g) for g in gear_dims] if gear_dims is not None else None
        self.ranges = [list(r) for r in ranges] if ranges is not None else None
        self.aipp = aipp            # static AIPP config (aipp.py) feeding this input
        self.dyn_aipp = dyn_aipp    # {"max_size": bytes, "param": index of the parameter input}
        self.model_dims = list(model_dims) if model_dims is not None else list(self.dims)  # what ORT sees
        self.model_dtype = model_dtype if model_dtype is not None else dtype
        self.size = self._size() if size is None else size

    # ------------------------------------------------------------ sizes and shapes
    def _size(self) -> int:
        if self.dyn_aipp is not None:
            return int(self.dyn_aipp["max_size"])
        if self.aipp is not None:
            shapes = self.gear_dims or [self.model_dims]
            return max(g[0] * A.image_bytes(self.aipp["input_format"], *self.source_hw(g)) for g in shapes)
        if self.gear_dims:
            return max(self.bytes_of(g) for g in self.gear_dims)
        if any(d < 0 for d in self.dims):
            if self.ranges and all(r[1] >= 0 for r in self.ranges) and len(self.ranges) == len(self.dims):
                return self.bytes_of([r[1] for r in self.ranges])
            return 0
        return self.bytes_of(self.dims)

    def bytes_of(self, dims) -> int:
        return prod(dims) * type_size(self.dtype)

    def shape_at(self, gear: int | None) -> list[int]:
        """Concrete dims of this tensor at a gear (None: static model, or the maximum gear)."""
        if self.gear_dims:
            if gear is None:
                return max(self.gear_dims, key=prod)
            return self.gear_dims[gear]
        return self.dims

    def source_hw(self, dims) -> tuple[int, int]:
        """(H, W) of the source image of a static AIPP input whose model input has `dims`:
        the config's src_image_size, or (image-size gears, which leave it 0) the gear's H x W."""
        a = self.aipp
        if a["src_image_size_w"]:
            return a["src_image_size_h"], a["src_image_size_w"]
        return (dims[2], dims[3]) if a["_nchw"] else (dims[1], dims[2])

    def aipp_at(self, gear: int | None) -> dict:
        """The static AIPP config as it runs at `gear` (the source size filled in)."""
        a = self.aipp
        if a["src_image_size_w"]:
            return a
        h, w = self.source_hw(self.shape_at(gear))
        return {**a, "src_image_size_h": h, "src_image_size_w": w}

    def image_dims(self, n: int | None = None) -> list[int]:
        """get_input_dims_v2: the image an AIPP input is fed (else the dims)."""
        if self.aipp is not None:
            h, w = self.source_hw(self.dims)
            dims = A.image_dims(self.aipp["input_format"], n or self.dims[0], max(h, 2), max(w, 2))
            return dims if h > 0 else [dims[0], -1, -1, dims[3]]  # image-size gears: -1 as for any gear
        if self.dyn_aipp is not None:
            return [self.size]
        return self.dims

    def reported_dims(self) -> list[int]:
        """get_input_dims: a static AIPP input is reported in NHWC with the source image's H
        and W and the model's C (aclmdlGetInputDims' table for static AIPP: n, h, w, c; the C++
        samples read W from dims[2] and H from dims[1]); -1 where a gear decides."""
        if self.aipp is not None:
            h, w = self.source_hw(self.dims)
            c = self.dims[1] if self.aipp["_nchw"] else self.dims[3]
            return [self.dims[0], h, w, c]
        return self.dims

    @property
    def numpy_dtype(self):
        return to_numpy(self.dtype)

    # ------------------------------------------------------------ JSON
    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}

    @classmethod
    def from_json(cls, d: dict) -> "IODef":
        return cls(d["name"], d["onnx"], d["dtype"], d["format"], d["dims"], d["role"], d["gear_dims"],
                   d["ranges"], d["aipp"], d["dyn_aipp"], d["model_dims"], d["model_dtype"], d["size"])


class ModelDef:
    """The model's description: I/O, gears, memory sizes, SoC."""

    def __init__(self, meta: dict):
        self.meta = meta
        self.name = meta["name"]
        self.soc = meta["soc"]
        self.inputs = [IODef.from_json(d) for d in meta["inputs"]]
        self.outputs = [IODef.from_json(d) for d in meta["outputs"]]
        self.dynamic = meta.get("dynamic")      # {"kind": "batch"|"hw"|"dims", "gears": [[...]], "order": [...]}
        self.weight_size = int(meta.get("weight_size", 0))
        self.work_size = int(meta.get("work_size", 0))
        self.dynamic_shape = bool(meta.get("dynamic_shape"))

    @property
    def gears(self) -> list[list[int]]:
        return self.dynamic["gears"] if self.dynamic else []

    def gear_index(self, kind: str, values) -> int | None:
        """Index of the gear `values` selects (None if it is not one)."""
        if not self.dynamic or self.dynamic["kind"] != kind:
            return None
        values = [int(v) for v in values]
        for i, g in enumerate(self.gears):
            if list(g) == values:
                return i
        return None
