"""IF nodes of a torch.npu graph capture: `NPUGraph.begin_capture_to_if_node(pred)` /
`end_capture_to_conditional_node()`, as torch_npu's (torch_npu/csrc/core/npu/NPUGraph.cpp) over
npurt's conditional tasks (runtime/graph_cond.py: aclmdlRICondHandleCreate, aclmdlRIAddCondTask,
aclmdlRICaptureToModelRIBegin), which torch_npu.npu._npugraph_conditional_nodes uses for
`torch.cond` during a capture.

* begin: the current stream must be capturing this graph (or its innermost IF body: "Conditional
  capture must be started from the current NPUGraph capture stream."). A condition word of that
  graph, reset to 0 at each replay, gets the predicate's byte (a captured memset and a
  device-to-device copy of the bool tensor: its value at replay decides); an IF task with one
  body is added; a side stream captures into the body and becomes the current stream.
* end: the body's capture ends and the stream before it is current again.
* A random op while a body is captured is refused (random.py), as torch_npu refuses it: the
  body's replays would draw no offset of their own.
"""
from __future__ import annotations

import torch

from ..runtime import capture_begin as _begin, capture_end as _end, capture_info as _info
from ..runtime import graph_cond as _cond
from . import _dlpack
from .optask import current_stream as _current_runtime_stream
from .streams import Stream, stream as _stream_scope


def begin(graph, pred: torch.Tensor, capturing: dict, mode: int) -> None:
    """`graph`: the NPUGraph; `capturing`: graphs.py's table of captures (built graph -> owner)."""
    device = torch.npu.current_device()
    parent_stream = _current_runtime_stream(device)
    status, built = _info(parent_stream)
    if built is None or graph._capturing is None:
        raise RuntimeError("capture_begin() must be called before begin_capture_to_if_node().")
    expected = graph._if_stack[-1][0] if graph._if_stack else _info(graph._capturing)[1]
    if built is not expected:
        raise RuntimeError("Conditional capture must be started from the current NPUGraph capture stream.")
    # torch_npu's checks and words (NPUGraph::set_conditional_handle)
    if not isinstance(pred, torch.Tensor) or pred.device.type != "npu":
        raise RuntimeError("Conditions must be on an npu device to use conditional nodes in npu graphs.")
    if pred.numel() != 1:
        raise RuntimeError("Conditions must be scalar tensors to use conditional nodes in npu graphs.")
    if pred.dtype != torch.bool:
        raise RuntimeError("Conditions must be bool tensors to use conditional nodes in npu graphs.")
    if pred.device.index != device:
        raise RuntimeError("Conditions must be on the same npu device as the graph capture.")
    handle = _cond.cond_handle_create(built, 0, _cond.COND_ASSIGN_DEFAULT)
    word = _dlpack.tensor_at(handle.addr, (8,), (1,), torch.uint8, pred.device.index, None)
    word.zero_()
    word[:1].copy_(pred.detach().reshape(1).view(torch.uint8))
    (body,) = _cond.add_cond_task(handle, _cond.COND_IF, 1, parent_stream)
    side = Stream()
    scope = _stream_scope(side)
    scope.__enter__()
    try:
        _begin(_current_runtime_stream(device), mode, into=body)
    except BaseException:
        scope.__exit__(None, None, None)
        raise
    capturing[id(body)] = (body, graph)
    graph._if_stack.append((body, side, scope))


def end(graph, capturing: dict) -> None:
    if not graph._if_stack:
        raise RuntimeError("end_capture_to_conditional_node() without begin_capture_to_if_node()")
    body, side, scope = graph._if_stack.pop()
    capturing.pop(id(body), None)
    try:
        _end(_current_runtime_stream(torch.npu.current_device()))
    finally:
        scope.__exit__(None, None, None)
