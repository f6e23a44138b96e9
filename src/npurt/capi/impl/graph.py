"""ACL graphs from C (acl_rt.h: aclmdlRICaptureBegin ... aclmdlRIDestroy) over the runtime's
graph operations (npurt.runtime.graph): capture as a stream mode, replay, destroy."""
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
