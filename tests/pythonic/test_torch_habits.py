"""Habits from torch.npu / torch.cuda and CuPy that work on npurt's Pythonic API (issue 17):
device strings and objects, dtype names, torch-style factories, explicit host copies, memory
counters under torch's names, and the same "copy it to the host first" error for every
implicit conversion."""
from __future__ import annotations

import numpy as np
import pytest

import npurt


# ---------------------------------------------------------------- devices
@pytest.mark.parametrize("spec, index", [("npu", None), ("npu:1", 1), ("NPU:0", 0), (1, 1)])
def test_a_device_is_named_as_torch_names_it(spec, index):
    d = npurt.device(spec)
    assert (d.type, d.index) == ("npu", index)
    assert str(d) == ("npu" if index is None else f"npu:{index}")
    assert repr(d) == ("device(type='npu')" if index is None else f"device(type='npu', index={index})")


def test_devices_compare_by_index():
    assert npurt.device("npu:1") == npurt.device("npu", 1) == npurt.device(1)
    assert npurt.device("npu:0") != npurt.device("npu:1")
    assert len({npurt.device(1), npurt.device("npu:1")}) == 1


@pytest.mark.parametrize("spec, why", [("cpu", "is the host"), ("cuda:0", "not a device npurt simulates"),
                                       ("npu:x", "must be a number"), (1.5, "a device is an int")])
def test_a_device_that_is_not_an_npu_is_refused_with_why(spec, why):
    with pytest.raises(npurt.InvalidDeviceError, match=why):
        npurt.device(spec)


def test_device_strings_and_objects_are_taken_wherever_a_device_is(fresh_runtime):
    for dev in ("npu:1", npurt.device(1), npurt.device("npu", 1)):
        kept = npurt.zeros(3, device=dev)
        assert kept.device == 1
        assert npurt.Stream(device=dev).device == 1
        assert npurt.to_device(np.ones(2), device=dev).device == 1
        assert npurt.memory_allocated(dev) > 0
        assert npurt.current_stream(dev).device == 1
    x = npurt.ones(4, device="npu:0")
    assert x.to("npu:1").device == 1
    npurt.set_device("npu:1")
    assert npurt.current_device() == 1
    assert npurt.zeros(1, device="npu").device == 1            # "npu": the current device
    with npurt.device("npu:0"):
        assert npurt.current_device() == 0
    assert npurt.current_device() == 1


def test_a_bad_device_leaves_the_runtime_usable(fresh_runtime):
    with pytest.raises(npurt.InvalidDeviceError, match="0..1"):
        npurt.zeros(2, device="npu:7")
    assert npurt.ones(2, device="npu:1").cpu().tolist() == [1, 1]


def test_is_available_device_count_and_current_device(fresh_runtime, monkeypatch):
    assert npurt.is_available() and npurt.device_count() == 2 and npurt.current_device() == 0
    fresh_runtime.finalize() if npurt.runtime.RUNTIME.initialized else None
    monkeypatch.setenv("NPURT_SOC", "Ascend999")
    assert npurt.is_available() is False                       # answers, never raises


def test_set_stream_makes_a_stream_current_on_its_device(fresh_runtime):
    s = npurt.Stream(device=1)
    npurt.set_stream(s)
    assert npurt.current_stream() == s and npurt.current_device() == 1
    x = npurt.ones(3)                                           # queued on s
    assert s.query() is False or s.synchronize() is None
    assert x.device == 1


def test_record_stream_is_accepted_and_frees_stay_stream_ordered(fresh_runtime):
    side = npurt.Stream()
    x = npurt.zeros(1 << 16)
    x.record_stream(side)                                       # torch's habit: a no-op here
    with pytest.raises(npurt.InvalidValueError):
        x.record_stream("side")


# ---------------------------------------------------------------- dtypes and factories
def test_dtypes_have_torchs_names():
    assert npurt.float16 == npurt.half == np.float16 and npurt.float32 == np.float32
    assert npurt.float64 == npurt.double and npurt.int32 == np.int32 and npurt.bool_ == np.bool_
    assert npurt.bfloat16.name == "bfloat16"


@pytest.mark.parametrize("make", [lambda: npurt.zeros(2, 3), lambda: npurt.zeros((2, 3)),
                                  lambda: npurt.ones(2, 3, dtype=npurt.float16),
                                  lambda: npurt.empty(2, 3, device="npu:0"),
                                  lambda: npurt.full((2, 3), 7.0), lambda: npurt.randn(2, 3),
                                  lambda: npurt.rand((2, 3), npurt.float16, "npu:1")])
def test_factories_take_torchs_size_arguments_and_numpys_shape(fresh_runtime, make):
    assert make().shape == (2, 3)


def test_factories_read_numpy_integers_as_sizes_and_a_following_dtype_as_numpys(fresh_runtime):
    assert npurt.zeros(np.int64(2), np.uint8(3)).shape == (2, 3)
    x = npurt.empty(4, np.float16)
    assert (x.shape, x.dtype) == ((4,), np.float16)
    assert npurt.empty(4, "int32").dtype == np.int32


@pytest.mark.parametrize("args, kwargs, shape, dtype", [
    ((5,), {}, (5,), np.float32), (((2, 3),), {}, (2, 3), np.float32), ((5,), {"dtype": "int8"}, (5,), np.int8),
    ((2, 3), {}, (2, 3), np.float32), ((4, np.float16), {}, (4,), np.float16), ((4, "int32"), {}, (4,), np.int32),
    (((2, 3), np.dtype("float16")), {}, (2, 3), np.float16), ((np.int64(4), np.float32), {}, (4,), np.float32)])
def test_empty_reads_each_spelling_as_the_other_factories_do(fresh_runtime, args, kwargs, shape, dtype):
    x, z = npurt.empty(*args, **kwargs), npurt.zeros(*args, **kwargs)   # empty has a hot path of its own
    assert (x.shape, x.dtype) == (z.shape, z.dtype) == (shape, dtype)


@pytest.mark.parametrize("args, kwargs", [((2, True), {}), ((2.0,), {}), ((4, np.float16), {"dtype": "int8"}),
                                          (((2, -1),), {})])
def test_empty_refuses_what_zeros_refuses(fresh_runtime, args, kwargs):
    with pytest.raises(Exception) as from_zeros:
        npurt.zeros(*args, **kwargs)
    with pytest.raises(type(from_zeros.value)):
        npurt.empty(*args, **kwargs)
    assert npurt.empty(2).shape == (2,)   # still usable


def test_factories_fill_what_they_say(fresh_runtime):
    assert npurt.zeros(2, 2).cpu().tolist() == [[0, 0], [0, 0]]
    assert npurt.ones(3, dtype=npurt.int32).numpy().tolist() == [1, 1, 1]
    assert npurt.full((2,), 2.5, dtype=npurt.float16).cpu().tolist() == [2.5, 2.5]


def test_randn_and_rand_follow_the_seed_and_their_distribution(fresh_runtime):
    npurt.manual_seed(3)
    a = npurt.randn(50_000).cpu()
    npurt.manual_seed(3)
    assert np.array_equal(npurt.randn(50_000).cpu(), a)
    assert abs(a.mean()) < 0.02 and abs(a.std() - 1) < 0.02
    u = npurt.rand(50_000, dtype=npurt.float16).cpu()
    assert u.dtype == np.float16 and 0 <= u.min() and u.max() <= 1 and abs(u.mean() - 0.5) < 0.02
    r = npurt.randint(3, 7, (1000,)).cpu()
    assert set(np.unique(r)) == {3, 4, 5, 6}


def test_randn_refuses_an_integer_dtype(fresh_runtime):
    with pytest.raises(npurt.InvalidValueError, match="floating-point"):
        npurt.randn(3, dtype=npurt.int32)


def test_to_with_a_dtype_converts_as_torch_does(fresh_runtime):
    x = npurt.to_device(np.array([1.5, 2.5], np.float32))
    assert x.to(npurt.float16).dtype == np.float16 and x.to("float64").cpu().tolist() == [1.5, 2.5]


def test_matmul_is_a_module_function(fresh_runtime):
    a, b = np.random.rand(4, 5).astype(np.float32), np.random.rand(5, 3).astype(np.float32)
    got = npurt.matmul(npurt.to_device(a), npurt.to_device(b)).cpu()
    assert np.allclose(got, a @ b, rtol=1e-5)


# ---------------------------------------------------------------- CuPy's names and explicit copies
def test_array_is_a_function_as_in_cupy_and_tensor_as_in_torch(fresh_runtime):
    assert callable(npurt.array)
    x = npurt.array([[1, 2], [3, 4]], dtype=npurt.float32, device="npu:1")
    assert x.device == 1 and x.cpu().tolist() == [[1, 2], [3, 4]]
    y = npurt.array(x)
    assert y is not x and y.ptr != x.ptr and y.cpu().tolist() == x.cpu().tolist()
    assert npurt.array(x, copy=False) is x
    assert npurt.tensor([1.0, 2.0]).dtype == np.float32


def test_the_old_module_path_still_imports():
    from npurt.array import DeviceArray
    assert DeviceArray is npurt.DeviceArray


def test_cpu_numpy_get_and_asnumpy_are_synchronising_copies(fresh_runtime):
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    s = npurt.Stream()
    x = npurt.asarray(host)
    for copy in (x.cpu(), x.numpy(), x.get(), npurt.asnumpy(x), npurt.asnumpy(x, stream=s)):
        assert isinstance(copy, np.ndarray) and np.array_equal(copy, host)
    assert npurt.asnumpy([1, 2]).tolist() == [1, 2]


def test_set_copies_host_data_in(fresh_runtime):
    x = npurt.empty(3)
    assert x.set(np.array([7, 8, 9], np.float32)) is None
    assert x.get().tolist() == [7, 8, 9]


def test_memory_stats_have_torchs_key_names(fresh_runtime):
    x = npurt.empty(1 << 20, dtype="uint8")
    st = npurt.memory_stats()
    assert st["allocated_bytes.all.current"] == st["allocated_bytes"] >= 1 << 20
    assert st["reserved_bytes.all.peak"] >= st["reserved_bytes.all.current"] >= 1 << 20
    assert st["allocation.all.current"] >= 1 and "num_ooms" in st and "segment.all.current" in st
    del x


def test_peaks_reset_and_max_memory_reserved(fresh_runtime):
    x = npurt.empty(8 << 20, dtype="uint8")
    peak = npurt.max_memory_reserved()
    assert peak >= 8 << 20 and npurt.max_memory_allocated() >= 8 << 20
    del x
    npurt.empty_cache()
    npurt.reset_peak_memory_stats()
    assert npurt.max_memory_reserved() < peak and npurt.max_memory_allocated() < 8 << 20


def test_memory_summary_is_a_readable_table(fresh_runtime):
    x = npurt.empty(3 << 20, dtype="uint8")
    text = npurt.memory_summary()
    assert text.startswith("npurt memory summary, device 0 (Ascend910B3")
    assert "allocated (live arrays and malloc)" in text and "3.0 MiB" in text
    del x


# ---------------------------------------------------------------- implicit host conversions
@pytest.fixture
def no_device_consumer(monkeypatch):
    """No library that reads device memory in place is loaded (npurt.torch is not imported)."""
    from npurt.array import dlpack
    monkeypatch.setattr(dlpack, "DEVICE_CONSUMERS", set())


@pytest.mark.parametrize("convert", [np.sum, np.asarray, np.mean, lambda x: np.add(x, 1), np.from_dlpack,
                                     lambda x: np.concatenate([x, x]), float, list],
                         ids=["np.sum", "np.asarray", "np.mean", "np.add", "np.from_dlpack", "np.concatenate",
                              "float", "list"])
def test_numpy_on_a_device_array_says_copy_it_to_the_host_first(fresh_runtime, no_device_consumer, convert):
    x = npurt.ones(1)
    with pytest.raises((npurt.HostConversionError, BufferError), match="Copy it to the host first"):
        convert(x)
    assert x.cpu().tolist() == [1.0]                            # nothing broke


def test_the_error_for_np_sum_names_the_device_op(fresh_runtime):
    with pytest.raises(npurt.HostConversionError, match=r"np.sum of a DeviceArray \(on the device: npurt.ops.sum\)"):
        np.sum(npurt.ones(3))


def test_torch_as_tensor_of_a_device_array_says_copy_it_to_the_host_first(fresh_runtime, no_device_consumer):
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "as_tensor"):  # tests/torch, a folder, is not PyTorch
        pytest.skip("PyTorch is not installed")
    x = npurt.ones(4)
    for convert in (torch.as_tensor, torch.tensor, torch.from_numpy, torch.from_dlpack):
        with pytest.raises((npurt.HostConversionError, BufferError, TypeError),
                           match="Copy it to the host first|np.ndarray"):
            convert(x)
    assert torch.as_tensor(x.cpu()).tolist() == [1, 1, 1, 1]
