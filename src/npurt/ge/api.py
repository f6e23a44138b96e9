"""The graph engine's model operations (what acl.mdl calls), raising NpuErrors.

Objects in, objects out: datasets, descs and AIPP parameter sets are the ge objects; models
are ids (process-wide, as GE's). Streams are runtime streams (None: the current context's
default stream). Sources of the behaviour: GE's api/acl/acl_model (model.cpp, acl_aipp.cpp,
model_om2.cpp) and runtime/v1/executor/ge_executor.cc.
"""
from __future__ import annotations

import threading

from ..runtime import (HOOKS, InvalidValueError, NpuError, RUNTIME, SyncTimeoutError, address, constants as C,
                       fork_safe_lock, host_bytes, resolve as locate, stream_of)
from . import aipp as A
from . import constants as G
from . import model as M
from . import om
from .ctrl_c import stopping_on_ctrl_c
from .dataset import Dataset
from .desc import ModelDesc
from .modeldef import ROLE_AIPP_DATA, ROLE_MBATCH
from . import payload


# ---------------------------------------------------------------- loading
def read_model(path) -> bytes:
    return om.read_file(path)


def model_bytes(ptr, size, what: str = "model") -> bytes:
    """An .om image in host memory (load_from_mem & co.)."""
    if not ptr:
        raise InvalidValueError(f"the {what} pointer is null")
    if not size:
        raise InvalidValueError(f"the {what} size must not be 0")
    return host_bytes(ptr, size, f"{what} data")


def load(data: bytes, work=(0, 0), weight=(0, 0), priority: int = 0) -> int:
    return M.load(data, work[0], work[1], weight[0], weight[1], priority)


def query_size(data: bytes) -> tuple[int, int]:
    """(work, weight) bytes: exactly what load_*_with_mem needs (alignment included)."""
    mdef, graph = payload.parse(data)
    return payload.memory_needs(mdef, payload.parse_graph(graph))


def desc_from(desc: ModelDesc, data: bytes) -> None:
    mdef, _ = payload.parse(data)
    desc.fill(mdef, 0)


def get_desc(desc: ModelDesc, model_id: int) -> None:
    model = M.model_of(model_id)
    desc.fill(model.mdef, model_id)


def unload(model_id: int) -> None:
    if model_id in _bundled:
        raise InvalidValueError(f"model {model_id} belongs to bundle {_bundled[model_id]}: unload it with "
                                "bundle_unload")
    M.unload(model_id)


# ---------------------------------------------------------------- execution
def execute(model_id: int, inputs: Dataset, outputs: Dataset) -> None:
    """Synchronous: on the model's internal stream, returns after the outputs are written.
    Outputs whose buffer has no memory get device memory (the caller frees it). The calling
    thread runs the execution itself when the stream is idle (no hand-off to a worker).

    Ctrl-C stops it (issue 29): in the main thread a KeyboardInterrupt cannot land inside ONNX
    Runtime's call, so ctrl_c.stopping_on_ctrl_c stops the run when SIGINT arrives; while the
    thread waits for a worker instead, the wait is interrupted and the run stopped here. The
    execution fails, the model and its stream stay usable, the KeyboardInterrupt goes on."""
    model = M.model_of(model_id)
    stream = model.stream
    own: list = []  # this call's sequence number, once enqueue returned it

    def stop():  # SIGINT while the main thread is inside ONNX Runtime: stop what it runs
        M.stop_runs(model, C.ACL_ERROR_RT_MODEL_EXECUTE, "was interrupted (Ctrl-C)", threading.main_thread().ident)

    try:
        with stopping_on_ctrl_c(stop):
            own.append(model.enqueue(inputs, outputs, stream, allocate=True, inline=True))  # runs here if idle
            stream.synchronize(own[0])
    except KeyboardInterrupt:
        if own:  # queued behind other threads' executions, or running on a worker: stop it
            model.cancel(stream, own[0], C.ACL_ERROR_RT_MODEL_EXECUTE, "was interrupted (Ctrl-C)")
            try:
                stream.synchronize(own[0], timeout_ms=int(M.EXIT_WAIT_S * 1000), report_errors=False)
            except NpuError:
                pass
        raise


def execute_async(model_id: int, inputs: Dataset, outputs: Dataset, stream) -> int:
    model = M.model_of(model_id)
    return model.enqueue(inputs, outputs, stream_of(stream))


def execute_v2(model_id: int, inputs: Dataset, outputs: Dataset, stream, config: "ExecConfig") -> None:
    """aclmdlExecuteV2: with a stream, enqueue there and synchronize it with the config's
    stream timeout; without one, as execute."""
    if stream is None:
        execute(model_id, inputs, outputs)
        return
    model = M.model_of(model_id)
    s = stream_of(stream)
    seq = model.enqueue(inputs, outputs, s)
    timeout = config.stream_sync_timeout
    try:
        s.synchronize(seq, timeout_ms=timeout if timeout >= -1 else -1)
    except SyncTimeoutError:  # the execution (if it runs now) stops too: the stream goes on
        model.cancel(s, seq, C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                     f"was stopped: the execute_v2 config's stream timeout of {timeout} ms passed")
        raise


# ---------------------------------------------------------------- dynamic gears
def _mbatch_index_check(model, index: int) -> None:
    inputs = model.mdef.inputs
    if 0 <= index < len(inputs) and inputs[index].role != ROLE_MBATCH and model.mdef.dynamic:
        raise InvalidValueError(f"index {index} is input {inputs[index].name!r}, not {G.ACL_DYNAMIC_TENSOR_NAME} "
                                "(find it with get_input_index_by_name)")


def set_dynamic_batch_size(model_id: int, dataset: Dataset, index: int, batch: int) -> None:
    if batch == 0:
        raise InvalidValueError("batch_size must not be 0")
    dataset.buffer(index)
    model = M.model_of(model_id)
    _mbatch_index_check(model, index)
    model.select(dataset, "batch", [batch], index)


def set_dynamic_hw_size(model_id: int, dataset: Dataset, index: int, height: int, width: int) -> None:
    if height == 0 or width == 0:
        raise InvalidValueError(f"height and width must not be 0, got {height} x {width}")
    dataset.buffer(index)
    model = M.model_of(model_id)
    _mbatch_index_check(model, index)
    model.select(dataset, "hw", [height, width], index)


def set_input_dynamic_dims(model_id: int, dataset: Dataset, index: int, dims: list[int]) -> None:
    """`dims` are all dims of all data inputs in input order; the values at the -1 positions
    must form a gear, the others must equal the model's (ge_executor.cc GetCurDynamicDims)."""
    if not dims:
        raise InvalidValueError("dimCount must not be 0")
    dataset.buffer(index)
    model = M.model_of(model_id)
    _mbatch_index_check(model, index)
    mdef = model.mdef
    if not mdef.dynamic or mdef.dynamic["kind"] != "dims":
        raise NpuError("this model has no --dynamic_dims gears", C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID)
    order = {n: i for i, n in enumerate(mdef.dynamic["order"])}
    data = sorted((io for io in mdef.inputs if io.role == "data"), key=lambda io: order.get(io.name, len(order)))
    all_dims = [d for io in data for d in io.dims]
    if len(dims) != len(all_dims):
        raise NpuError(f"dims gives {len(dims)} values; the model's inputs have {len(all_dims)} dims in all",
                       C.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID)
    values = []
    for i, (given, own) in enumerate(zip(dims, all_dims)):
        if own < 0:
            values.append(given)
        elif given != own:
            raise NpuError(f"dim {i} is {given}; the model fixes it to {own}", C.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID)
    model.select(dataset, "dims", values, index)


# ---------------------------------------------------------------- AIPP
def _input(model, index: int):
    inputs = model.mdef.inputs
    if not 0 <= index < len(inputs):
        raise InvalidValueError(f"input index {index} is out of range: the model has {len(inputs)} input(s)")
    return inputs[index]


def aipp_type(model_id: int, index: int) -> tuple[int, int]:
    model = M.model_of(model_id)
    io = _input(model, index)
    if io.aipp is not None:
        return G.ACL_DATA_WITH_STATIC_AIPP, G.ACL_INVALID_NODE_INDEX
    if io.dyn_aipp is not None:
        return G.ACL_DATA_WITH_DYNAMIC_AIPP, io.dyn_aipp["param"]
    if io.role == ROLE_AIPP_DATA:
        return G.ACL_DYNAMIC_AIPP_NODE, G.ACL_INVALID_NODE_INDEX
    return G.ACL_DATA_WITHOUT_AIPP, G.ACL_INVALID_NODE_INDEX


def first_aipp_info(model_id: int, index: int) -> dict:
    model = M.model_of(model_id)
    io = _input(model, index)
    if io.aipp is None and io.dyn_aipp is None:
        raise NpuError(f"input {index} ({io.name!r}) has no AIPP", C.ACL_ERROR_GE_AIPP_NOT_EXIST)
    if io.aipp is not None:
        info = A.info(io.aipp)
    else:
        info = {k: 0 for k in A.info({**A.DEFAULTS, **{m: 0 for m in A.MATRIX_KEYS}, "output_bias_0": 0,
                                     "output_bias_1": 0, "output_bias_2": 0, "input_bias_0": 0, "input_bias_1": 0,
                                     "input_bias_2": 0})}
    gears = io.gear_dims or [io.model_dims]
    info.update(srcFormat=G.ACL_FORMAT_NHWC if io.aipp is not None else io.format, srcDatatype=C.ACL_UINT8,
                srcDimNum=4, shapeCount=len(gears), aippExtend=0)
    out = []
    for g in gears:
        n = g[0]
        if io.aipp is not None:
            h, w = io.source_hw(g)
            src = A.image_dims(io.aipp["input_format"], n, h, w)
            src_size = n * A.image_bytes(io.aipp["input_format"], h, w)
        else:
            src, src_size = [io.size], io.size
        out.append({"srcDims": {"name": io.name, "dimCount": len(src), "dims": src}, "srcSize": src_size,
                    "aippOutdims": {"name": io.name, "dimCount": len(g), "dims": list(g)},
                    "aippOutSize": n and _prod(g) * 2})
    info["outDims"] = out
    return info


def _prod(dims) -> int:
    total = 1
    for d in dims:
        total *= d
    return total


def set_input_aipp(model_id: int, dataset: Dataset, index: int, params: A.DynamicParams) -> None:
    """Write the dynamic AIPP parameters into the `ascend_dynamic_aipp_data` buffer at `index`."""
    model = M.model_of(model_id)
    io = _input(model, index)
    if io.role != ROLE_AIPP_DATA:
        raise NpuError(f"input {index} ({io.name!r}) is not a dynamic AIPP parameter input "
                       f"({G.ACL_DYNAMIC_AIPP_NAME}); use set_aipp_by_input_index for the image input",
                       C.ACL_ERROR_GE_AIPP_MODE_INVALID)
    image = next(i for i in model.mdef.inputs if i.dyn_aipp is not None and i.dyn_aipp["param"] == index)
    _write_aipp(model, dataset, index, image, params)


def set_aipp_by_input_index(model_id: int, dataset: Dataset, index: int, params: A.DynamicParams) -> None:
    model = M.model_of(model_id)
    io = _input(model, index)
    if io.dyn_aipp is None:
        raise NpuError(f"input {index} ({io.name!r}) has no dynamic AIPP", C.ACL_ERROR_GE_AIPP_NOT_EXIST)
    _write_aipp(model, dataset, io.dyn_aipp["param"], io, params)


def _write_aipp(model, dataset: Dataset, param_index: int, image, params: A.DynamicParams) -> None:
    import numpy as np
    buf = dataset.buffer(param_index)
    if not buf.data:
        raise InvalidValueError(f"the dataset has no memory at index {param_index} for the dynamic AIPP parameters")
    dims = image.shape_at(model.cur_gear)
    nchw = image.dyn_aipp["nchw"]
    channels, mh, mw = (dims[1], dims[2], dims[3]) if nchw else (dims[3], dims[1], dims[2])
    A.check_against(params, dims[0], channels, mh, mw, image.dyn_aipp["max_size"])
    blob = params.pack()
    if buf.size < len(blob):
        raise InvalidValueError(f"the buffer for the dynamic AIPP parameters holds {buf.size} bytes; "
                                f"{len(blob)} are needed (get_aipp_data_size({params.batch_size}))")
    span = locate(RUNTIME, buf.data, len(blob), "dynamic AIPP parameter buffer")
    if span.device is None:
        raise InvalidValueError("the dynamic AIPP parameter buffer must be device memory")
    if HOOKS.active:  # the host writes the parameters into device memory itself (a host access)
        HOOKS.emit("host_access", addr=buf.data, nbytes=len(blob), mode="w", what="dynamic AIPP parameters")
    address.view(buf.data, len(blob))[:] = np.frombuffer(blob, np.uint8)
    dataset.aipp[param_index] = params


# ---------------------------------------------------------------- bundles
_bundles: dict[int, list[int]] = {}
_bundled: dict[int, int] = {}
_bundle_ids = iter(range(1, 1 << 31))
_bundle_lock = fork_safe_lock()


def bundle_load(data: bytes) -> int:
    """A bundle of npurt models: an .om holds one model, so its bundle holds one (documented)."""
    model_id = load(data)
    with _bundle_lock:
        bundle_id = next(_bundle_ids)
        _bundles[bundle_id] = [model_id]
        _bundled[model_id] = bundle_id
    return bundle_id


def _bundle(bundle_id: int) -> list[int]:
    models = _bundles.get(bundle_id)
    if models is None:
        raise NpuError(f"no bundle with id {bundle_id} is loaded", C.ACL_ERROR_INVALID_BUNDLE_MODEL_ID)
    return models


def bundle_model_num(bundle_id: int) -> int:
    return len(_bundle(bundle_id))


def bundle_model_id(bundle_id: int, index: int) -> int:
    models = _bundle(bundle_id)
    if not 0 <= index < len(models):
        raise InvalidValueError(f"index {index} is out of range: bundle {bundle_id} holds {len(models)} model(s)")
    return models[index]


def bundle_unload(bundle_id: int) -> None:
    models = _bundle(bundle_id)
    with _bundle_lock:
        _bundles.pop(bundle_id, None)
        for m in models:
            _bundled.pop(m, None)
    for m in models:
        M.unload(m)


# ---------------------------------------------------------------- config handles
class ConfigHandle:
    """aclmdlConfigHandle: how load_with_config loads a model."""

    __slots__ = ("attrs", "handle")

    def __init__(self):
        self.attrs: dict[int, object] = {}
        self.handle = 0

    def set(self, attr: int, value) -> None:
        if attr == G.ACL_MDL_PRIORITY_INT32:
            if not 0 <= value <= 7:
                raise InvalidValueError(f"ACL_MDL_PRIORITY_INT32 must be in [0, 7], got {value}")
        elif attr == G.ACL_MDL_LOAD_TYPE_SIZET:
            if not G.ACL_MDL_LOAD_FROM_FILE <= value <= G.ACL_MDL_LOAD_FROM_MEM_WITH_Q:
                raise InvalidValueError(f"ACL_MDL_LOAD_TYPE_SIZET must be ACL_MDL_LOAD_FROM_FILE (1) .. "
                                        f"ACL_MDL_LOAD_FROM_MEM_WITH_Q (6), got {value}")
        elif not 0 <= attr <= G.ACL_NPU_PERF_MODE:
            raise InvalidValueError(f"unknown aclmdlConfigAttr {attr}")
        self.attrs[attr] = value

    def load(self) -> int:
        a = self.attrs
        kind = a.get(G.ACL_MDL_LOAD_TYPE_SIZET)
        if kind is None:
            raise InvalidValueError("ACL_MDL_LOAD_TYPE_SIZET is not set in the config handle")
        if kind in (G.ACL_MDL_LOAD_FROM_FILE_WITH_Q, G.ACL_MDL_LOAD_FROM_MEM_WITH_Q):
            raise InvalidValueError("queue-based loading (ACL_MDL_LOAD_FROM_*_WITH_Q) exists only in builds with "
                                    "model queues (USE_MDL); npurt has none")
        if kind in (G.ACL_MDL_LOAD_FROM_FILE, G.ACL_MDL_LOAD_FROM_FILE_WITH_MEM):
            if G.ACL_MDL_PATH_PTR not in a:
                raise InvalidValueError("ACL_MDL_PATH_PTR is not set in the config handle (needed to load from a file)")
            data = read_model(a[G.ACL_MDL_PATH_PTR])
        else:
            if G.ACL_MDL_MEM_ADDR_PTR not in a or G.ACL_MDL_MEM_SIZET not in a:
                raise InvalidValueError("ACL_MDL_MEM_ADDR_PTR and ACL_MDL_MEM_SIZET must be set to load from memory")
            data = model_bytes(a[G.ACL_MDL_MEM_ADDR_PTR], a[G.ACL_MDL_MEM_SIZET])
        work = weight = (0, 0)
        if kind in (G.ACL_MDL_LOAD_FROM_FILE_WITH_MEM, G.ACL_MDL_LOAD_FROM_MEM_WITH_MEM):
            work = (a.get(G.ACL_MDL_WORKSPACE_ADDR_PTR, 0), a.get(G.ACL_MDL_WORKSPACE_SIZET, 0))
            weight = (a.get(G.ACL_MDL_WEIGHT_ADDR_PTR, 0), a.get(G.ACL_MDL_WEIGHT_SIZET, 0))
        return load(data, work, weight, a.get(G.ACL_MDL_PRIORITY_INT32, 0))


class ExecConfig:
    """aclmdlExecConfigHandle: per-call options of execute_v2."""

    __slots__ = ("attrs", "stream_sync_timeout", "event_sync_timeout", "handle")

    def __init__(self):
        self.attrs: dict[int, int] = {}
        self.stream_sync_timeout = -1
        self.event_sync_timeout = -1
        self.handle = 0

    def set(self, attr: int, value: int) -> None:
        if not G.ACL_MDL_STREAM_SYNC_TIMEOUT <= attr <= G.ACL_MDL_NPU_PERF_MODE:
            raise InvalidValueError(f"unknown aclmdlExecConfigAttr {attr}")
        if attr in (G.ACL_MDL_STREAM_SYNC_TIMEOUT, G.ACL_MDL_EVENT_SYNC_TIMEOUT):
            value = value - (1 << 32) if value >= 1 << 31 else value  # stored as int32: 0xFFFFFFFF is -1
            if value < -1:
                raise InvalidValueError(f"a timeout is -1 (wait forever) or >= 0 ms, got {value}")
            if attr == G.ACL_MDL_STREAM_SYNC_TIMEOUT:
                self.stream_sync_timeout = value
            else:
                self.event_sync_timeout = value
        self.attrs[attr] = value
