"""`torch_npu.utils`: the names real code imports from it.

`get_cann_version()` is torch_npu's collect_env answer: npurt is not a CANN installation, so
the version is "not known" (what torch_npu says when it finds no CANN install info).
"""
from __future__ import annotations

from . import collect_env  # noqa: F401
from .collect_env import get_cann_version  # noqa: F401
