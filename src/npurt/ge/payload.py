"""An .om's payload, read and checked before a model loads: its description (ModelDef) and
its ONNX graph, refused with the codes GE's ModelHelper gives (model.py's docstring lists
them), the tensors a loader will not load (external data, negative dims), and the memory a
load needs (work; weights at 64-byte aligned offsets), and how the weights reach ONNX Runtime
(initializers marked as external data in weight memory, except the values shape inference reads).
"""
from __future__ import annotations

from math import prod

from ..runtime import NpuError, constants as C
from . import engine, om
from .dtypes import ONNX_TO_ACL, type_size
from .modeldef import ModelDef, ModelDefError

WEIGHT_ALIGN = 64
BAD_MODEL = C.ACL_ERROR_GE_PARAM_INVALID  # GE ModelHelper::LoadModel: content it cannot parse
BAD_PARTITION = C.ACL_ERROR_GE_EXEC_LOAD_MODEL_PARTITION_FAILED  # GE GenerateGeModel: LoadModelData failed
_CORRUPT = (ModelDefError, KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError)


def weight_layout(initializers) -> tuple[list[int], int]:
    """Offsets of the initializers in weight memory (64-byte aligned) and the total."""
    offsets, total = [], 0
    for t in initializers:
        offsets.append(total)
        total += (prod(t.dims) * _itemsize(t) + WEIGHT_ALIGN - 1) // WEIGHT_ALIGN * WEIGHT_ALIGN
    return offsets, total


def _itemsize(t) -> int:
    return type_size(ONNX_TO_ACL.get(t.data_type, C.ACL_FLOAT))


def parse(data) -> tuple[ModelDef, bytes]:
    """(description, ONNX graph) of an .om image; single-op models are refused here."""
    meta, graph, _ = om.unpack(data)
    if meta["kind"] != "model":
        raise NpuError("this .om is a single-operator model: register it with acl.op.load or "
                       "acl.op.set_model_dir, not acl.mdl", C.ACL_ERROR_GE_PARAM_INVALID)
    try:
        return ModelDef(meta), graph
    except _CORRUPT as exc:
        raise NpuError(f"the model description in this .om is corrupt ({exc}): convert the model again",
                       BAD_MODEL) from None


def parse_graph(graph: bytes):
    """The ONNX graph of an .om as a ModelProto, checked (see the module docstring)."""
    onnx = engine.import_onnx()
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(graph)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and its warnings as errors)
        raise NpuError(f"the graph in this .om cannot be parsed ({exc}): the file is corrupt, convert the "
                       "model again", BAD_PARTITION) from None
    problem, code = _tensor_problem(proto.graph, onnx.TensorProto.EXTERNAL) or (None, 0)
    if problem:
        raise NpuError(f"this .om cannot be loaded: {problem}", code)
    return proto


def _tensor_problem(graph, external: int, depth: int = 0) -> tuple[str, int] | None:
    """(why, code) if a tensor of `graph` (initializers, constants in node attributes,
    subgraphs) cannot be loaded, or None."""
    def tensor(t, where: str) -> tuple[str, int] | None:
        if t.data_location == external or len(t.external_data):
            location = next((e.value for e in t.external_data if e.key == "location"), "?")
            return (f"{where} {t.name!r} names external weight data ({location!r}); a loaded model's weights "
                    "must live inside the .om (npurt atc embeds them)", BAD_MODEL)
        if any(d < 0 for d in t.dims):
            return f"{where} {t.name!r} has negative dims {list(t.dims)}: the file is corrupt", BAD_PARTITION
        return None

    if depth > 64:
        return "its graph nests subgraphs more than 64 deep", BAD_PARTITION
    for t in graph.initializer:
        why = tensor(t, "initializer")
        if why:
            return why
    for st in graph.sparse_initializer:
        why = tensor(st.values, "sparse initializer") or tensor(st.indices, "sparse initializer")
        if why:
            return why
    for node in graph.node:
        for attr in node.attribute:
            tensors = [attr.t, *attr.tensors]
            tensors += [x for st in [attr.sparse_tensor, *attr.sparse_tensors] for x in (st.values, st.indices)]
            for t in tensors:
                why = tensor(t, f"a tensor of node {node.name or node.op_type!r}")
                if why:
                    return why
            for sub in [attr.g, *attr.graphs]:
                why = _tensor_problem(sub, external, depth + 1)
                if why:
                    return why
    return None


def memory_needs(mdef: ModelDef, proto) -> tuple[int, int]:
    """(work, weight) bytes a load needs: what query_size reports and load_*_with_mem checks
    the application's memory against (the weights at their 64-byte aligned offsets)."""
    return mdef.work_size, max(mdef.weight_size, weight_layout(proto.graph.initializer)[1])


# Integer tensors and small constants are what shape inference reads (Reshape / Expand / Tile
# shapes, Pad pads, Slice bounds, Resize scales, Split sizes, TopK k, reduction axes): ONNX
# shape inference needs their values when ORT builds the graph, before external initializers
# are bound, so they stay in the graph (GE folds such constants into the model the same way).
_INTEGER_TYPES = {2, 3, 4, 5, 6, 7, 9, 12, 13}  # uint8, int8, uint16, int16, int32, int64, bool, uint32, uint64
_INLINE_ELEMENTS = 64


def graph_reads_value(t) -> bool:
    return t.data_type in _INTEGER_TYPES or prod(t.dims) <= _INLINE_ELEMENTS


def externalise(onnx, t, offset: int, length: int) -> None:
    """Mark an initializer as external data (its bytes are handed to ORT from weight memory)."""
    for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data",
                  "string_data"):
        t.ClearField(field)
    t.data_location = onnx.TensorProto.EXTERNAL
    del t.external_data[:]
    for key, value in (("location", "npurt-weight-memory"), ("offset", str(offset)), ("length", str(length))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
