"""A loaded model: its device memory, its ONNX Runtime session, and its execution task.

Loading (`load`) checks the .om (om.py), that it was converted for the SoC the device is,
and takes the model's device memory: weight memory (the initializers, handed to ORT as
external initializers that live there) and work memory (AIPP output buffers; the size of
the model's feature maps is reserved there as a real model's would be). Either may be given
by the application (load_from_*_with_mem); else the runtime allocates and frees it. Each
model gets an internal stream for synchronous execution, as GE models do.

Execution is one `ModelTask` on a stream: ordered with copies, events and callbacks; it reads
its inputs from device memory when it runs and writes the outputs there, through ORT's I/O
binding over numpy views of the device arena (no staging copies; outputs whose dims are
data-dependent are the exception: ORT allocates them, and they are copied once). A failure
is reported at the stream's synchronize as ACL_ERROR_RT_MODEL_EXECUTE (507011). A model's
executions are serialised (one lock per model), as GE does across threads.

Model ids are process-wide; an unknown id is ACL_ERROR_GE_EXEC_MODEL_ID_INVALID (145003).

An execution runs inside one ONNX Runtime call with its own RunOptions, and stops (ORT's
`terminate`) when:
* its deadline passes: the op execute timeout in effect (set_op_execute_timeout*, as for a
  kernel, timed over the whole run): ACL_ERROR_RT_AICORE_TIMEOUT (507014);
* an execute_v2 config's stream timeout passes while it runs: ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
  (507046, what the synchronize returns);
* its device is reset or the runtime finalized: ACL_ERROR_RT_DEVICE_TASK_ABORT (107022);
* Ctrl-C reaches a synchronous `execute` (which therefore waits for the run from the main
  thread instead of running it there: a signal is only handled between bytecodes);
* the interpreter exits (an atexit hook stops every run and waits for it to leave ORT, so the
  engine is never torn down under a thread still inside it).
Unloading a model stops its executions in flight (107022) before its session goes away.

A payload the loader cannot use gets the code GE's ModelHelper (base/common/helper/
model_helper.cc) gives at the same stage: content it cannot parse or will not load is
ACL_ERROR_GE_PARAM_INVALID (145000): a description that is not the converter's (fields
missing or of the wrong type: see modeldef.check_meta), and any tensor whose data lives
outside the .om ("external data": a path the loader would resolve against the process's
working directory, so a model file could read the files there; a converted model's weights
always live inside the .om: `npurt atc` reads an ONNX model's external data from the model's
own directory and embeds it). A model partition that does not load (the graph protobuf
cannot parse, a tensor with negative dims or data that does not match them) is
ACL_ERROR_GE_EXEC_LOAD_MODEL_PARTITION_FAILED (545002), as GenerateGeModel returns when
LoadModelData fails.
"""
from __future__ import annotations

import atexit
import itertools
import logging
import threading
import time
from collections import OrderedDict
from math import prod

import numpy as np

from ..progress import progress
from ..runtime import fork_safe_lock
from ..runtime import (HOOKS, InvalidValueError, NpuError, RUNTIME, address, constants as C,
                       current_context, free, malloc_on, resolve as locate)
from . import aipp as A
from ..runtime import effective_op_execute_timeout_us
from . import engine
from .deadlines import DEADLINES
from .dataset import Dataset
from .modeldef import ROLE_AIPP_DATA, ROLE_DATA, ROLE_MBATCH, IODef, ModelDef
from .payload import (_CORRUPT, BAD_PARTITION, externalise, graph_reads_value, memory_needs, parse, parse_graph,
                      weight_layout)
from .task import ModelTask
from .tensor import TensorDesc
from .dtypes import to_numpy

_log = logging.getLogger("npurt.ge")
_models: dict[int, "Model"] = {}
_running: dict["ModelTask", "Model"] = {}  # executions inside ONNX Runtime now
EXIT_WAIT_S = 30.0  # at interpreter exit: how long stopped runs may take to leave ORT
_exiting: list = []  # non-empty once the interpreter exits: executions that start then stop at once
_ids = itertools.count(1)
_lock = fork_safe_lock()


def model_of(model_id) -> "Model":
    model = _models.get(model_id)
    if model is None:
        raise NpuError(f"no model with id {model_id} is loaded (unloaded already, or never loaded)",
                       C.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID)
    return model


def loaded() -> list["Model"]:
    return list(_models.values())


def load(data, work_ptr: int = 0, work_size: int = 0, weight_ptr: int = 0, weight_size: int = 0,
         priority: int = 0, source: str = "memory") -> int:
    """Load an .om image on the current context's device; returns the model id."""
    mdef, graph = parse(data)
    ctx = current_context()
    model = Model(mdef, graph, ctx, source)
    model.load(work_ptr, work_size, weight_ptr, weight_size, priority)
    with _lock:
        model.id = next(_ids)
        _models[model.id] = model
    return model.id


def unload(model_id) -> None:
    with _lock:
        model = _models.pop(model_id, None)
    if model is None:
        raise NpuError(f"no model with id {model_id} is loaded (unloaded already, or never loaded)",
                       C.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID)
    model.release()


def _release_device(device, reason) -> None:
    """Runtime release hook: a device reset or finalize unloads the models loaded on it."""
    with _lock:
        gone = [m for m in _models.values() if m.device is device]
        for m in gone:
            _models.pop(m.id, None)
    for m in gone:
        m.release(quiet=True)


def stop_runs(model: "Model | None", code: int, why: str, thread: int | None = None) -> list["ModelTask"]:
    """Stop the executions inside ONNX Runtime (of `model`, or all; with `thread`, those that
    thread runs); returns them."""
    tasks = [t for t, m in list(_running.items())
             if (model is None or m is model) and (thread is None or t.runner == thread)]
    for t in tasks:
        t.expire(code, why)
    return tasks


def _stop_at_exit() -> None:
    """atexit: no thread may be inside ONNX Runtime when the interpreter tears it down (a
    daemon worker still running a model made the process die with SIGABRT)."""
    _exiting.append(True)  # first: a run registering after the snapshot below sees it
    if not stop_runs(None, C.ACL_ERROR_RT_DEVICE_TASK_ABORT, "was stopped: the interpreter is exiting"):
        return
    deadline = time.monotonic() + EXIT_WAIT_S
    while _running and time.monotonic() < deadline:
        time.sleep(0.005)


_exit_hook = []


def _register_exit_hook() -> None:
    """Registered after ONNX Runtime was imported (atexit runs hooks last-in first-out, so
    ours runs before any ORT registers)."""
    if not _exit_hook:
        _exit_hook.append(atexit.register(_stop_at_exit))


RUNTIME.release_hooks.append(_release_device)


class Model:
    def __init__(self, mdef: ModelDef, graph: bytes, ctx, source: str):
        self.mdef = mdef
        self.graph = graph
        self.context = ctx
        self.device = ctx.device
        self.source = source
        self.id = 0
        self.priority = 0
        self.session = None
        self.stream = None
        self.lock = threading.Lock()
        self.weight_ptr = self.work_ptr = 0
        self.owns_weight = self.owns_work = False
        self._values = []                   # ORT values over the weight memory
        self._bindings: OrderedDict = OrderedDict()
        self.cur_gear: int | None = None    # the gear the latest dynamic setter chose
        self.aipp_buffers: dict[int, int] = {}  # input index -> work-memory address of its AIPP output
        self._plans: dict = {}
        self._warned: set = set()  # (input index, size) warned of a buffer bigger than the input
        self._no_dims = (None,) * len(mdef.inputs)
        self.cancelled: dict = {}  # (stream, seq) -> (code, why): that execution fails (unrun if queued)
        spec = self.device.spec
        if mdef.soc != spec.name:
            raise NpuError(f"this model was converted for {mdef.soc} (--soc_version) but device {self.device.id} "
                           f"is {spec.name}: convert it again with --soc_version={spec.name}, or run with "
                           f"NPURT_SOC={mdef.soc}", C.ACL_ERROR_GE_LOAD_MODEL)

    def cancel(self, stream, seq: int, code: int, why: str) -> None:
        """Execution `seq` on `stream` fails with `code`: stopped if it runs, unrun if still
        queued (Ctrl-C in a synchronous execute, an execute_v2 stream timeout). Only that one:
        other threads' executions on the same stream go on."""
        if len(self.cancelled) > 1024:  # entries of executions that had run already
            self.cancelled.clear()
        self.cancelled[(stream, seq)] = (code, why)
        for t in [t for t, m in list(_running.items()) if m is self and t.stream is stream and t.seq == seq]:
            t.expire(code, why)

    def __repr__(self) -> str:
        return f"<npurt model {self.id} {self.mdef.name!r} on device {self.device.id}>"

    # ------------------------------------------------------------ load / unload
    def load(self, work_ptr: int, work_size: int, weight_ptr: int, weight_size: int, priority: int) -> None:
        onnx = engine.import_onnx()
        from onnx import numpy_helper
        proto = parse_graph(self.graph)
        inits = list(proto.graph.initializer)
        input_names = {vi.name for vi in proto.graph.input}
        offsets, _ = weight_layout(inits)
        need_work, need_weight = memory_needs(self.mdef, proto)
        self.priority = priority
        try:
            self.weight_ptr, self.owns_weight = self._memory(weight_ptr, weight_size, need_weight, "weight")
            self.work_ptr, self.owns_work = self._memory(work_ptr, work_size, need_work, "work")
            names, values = [], []
            for t, off in zip(inits, offsets):
                if t.name in input_names or t.data_type in (8, 16) or t.data_type > 16:
                    continue  # strings, bfloat16, float8, overridable inputs: ORT keeps them
                try:
                    arr = numpy_helper.to_array(t)
                except _CORRUPT as exc:
                    raise NpuError(f"initializer {t.name!r} of this .om is corrupt ({exc}): convert the model "
                                   "again", BAD_PARTITION) from None
                nbytes = arr.nbytes
                view = self.device.backend.view(self.weight_ptr + off, nbytes)
                typed = view.view(arr.dtype).reshape(arr.shape)
                typed[...] = arr
                if graph_reads_value(t):
                    continue  # ORT's shape inference reads it while building the graph: it stays inline
                names.append(t.name)
                values.append(engine.import_ort().OrtValue.ortvalue_from_numpy(typed))
                externalise(onnx, t, off, nbytes)
            self._values = values
            threads = engine.ai_core_threads(self.device.spec.aicore_num)
            try:
                with progress(f"loading model {self.source or self.id}"):   # seconds for a large model (terminal only)
                    self.session = engine.session(proto.SerializeToString(), threads, (names, values))
            except Exception as exc:  # noqa: BLE001 - ORT's reason is the message
                raise NpuError(f"the model cannot be loaded: {exc}", C.ACL_ERROR_GE_LOAD_MODEL) from None
            _register_exit_hook()
            self._plan_work()
            self.stream = self.device.new_stream(self.context)
        except BaseException:
            self.release(quiet=True)
            raise
        self.graph = b""  # the session holds the graph now

    def _memory(self, ptr: int, size: int, need: int, what: str) -> tuple[int, bool]:
        if ptr:
            if size < need:
                raise NpuError(f"the {what} memory given ({size} bytes) is smaller than the model needs ({need} "
                               "bytes; see acl.mdl.query_size)", C.ACL_ERROR_GE_PARAM_INVALID)
            span = locate(RUNTIME, ptr, need or 1, f"{what} memory")
            if span.device is not self.device:
                raise NpuError(f"the {what} memory 0x{ptr:x} must be device memory of device {self.device.id}, "
                               "where the model is loaded", C.ACL_ERROR_GE_PARAM_INVALID)
            return ptr, False
        if need == 0:
            return 0, False
        return malloc_on(self.device, need, C.ACL_MEM_MALLOC_HUGE_FIRST), True

    def _plan_work(self) -> None:
        """Work-memory addresses of the AIPP outputs (float32 at the largest gear)."""
        offset = 0
        for index, io in enumerate(self.mdef.inputs):
            if io.aipp is not None or io.dyn_aipp is not None:
                nbytes = prod(io.shape_at(None)) * np.dtype(io_numpy(io.model_dtype)).itemsize
                if offset + nbytes > self.mdef.work_size or not self.work_ptr:
                    raise NpuError("the model's work memory is too small for its AIPP output",
                                   C.ACL_ERROR_GE_PARAM_INVALID)
                self.aipp_buffers[index] = self.work_ptr + offset
                offset += (nbytes + 511) // 512 * 512

    def release(self, quiet: bool = False) -> None:
        """Drop the session; free the memory the runtime allocated; destroy the stream.
        Executions in flight are stopped first (ACL_ERROR_RT_DEVICE_TASK_ABORT), and none is
        inside the session when it goes; queued ones fail when they come to run. `quiet`: a
        device reset or finalize (errors freeing memory are not raised)."""
        stop_runs(self, C.ACL_ERROR_RT_DEVICE_TASK_ABORT,
                  "was aborted: the model was unloaded (or its device reset) while it ran")
        stream, self.stream = self.stream, None
        if stream is not None and not stream.destroyed:
            try:
                stream.synchronize(report_errors=False)
            except NpuError:
                stream.abort()
            self.device.release_stream(stream)
        with self.lock:  # a run on another stream holds it while inside the session
            self.session = None
        self._bindings.clear()
        self._values = []
        for attr, owns in (("weight_ptr", "owns_weight"), ("work_ptr", "owns_work")):
            ptr = getattr(self, attr)
            if ptr and getattr(self, owns):
                try:
                    free(ptr)
                except NpuError:
                    if not quiet:
                        raise
            setattr(self, attr, 0)

    # ------------------------------------------------------------ dynamic gears
    def select(self, dataset: Dataset, kind: str, values, index: int) -> None:
        """A dynamic setter: check the gear, record it on the dataset and write it into the
        `ascend_mbatch_shape_data` buffer at `index` (uint64 values, as GE does)."""
        mdef = self.mdef
        buf = dataset.buffer(index)
        if not buf.data:
            raise InvalidValueError(f"the data buffer at index {index} has no memory (address 0): give the "
                                    f"{C_DYN} input a device buffer of get_input_size_by_index bytes")
        if not mdef.dynamic:
            raise NpuError("this model has no dynamic gears (it was not converted with --dynamic_batch_size, "
                           "--dynamic_image_size or --dynamic_dims)", C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID)
        gear = mdef.gear_index(kind, values)
        if gear is None:
            what = {"batch": "batch size", "hw": "image size (h, w)", "dims": "dims"}[kind]
            choices = ", ".join(str(g[0] if kind == "batch" else tuple(g)) for g in mdef.gears)
            raise NpuError(f"{what} {values[0] if kind == 'batch' else tuple(values)} is not a gear of the model "
                           f"(its {mdef.dynamic['kind']} gears: {choices})", C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID)
        width = 8 if buf.size >= 8 * len(values) else 4
        if buf.size < 4 * len(values):
            raise NpuError(f"the {C_DYN} buffer is {buf.size} bytes; it needs {4 * len(values)} at least",
                           C.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID)
        raw = np.array(values, np.uint64 if width == 8 else np.uint32).tobytes()
        span = locate(RUNTIME, buf.data, len(raw), f"{C_DYN} buffer")
        if HOOKS.active:  # the host writes the gear into device memory itself (tools: a host access)
            HOOKS.emit("host_access", addr=span.addr, nbytes=len(raw), mode="w", what=f"{C_DYN} setter")
        address.view(span.addr, len(raw))[:] = np.frombuffer(raw, np.uint8)
        dataset.gear = (kind, tuple(int(v) for v in values))
        self.cur_gear = gear

    # ------------------------------------------------------------ execution
    def enqueue(self, inputs: Dataset, outputs: Dataset, stream, allocate: bool = False, collect: bool = False,
                inline: bool = False) -> int:
        """Validate the datasets and enqueue one execution; returns its sequence number.
        `allocate`: outputs with no memory (data 0) get device memory (sync execute);
        `collect`: outputs of unknown dims with no memory are kept as host arrays in
        `outputs.results` (npurt.Model copies them to the device once they exist)."""
        if self.session is None:
            raise NpuError(f"model {self.id} was unloaded", C.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID)
        if stream.device is not self.device:
            raise NpuError(f"model {self.id} is loaded on device {self.device.id}; execute it on a stream of that "
                           f"device (this stream is on device {stream.device.id})", C.ACL_ERROR_RT_MODEL_CONTEXT)
        mdef = self.mdef
        # As GE's DavinciModel: it reads the buffers of the model's inputs (extra ones are never
        # read) and fails a call that lacks one, or whose outputs differ in number, with FAILED,
        # which the ACL layer reports as ACL_ERROR_GE_FAILURE.
        if len(inputs.buffers) < len(mdef.inputs):
            raise NpuError(f"the input dataset holds {len(inputs.buffers)} buffer(s); the model has "
                           f"{len(mdef.inputs)} input(s) (get_num_inputs, extra dynamic inputs included)",
                           C.ACL_ERROR_GE_FAILURE)
        if len(outputs.buffers) != len(mdef.outputs):
            raise NpuError(f"the output dataset holds {len(outputs.buffers)} buffer(s); the model has "
                           f"{len(mdef.outputs)} output(s) (get_num_outputs)", C.ACL_ERROR_GE_FAILURE)
        gear = self._gear(inputs)
        plan = self._plan(gear)
        if plan is not None and not collect:
            seq = self._enqueue_fast(inputs, outputs, stream, gear, plan, inline)
            if seq is not None:
                return seq
        blocks = []
        ins, in_dims = [], []
        for i, (io, buf) in enumerate(zip(mdef.inputs, inputs.buffers)):
            dims = None
            if plan is None and io.role == ROLE_DATA and io.aipp is None and io.dyn_aipp is None and \
                    not io.gear_dims and any(d < 0 for d in io.dims):
                dims = self._dynamic_dims(io, inputs.descs[i], i)
                need = io.bytes_of(dims)
            else:
                need = self._input_need(io, gear)
            self._check_buffer(buf, need, io, i, "input", blocks)
            if io.size and buf.size > io.size and not mdef.gears:  # GE checks static models only
                self._warn_bigger(i, io, buf.size)
            ins.append((buf.data, buf.size))
            in_dims.append(tuple(dims) if dims is not None else None)
        outs = []
        for k, (io, buf) in enumerate(zip(mdef.outputs, outputs.buffers)):
            known = all(d >= 0 for d in io.shape_at(gear))
            need = io.bytes_of(io.shape_at(gear)) if known else 0
            if not buf.data and allocate:
                size = io.size or need
                if size:
                    buf.data, buf.size = malloc_on(self.device, size, C.ACL_MEM_MALLOC_HUGE_FIRST), size
            if not (collect and not known and not buf.data):
                self._check_buffer(buf, need, io, k, "output", blocks)
            outs.append((buf.data, buf.size, known))
        task = ModelTask(self, tuple(ins), tuple(outs), gear, tuple(in_dims), outputs)
        return stream.enqueue(task, inline=inline, holders=blocks)

    def _input_need(self, io: IODef, gear) -> int:
        """Bytes input `io` must hold at `gear` (its full size for the inputs GE adds)."""
        if io.role == ROLE_DATA and io.aipp is not None:
            shape = io.shape_at(gear)
            return shape[0] * A.image_bytes(io.aipp["input_format"], *io.source_hw(shape))
        if io.role == ROLE_DATA and io.dyn_aipp is None:
            return io.bytes_of(io.shape_at(gear))
        return io.size if io.role != ROLE_MBATCH else 4

    def _plan(self, gear):
        """Per gear: ((need, limit) per input, (need, known) per output), or None when an input
        takes its dims from the dataset (dynamic shape). Computed once."""
        plan = self._plans.get(gear, _NO_PLAN)
        if plan is _NO_PLAN:
            mdef = self.mdef
            if any(io.role == ROLE_DATA and io.aipp is None and io.dyn_aipp is None and not io.gear_dims and
                   any(d < 0 for d in io.dims) for io in mdef.inputs):
                plan = None
            else:
                ins = tuple((self._input_need(io, gear), io.size or None) for io in mdef.inputs)  # need, model size
                outs = tuple((io.bytes_of(io.shape_at(gear)), True) if all(d >= 0 for d in io.shape_at(gear))
                             else (0, False) for io in mdef.outputs)
                plan = (ins, outs)
            self._plans[gear] = plan
        return plan

    def _enqueue_fast(self, inputs, outputs, stream, gear, plan, inline):
        """The common case, checked with a few dict lookups: every buffer starts a live
        allocation of this device and is large enough. None: take the full path (which
        explains what is wrong, or handles the rarer memory kinds)."""
        live = self.device.memory.live
        blocks, ins, outs = [], [], []
        for buf, (need, limit) in zip(inputs.buffers, plan[0]):
            data, size = buf.data, buf.size
            block = live.get(data)
            if block is None or size < need or need > block.requested or (limit is not None and size > limit):
                return None  # the full path checks it (and warns of a buffer bigger than the model's input)
            blocks.append(block)
            ins.append((data, size))
        for buf, (need, known) in zip(outputs.buffers, plan[1]):
            data, size = buf.data, buf.size
            block = live.get(data)
            if block is None or not known or size < need or need > block.requested:
                return None
            blocks.append(block)
            outs.append((data, size, True))
        task = ModelTask(self, tuple(ins), tuple(outs), gear, self._no_dims, outputs)
        return stream.enqueue(task, inline=inline, holders=blocks)

    def _gear(self, inputs: Dataset) -> int | None:
        mdef = self.mdef
        if not mdef.dynamic:
            return None
        if inputs.gear is None:
            return 0  # GE runs batch label 0 when no setter chose one (ge_executor.cc)
        kind, values = inputs.gear
        gear = mdef.gear_index(kind, values)
        if gear is None:
            raise NpuError(f"the dataset's {kind} selection {values} is not a gear of model {self.id}",
                           C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID)
        return gear

    def _dynamic_dims(self, io: IODef, desc: TensorDesc | None, index: int) -> list[int]:
        if desc is None:
            raise InvalidValueError(f"input {index} ({io.name!r}) has dynamic dims {io.dims}: give its real "
                                    "shape with acl.mdl.set_dataset_tensor_desc before executing")
        dims = list(desc.dims)
        if io.dims != [-2]:
            if len(dims) != len(io.dims) or any(m >= 0 and d != m for d, m in zip(dims, io.dims)):
                raise InvalidValueError(f"input {index} ({io.name!r}): the tensor desc's dims {dims} do not fit the "
                                        f"model's {io.dims}")
            for d, r in zip(dims, io.ranges or []):
                if d < r[0] or (r[1] >= 0 and d > r[1]):
                    raise InvalidValueError(f"input {index} ({io.name!r}): dim {d} is outside the range {r} the "
                                            "model was converted with")
        if any(d < 0 for d in dims):
            raise InvalidValueError(f"input {index} ({io.name!r}): the tensor desc's dims {dims} are not concrete")
        return dims

    def _warn_bigger(self, i: int, io: IODef, size: int) -> None:
        # GE's DavinciModel::CheckUserAndModelSize only warns here ("may cause inference
        # problem"): the model reads the first get_input_size_by_index bytes of the buffer.
        if (i, size) not in self._warned:
            self._warned.add((i, size))
            _log.warning("model %d input %d (%r): the data buffer holds %d bytes, more than the model's input size "
                         "%d; the model reads the first %d", self.id, i, io.name, size, io.size, io.size)

    def _check_buffer(self, buf, need: int, io: IODef, i: int, what: str, blocks: list) -> None:
        if not buf.data:
            raise InvalidValueError(f"{what} {i} ({io.name!r}): the data buffer has no memory (address 0)")
        if buf.size < need:
            raise InvalidValueError(f"{what} {i} ({io.name!r}): the data buffer holds {buf.size} bytes, the model "
                                    f"needs {need}")
        span = locate(RUNTIME, buf.data, max(need, 1), f"{what} {i}")
        if span.device is None:
            raise InvalidValueError(f"{what} {i} ({io.name!r}) at 0x{buf.data:x} is host memory; model inputs and "
                                    "outputs must be device memory (acl.rt.malloc)")
        if span.device is not self.device and span.device.id not in self.device.peer_access:
            raise InvalidValueError(f"{what} {i} ({io.name!r}) is memory of device {span.device.id}; the model runs "
                                    f"on device {self.device.id}")
        blocks.append(span.block)

    def run(self, task: "ModelTask") -> None:
        with self.lock:
            session = self.session
            if session is None:
                raise NpuError(f"model {self.id} was unloaded before its execution ran", C.ACL_ERROR_RT_MODEL_EXECUTE)
            key = (task.gear, task.ins, task.outs, task.in_dims)
            binding = self._bindings.get(key)
            if self.aipp_buffers:
                self._prepare_inputs(task)
            if binding is None:
                binding = self._bind(task)
                self._bindings[key] = binding
                if len(self._bindings) > 16:
                    self._bindings.popitem(last=False)
            cancel = self.cancelled.pop((task.stream, task.seq), None) if self.cancelled else None
            if cancel is not None:
                raise NpuError(f"model {self.id} ({self.mdef.name}) execution {cancel[1]} before it ran", cancel[0])
            task.runner = threading.get_ident()
            options = task.options = engine.run_options()
            if task.stop is not None:  # stopped before it started
                options.terminate = True
            try:
                _running[task] = self
                if _exiting:
                    task.expire(C.ACL_ERROR_RT_DEVICE_TASK_ABORT, "was stopped: the interpreter is exiting")
                DEADLINES.watch(task, time.monotonic() + effective_op_execute_timeout_us() / 1e6)
                session.run_with_iobinding(binding, options)
            except Exception as exc:  # noqa: BLE001 - ORT's message names the failing node
                stop = task.stop
                if stop is not None:
                    raise NpuError(stop[1], stop[0]) from None
                raise NpuError(f"the graph failed: {exc}", C.ACL_ERROR_RT_MODEL_EXECUTE) \
                    from None
            finally:
                DEADLINES.unwatch(task)
                _running.pop(task, None)
            if self.mdef.dynamic_shape or not all(known for _, _, known in task.outs):
                self._finish_outputs(task, binding)

    def _prepare_inputs(self, task) -> None:
        """AIPP stages: image in device memory -> model input in work memory."""
        for index, out_addr in self.aipp_buffers.items():
            io = self.mdef.inputs[index]
            addr, size = task.ins[index]
            shape = io.shape_at(task.gear)
            out = _typed(out_addr, shape, io_numpy(io.model_dtype))
            if io.aipp is not None:
                A.run(io.aipp_at(task.gear), address.view(addr, size), shape[0], out, nchw=io.aipp["_nchw"])
            else:
                p_addr, p_size = task.ins[io.dyn_aipp["param"]]
                cfg, batches = A.unpack(bytes(address.view(p_addr, p_size)))
                self._check_dynamic_aipp(io, cfg, batches, shape, size)
                A.run(cfg, address.view(addr, size), shape[0], out, nchw=io.dyn_aipp["nchw"], batches=batches)

    def _check_dynamic_aipp(self, io, cfg, batches, shape, size) -> None:
        n = shape[0]
        if len(batches) < n:
            raise NpuError(f"the dynamic AIPP parameters cover {len(batches)} image(s); the input has {n}",
                           C.ACL_ERROR_GE_AIPP_BATCH_EMPTY)
        if cfg["input_format"] not in A.SUPPORTED:
            raise NpuError("the dynamic AIPP parameters name no supported input format: set them with "
                           "acl.mdl.set_input_aipp before executing", C.ACL_ERROR_GE_AIPP_MODE_INVALID)
        sh, sw = cfg["src_image_size_h"], cfg["src_image_size_w"]
        if n * A.image_bytes(cfg["input_format"], sh, sw) > size:
            raise NpuError(f"{n} source image(s) of {sw} x {sh} do not fit the {size}-byte image buffer",
                           C.ACL_ERROR_GE_PARAM_INVALID)
        nchw = io.dyn_aipp["nchw"]
        mh, mw = (shape[2], shape[3]) if nchw else (shape[1], shape[2])
        for b in batches[:n]:
            h = (b["crop_size_h"] if b["crop"] else sh) + (b["top_padding_size"] + b["bottom_padding_size"]
                                                           if b["padding"] else 0)
            w = (b["crop_size_w"] if b["crop"] else sw) + (b["left_padding_size"] + b["right_padding_size"]
                                                           if b["padding"] else 0)
            if (h, w) != (mh, mw):
                raise NpuError(f"the dynamic AIPP output ({h} x {w}) does not match the model input ({mh} x {mw})",
                               C.ACL_ERROR_GE_PARAM_INVALID)

    def _bind(self, task):
        binding = self.session.io_binding()
        for index, io in enumerate(self.mdef.inputs):
            if io.role != ROLE_DATA:
                continue
            dt = io_numpy(io.model_dtype)
            if index in self.aipp_buffers:
                shape, ptr = io.shape_at(task.gear), self.aipp_buffers[index]
            else:
                shape = task.in_dims[index] if task.in_dims[index] is not None else io.shape_at(task.gear)
                ptr = task.ins[index][0]
            host = _host_pointer(ptr, prod(shape) * dt.itemsize)
            binding.bind_input(io.onnx, "cpu", 0, dt.type, list(shape), host)
        for k, io in enumerate(self.mdef.outputs):
            addr, size, known = task.outs[k]
            if known:
                shape = io.shape_at(task.gear)
                dt = io_numpy(io.dtype)
                binding.bind_output(io.onnx, "cpu", 0, dt.type, list(shape),
                                    _host_pointer(addr, prod(shape) * dt.itemsize))
            else:
                binding.bind_output(io.onnx, "cpu")
        return binding

    def _finish_outputs(self, task, binding) -> None:
        dynamic = [k for k, (_, _, known) in enumerate(task.outs) if not known]
        values = binding.get_outputs() if dynamic else None
        out_ds = task.out_ds
        for k, io in enumerate(self.mdef.outputs):
            addr, size, known = task.outs[k]
            if known:
                dims = io.shape_at(task.gear)
            else:
                arr = values[k].numpy()
                dims = list(arr.shape)
                if not addr:  # collected (npurt.Model)
                    out_ds.results[k] = arr.copy()
                    continue
                if arr.nbytes > size:
                    raise NpuError(f"output {k} ({io.name!r}) is {arr.nbytes} bytes ({dims}); its data buffer holds "
                                   f"{size}", C.ACL_ERROR_RT_MODEL_EXECUTE)
                address.view(addr, arr.nbytes)[:] = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
            if self.mdef.dynamic_shape or not known:
                _set_output_desc(out_ds, k, io, dims)


C_DYN = "ascend_mbatch_shape_data"
_NO_PLAN = object()


def io_numpy(dtype: int) -> np.dtype:
    return to_numpy(dtype)


def _typed(addr: int, shape, dtype) -> np.ndarray:
    return address.view(addr, prod(shape) * np.dtype(dtype).itemsize).view(dtype).reshape(shape)


def _host_pointer(addr: int, nbytes: int) -> int:
    """The host address behind device memory (the simulated NPU's arena) for ORT's binding."""
    return address.view(addr, max(nbytes, 1)).ctypes.data


def _set_output_desc(dataset: Dataset, k: int, io: IODef, dims) -> None:
    while len(dataset.descs) <= k:
        dataset.descs.append(None)
    desc = dataset.descs[k]
    if desc is None:
        dataset.descs[k] = TensorDesc(io.dtype, dims, io.format, io.name)
    else:
        desc.dims = list(dims)
        desc.data_type, desc.format = io.dtype, io.format
