"""torch.from_dlpack of a DeviceArray: an npu tensor over the same device memory (no copy),
made by the capsule code torch's own npu tensors use (npurt/array/dlpack.py)."""
from __future__ import annotations

import gc
import sys
import threading

import numpy as np
import pytest
import torch

import npurt
import npurt.array.dlpack  # noqa: F401 - (npurt.array is also a function: the module from sys.modules)
import npurt.runtime as rt

dlpack = sys.modules["npurt.array.dlpack"]


def test_torch_sees_the_data_on_the_arrays_npu_device_at_its_address():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = npurt.to_device(a)
    t = torch.from_dlpack(x)
    assert t.device == torch.device("npu:0") and t.dtype == torch.float32 and t.shape == (3, 4)
    assert t.data_ptr() == x.ptr
    np.testing.assert_array_equal(t.cpu().numpy(), a)


def test_the_tensor_and_the_array_share_their_memory():
    x = npurt.zeros(8)
    t = torch.from_dlpack(x)
    t.add_(2)                                              # a torch op writes the array's memory
    torch.npu.synchronize()
    assert x.to_host().tolist() == [2.0] * 8
    x.fill(5)                                              # and npurt's writes show in the tensor
    npurt.synchronize()
    assert t.cpu().tolist() == [5.0] * 8


def test_views_keep_their_strides_and_other_dtypes_their_type():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = npurt.to_device(a).T
    t = torch.from_dlpack(v)
    assert t.shape == (3, 2) and t.stride() == (1, 3)
    np.testing.assert_array_equal(t.cpu().numpy(), a.T)
    ints = torch.from_dlpack(npurt.to_device(np.array([1, -2, 3], np.int64)))
    assert ints.dtype == torch.int64 and ints.cpu().tolist() == [1, -2, 3]


def test_the_tensor_keeps_the_memory_alive_after_the_array_is_gone():
    x = npurt.to_device(np.full(1024, 3.0, np.float32))
    t = torch.from_dlpack(x)
    ptr = x.ptr
    del x
    gc.collect()
    others = [npurt.full(1024, 9.0) for _ in range(4)]     # the pool does not hand the memory out again
    assert ptr not in [o.ptr for o in others]
    assert t.cpu().tolist() == [3.0] * 1024


def test_a_host_copy_asked_for_through_torch_is_the_data():
    x = npurt.to_device(np.arange(4, dtype=np.float32))
    t = torch.from_dlpack(x, device="cpu")                 # cross-device: torch copies from npu
    assert t.device == torch.device("cpu") and t.tolist() == [0.0, 1.0, 2.0, 3.0]


# ---------------------------------------------------------------- the two capsule makers
# npurt.array.dlpack.capsule_at is the C accelerator's capsule where it is built, numpy's
# rewritten capsule without it: the same contract, held here for both
MAKERS = {"numpy": dlpack._numpy_capsule_at}
if rt.dlpack_capsule is not None:
    MAKERS["C"] = rt.dlpack_capsule


@pytest.fixture(params=sorted(MAKERS))
def make(request):
    return MAKERS[request.param]


def test_a_capsule_is_a_tensor_over_the_memory_with_its_layout(make):
    host = np.arange(12, dtype=np.float32)
    t = torch._C._from_dlpack(make(host.ctypes.data + 4, (3, 2), (1, 3), 2, 32, dlpack.KDL_CPU, 0, None))
    assert t.data_ptr() == host.ctypes.data + 4 and t.shape == (3, 2) and t.stride() == (1, 3)
    assert t.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    scalar = torch._C._from_dlpack(make(host.ctypes.data, [], [], 2, 32, dlpack.KDL_CPU, 0, None))
    assert scalar.shape == () and scalar.item() == 0.0


def test_the_owner_is_released_once_when_torch_frees_the_storage(make):
    host, calls = np.zeros(4, np.float32), []
    owner = (calls.append, "x")
    t = torch._C._from_dlpack(make(host.ctypes.data, (4,), (1,), 2, 32, dlpack.KDL_CPU, 0, owner))
    view = t[1:]
    del t
    assert calls == []            # the view keeps the storage
    del view
    gc.collect()
    assert calls == [owner]


def test_a_capsule_never_consumed_releases_its_owner_and_a_failing_release_is_dropped(make):
    calls = []

    def failing(owner):
        calls.append(owner)
        raise RuntimeError("a torn-down runtime")
    capsule = make(0, (0,), (1,), 2, 32, dlpack.KDL_CPU, 0, (failing,))
    del capsule
    gc.collect()
    assert len(calls) == 1


def test_a_release_from_another_thread_runs(make):
    host, calls = np.zeros(4, np.float32), []
    t = torch._C._from_dlpack(make(host.ctypes.data, (4,), (1,), 2, 32, dlpack.KDL_CPU, 0, (calls.append,)))
    box = [t]
    del t
    worker = threading.Thread(target=box.clear)
    worker.start()
    worker.join()
    gc.collect()
    assert len(calls) == 1
