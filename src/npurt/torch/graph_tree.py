"""`torch_npu.npu._graph_tree`: NPU graph trees (what `torch.compile(mode="reduce-overhead")`
records compiled graphs with), as torch_npu provides them (torch_npu/npu/_graph_tree.py, its
port of inductor's CUDA graph trees, torch/_inductor/cudagraph_trees.py): the installed torch's
module, ported when this one is imported (port.py says how, and why).

What is npu's own: no cuBLAS workspace or cuDNN benchmark cache to clear (torch_npu's
`clear_cublass_cache` and `disable_conv_cache_emptying` do nothing either); the private pools,
checkpoints and cached tensors are torch_npu._C's (graph_pools.py).
"""
from __future__ import annotations

import contextlib

import torch  # noqa: F401 - the port's

from ..runtime import fork_safe_lock
from . import port
from . import shim as torch_npu  # noqa: F401 - the port's torch_npu._C

port.load("torch._inductor.cudagraph_trees", globals())
# torch's module-level capture lock, made again as one a forked child gets back unlocked (every
# module-level lock of npurt is: tests/runtime/test_fork.py); the port's functions read the global
graph_capture_lock = fork_safe_lock()
# set by NPUGraphTreeManager.run for the function it runs; None before (torch_npu keeps none)
NPUGraphTreeManager.compile_id = None  # noqa: F821 - the port's
NPUGraphTreeManager.mode = None  # noqa: F821


def clear_cublass_cache() -> None:  # noqa: F811 - the port's, replaced
    """No cuBLAS workspace on npu (torch_npu's does nothing)."""


@contextlib.contextmanager
def disable_conv_cache_emptying():  # noqa: F811
    """No cuDNN benchmark cache on npu (torch_npu's does nothing)."""
    yield
