"""torch_npu's SocVersion numbers (torch_npu/csrc/core/npu/NpuVariables.h): what
`torch_npu.npu.utils.get_soc_version()` returns for the simulated chip's name."""
from __future__ import annotations

UNSUPPORTED = -1


def _numbered(start: int, names: str) -> dict[str, int]:
    return {name: start + i for i, name in enumerate(names.split())}


SOC_VERSIONS = {
    **_numbered(100, "Ascend910PremiumA Ascend910ProA Ascend910A Ascend910ProB Ascend910B"),
    **_numbered(200, "Ascend310P1 Ascend310P2 Ascend310P3 Ascend310P4 Ascend310P5 Ascend310P7"),
    **_numbered(220, "Ascend910B1 Ascend910B2 Ascend910B2C Ascend910B3 Ascend910B4 Ascend910B4_1"),
    **_numbered(240, "Ascend310B1 Ascend310B2 Ascend310B3 Ascend310B4"),
    **_numbered(250, "Ascend910_9391 Ascend910_9392 Ascend910_9381 Ascend910_9382 Ascend910_9372 "
                     "Ascend910_9362 Ascend910_9363"),
    "Ascend950": 260,
}


def soc_version(name: str) -> int:
    return SOC_VERSIONS.get(name, UNSUPPORTED)
