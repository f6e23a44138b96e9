"""The catalog of simulated SoCs: the hardware facts a driver reports.

Figures are public ones for each part (vendor datasheets and product pages); where a part
ships in several board variants, the most common board is used. The runtime never reads
these directly for policy: it asks the driver, so a real-hardware driver can supply its own.
"""
from __future__ import annotations

from dataclasses import dataclass

# link kinds between two devices (the ACL_RT_DEVS_TOPOLOGY_* bits of aclrtGetDevicesTopo)
TOPOLOGY_HCCS, TOPOLOGY_PHB, TOPOLOGY_SYS = 0x01, 0x08, 0x10

GiB = 1 << 30
MiB = 1 << 20


@dataclass(frozen=True)
class SocSpec:
    """Hardware facts of one NPU model."""

    name: str                 # what acl.get_soc_name() returns
    memory_kind: str          # "HBM" or "DDR": which aclrtMemAttr family get_mem_info answers
    memory_bytes: int         # device memory capacity
    memory_bandwidth: float   # bytes/s, device memory
    host_link_bandwidth: float  # bytes/s, host <-> device (PCIe)
    aicore_num: int           # AI (cube) cores: the kernel launch limit per block dimension
    vector_core_num: int
    aicpu_num: int
    l2_size: int
    max_streams: int          # per device, default streams included
    max_events: int           # per device
    npu_arch: int             # ACL_DEV_ATTR_NPU_ARCH
    max_block_dim: int = 65535  # launch_kernel num_blocks upper bound
    hccs_module: int = 0      # devices per HCCS full-mesh module (0: PCIe cards, no HCCS)
    system_reserved: int = 0  # of memory_bytes, kept by the driver and firmware: get_mem_info's total excludes it
    uvm: bool = False         # unified virtual memory (aclrtMemAllocManaged): Atlas A2/A3 parts only
    stream_ordered_pools: bool = False  # aclrtMemPool* (acl_rt_memory_soma.h): Atlas A2 parts only

    def link(self, a: int, b: int) -> int:
        """How physical devices a and b of one server are connected: HCCS inside a module;
        between modules the path crosses the host's CPU sockets (SYS); PCIe cards reach each
        other through the host bridge (PHB)."""
        if not self.hccs_module:
            return TOPOLOGY_PHB
        return TOPOLOGY_HCCS if a // self.hccs_module == b // self.hccs_module else TOPOLOGY_SYS


SOCS: dict[str, SocSpec] = {
    # Atlas 800T A2 training card part: 64 GB HBM2e at 1.6 TB/s, PCIe 5.0 x16.
    "Ascend910B3": SocSpec(
        # torch_npu reports total_memory=62432MB (aclrtGetMemInfo's total) for this part
        name="Ascend910B3", memory_kind="HBM", memory_bytes=64 * GiB, system_reserved=3104 * MiB,
        memory_bandwidth=1.6e12, host_link_bandwidth=64e9,
        aicore_num=20, vector_core_num=40, aicpu_num=6, l2_size=192 * MiB,
        max_streams=1984, max_events=65536, npu_arch=2201, hccs_module=8,  # 8 NPUs in full-mesh HCCS
        uvm=True,  # the runtime's docs: aclrtMemAllocManaged is supported on Atlas A2 training/inference parts
        stream_ordered_pools=True,  # ... and the aclrtMemPool* calls (11-10_ordered_stream_memory_allocation.md)
    ),
    # Atlas 300I Pro inference card part: 24 GB LPDDR4X at 204.8 GB/s, PCIe 4.0 x16.
    "Ascend310P3": SocSpec(
        # reserve: the 910B3's share of its capacity (4.7%), an estimate
        name="Ascend310P3", memory_kind="DDR", memory_bytes=24 * GiB, system_reserved=1164 * MiB,
        memory_bandwidth=204.8e9, host_link_bandwidth=32e9,
        aicore_num=8, vector_core_num=7, aicpu_num=4, l2_size=96 * MiB,
        max_streams=1024, max_events=65536, npu_arch=2002,
    ),
    # First-generation Ascend 910: 32 GB HBM2 at 1.2 TB/s, PCIe 4.0 x16.
    "Ascend910A": SocSpec(
        # reserve: the 910B3's share of its capacity (4.7%), an estimate
        name="Ascend910A", memory_kind="HBM", memory_bytes=32 * GiB, system_reserved=1552 * MiB,
        memory_bandwidth=1.2e12, host_link_bandwidth=32e9,
        aicore_num=32, vector_core_num=0, aicpu_num=14, l2_size=32 * MiB,
        max_streams=2024, max_events=65536, npu_arch=1001, hccs_module=4,  # two 4-NPU HCCS rings
    ),
}

DEFAULT_SOC = "Ascend910B3"


def soc_by_name(name: str) -> SocSpec:
    """Look up a SoC by name (case-insensitive); the error lists the known names."""
    for key, spec in SOCS.items():
        if key.lower() == name.lower():
            return spec
    raise KeyError(f"unknown SoC {name!r}; known SoCs: {', '.join(SOCS)}")
