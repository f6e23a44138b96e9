"""ACL graphs from C (acl_rt.h: aclmdlRICaptureBegin ... aclmdlRIDestroy) over the runtime's
graph operations (npurt.runtime.graph): capture as a stream mode, replay, destroy; task groups
and their updates, conditional tasks and their bodies, names, ids, destroy callbacks, abort.
Built models, labels and stream switches are capi/impl/model_build.py."""
from __future__ import annotations

import json
import sys

from ... import runtime as rt
from .. import cdata
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
    rt.graph.capture_task_group_begin(_capturable(stream))
    return 0


@c_function("aclmdlRICaptureTaskGrpEnd")
def aclmdlRICaptureTaskGrpEnd(stream, handle):
    if not handle:
        raise null("handle")
    handle[0] = rt.graph.capture_task_group_end(_capturable(stream)).handle
    return 0


@c_function("aclmdlRICaptureTaskUpdateBegin")
def aclmdlRICaptureTaskUpdateBegin(stream, handle):
    if not handle:
        raise null("handle")
    rt.graph.capture_task_update_begin(_capturable(stream), rt.graph.group_of(handle))
    return 0


@c_function("aclmdlRICaptureTaskUpdateEnd")
def aclmdlRICaptureTaskUpdateEnd(stream):
    note_task(rt.graph.capture_task_update_end(_capturable(stream)))
    return 0


# ---------------------------------------------------------------- conditional tasks
@c_function("aclmdlRICondHandleCreate")
def aclmdlRICondHandleCreate(modelRI, defaultLaunchValue, flag, handle):
    if not handle:
        raise null("handle")
    handle[0] = rt.graph.cond_handle_create(_graph(modelRI), defaultLaunchValue, flag).handle
    return 0


@c_function("aclmdlRICondHandleGetCondPtr")
def aclmdlRICondHandleGetCondPtr(handle, ptr):
    if not handle:
        raise null("handle")
    if not ptr:
        raise null("ptr")
    ptr[0] = rt.graph.cond_handle_of(handle).addr
    return 0


@c_function("aclmdlRIAddCondTask")
def aclmdlRIAddCondTask(params, stream, flags):
    p = cdata.struct("aclmdlRICondTaskParams *", params)
    if not p.handle:
        raise null("params.handle")
    if not p.modelRIArray:
        raise null("params.modelRIArray")
    bodies = rt.graph.add_cond_task(rt.graph.cond_handle_of(int(cdata.ffi.cast("uintptr_t", p.handle))),
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
