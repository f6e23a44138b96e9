"""ONNX -> .om: what ATC does to a model, for npurt's graph engine.

`convert(...)` takes ATC's options (already parsed by atc.py) and writes an .om whose
payload is the ONNX graph with the input shapes it fixes, plus the description (modeldef.py)
the runtime needs: inputs and outputs as the model reports them, dynamic batch / image size
/ dims gears (one extra input, `ascend_mbatch_shape_data`, placed last), AIPP, the SoC.
Conversion fails, as ATC's does, when ONNX Runtime cannot build the graph (an unsupported
operator, a type error): the message is ORT's.

Decisions where ATC's behaviour is hardware-specific:
* output formats are ND, or the input format for 4-D outputs; the graph runs in the layout
  the ONNX model has (--input_format only labels it, except that AIPP writes its output in
  that layout);
* output dims per gear come from ONNX shape inference (or one ORT run with zeros when
  inference cannot tell); outputs whose dims are data-dependent stay -1 (a dynamic-shape
  output: the output dataset's tensor desc gets the real dims after execution);
* work size = AIPP output buffers + the inferred intermediate tensors (what the model would
  need as feature-map memory without reuse); weight size = the initializers' bytes.
"""
from __future__ import annotations

import os
from math import prod

import numpy as np

from ..progress import progress
from . import aipp as A
from . import constants as G
from . import om
from .dtypes import ACL_TO_ONNX, FORMATS, ONNX_TO_ACL, type_size
from .engine import import_onnx, import_ort
from .options import (ConversionError, check_soc, output_path, parse_gears,  # noqa: F401 - (re-exported)
                      parse_input_shape, parse_out_nodes, parse_output_type)
from .modeldef import ROLE_AIPP_DATA, ROLE_DATA, ROLE_MBATCH, IODef
from ..runtime import constants as R
from .dtypes import to_numpy

ALIGN = 512


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


# ---------------------------------------------------------------- the graph
def _dims_of(value_info) -> list[int]:
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return [-2]
    return [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]


def _set_dims(value_info, dims: list[int], tag: str) -> None:
    shape = value_info.type.tensor_type.shape
    shape.ClearField("dim")
    if dims == [-2]:
        value_info.type.tensor_type.ClearField("shape")
        return
    for i, d in enumerate(dims):
        dim = shape.dim.add()
        if d >= 0:
            dim.dim_value = d
        else:
            dim.dim_param = f"{tag}_{i}"


def _light_copy(model):
    """The model without large initializer data (shape inference needs dims, not values)."""
    onnx = import_onnx()
    light = onnx.ModelProto()
    light.CopyFrom(model)
    for t in light.graph.initializer:
        if prod(t.dims) > 4096:
            t.ClearField("raw_data")
            for field in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
                t.ClearField(field)
            t.data_location = onnx.TensorProto.DEFAULT
    return light


def _infer(model, shapes: dict[str, list[int]]) -> dict[str, list[int]]:
    """Inferred dims of every tensor (-1 unknown) with the inputs fixed to `shapes`."""
    onnx = import_onnx()
    m = _light_copy(model)
    for vi in m.graph.input:
        if vi.name in shapes:
            _set_dims(vi, shapes[vi.name], "x")
    try:
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001 - inference is best effort; ORT decides below
        return {}
    out = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        out[vi.name] = _dims_of(vi)
    return out


def _ort_shapes(session, model_inputs: dict[str, tuple[list[int], int]]) -> list[list[int]]:
    feeds = {name: np.zeros(dims, _np_of(onnx_type)) for name, (dims, onnx_type) in model_inputs.items()}
    return [list(o.shape) for o in session.run(None, feeds)]


def _np_of(onnx_type: int):
    return to_numpy(ONNX_TO_ACL[onnx_type])


# ---------------------------------------------------------------- convert
def convert(model: str, output: str, soc_version: str, input_shape: str | None = None,
            input_format: str | None = None, dynamic_batch_size: str | None = None,
            dynamic_image_size: str | None = None, dynamic_dims: str | None = None,
            insert_op_conf: str | None = None, output_type: str | None = None, out_nodes: str | None = None,
            input_fp16_nodes: str | None = None) -> str:
    """Convert an ONNX model; returns the path of the .om written. Long conversions show their
    stage (parse, convert, compile, write) on a terminal (npurt.progress)."""
    with progress(f"npurt atc: parsing {os.path.basename(model or '')}", total=4) as shown:
        return _convert(shown, model, output, soc_version, input_shape, input_format, dynamic_batch_size,
                        dynamic_image_size, dynamic_dims, insert_op_conf, output_type, out_nodes, input_fp16_nodes)


def _convert(shown, model, output, soc_version, input_shape, input_format, dynamic_batch_size, dynamic_image_size,
             dynamic_dims, insert_op_conf, output_type, out_nodes, input_fp16_nodes) -> str:
    onnx = import_onnx()
    soc = check_soc(soc_version)
    path = output_path(output)
    if not model or not os.path.isfile(model):
        raise ConversionError(f"--model {model!r} does not exist (give the path of an .onnx file)")
    try:
        proto = onnx.load(model)
    except Exception as exc:  # noqa: BLE001 - any parse failure is the model's fault
        raise ConversionError(f"--model {model!r} is not a readable ONNX model ({type(exc).__name__}: {exc})") from None
    shown.advance(description="npurt atc: converting the graph")
    graph = proto.graph
    _check_operators(onnx, graph)
    init_names = {t.name for t in graph.initializer}
    data_inputs = [vi for vi in graph.input if vi.name not in init_names]
    fmt_name = (input_format or "NCHW").upper()
    if fmt_name not in ("NCHW", "NHWC", "ND", "NCDHW", "NDHWC"):
        raise ConversionError(f"--input_format {input_format!r} must be NCHW, NHWC, ND, NCDHW or NDHWC")
    fmt = FORMATS[fmt_name]

    shapes = parse_input_shape(input_shape)
    by_name = {vi.name: vi for vi in data_inputs}
    for name in shapes:
        if name not in by_name:
            raise ConversionError(f"--input_shape names {name!r}, which is not an input of the model (inputs: "
                                  f"{', '.join(by_name) or 'none'})")
    order = [n for n in shapes] + [vi.name for vi in data_inputs if vi.name not in shapes]
    dims = {vi.name: (shapes[vi.name][0] if vi.name in shapes else _dims_of(vi)) for vi in data_inputs}
    ranges = {vi.name: shapes[vi.name][1] if vi.name in shapes else None for vi in data_inputs}
    for vi in data_inputs:
        given, own = dims[vi.name], _dims_of(vi)
        if own != [-2] and given != [-2] and len(given) != len(own):
            raise ConversionError(f"--input_shape gives {vi.name!r} {len(given)} dims, the model's input has {len(own)}")
        if own != [-2] and given != [-2]:
            for i, (g, o) in enumerate(zip(given, own)):
                if g >= 0 and o >= 0 and g != o:
                    raise ConversionError(f"--input_shape: dim {i} of {vi.name!r} is {g}, the model fixes it to {o}")

    gears = parse_gears(dynamic_batch_size, dynamic_image_size, dynamic_dims)
    dynamic = None
    gear_dims: dict[str, list[list[int]]] = {}
    if gears:
        kind, values = gears
        dynamic = {"kind": kind, "gears": values, "order": order}
        gear_dims = _gear_dims(kind, values, order, dims, fmt_name)
        if kind == "dims":
            fmt = G.ACL_FORMAT_ND
    dynamic_shape = not gears and any(d < 0 for n in order for d in dims[n])

    fp16 = [n.strip() for n in (input_fp16_nodes or "").split(";") if n.strip()]
    for n in fp16:
        if n not in by_name:
            raise ConversionError(f"--input_fp16_nodes names {n!r}, which is not an input of the model")

    # AIPP
    configs = []
    if insert_op_conf:
        if gears and gears[0] == "dims":
            raise ConversionError("--insert_op_conf cannot be combined with --dynamic_dims")
        try:
            with open(insert_op_conf, encoding="utf-8") as f:
                configs = A.parse_config(f.read())
        except OSError as exc:
            raise ConversionError(f"--insert_op_conf {insert_op_conf!r} cannot be read: {exc.strerror}") from None
        except A.AippConfigError as exc:
            raise ConversionError(f"--insert_op_conf {insert_op_conf!r}: {exc}") from None
        if fmt_name not in ("NCHW", "NHWC"):
            raise ConversionError("--insert_op_conf needs --input_format NCHW or NHWC")

    # ---------------- rewrite the graph: input shapes, fp16 inputs, outputs
    for vi in data_inputs:
        _set_dims(vi, dims[vi.name], f"npurt_{vi.name}")
    for n in fp16:
        _make_fp16_input(proto, by_name[n])
    nodes_out = parse_out_nodes(out_nodes)
    if nodes_out is not None:
        _select_outputs(proto, nodes_out)
    all_type, per_type = parse_output_type(output_type, nodes_out)
    _cast_outputs(proto, all_type, per_type, nodes_out)

    # ---------------- inputs as the model reports them
    inputs: list[IODef] = []
    aipp_by_rank = {}
    for cfg in configs:
        rank = cfg["related_input_rank"]
        if not 0 <= rank < len(data_inputs):
            raise ConversionError(f"--insert_op_conf: related_input_rank {rank} is not an input (the model has "
                                  f"{len(data_inputs)})")
        if rank in aipp_by_rank:
            raise ConversionError(f"--insert_op_conf configures input {rank} twice")
        aipp_by_rank[rank] = cfg
    dyn_aipp_inputs = []
    for rank, vi in enumerate(data_inputs):
        name = vi.name
        onnx_type = vi.type.tensor_type.elem_type
        if onnx_type not in ONNX_TO_ACL:
            raise ConversionError(f"input {name!r} has an ONNX element type ({onnx_type}) npurt cannot run")
        dtype = ONNX_TO_ACL[onnx_type]
        d = dims[name]
        g = gear_dims.get(name)
        cfg = aipp_by_rank.get(rank)
        if cfg is None:
            inputs.append(IODef(name, name, dtype, fmt, d, ROLE_DATA, g, ranges[name]))
            continue
        if len(d) != 4:
            raise ConversionError(f"AIPP needs a 4-D image input; {name!r} has dims {d}")
        nchw = fmt_name == "NCHW"
        mh, mw, mc = (d[2], d[3], d[1]) if nchw else (d[1], d[2], d[3])
        # A static AIPP may feed an input whose H and W are --dynamic_image_size gears (the
        # official resnet50_imagenet_dynamic_hw sample): its source image is then the gear's size.
        hw_gears = g is not None and dynamic and dynamic["kind"] == "hw" and cfg["aipp_mode"] == "static" \
            and min(mh, mw) < 0 <= mc
        if min(mh, mw, mc) < 0 and not hw_gears:
            raise ConversionError(f"AIPP input {name!r} needs fixed C, H and W (dims {d}); only N, or H and W with "
                                  "--dynamic_image_size and a static AIPP, may be gears")
        if cfg["aipp_mode"] is None:
            raise ConversionError("--insert_op_conf: aipp_mode must be static or dynamic")
        if cfg["aipp_mode"] == "static":
            try:
                if hw_gears:
                    _finish_static_per_gear(cfg, g, nchw, mc)
                else:
                    A.finish_static(cfg, mh, mw, mc)
            except A.AippConfigError as exc:
                raise ConversionError(f"--insert_op_conf: {exc}") from None
            cfg["_nchw"] = nchw
            inputs.append(IODef(name, name, R.ACL_UINT8, G.ACL_FORMAT_NHWC, d, ROLE_DATA, g, None, aipp=cfg,
                                model_dims=d, model_dtype=dtype))
        else:
            if cfg["max_src_image_size"] <= 0:
                raise ConversionError("--insert_op_conf: a dynamic AIPP needs max_src_image_size > 0")
            io = IODef(name, name, R.ACL_UINT8, G.ACL_FORMAT_NHWC, d, ROLE_DATA, g, None,
                       dyn_aipp={"max_size": cfg["max_src_image_size"], "param": -1, "nchw": nchw,
                                 "channels": mc}, model_dims=d, model_dtype=dtype)
            inputs.append(io)
            dyn_aipp_inputs.append(io)
    for io in dyn_aipp_inputs:  # their parameter inputs follow the data inputs
        n = max(gg[0] for gg in io.gear_dims) if io.gear_dims else io.dims[0]
        io.dyn_aipp["param"] = len(inputs)
        size = A.data_size(n)
        inputs.append(IODef(G.ACL_DYNAMIC_AIPP_NAME if len(dyn_aipp_inputs) == 1 else
                            f"{G.ACL_DYNAMIC_AIPP_NAME}_{io.name}", None, R.ACL_UINT8, G.ACL_FORMAT_ND, [size],
                            ROLE_AIPP_DATA))
    if dynamic:
        count = len(dynamic["gears"][0])
        inputs.append(IODef(G.ACL_DYNAMIC_TENSOR_NAME, None, R.ACL_INT64, G.ACL_FORMAT_ND, [count], ROLE_MBATCH))

    # ---------------- check ORT can run it, and learn the outputs
    shown.advance(description="npurt atc: compiling for the simulated NPU")
    ort = import_ort()
    graph_bytes = proto.SerializeToString()
    try:
        session = ort.InferenceSession(graph_bytes, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ORT's message names the node and the reason
        raise ConversionError(f"the model cannot be compiled for the simulated NPU: {exc}") from None
    outputs = _outputs(proto, session, inputs, dynamic, fmt, fmt_name)

    weight_size = sum(_tensor_bytes(t) for t in proto.graph.initializer)
    work_size = _work_size(proto, inputs, outputs, dynamic)
    meta = {"kind": "model", "name": os.path.splitext(os.path.basename(path))[0], "soc": soc, "framework": 5,
            "ops": len(proto.graph.node), "inputs": [i.to_json() for i in inputs],
            "outputs": [o.to_json() for o in outputs], "dynamic": dynamic, "dynamic_shape": dynamic_shape,
            "weight_size": _align(weight_size) if weight_size else 0, "work_size": work_size,
            "source": os.path.basename(model)}
    shown.advance(description=f"npurt atc: writing {os.path.basename(path)}")
    image = om.pack(meta, graph_bytes, meta["name"], soc, dynamic_shape)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    with open(path, "wb") as f:
        f.write(image)
    shown.advance()
    return path


def _check_operators(onnx, graph) -> None:
    """Nodes of the default domain must be ONNX operators. Exported detection graphs may use
    Ascend's own operators (YoloPreDetection, YoloV5DetectionOutput, ...) there, which the real
    ATC maps to its operator library and npurt does not implement: say so, naming them."""
    unknown: dict[str, list[str]] = {}
    for node in graph.node:
        if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type):
            unknown.setdefault(node.op_type, []).append(node.name or node.output[0])
    if unknown:
        listed = "; ".join(f"{op} (node(s) {', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
                           for op, names in unknown.items())
        raise ConversionError(f"the model uses operators that are not ONNX operators: {listed}. The real ATC "
                              "maps such nodes to Ascend operators of its own; npurt converts standard ONNX "
                              "operators only")


def _finish_static_per_gear(cfg: dict, gears: list[list[int]], nchw: bool, channels: int) -> None:
    """A static AIPP over an input of image-size gears: the config must fit every gear with
    the source image the size of the gear (src_image_size, crop and padding unset); the
    source size stays 0 in the model, as ATC leaves it, and is the gear's at run time."""
    if cfg["src_image_size_w"] or cfg["src_image_size_h"] or cfg["crop"] or cfg["padding"]:
        raise A.AippConfigError("with --dynamic_image_size the source image is the gear's size: leave "
                                "src_image_size_w/h, crop and padding unset")
    for gear in gears:
        h, w = (gear[2], gear[3]) if nchw else (gear[1], gear[2])
        trial = dict(cfg)
        A.finish_static(trial, h, w, channels)
    cfg.update(trial, src_image_size_w=0, src_image_size_h=0)


def _gear_dims(kind, gears, order, dims, fmt_name) -> dict[str, list[list[int]]]:
    """Concrete dims of every input at every gear; checks the -1 positions fit the flag."""
    flag = {"batch": "--dynamic_batch_size", "hw": "--dynamic_image_size", "dims": "--dynamic_dims"}[kind]
    variable = [(n, i) for n in order for i, d in enumerate(dims[n]) if d < 0]
    if not variable:
        raise ConversionError(f"{flag} needs -1 in --input_shape at the dims the gears set")
    if any(dims[n] == [-2] for n in order):
        raise ConversionError(f"{flag} cannot be combined with an unknown-rank input")
    if kind == "batch" and any(i != 0 for _, i in variable):
        raise ConversionError(f"{flag}: only N (the first dim) may be -1 in --input_shape")
    if kind == "hw":
        hw = (2, 3) if fmt_name == "NCHW" else (1, 2)
        for n in order:
            neg = [i for i, d in enumerate(dims[n]) if d < 0]
            if neg and (len(dims[n]) != 4 or tuple(neg) != hw):
                raise ConversionError(f"{flag}: input {n!r} must have -1 at H and W only ({fmt_name})")
    if kind == "dims" and len(gears[0]) != len(variable):
        raise ConversionError(f"{flag}: each gear must give {len(variable)} values, one per -1 in --input_shape "
                              f"(in input order), got {len(gears[0])}")
    out: dict[str, list[list[int]]] = {n: [] for n in order if any(d < 0 for d in dims[n])}
    for g in gears:
        assign = dict(zip(variable, g)) if kind == "dims" else {}
        for n in out:
            hw = iter(g)
            concrete = []
            for i, d in enumerate(dims[n]):
                if d >= 0:
                    concrete.append(d)
                elif kind == "batch":
                    concrete.append(g[0])
                elif kind == "hw":
                    concrete.append(next(hw))
                else:
                    concrete.append(assign[(n, i)])
            out[n].append(concrete)
    return out


def _make_fp16_input(proto, vi) -> None:
    onnx = import_onnx()
    helper = onnx.helper
    inner = f"{vi.name}__npurt_cast"
    for node in proto.graph.node:
        node.input[:] = [inner if x == vi.name else x for x in node.input]
    for out in proto.graph.output:
        if out.name == vi.name:
            raise ConversionError(f"--input_fp16_nodes: {vi.name!r} is also a model output")
    to = vi.type.tensor_type.elem_type
    vi.type.tensor_type.elem_type = onnx.TensorProto.FLOAT16
    proto.graph.node.insert(0, helper.make_node("Cast", [vi.name], [inner], to=to, name=f"{vi.name}_fp16_cast"))


def _select_outputs(proto, nodes_out) -> None:
    onnx = import_onnx()
    by_name = {n.name: n for n in proto.graph.node}
    new = []
    for name, idx in nodes_out:
        node = by_name.get(name)
        if node is None:
            raise ConversionError(f"--out_nodes names node {name!r}, which is not in the model")
        if idx >= len(node.output):
            raise ConversionError(f"--out_nodes: node {name!r} has {len(node.output)} output(s), not index {idx}")
        new.append(onnx.helper.make_empty_tensor_value_info(node.output[idx]))
    del proto.graph.output[:]
    proto.graph.output.extend(new)
    _fill_output_types(proto)


def _fill_output_types(proto) -> None:
    """Give value infos without a type the inferred one (needed for --out_nodes outputs)."""
    onnx = import_onnx()
    try:
        inferred = onnx.shape_inference.infer_shapes(_light_copy(proto), strict_mode=False)
    except Exception:  # noqa: BLE001
        return
    known = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for out in proto.graph.output:
        if not out.type.tensor_type.elem_type and out.name in known:
            out.CopyFrom(known[out.name])


def _cast_outputs(proto, all_type, per_type, nodes_out) -> None:
    if all_type is None and not per_type:
        return
    onnx = import_onnx()
    _fill_output_types(proto)
    for k, out in enumerate(proto.graph.output):
        want = all_type
        if per_type and nodes_out is not None and k < len(nodes_out):
            want = per_type.get(nodes_out[k], all_type)
        if want is None:
            continue
        onnx_type = ACL_TO_ONNX[want]
        if out.type.tensor_type.elem_type == onnx_type:
            continue
        inner = f"{out.name}__npurt_uncast"
        for node in proto.graph.node:
            node.output[:] = [inner if x == out.name else x for x in node.output]
            node.input[:] = [inner if x == out.name else x for x in node.input]
        proto.graph.node.append(onnx.helper.make_node("Cast", [inner], [out.name], to=onnx_type,
                                                      name=f"{out.name}_output_type"))
        out.type.tensor_type.elem_type = onnx_type


def _outputs(proto, session, inputs, dynamic, fmt, fmt_name) -> list[IODef]:
    data = [i for i in inputs if i.role == ROLE_DATA]
    names = [o.name for o in proto.graph.output]
    types = {o.name: o.type.tensor_type.elem_type for o in proto.graph.output}
    for o in session.get_outputs():
        if not types.get(o.name):
            raise ConversionError(f"output {o.name!r} has no known element type")
    gear_count = len(dynamic["gears"]) if dynamic else 1
    per_gear: list[list[list[int]]] = []
    for gi in range(gear_count):
        shapes = {i.onnx: (i.model_dims if not i.gear_dims else i.gear_dims[gi]) for i in data}
        inferred = _infer(proto, shapes)
        dims = [inferred.get(n, [-1]) for n in names]
        static_inputs = all(d >= 0 for s in shapes.values() for d in s)
        if static_inputs and any(d < 0 for ds in dims for d in ds):
            try:
                ins = {i.onnx: (shapes[i.onnx], ACL_TO_ONNX[i.model_dtype]) for i in data}
                dims = _ort_shapes(session, ins)
            except Exception:  # noqa: BLE001 - data-dependent shapes stay unknown
                pass
        per_gear.append(dims)
    outputs = []
    for k, name in enumerate(names):
        dtype = ONNX_TO_ACL.get(types[name])
        if dtype is None:
            raise ConversionError(f"output {name!r} has an ONNX element type npurt cannot return")
        gears = [per_gear[g][k] for g in range(gear_count)]
        if dynamic:
            biggest = max(gears, key=lambda d: prod(max(x, 0) for x in d))
            dims, gdims = biggest, gears
        else:
            dims, gdims = gears[0], None
        ofmt = fmt if len(dims) == 4 and fmt_name in ("NCHW", "NHWC") else G.ACL_FORMAT_ND
        outputs.append(IODef(name, name, dtype, ofmt, dims, ROLE_DATA, gdims))
    return outputs


def _tensor_bytes(t) -> int:
    return prod(t.dims) * type_size(ONNX_TO_ACL.get(t.data_type, R.ACL_FLOAT))


def _work_size(proto, inputs, outputs, dynamic) -> int:
    """AIPP output buffers + the inferred intermediate tensors at the largest gear."""
    total = 0
    for i in inputs:
        if i.aipp is not None or i.dyn_aipp is not None:
            total += _align(prod(i.shape_at(None)) * 4)
    data = [i for i in inputs if i.role == ROLE_DATA]
    shapes = {i.onnx: i.shape_at(None) for i in data}
    if all(d >= 0 for s in shapes.values() for d in s):
        outs = {o.name for o in outputs}
        onnx = import_onnx()
        m = _light_copy(proto)
        for vi in m.graph.input:
            if vi.name in shapes:
                _set_dims(vi, shapes[vi.name], "x")
        try:
            inferred = onnx.shape_inference.infer_shapes(m, strict_mode=False)
        except Exception:  # noqa: BLE001
            inferred = None
        if inferred is not None:
            for vi in inferred.graph.value_info:
                d = _dims_of(vi)
                if vi.name not in outs and d != [-2] and all(x >= 0 for x in d):
                    total += _align(prod(d) * type_size(ONNX_TO_ACL.get(vi.type.tensor_type.elem_type, 0)))
    return max(total, ALIGN)
