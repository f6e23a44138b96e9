"""Built models, labels and stream switches from C (acl_rt.h: aclmdlRIBuildBegin, BindStream,
EndTask, BuildEnd, UnbindStream; aclrtCreateLabel ... aclrtSwitchLabelByIndex; aclrtActiveStream,
aclrtSwitchStream) over the runtime's model_build operations."""
from __future__ import annotations

from ... import runtime as rt
from .. import cdata
from ..registry import c_function
from ._common import null, stream_of

mb = rt.model_build


def _model(handle):
    if not handle:
        raise null("modelRI")
    return rt.graph_of(handle)


@c_function("aclmdlRIBuildBegin")
def aclmdlRIBuildBegin(modelRI, flag):
    if not modelRI:
        raise null("modelRI")
    ctx = rt.current_context()
    modelRI[0] = mb.build_begin(ctx.device, ctx, flag).handle
    return 0


@c_function("aclmdlRIBindStream")
def aclmdlRIBindStream(modelRI, stream, flag):
    if not stream:
        raise null("stream")
    mb.bind_stream(_model(modelRI), stream_of(stream), flag)
    return 0


@c_function("aclmdlRIUnbindStream")
def aclmdlRIUnbindStream(modelRI, stream):
    if not stream:
        raise null("stream")
    mb.unbind_stream(_model(modelRI), stream_of(stream))
    return 0


@c_function("aclmdlRIEndTask")
def aclmdlRIEndTask(modelRI, stream):
    mb.end_task(_model(modelRI), stream_of(stream))
    return 0


@c_function("aclmdlRIBuildEnd")
def aclmdlRIBuildEnd(modelRI, reserve):
    if reserve:
        raise rt.ParamInvalidError("aclmdlRIBuildEnd: reserve must be NULL")
    mb.build_end(_model(modelRI))
    return 0


@c_function("aclrtActiveStream")
def aclrtActiveStream(activeStream, stream):
    if not activeStream:
        raise rt.ParamInvalidError("aclrtActiveStream: activeStream is NULL")
    mb.active_stream(stream_of(activeStream), stream_of(stream))
    return 0


@c_function("aclrtSwitchStream")
def aclrtSwitchStream(leftValue, cond, rightValue, dataType, trueStream, falseStream, stream):
    # falseStream is reserved (acl_rt.h)
    mb.switch_stream(leftValue, cond, rightValue, dataType, stream_of(trueStream) if trueStream else None,
                     stream_of(stream))
    return 0


@c_function("aclrtCreateLabel")
def aclrtCreateLabel(label):
    if not label:
        raise null("label")
    label[0] = mb.create_label().handle
    return 0


@c_function("aclrtDestroyLabel")
def aclrtDestroyLabel(label):
    if not label:
        raise null("label")
    mb.destroy_label(mb.label_of(label))
    return 0


@c_function("aclrtSetLabel")
def aclrtSetLabel(label, stream):
    if not label:
        raise null("label")
    mb.set_label(mb.label_of(label), stream_of(stream))
    return 0


@c_function("aclrtCreateLabelList")
def aclrtCreateLabelList(labels, num, labelList):
    if not labels:
        raise null("labels")
    if not labelList:
        raise null("labelList")
    handles = cdata.ffi.cast("uintptr_t *", labels)
    labelList[0] = mb.create_label_list([mb.label_of(int(handles[i])) for i in range(num)]).handle
    return 0


@c_function("aclrtDestroyLabelList")
def aclrtDestroyLabelList(labelList):
    if not labelList:
        raise null("labelList")
    mb.destroy_label_list(mb.label_list_of(labelList))
    return 0


@c_function("aclrtSwitchLabelByIndex")
def aclrtSwitchLabelByIndex(ptr, maxValue, labelList, stream):
    mb.switch_label_by_index(ptr, maxValue, mb.label_list_of(labelList) if labelList else None, stream_of(stream))
    return 0
