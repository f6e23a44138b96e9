"""torch_npu's rule for a forked child: a process that forked after its NPU was initialized
leaves the child unable to use the NPU through torch.

torch_npu marks such a child as "in a bad fork" (torch_npu/npu/__init__.py: `_after_fork`,
`_lazy_init`; torch_npu/csrc's pthread_atfork handler for `_npu_isInBadFork`), as torch does
for CUDA: the first NPU use there (a tensor moved to npu, `torch.npu.init()`,
`current_device()`, `set_device()`) raises RuntimeError "Cannot re-initialize NPU in forked
subprocess ..." and multiprocessing code must use the 'spawn' start method. npurt's runtime
itself would start afresh in the child (npurt/runtime/forking.py, and pyACL code keeps that);
the torch face applies torch_npu's rule on top: the child of a process whose runtime was up is
in a bad fork. A child of a process that had not used the NPU yet may use it.
"""
from __future__ import annotations

import os

from ..runtime import RUNTIME

MESSAGE = ("Cannot re-initialize NPU in forked subprocess. To use NPU with multiprocessing, you must use "
           "the 'spawn' start method")

_parent_initialized = False   # the runtime was up when this process last forked
in_bad_fork = False


def _before_fork() -> None:
    global _parent_initialized
    _parent_initialized = bool(RUNTIME.initialized)


def _in_child() -> None:
    global in_bad_fork
    in_bad_fork = in_bad_fork or _parent_initialized


def check() -> None:
    """Raise torch_npu's RuntimeError in a bad fork (called on the way to a first NPU use)."""
    if in_bad_fork:
        raise RuntimeError(MESSAGE)


os.register_at_fork(before=_before_fork, after_in_child=_in_child)
