"""DLPack export of DeviceArrays (`__dlpack__`, `__dlpack_device__`): device memory is
exported as device memory (kDLExtDev, the array's device id) when a consumer that reads it in
place is loaded (npurt.torch registers torch); a consumer that asks for the host gets a copy
unless it forbade one; requests that cannot be met are BufferErrors that say what to do.
torch's side (torch.from_dlpack of a DeviceArray) is in tests/torch/test_torch_dlpack.py."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from gates import Gate
from npurt.array import dlpack


@pytest.fixture
def torch_loaded(monkeypatch):
    """As after `import npurt.torch`: a consumer that reads device memory in place is there."""
    monkeypatch.setattr(dlpack, "DEVICE_CONSUMERS", {"torch"})


@pytest.fixture
def no_device_consumer(monkeypatch):
    monkeypatch.setattr(dlpack, "DEVICE_CONSUMERS", set())


def test_a_device_array_says_it_is_device_memory_of_its_device():
    x = npurt.ones(3)
    assert x.__dlpack_device__() == (dlpack.KDL_EXT_DEV, x.device) == (12, 0)


def test_numpy_asking_for_the_host_gets_a_copy_of_the_data():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = npurt.to_device(a)
    for host in (np.from_dlpack(x, device="cpu"), np.from_dlpack(x, device="cpu", copy=True)):
        np.testing.assert_array_equal(host, a)
    got = np.from_dlpack(x.T, device="cpu")                 # a strided view: its elements, in order
    np.testing.assert_array_equal(got, a.T)
    host = np.from_dlpack(x, device="cpu")
    x.fill(7)
    assert host[0, 0] == 0 and x.to_host()[0, 0] == 7     # a copy, not a view of device memory


def _fields(capsule) -> tuple:
    """(data, device type, device id, ndim, code, bits, lanes) of a capsule's DLTensor."""
    p = dlpack._U64.unpack_from(dlpack._MEM, id(capsule) + dlpack._CAPSULE_POINTER)[0]
    return dlpack._HEAD.unpack_from(dlpack._MEM, p)


def test_the_capsule_describes_the_array(torch_loaded):
    y = npurt.to_device(np.arange(6, dtype=np.float32)).reshape(2, 3)
    assert _fields(y.__dlpack__()) == (y.ptr, 12, 0, 2, 2, 32, 1)


def test_the_export_waits_for_the_queued_work_unless_told_the_consumer_orders_it(torch_loaded):
    s = npurt.Stream()
    x = npurt.zeros(1000)
    npurt.synchronize()
    gate = Gate(s)
    with npurt.stream(s):
        y = x + 1                                          # held behind the gate
        y.__dlpack__(stream=-1)                            # -1: the consumer orders it; no wait
        assert not s.query()
        gate.record(npurt.Stream())                        # the gate opens from another stream
        y.__dlpack__()                                     # None: waits for the current stream
        assert s.query()
    np.testing.assert_array_equal(y.to_host(stream=s), np.ones(1000, np.float32))


def test_dtypes_map_to_their_dlpack_types():
    pytest.importorskip("ml_dtypes")
    assert dlpack.dl_dtype(np.dtype(np.float16)) == (2, 16)
    assert dlpack.dl_dtype(np.dtype(np.int64)) == (0, 64)
    assert dlpack.dl_dtype(np.dtype(np.uint8)) == (1, 8)
    assert dlpack.dl_dtype(np.dtype(np.bool_)) == (6, 8)
    assert dlpack.dl_dtype(npurt.bfloat16) == (4, 16)


def test_with_no_consumer_of_device_memory_an_export_says_copy_it_to_the_host_first(no_device_consumer):
    x = npurt.ones(4)
    for export in (np.from_dlpack, lambda x: x.__dlpack__()):
        with pytest.raises(BufferError, match=r"Copy it to the host first: np.from_dlpack\(x, device='cpu'\)"):
            export(x)
    assert x.to_host().tolist() == [1, 1, 1, 1]                # the array stays usable
    np.testing.assert_array_equal(np.from_dlpack(x, device="cpu"), [1, 1, 1, 1])


def test_with_torch_loaded_numpy_gets_device_memory_and_refuses_it_itself(torch_loaded):
    x = npurt.ones(4)
    with pytest.raises((BufferError, RuntimeError), match="[Uu]nsupported device"):
        np.from_dlpack(x)                                  # numpy reads host memory only
    assert x.to_host().tolist() == [1, 1, 1, 1]


def test_asking_for_the_host_without_a_copy_says_how_to_copy():
    x = npurt.ones(4)
    with pytest.raises(BufferError, match=r"copy=False.*x.to_host\(\)"):
        x.__dlpack__(dl_device=(1, 0), copy=False)
    with pytest.raises(BufferError, match="copy=False"):
        np.from_dlpack(x, device="cpu", copy=False)


def test_another_device_or_a_foreign_stream_is_refused_with_what_to_do(torch_loaded):
    x = npurt.ones(4)
    with pytest.raises(BufferError, match=r"cannot be exported to DLPack device \(12, 5\).*x.to\(device\)"):
        x.__dlpack__(dl_device=(12, 5))
    with pytest.raises(BufferError, match="stream must be None"):
        x.__dlpack__(stream=7)
    capsule = x.__dlpack__(stream=npurt.Stream())          # an npurt.Stream is waited for
    assert type(capsule).__name__ == "PyCapsule"


def test_copy_true_on_the_device_exports_other_memory(torch_loaded):
    x = npurt.ones(4)
    assert _fields(x.__dlpack__(copy=True))[0] != x.ptr
