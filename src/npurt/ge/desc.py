"""aclmdlDesc: a copy of a model's I/O description, filled from a loaded model (get_desc) or
straight from an .om (get_desc_from_file / _mem). It stays valid after the model is unloaded,
as the samples rely on. `cur_output_dims` asks the model (while it is loaded) which gear the
latest dynamic setter chose; otherwise it reports the largest gear.

Names longer than 127 characters are reported as GE shortens them:
"acl_modelId_<id>_input_<index>" (or "_output_"); `real_name` maps them back.
"""
from __future__ import annotations

from ..runtime import InvalidValueError, NpuError, constants as C
from . import constants as G
from .modeldef import ModelDef
from .model import _models

NAME_LIMIT = G.ACL_MAX_TENSOR_NAME_LEN - 1


class ModelDesc:
    """aclmdlDesc (empty until filled)."""

    __slots__ = ("mdef", "model_id", "handle")

    def __init__(self):
        self.mdef: ModelDef | None = None
        self.model_id = 0
        self.handle = 0

    def fill(self, mdef: ModelDef, model_id: int = 0) -> None:
        self.mdef, self.model_id = mdef, model_id

    # ------------------------------------------------------------ helpers
    def _def(self) -> ModelDef:
        if self.mdef is None:
            raise InvalidValueError("the model desc is empty: fill it with get_desc (or get_desc_from_file)")
        return self.mdef

    def _io(self, index: int, output: bool):
        ios = self._def().outputs if output else self._def().inputs
        if not 0 <= index < len(ios):
            raise InvalidValueError(f"{'output' if output else 'input'} index {index} is out of range: the model "
                                    f"has {len(ios)}")
        return ios[index]

    def name(self, index: int, output: bool) -> str:
        io = self._io(index, output)
        if len(io.name) > NAME_LIMIT:
            return f"acl_modelId_{self.model_id}_{'output' if output else 'input'}_{index}"
        return io.name

    def real_name(self, name: str) -> str | None:
        mdef = self._def()
        for output, ios in ((False, mdef.inputs), (True, mdef.outputs)):
            for i, io in enumerate(ios):
                if self.name(i, output) == name:
                    return io.name
        return None

    def index_by_name(self, name: str, output: bool) -> int:
        ios = self._def().outputs if output else self._def().inputs
        for i, io in enumerate(ios):
            if name in (io.name, self.name(i, output)):
                return i
        raise InvalidValueError(f"the model has no {'output' if output else 'input'} named {name!r}")

    # ------------------------------------------------------------ queries
    def num(self, output: bool) -> int:
        return len(self._def().outputs if output else self._def().inputs)

    def size(self, index: int, output: bool) -> int:
        return self._io(index, output).size

    def dims(self, index: int, output: bool, v2: bool = False) -> dict:
        io = self._io(index, output)
        dims = io.dims if output else io.image_dims() if v2 else io.reported_dims()
        return {"name": self.name(index, output), "dimCount": len(dims), "dims": list(dims)}

    def cur_output_dims(self, index: int) -> dict:
        io = self._io(index, True)
        gear = None
        if self.model_id:
            model = _models.get(self.model_id)
            if model is not None:
                gear = model.cur_gear
        dims = io.shape_at(gear) if io.gear_dims else io.dims
        return {"name": self.name(index, True), "dimCount": len(dims), "dims": list(dims)}

    def dims_range(self, index: int) -> dict:
        io = self._io(index, False)
        if io.gear_dims:
            return {"rangeCount": 0, "range": []}
        if io.ranges:
            return {"rangeCount": len(io.ranges), "range": [list(r) for r in io.ranges]}
        if io.dims == [-2]:
            return {"rangeCount": 0, "range": []}
        return {"rangeCount": len(io.dims), "range": [[d, d] if d >= 0 else [1, -1] for d in io.dims]}

    def format(self, index: int, output: bool) -> int:
        return self._io(index, output).format

    def data_type(self, index: int, output: bool) -> int:
        return self._io(index, output).dtype

    # ------------------------------------------------------------ gears
    def dynamic_batch(self) -> dict:
        mdef = self._def()
        if mdef.dynamic and mdef.dynamic["kind"] == "batch":
            return {"batchCount": len(mdef.gears), "batch": [g[0] for g in mdef.gears]}
        return {"batchCount": 0, "batch": []}

    def dynamic_hw(self) -> dict:
        mdef = self._def()
        if mdef.dynamic and mdef.dynamic["kind"] == "hw":
            return {"hwCount": len(mdef.gears), "hw": [list(g) for g in mdef.gears]}
        return {"hwCount": 0, "hw": []}

    def gear_count(self) -> int:
        mdef = self._def()
        return len(mdef.gears) if mdef.dynamic and mdef.dynamic["kind"] == "dims" else 0

    def dynamic_dims(self, gear_count: int) -> list[dict]:
        """One dims dict per --dynamic_dims gear: every data input's dims concatenated."""
        mdef = self._def()
        count = self.gear_count()
        if gear_count != count:
            raise InvalidValueError(f"gear_count {gear_count} must equal the model's dynamic dims gear count "
                                    f"({count}, get_input_dynamic_gear_count)")
        out = []
        data = [io for io in mdef.inputs if io.role == "data"]
        order = {n: i for i, n in enumerate(mdef.dynamic["order"])} if mdef.dynamic else {}
        data.sort(key=lambda io: order.get(io.name, len(order)))
        for g in range(count):
            dims = [d for io in data for d in io.shape_at(g)]
            out.append({"name": "", "dimCount": len(dims), "dims": dims})
        return out

    def op_attr(self, op_name: str, attr: str) -> str | None:
        if attr != G.ACL_ATTR_NAME_DATA_DUMP_ORIGIN_OP_NAMES:
            raise NpuError(f"get_op_attr supports only {G.ACL_ATTR_NAME_DATA_DUMP_ORIGIN_OP_NAMES!r}",
                           C.ACL_ERROR_INVALID_PARAM)
        return ""
