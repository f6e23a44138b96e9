"""The simulated server: up to 16 devices whose memory costs nothing until used, the links
between them (get_devices_topo) and the peer-access rules that follow from them."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from npurt.runtime import constants as C
from npurt.runtime.errors import FeatureNotSupportedError, InvalidValueError
from npurt.runtime.device import RUNTIME_HELD
from npurt.runtime.runtime import RUNTIME

HCCS, PHB, SYS = C.ACL_RT_DEVS_TOPOLOGY_HCCS, C.ACL_RT_DEVS_TOPOLOGY_PHB, C.ACL_RT_DEVS_TOPOLOGY_SYS


@pytest.fixture
def server(fresh_runtime, monkeypatch):
    """A runtime with `count` devices of `soc`: server(count, soc) -> the runtime API."""
    def make(count: int, soc: str = "Ascend910B3"):
        monkeypatch.setenv("NPURT_DEVICE_COUNT", str(count))
        monkeypatch.setenv("NPURT_SOC", soc)
        monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
        fresh_runtime.init()
        fresh_runtime.set_device(0)
        return fresh_runtime
    return make


def test_sixteen_devices_are_available_and_cost_no_memory_until_used(server):
    rt = server(16)
    assert rt.get_device_count() == 16
    # nothing but what an open device holds of its own (its kernel stacks, as a real runtime's)
    opened = [d for d in range(16) if RUNTIME.device(d).runtime_memory is not None]
    assert len(opened) <= 1
    assert sum(RUNTIME.device(d).backend.arena.committed_bytes for d in range(16)) == RUNTIME_HELD * len(opened)
    probed = (0, 11, 15)  # reading residency scans a 64 GiB mapping: a few devices suffice
    assert [RUNTIME.device(d).backend.arena.resident_bytes() for d in probed] == [0, 0, 0]
    with npurt.device(11):
        x = npurt.to_device(np.ones(1 << 20, np.float32))  # 4 MiB touched on device 11 only
    assert x.to_host().sum() == 1 << 20
    resident = [RUNTIME.device(d).backend.arena.resident_bytes() for d in probed]
    assert resident[0] == resident[2] == 0 and resident[1] >= 4 << 20


def test_more_than_sixteen_devices_is_refused_with_the_limit(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_DEVICE_COUNT", "17")
    with pytest.raises(InvalidValueError, match="1..16"):
        fresh_runtime.init()


def test_a2_server_links_eight_npus_by_hccs_and_modules_through_the_host(server):
    rt = server(16)
    assert rt.get_devices_topo(0, 7) == HCCS
    assert rt.get_devices_topo(8, 15) == HCCS
    assert rt.get_devices_topo(3, 12) == SYS
    assert rt.device_can_access_peer(0, 7) == 1
    assert rt.device_can_access_peer(3, 12) == 0


def test_other_socs_describe_their_servers(server):
    rt = server(8, "Ascend910A")  # two 4-NPU HCCS groups
    assert (rt.get_devices_topo(0, 3), rt.get_devices_topo(0, 4)) == (HCCS, SYS)
    RUNTIME.finalize()
    rt = server(4, "Ascend310P3")  # PCIe cards behind the host bridge
    assert rt.get_devices_topo(0, 3) == PHB
    assert rt.device_can_access_peer(0, 3) == 1


def test_peer_access_across_modules_is_refused_with_the_topology(server):
    rt = server(16)
    rt.device_enable_peer_access(5, 0)  # same module: fine
    with pytest.raises(FeatureNotSupportedError, match="HCCS modules") as info:
        rt.device_enable_peer_access(9, 0)
    assert info.value.code == C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT
    assert rt.device_peer_access_status(0, 9) == 0
    a = rt.malloc(64, 0)
    rt.set_device(9)
    b = rt.malloc(64, 0)
    with pytest.raises(InvalidValueError, match="peer access"):
        rt.memcpy(b, 64, a, 64, C.ACL_MEMCPY_DEVICE_TO_DEVICE)


def test_device_array_moves_between_modules_through_host_memory(server):
    server(16)
    x = npurt.to_device(np.arange(10, dtype=np.int32))
    y = x.to(13)
    assert y.device == 13 and y.to_host().tolist() == list(range(10))
    assert x.to(4).to_host().tolist() == list(range(10))  # inside the module: peer copy
