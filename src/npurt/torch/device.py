"""Which npu device: `torch.npu.set_device`, `current_device`, `device(...)`, `device_count`.

Devices are npurt's logical devices (NPURT_DEVICE_COUNT, ASCEND_RT_VISIBLE_DEVICES); the
current device is npurt's per-thread one. `torch.device("npu")` without an index means the
current device, as on real torch_npu. Torch's own device guard for PrivateUse1 cannot switch
devices from Python (its index is always 0), so an op runs on the device of its tensors and
the current stream of *that* device.
"""
from __future__ import annotations

import uuid

import torch

from .. import devices as _devices
from ..runtime import RUNTIME, Settings, device_can_access_peer, device_get_uuid
from . import acl_init, forked


def index_of(device, optional: bool = True) -> int:
    """The npu device index of an int, "npu", "npu:1", torch.device or None (current)."""
    if device is None:
        return _devices.current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        _devices.runtime_device(device)  # InvalidDeviceError naming the visible range
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "npu":
            raise ValueError(f"Expected a npu device, but got: {device}")  # torch_npu/npu/utils.py's words
        return _devices.current_device() if device.index is None else index_of(device.index)
    raise TypeError(f"expected an npu device (int, 'npu:N' or torch.device), got {type(device).__name__}")


def device_count() -> int:
    """The visible devices. Before the runtime starts it is counted from the environment as it
    is now, without starting the runtime, and not kept: torch_npu re-reads
    ASCEND_RT_VISIBLE_DEVICES until the first device use (torch_npu/npu/__init__.py
    device_count), when the runtime reads it once and for all."""
    if not RUNTIME.initialized:
        return len(Settings.from_env().visible_devices)
    return _devices.device_count()


def current_device() -> int:
    if forked.in_bad_fork:
        forked.check()
    return _devices.current_device()


def set_device(device) -> None:
    forked.check()
    acl_init.check()  # torch_npu initializes ACL here: acl.json, ACL_OP_INIT_MODE
    _devices.set_device(index_of(device))


class device:
    """Context manager: `with torch.npu.device(1):` makes npu:1 current for the block."""

    def __init__(self, device):
        self.idx = None if device is None else index_of(device)
        self._inner = _devices.device(self.idx)

    def __enter__(self):
        self._inner.__enter__()
        return self

    def __exit__(self, *exc):
        self._inner.__exit__(*exc)


class device_of(device):
    """Context manager: the device of tensor `obj` (no-op for a CPU tensor)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.device.type == "npu" else None)


def _plain_index(device) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    return index_of(device)


def can_device_access_peer(device_id, peer_device_id) -> bool:
    """True if `device_id` can read `peer_device_id`'s memory directly (aclrtDeviceCanAccessPeer:
    the simulated topology's direct links); a device and itself: False, as torch_npu answers.
    An index out of range raises AssertionError, torch_npu's check."""
    device, peer = _plain_index(device_id), _plain_index(peer_device_id)
    if not 0 <= device < device_count():
        raise AssertionError("Invalid device id")
    if not 0 <= peer < device_count():
        raise AssertionError("Invalid peer device id")
    return device != peer and bool(device_can_access_peer(device, peer))


def synchronize(device=None) -> None:
    """Wait for all work on every stream of `device` (default: current); raises a failure."""
    _devices.synchronize(index_of(device))


def is_available() -> bool:
    return True


def get_device_name(device=None) -> str:
    return _devices.get_device_name(index_of(device))


class NPUDeviceProperties:
    """`torch.npu.get_device_properties(d)`: the fields of torch_npu's _NPUDeviceProperties
    (torch_npu/csrc/npu/Module.cpp): name (the SoC), total_memory (bytes), cube_core_num (AI
    cores), vector_core_num, L2_cache_size (bytes), multi_processor_count (the vector cores, as
    torch_npu sets it for DataParallel's balance check), uuid; the CUDA-only fields torch_npu
    leaves unset (major, minor, warp_size, ...) are None, as there."""

    major = minor = is_multi_gpu_board = is_integrated = None
    max_threads_per_multi_processor = warp_size = regs_per_multiprocessor = gcnArchName = None

    def __init__(self, index: int):
        p = _devices.get_device_properties(index)
        self.name, self.total_memory = p.name, p.total_memory
        self.cube_core_num, self.vector_core_num = p.multi_processor_count, p.vector_core_count
        self.L2_cache_size = p.l2_cache_size
        self.multi_processor_count = self.vector_core_num or self.cube_core_num
        raw = bytes(b & 0xFF for b in device_get_uuid(index)["bytes"])
        self.uuid = uuid.UUID(bytes=raw)

    def __repr__(self) -> str:
        mb = 1024 * 1024
        return (f"_NPUDeviceProperties(name='{self.name}', total_memory={self.total_memory // mb}MB, "
                f"cube_core_num={self.cube_core_num}, vector_core_num={self.vector_core_num}, uuid={self.uuid}, "
                f"L2_cache_size={self.L2_cache_size // mb}MB)")


def get_device_properties(device=None) -> NPUDeviceProperties:
    return NPUDeviceProperties(index_of(device))
