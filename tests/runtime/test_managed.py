"""Managed memory (issue 26, item 5): one pointer the host dereferences and kernels, copies and
sets take as device memory; prefetch is stream-ordered, advice is recorded; aclrtFree frees it;
a SoC without UVM refuses it with ACL_ERROR_RT_FEATURE_NOT_SUPPORT."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import npurt
from npurt.runtime import constants as C
from npurt.runtime.errors import InvalidValueError, NpuError

MiB = 1 << 20
DEVICE0 = {"type": C.ACL_MEM_LOCATIONTYPE_DEVICE, "id": 0}


def _host(ptr, n):
    return np.frombuffer((ctypes.c_float * n).from_address(ptr), np.float32)


def test_the_host_and_a_kernel_share_the_bytes_of_managed_memory(rt):
    p = rt.mem_alloc_managed(4096, C.ACL_RT_MEM_ATTACH_GLOBAL)
    assert 0x90000000000 <= p < 0x90000000000 + (3 << 40)   # the runtime's UVM range
    attrs = rt.pointer_get_attributes(p)
    assert attrs["location"] == {"id": 0, "type": C.ACL_MEM_LOCATION_TYPE_MANAGED} and attrs["size"] == 4096
    h = _host(p, 1024)
    h[:] = np.arange(1024)                   # the host writes through the pointer

    @npurt.kernel
    def inc(ctx, x: npurt.GM, n: np.int32):
        v = ctx.gm(x, np.float32, n)
        v += 1

    npurt.launch(inc, 1, p, 1024)
    npurt.synchronize()                      # the coherence point: the stream's end
    assert np.array_equal(h, np.arange(1024) + 1)
    dev = rt.malloc(4096)
    rt.memcpy(dev, 4096, p, 4096, C.ACL_MEMCPY_DEFAULT)   # copies take it as memory of its device
    back = np.empty(1024, np.float32)
    rt.memcpy(back.ctypes.data, 4096, dev, 4096, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert np.array_equal(back, h)
    rt.free(p)
    with pytest.raises(InvalidValueError):
        rt.free(p)


def test_prefetch_is_stream_ordered_and_advice_is_recorded(rt):
    p = rt.mem_alloc_managed(3 * MiB)                     # rounded up to 2 MiB multiples: 4 MiB
    assert rt.mem_managed_get_attr(C.ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, p, 4) == 0
    s = rt.create_stream()
    rt.mem_managed_prefetch_async(p, 4 * MiB, DEVICE0, 0, s)
    s.synchronize()
    assert rt.mem_managed_get_attr(C.ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, p, 4) == \
        C.ACL_MEM_LOCATIONTYPE_DEVICE
    rt.mem_managed_advise(p, 4 * MiB, C.ACL_MEM_ADVISE_SET_READ_MOSTLY, {"type": 0, "id": 0})
    rt.mem_managed_advise(p, 4 * MiB, C.ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, DEVICE0)
    rt.mem_managed_advise(p, 4 * MiB, C.ACL_MEM_ADVISE_SET_ACCESSED_BY, DEVICE0)
    assert rt.mem_managed_get_attr(C.ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, p, 4) == 1
    assert rt.mem_managed_get_attr(C.ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, p, 4) == 0
    assert rt.mem_managed_get_attr(C.ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, p, 4) == [(1, 0)]
    with pytest.raises(InvalidValueError):
        rt.mem_managed_prefetch_async(p, 3 * MiB, DEVICE0, 0, s)    # not a 2 MB multiple
    with pytest.raises(InvalidValueError):
        rt.mem_managed_prefetch_async(p, 6 * MiB, DEVICE0, 0, s)    # past the allocation
    with pytest.raises(InvalidValueError):
        rt.mem_managed_advise(p, 4 * MiB, 9, DEVICE0)                # not an advice
    with pytest.raises(InvalidValueError):
        rt.mem_alloc_managed(4096, 0)                                # flag must be ATTACH_GLOBAL
    rt.free(p)


def test_a_soc_without_uvm_refuses_managed_memory(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "Ascend310P3")
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    with pytest.raises(NpuError) as info:
        fresh_runtime.mem_alloc_managed(4096)
    assert info.value.code == C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT
