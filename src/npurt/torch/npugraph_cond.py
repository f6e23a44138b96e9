"""`torch_npu.npu._npugraph_conditional_nodes`: `torch.cond` as a conditional (IF) node of the NPU
graph being captured, as torch_npu provides it (torch_npu/npu/_npugraph_conditional_nodes.py,
its port of torch/_higher_order_ops/cudagraph_conditional_nodes.py): the installed torch's
module, ported when this one is imported (port.py).

`NPUGraphCaptureControlFlowOpDispatchMode` (during a capture) turns each `torch.cond` into both
branches captured into IF bodies of the graph (`NPUGraph.begin_capture_to_if_node(pred)` /
`end_capture_to_conditional_node()`); `ControlFlowOpWarmupDispatchMode` (during the graph
trees' warm-up) also captures the branches once into a throw-away graph, so their first
capture does not allocate.
"""
from __future__ import annotations

import torch  # noqa: F401 - the port's

from . import port

port.load("torch._higher_order_ops.cudagraph_conditional_nodes", globals())
