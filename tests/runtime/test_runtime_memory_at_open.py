"""What the runtime itself holds on an open device: the kernel stacks a real runtime allocates at
device init (hicann runtime raw_device.cc RawDevice::AllocStackPhyBaseForCloudV2: 32 KiB and
16 KiB for each of 75 cores), so get_mem_info's free is below its total on an open device with
nothing allocated, as torch_npu's test_accelerator.py test_get_memory_info expects; a device
reset gives it back."""
from __future__ import annotations

from npurt.runtime import constants as C
from npurt.runtime.device import RUNTIME_HELD, RUNTIME_STACKS


def test_an_open_device_holds_the_runtimes_kernel_stacks(rt):
    free, total = rt.get_mem_info(C.ACL_HBM_MEM)
    assert RUNTIME_STACKS == (32 + 16) * 1024 * 75 and RUNTIME_HELD == 4 << 20  # in 2 MiB pages
    assert total - free == RUNTIME_HELD
    assert rt.current_device().backend.committed_bytes == RUNTIME_HELD


def test_the_stacks_are_held_once_per_device_and_given_back_at_reset(rt):
    ctx = rt.create_context(0)          # a second context of the open device holds nothing more
    free, total = rt.get_mem_info(C.ACL_HBM_MEM)
    assert total - free == RUNTIME_HELD
    rt.destroy_context(ctx)
    rt.set_device(0)
    device = rt.current_device()
    rt.reset_device(0)
    rt.reset_device(0)                  # the last reference: the device is released
    assert device.backend.committed_bytes == 0 and device.runtime_memory is None
    rt.set_device(0)                    # open again: held again
    free, total = rt.get_mem_info(C.ACL_HBM_MEM)
    assert total - free == RUNTIME_HELD
