"""`torch_npu.utils.collect_env`: the environment report, with npurt in CANN's place.

As torch_npu's (torch_npu/utils/collect_env.py): `get_cann_version()` reads the CANN install
info under ASCEND_HOME_PATH and says "not known" when there is none, which is the case here;
`get_torch_npu_version()` is the shim's version; `get_pretty_env_info()` is torch's report
plus those two lines and npurt's own version.
"""
from __future__ import annotations

import torch
from torch.utils import collect_env as _torch_collect_env

from .... import _version

NOT_KNOWN = "not known"


def get_cann_version() -> str:
    """CANN's version: "not known" (npurt simulates the runtime; no CANN is installed)."""
    return NOT_KNOWN


def get_torch_npu_version() -> str:
    return f"{torch.__version__.split('+')[0]}.post0+npurt"


def get_pretty_env_info() -> str:
    return (_torch_collect_env.get_pretty_env_info() + f"\nTorch-npu version: {get_torch_npu_version()}"
            f"\nCANN: {get_cann_version()}\nnpurt (simulated NPU runtime): {_version.__version__}\n")


def main() -> None:
    print(get_pretty_env_info())
