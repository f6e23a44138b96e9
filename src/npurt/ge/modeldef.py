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


class ModelDefError(ValueError):
    """The description in an .om is not one the converter writes (a corrupt or forged file)."""


def _int(v, what: str, lo: int = -(1 << 63)) -> int:
    if type(v) is not int or not lo <= v < (1 << 63):
        raise ModelDefError(f"{what} is {v!r}, not an int" + (f" >= {lo}" if lo > -(1 << 63) else ""))
    return v


def _ints(v, what: str, lo: int = -2) -> list[int]:
    if not isinstance(v, list) or len(v) > 64:
        raise ModelDefError(f"{what} is {v!r}, not a list of at most 64 dims")
    return [_int(d, f"{what}[{i}]", lo) for i, d in enumerate(v)]


def _check_io(d, what: str) -> None:
    """The fields of one input/output as the converter writes them, with their types, so every
    query of a loaded model (sizes, dims, formats) returns what its API promises."""
    if not isinstance(d, dict):
        raise ModelDefError(f"{what} is {type(d).__name__}, not an object")
    missing = [k for k in IODef.__slots__ if k not in d]
    if missing:
        raise ModelDefError(f"{what} lacks {', '.join(missing)}")
    if not isinstance(d["name"], str) or not (d["onnx"] is None or isinstance(d["onnx"], str)):
        raise ModelDefError(f"{what}: name / onnx name must be strings")
    if d["role"] not in (ROLE_DATA, ROLE_MBATCH, ROLE_AIPP_DATA):
        raise ModelDefError(f"{what}: unknown role {d['role']!r}")
    _int(d["dtype"], f"{what} dtype", -1)
    _int(d["format"], f"{what} format", -1)
    _ints(d["dims"], f"{what} dims")
    _ints(d["model_dims"], f"{what} model dims")
    _int(d["model_dtype"], f"{what} model dtype", -1)
    _int(d["size"], f"{what} size", 0)
    if d["gear_dims"] is not None:
        if not isinstance(d["gear_dims"], list) or not d["gear_dims"]:
            raise ModelDefError(f"{what}: gear dims must be a non-empty list")
        for i, g in enumerate(d["gear_dims"]):
            _ints(g, f"{what} gear {i}", 0)
    if d["ranges"] is not None:
        if not isinstance(d["ranges"], list):
            raise ModelDefError(f"{what}: ranges must be a list")
        for i, r in enumerate(d["ranges"]):
            if len(_ints(r, f"{what} range {i}", -1)) != 2:
                raise ModelDefError(f"{what}: range {i} is not [min, max]")
    for key in ("aipp", "dyn_aipp"):
        if d[key] is not None and not isinstance(d[key], dict):
            raise ModelDefError(f"{what}: {key} must be an object")
    if d["dyn_aipp"] is not None:
        _int(d["dyn_aipp"].get("max_size"), f"{what} dynamic AIPP max size", 0)


def check_meta(meta: dict) -> None:
    """Raise ModelDefError unless `meta` has the shape and types the converter writes."""
    for key in ("name", "soc"):
        if not isinstance(meta.get(key), str):
            raise ModelDefError(f"the model's {key} is {meta.get(key)!r}, not a string")
    for key in ("inputs", "outputs"):
        ios = meta.get(key)
        if not isinstance(ios, list):
            raise ModelDefError(f"the model's {key} are {type(ios).__name__}, not a list")
        for i, d in enumerate(ios):
            _check_io(d, f"{key[:-1]} {i}")
    for key in ("weight_size", "work_size"):
        _int(meta.get(key, 0), f"the model's {key}", 0)
    dyn = meta.get("dynamic")
    if dyn is not None:
        if not isinstance(dyn, dict) or dyn.get("kind") not in ("batch", "hw", "dims"):
            raise ModelDefError(f"the model's dynamic gears are {dyn!r}, not a batch / hw / dims set")
        gears = dyn.get("gears")
        if not isinstance(gears, list) or not gears:
            raise ModelDefError("the model's dynamic gears must be a non-empty list")
        for i, g in enumerate(gears):
            _ints(g, f"gear {i}", 0)
        order = dyn.get("order", [])
        if not isinstance(order, list) or not all(isinstance(n, str) for n in order):
            raise ModelDefError("the model's dynamic dims order must be a list of input names")


class ModelDef:
    """The model's description: I/O, gears, memory sizes, SoC. `meta` is checked first
    (check_meta): a corrupt description raises ModelDefError."""

    def __init__(self, meta: dict):
        check_meta(meta)
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
