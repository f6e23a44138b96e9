"""`torch_npu.utils`: the names real code imports from it.

`get_cann_version(module="CANN")` is torch_npu.npu.utils's (torch_npu/utils/__init__.py imports
it from there): "" here, what torch_npu answers when aclsysGetCANNVersion fails (npurt is not
a CANN installation); collect_env keeps its own "not known".
"""
from __future__ import annotations

from . import collect_env  # noqa: F401
from ..npu_utils import get_cann_version  # noqa: F401 - torch_npu.utils's is torch_npu.npu.utils's
