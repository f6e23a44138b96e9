"""ACL graphs from C (acl_rt.h: aclmdlRICaptureBegin ... aclmdlRIDestroy) over the runtime's
graph operations (npurt.runtime.graph): capture as a stream mode, replay, destroy; task groups
and their updates, conditional tasks and their bodies, names, ids, destroy callbacks, abort.
Built models, labels and stream switches are capi/impl/model_build.py."""
from __future__ import annotations

import json
import sys

from ... import runtime as rt
from .. import cdata
from ..cstructs import launch_cfg
from ..registry import c_function
from ._common import note_task, null, stream_of


def _graph(handle):
    if not handle:
        raise null("modelRI")
    return rt.graph_of(handle)


def _capturable(handle):
    stream = stream_of(handle)
    if stream is None:  # ApiErrorDecorator::StreamBeginCapture: stm NULL -> RT_ERROR_INVALID_VALUE
        raise rt.ParamInvalidError("the default stream (NULL) cannot be captured; pass a stream you created")
    return stream


@c_function("aclmdlRICaptureBegin")
def aclmdlRICaptureBegin(stream, mode):
    rt.capture_begin(_capturable(stream), mode)
    return 0


@c_function("aclmdlRICaptureGetInfo")
def aclmdlRICaptureGetInfo(stream, status, modelRI):
    if not status and not modelRI:
        raise rt.ParamInvalidError("status and modelRI cannot both be NULL")
    state, graph = rt.capture_info(_capturable(stream))
    if status:
        status[0] = state
    if modelRI:
        modelRI[0] = graph.handle if graph is not None else 0
    return 0


@c_function("aclmdlRICaptureEnd")
def aclmdlRICaptureEnd(stream, modelRI):
    if not modelRI:
        raise null("modelRI")
    modelRI[0] = rt.capture_end(_capturable(stream)).handle
    return 0


@c_function("aclmdlRICaptureThreadExchangeMode")
def aclmdlRICaptureThreadExchangeMode(mode):
    if not mode:
        raise null("mode")
    mode[0] = rt.graph.exchange_mode(mode[0])
    return 0


@c_function("aclmdlRIExecuteAsync")
def aclmdlRIExecuteAsync(modelRI, stream):
    graph = _graph(modelRI)
    s = stream_of(stream) or rt.current_context().default_stream
    note_task(rt.execute_async(graph, s))
    return 0


@c_function("aclmdlRIExecute")
def aclmdlRIExecute(modelRI, timeout):
    rt.execute(_graph(modelRI), timeout)
    return 0


@c_function("aclmdlRIDestroy")
def aclmdlRIDestroy(modelRI):
    rt.destroy_graph(_graph(modelRI))
    return 0


@c_function("aclmdlRIDebugPrint")
def aclmdlRIDebugPrint(modelRI):
    print(_graph(modelRI).describe(), file=sys.stdout, flush=True)
    return 0


@c_function("aclmdlRIDebugJsonPrint")
def aclmdlRIDebugJsonPrint(modelRI, path, flags):
    graph = _graph(modelRI)
    if not path:
        raise null("path")
    with open(cdata.string(path), "w") as f:
        json.dump(graph.as_json(), f, indent=1)
    return 0


# ---------------------------------------------------------------- task groups and updates
@c_function("aclmdlRICaptureTaskGrpBegin")
def aclmdlRICaptureTaskGrpBegin(stream):
    rt.graph_edit.capture_task_group_begin(_capturable(stream))
    return 0


@c_function("aclmdlRICaptureTaskGrpEnd")
def aclmdlRICaptureTaskGrpEnd(stream, handle):
    if not handle:
        raise null("handle")
    handle[0] = rt.graph_edit.capture_task_group_end(_capturable(stream)).handle
    return 0


@c_function("aclmdlRICaptureTaskUpdateBegin")
def aclmdlRICaptureTaskUpdateBegin(stream, handle):
    if not handle:
        raise null("handle")
    rt.graph_edit.capture_task_update_begin(_capturable(stream), rt.graph_edit.group_of(handle))
    return 0


@c_function("aclmdlRICaptureTaskUpdateEnd")
def aclmdlRICaptureTaskUpdateEnd(stream):
    note_task(rt.graph_edit.capture_task_update_end(_capturable(stream)))
    return 0


# ---------------------------------------------------------------- conditional tasks
@c_function("aclmdlRICondHandleCreate")
def aclmdlRICondHandleCreate(modelRI, defaultLaunchValue, flag, handle):
    if not handle:
        raise null("handle")
    handle[0] = rt.graph_cond.cond_handle_create(_graph(modelRI), defaultLaunchValue, flag).handle
    return 0


@c_function("aclmdlRICondHandleGetCondPtr")
def aclmdlRICondHandleGetCondPtr(handle, ptr):
    if not handle:
        raise null("handle")
    if not ptr:
        raise null("ptr")
    ptr[0] = rt.graph_cond.cond_handle_of(handle).addr
    return 0


@c_function("aclmdlRIAddCondTask")
def aclmdlRIAddCondTask(params, stream, flags):
    p = cdata.struct("aclmdlRICondTaskParams *", params)
    if not p.handle:
        raise null("params.handle")
    if not p.modelRIArray:
        raise null("params.modelRIArray")
    bodies = rt.graph_cond.add_cond_task(rt.graph_cond.cond_handle_of(int(cdata.ffi.cast("uintptr_t", p.handle))),
                                    int(p.type), int(p.size), _capturable(stream))
    out = cdata.ffi.cast("uintptr_t *", p.modelRIArray)
    for i, body in enumerate(bodies):
        out[i] = body.handle
    return 0


@c_function("aclmdlRICaptureToModelRIBegin")
def aclmdlRICaptureToModelRIBegin(stream, modelRI, mode):
    rt.capture_begin(_capturable(stream), mode, into=_graph(modelRI))
    return 0


# ---------------------------------------------------------------- names, ids, callbacks, abort
@c_function("aclmdlRISetName")
def aclmdlRISetName(modelRI, name):
    if not name:
        raise null("name")
    rt.graph.set_name(_graph(modelRI), cdata.string(name))
    return 0


@c_function("aclmdlRIGetName")
def aclmdlRIGetName(modelRI, maxLen, name):
    if not name:
        raise null("name")
    data = _graph(modelRI).name.encode()
    if maxLen <= len(data):
        raise rt.ParamInvalidError(f"aclmdlRIGetName: maxLen {maxLen} cannot hold the name ({len(data)} bytes "
                                   "and its NUL)")
    cdata.write(name, data + b"\0")
    return 0


@c_function("aclmdlRIGetId")
def aclmdlRIGetId(modelRI, modelRIId):
    if not modelRIId:
        raise null("modelRIId")
    modelRIId[0] = _graph(modelRI).model_id
    return 0


@c_function("aclmdlRIDestroyRegisterCallback")
def aclmdlRIDestroyRegisterCallback(modelRI, func, userData):
    if not func:
        raise null("func")
    call = cdata.ffi.cast("aclrtCallback", func)
    rt.graph.register_destroy_callback(_graph(modelRI), _DestroyCallback(func, call), userData)
    return 0


@c_function("aclmdlRIDestroyUnregisterCallback")
def aclmdlRIDestroyUnregisterCallback(modelRI, func):
    if not func:
        raise null("func")
    rt.graph.unregister_destroy_callback(_graph(modelRI), _DestroyCallback(func, None))
    return 0


class _DestroyCallback:
    """A C callback, equal to another of the same function address (unregister finds it)."""

    def __init__(self, addr, call):
        self.addr, self.call = addr, call

    def __eq__(self, other):
        return isinstance(other, _DestroyCallback) and other.addr == self.addr

    def __hash__(self):
        return hash(self.addr)

    def __call__(self, user_data):
        self.call(cdata.ffi.cast("void *", user_data or 0))


@c_function("aclmdlRIAbort")
def aclmdlRIAbort(modelRI):
    rt.graph.abort_graph(_graph(modelRI))
    return 0


# ---------------------------------------------------------------- per-task queries and parameters
def _fill(out, count, items, what):
    """The runtime's array protocol (Stream::StreamGetTasks, Model::ModelGetStreams): a NULL
    array asks the count; otherwise up to *count entries are written, the rest of the array
    NULLed, *count set to what was written, and too small an array is 107039."""
    if not count:
        raise null(f"num{what}")
    if not out:
        count[0] = len(items)
        return 0
    room = count[0]
    arr = cdata.ffi.cast("uintptr_t *", out)
    n = min(room, len(items))
    for i in range(room):
        arr[i] = items[i].handle if i < n else 0
    count[0] = n
    if n < len(items):
        raise rt.NpuError(f"the array holds {room} {what.lower()}, the model has {len(items)}",
                          rt.constants.ACL_ERROR_RT_INSUFFICIENT_INPUT_ARRAY)
    return 0


def _is_built(graph) -> bool:
    return isinstance(graph, rt.model_build.BuiltModel)


@c_function("aclmdlRIGetStreams")
def aclmdlRIGetStreams(modelRI, streams, numStreams):
    graph = _graph(modelRI)
    items = rt.model_build.model_streams(graph) if _is_built(graph) else rt.graph_edit.graph_streams(graph)
    return _fill(streams, numStreams, items, "Streams")


@c_function("aclmdlRIGetTasksByStream")
def aclmdlRIGetTasksByStream(stream, tasks, numTasks):
    s = stream_of(stream)
    if s is None:
        raise rt.ParamInvalidError("aclmdlRIGetTasksByStream: stream is NULL")
    bound = rt.model_build.bound_model(s) is not None
    items = rt.model_build.tasks_of_stream(s) if bound else rt.graph_edit.tasks_of_stream(s)
    return _fill(tasks, numTasks, items, "Tasks")


def _task(handle):
    if not handle:
        raise null("task")
    return rt.graph_edit.model_task_of(handle)


@c_function("aclmdlRITaskGetType")
def aclmdlRITaskGetType(task, type):  # noqa: A002 - the header's name
    if not type:
        raise null("type")
    type[0] = _task(task).task_type()
    return 0


@c_function("aclmdlRITaskGetSeqId")
def aclmdlRITaskGetSeqId(task, id):  # noqa: A002 - the header's name
    if not id:
        raise null("id")
    t = _task(task)
    if _is_built(t.graph):
        raise rt.model_build.not_for_built("aclmdlRITaskGetSeqId")
    id[0] = t.index
    return 0


_EVENT_FIELD = {rt.graph_edit.TASK_EVENT_RECORD: "eventRecordTaskParams", rt.graph_edit.TASK_EVENT_WAIT: "eventWaitTaskParams",
                rt.graph_edit.TASK_EVENT_RESET: "eventResetTaskParams"}
_EVENT_FLAG = {rt.graph_edit.TASK_EVENT_RECORD: "recordFlag", rt.graph_edit.TASK_EVENT_WAIT: "waitFlag",
               rt.graph_edit.TASK_EVENT_RESET: "resetFlag"}


@c_function("aclmdlRITaskGetParams")
def aclmdlRITaskGetParams(task, params):
    if not params:
        raise null("params")
    t = _task(task)
    if _is_built(t.graph):
        raise rt.model_build.not_for_built("aclmdlRITaskGetParams")
    info = rt.graph_edit.task_params(t)
    p = cdata.struct("aclmdlRITaskParams *", params)
    cdata.write(params, bytes(cdata.ffi.sizeof("aclmdlRITaskParams")))
    p.type = info["type"]
    if info["type"] in _EVENT_FIELD:
        sub = getattr(p, _EVENT_FIELD[info["type"]])
        ev = info["event"]
        sub.event = cdata.ffi.cast("void *", ev.handle if ev is not None else 0)
        sub.eventFlag = ev.flags if ev is not None else 0
        setattr(sub, _EVENT_FLAG[info["type"]], 1 if info["external"] else 0)
    elif info["type"] == rt.graph_edit.TASK_VALUE_WRITE:
        p.valueWriteTaskParams.devAddr = cdata.ffi.cast("void *", info["addr"])
        p.valueWriteTaskParams.value = info["value"]
    elif info["type"] == rt.graph_edit.TASK_VALUE_WAIT:
        p.valueWaitTaskParams.devAddr = cdata.ffi.cast("void *", info["addr"])
        p.valueWaitTaskParams.value = info["value"]
        p.valueWaitTaskParams.flag = info["flag"]
    elif info["type"] == rt.graph_edit.TASK_KERNEL:  # GetKernelTaskParams: cfg NULL, device args
        k = p.kernelTaskParams
        k.funcHandle = cdata.ffi.cast("void *", info["func"].handle)
        k.args = cdata.ffi.cast("void *", info["args"])
        k.argsSize = info["args_size"]
        k.numBlocks = info["num_blocks"]
        if info["op_info"]:
            buf = _OP_INFO[task] = cdata.ffi.new("char[]", info["op_info"])
            p.opInfoPtr, p.opInfoSize = buf, len(info["op_info"])
    return 0


_OP_INFO: dict = {}  # task handle -> the shape info buffer aclmdlRITaskGetParams points at


@c_function("aclmdlRITaskSetParams")
def aclmdlRITaskSetParams(task, params):
    """ApiImpl::TaskSetParams: kernel tasks (every field: funcHandle, cfg, args, isHostArgs,
    argsSize, numBlocks, and opInfoPtr/opInfoSize), value writes (devAddr, value) and value
    waits (devAddr, value, flag); event tasks and a type change: 107000. Applied by
    aclmdlRIUpdate."""
    if not params:
        raise null("params")
    t = _task(task)
    if _is_built(t.graph):
        raise rt.model_build.not_for_built("aclmdlRITaskSetParams")
    p = cdata.struct("aclmdlRITaskParams *", params)
    ptype = int(p.type)
    addr = lambda v: int(cdata.ffi.cast("uintptr_t", v))  # noqa: E731
    if ptype == rt.graph_edit.TASK_VALUE_WRITE:
        rt.graph_edit.set_task_params(t, type=ptype, addr=addr(p.valueWriteTaskParams.devAddr),
                                      value=int(p.valueWriteTaskParams.value))
    elif ptype == rt.graph_edit.TASK_VALUE_WAIT:
        rt.graph_edit.set_task_params(t, type=ptype, addr=addr(p.valueWaitTaskParams.devAddr),
                                      value=int(p.valueWaitTaskParams.value), flag=int(p.valueWaitTaskParams.flag))
    elif ptype == rt.graph_edit.TASK_KERNEL:
        k = p.kernelTaskParams
        if not addr(k.funcHandle):
            raise rt.ParamInvalidError("aclmdlRITaskSetParams: params->kernelTaskParams.funcHandle is NULL")
        op_info = cdata.read(addr(p.opInfoPtr), int(p.opInfoSize)) if addr(p.opInfoPtr) and p.opInfoSize else None
        rt.set_kernel_task_params(
            t, addr(k.funcHandle), int(k.numBlocks), addr(k.args), int(k.argsSize), host_args=int(k.isHostArgs) != 0,
            cfg=launch_cfg(addr(k.cfg)), group=addr(p.taskGrp) or None, op_info=op_info)
    else:
        rt.graph_edit.set_task_params(t, type=ptype)  # an event task or an unknown type: the runtime's message
    return 0


@c_function("aclmdlRITaskDisable")
def aclmdlRITaskDisable(task):
    t = _task(task)
    if _is_built(t.graph):
        raise rt.model_build.not_for_built("aclmdlRITaskDisable")
    rt.graph_edit.disable_task(t)
    return 0


@c_function("aclmdlRIUpdate")
def aclmdlRIUpdate(modelRI):
    graph = _graph(modelRI)
    if _is_built(graph):
        raise rt.model_build.not_for_built("aclmdlRIUpdate")
    rt.graph_edit.update_graph(graph)
    return 0


@c_function("aclmdlRIKernelTaskGetAttribute")
def aclmdlRIKernelTaskGetAttribute(task, attrId, attrValue):
    if not task:
        raise null("task")
    if not attrValue:
        raise null("attrValue")
    t = _task(task)
    if _is_built(t.graph):
        raise rt.model_build.not_for_built("aclmdlRIKernelTaskGetAttribute")
    value = rt.graph_edit.kernel_task_attribute(t, attrId)
    v = cdata.struct("aclrtLaunchKernelAttrValue *", attrValue)
    cdata.write(attrValue, bytes(cdata.ffi.sizeof("aclrtLaunchKernelAttrValue")))
    if attrId == rt.constants.ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE:
        v.schemMode = value
    elif attrId == rt.constants.ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE:
        v.dynUBufSize = value
    elif attrId == rt.constants.ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP:
        v.isDataDump = value
    elif attrId == rt.constants.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT:
        v.timeout = min(value, 0xFFFF)
    else:
        v.timeoutUs.timeoutLow, v.timeoutUs.timeoutHigh = value & 0xFFFFFFFF, value >> 32
    return 0
