"""`torch_npu.utils._dynamo`: torch.compile's device interface for npu.

As torch_npu's (torch_npu/utils/_dynamo.py, _dynamo_device.py): `NpuInterface` is Dynamo's
`DeviceInterface` over torch.npu (devices, streams, events, properties; `get_raw_stream(i)` is
`torch_npu._C._npu_getCurrentRawStream`, the current stream's aclrtStream handle), and
`_dynamo_register_interface_for_device()` registers it for "npu" and "npu:0" .. "npu:31".
What Dynamo can then do with npu is npurt's torch.compile story (docs/torch.md): graphs run
with the eager and aot_eager backends, Inductor's code generation is not available.
"""
from __future__ import annotations

import torch
from torch._dynamo.device_interface import (DeviceInterface, caching_worker_current_devices,
                                            caching_worker_device_properties, register_interface_for_device)

from .. import _C


class NpuInterface(DeviceInterface):
    device = torch.device
    Event = torch.npu.Event
    Stream = torch.npu.Stream

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            caching_worker_current_devices["npu"] = device

        @staticmethod
        def current_device() -> int:
            if "npu" in caching_worker_current_devices:
                return caching_worker_current_devices["npu"]
            return torch.npu.current_device()

        @staticmethod
        def get_device_properties(device=None):
            if isinstance(device, str):
                device = torch.device(device)
                if device.type != "npu":
                    raise AssertionError("device.type should be equal to npu.")
            if isinstance(device, torch.device):
                device = device.index
            if device is None:
                device = NpuInterface.Worker.current_device()
            if "npu" not in caching_worker_device_properties:
                caching_worker_device_properties["npu"] = [torch.npu.get_device_properties(i)
                                                           for i in range(torch.npu.device_count())]
            return caching_worker_device_properties["npu"][device]

    current_device = staticmethod(torch.npu.current_device)
    set_device = staticmethod(torch.npu.set_device)
    device_count = staticmethod(torch.npu.device_count)
    stream = staticmethod(torch.npu.stream)
    current_stream = staticmethod(torch.npu.current_stream)
    set_stream = staticmethod(torch.npu.set_stream)
    synchronize = staticmethod(torch.npu.synchronize)
    get_device_properties = staticmethod(torch.npu.get_device_properties)
    _set_stream_by_id = staticmethod(None)  # torch_npu has none either
    get_raw_stream = staticmethod(_C._npu_getCurrentRawStream)

    @staticmethod
    def is_available() -> bool:
        return torch.npu.device_count() > 0

    @staticmethod
    def get_compute_capability(device=None):
        """As torch_npu: the chip's name, not a CUDA capability."""
        return torch.npu.get_device_name(device)

    @staticmethod
    def exchange_device(device: int) -> int:
        previous = torch.npu.current_device()
        torch.npu.set_device(device)
        return previous

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        return device

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True


def _dynamo_register_interface_for_device() -> None:
    register_interface_for_device("npu", NpuInterface)
    for i in range(32):
        register_interface_for_device(f"npu:{i}", NpuInterface)
