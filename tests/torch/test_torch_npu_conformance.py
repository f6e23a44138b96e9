"""torch_npu's runtime names on torch.npu: options, typed constructors, memory controls,
stream helpers, and DataParallel's copy functions (torch._C._broadcast, _scatter, _gather)."""
from __future__ import annotations

import pytest
import torch

import npurt.torch  # noqa: F401


def test_set_option_validates_as_torch_npu_and_records():
    assert torch.npu.set_option({"ACL_PRECISION_MODE": "allow_fp32_to_fp16", "ACL_AICORE_NUM": 8}) is None
    with pytest.raises(ValueError, match="ACL_OP_DEBUG_LEVEL"):
        torch.npu.set_option({"ACL_OP_DEBUG_LEVEL": "300"})
    with pytest.raises(TypeError, match="must be a dict"):
        torch.npu.set_option(["ACL_PRECISION_MODE"])
    from npurt.torch.options import get_option
    assert get_option("ACL_AICORE_NUM") == b"8"


def test_hf32_switches_default_as_torch_npu_and_read_back():
    from npurt.torch import options
    options._options.pop("ALLOW_CONV_HF32", None)
    options._options.pop("ALLOW_MATMUL_HF32", None)
    assert torch.npu.conv.allow_hf32 is True and torch.npu.matmul.allow_hf32 is False
    torch.npu.conv.allow_hf32, torch.npu.matmul.allow_hf32 = False, True
    assert torch.npu.conv.allow_hf32 is False and torch.npu.matmul.allow_hf32 is True
    with pytest.raises(TypeError, match="must be a bool"):
        torch.npu.matmul.allow_hf32 = 1
    torch.npu.conv.allow_hf32, torch.npu.matmul.allow_hf32 = True, False


def test_typed_constructors():
    a = torch.npu.FloatTensor(2, 3)
    assert a.shape == (2, 3) and a.dtype == torch.float32 and a.device.type == "npu"
    b = torch.npu.HalfTensor([1, 2])
    assert b.dtype == torch.float16 and b.cpu().tolist() == [1.0, 2.0]
    assert torch.npu.LongTensor(torch.Size([4])).shape == (4,)
    assert isinstance(b, torch.npu.HalfTensor) and not isinstance(b, torch.npu.FloatTensor)
    assert not isinstance(torch.ones(1), torch.npu.FloatTensor)
    assert torch.ones(2).type("torch.npu.HalfTensor").dtype == torch.float16


def test_per_process_memory_fraction_caps_npu_tensors():
    assert torch.npu.get_per_process_memory_fraction() == 1.0
    with pytest.raises(TypeError, match="must be `float`"):
        torch.npu.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Allowed range: 0~1"):
        torch.npu.set_per_process_memory_fraction(2.0)
    total = torch.npu.get_device_properties().total_memory
    try:
        torch.npu.set_per_process_memory_fraction(0.01)
        with pytest.raises(torch.OutOfMemoryError, match="set_per_process_memory_fraction"):
            torch.empty(int(total * 0.02), dtype=torch.uint8, device="npu")
        assert torch.empty(1024, device="npu").numel() == 1024
    finally:
        torch.npu.set_per_process_memory_fraction(1.0)
    assert torch.empty(int(total * 0.02), dtype=torch.uint8, device="npu").numel() == int(total * 0.02)


def test_memory_module_and_raw_allocations():
    import torch.npu.memory as memory
    assert memory.memory_allocated is torch.npu.memory_allocated
    ptr = torch.npu.caching_allocator_alloc(4096)
    assert ptr != 0
    torch.npu.caching_allocator_delete(ptr)
    with pytest.raises(RuntimeError, match="caching_allocator_alloc"):
        torch.npu.caching_allocator_delete(ptr)
    assert torch.npu.host_empty_cache() is None


def test_sleep_keeps_the_stream_busy_for_its_cycles():
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    torch.npu._sleep(20 * torch.npu.SLEEP_CYCLES_PER_MS)
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 20.0


def test_stream_npu_stream_is_the_raw_handle():
    s = torch.npu.Stream()
    assert s.npu_stream == s.native_handle != 0
    assert torch.npu._get_device_index("npu:0") == 0
    with pytest.raises(ValueError, match="Expected a npu device"):
        torch.npu._get_device_index("cpu")


def test_dataparallel_comm_functions():
    from torch.nn.parallel import comm
    n = torch.npu.device_count()
    x = torch.arange(6.).view(3, 2).npu()
    copies = comm.broadcast(x, list(range(n)))
    assert copies[0] is x and all(c.device.index == i and torch.equal(c.cpu(), x.cpu()) for i, c in enumerate(copies))
    parts = comm.scatter(x, list(range(n)))
    assert torch.equal(torch.cat([p.cpu() for p in parts]), x.cpu())
    gathered = comm.gather([p for p in parts], destination=-1)
    assert gathered.device.type == "cpu" and torch.equal(gathered, x.cpu())


@pytest.mark.skipif(not torch.npu.device_count() > 1 if hasattr(torch, "npu") else True, reason="needs 2 npus")
def test_dataparallel_trains_like_one_device():
    torch.manual_seed(0)
    m = torch.nn.Linear(2, 1).npu()
    ref = torch.nn.Linear(2, 1)
    ref.load_state_dict({k: v.cpu() for k, v in m.state_dict().items()})
    x = torch.randn(4, 2)
    out = torch.nn.DataParallel(m, device_ids=[0, 1])(x.npu())
    out.sum().backward()
    ref(x).sum().backward()
    torch.testing.assert_close(m.weight.grad.cpu(), ref.weight.grad)


def test_a_stream_rebuilt_from_its_triple_is_the_same_stream():
    s1 = torch.npu.Stream()
    s2 = torch.npu.Stream(stream_id=s1.stream_id, device_index=s1.device_index, device_type=s1.device_type)
    assert s2 == s1 and s2.npurt_stream.runtime_stream is s1.npurt_stream.runtime_stream
    s2.synchronize()
    d = torch.npu.default_stream()
    assert torch.npu.Stream(stream_id=d.stream_id, device_index=d.device_index, device_type=d.device_type) == d
    for bad in ({"stream_id": 99999, "device_index": 0}, {"stream_id": 0, "device_index": 999},
                {"stream_id": -1, "device_index": 0}, {"stream_id": s1.stream_id, "device_index": -1}):
        with pytest.raises(RuntimeError):
            torch.npu.Stream(device_type=s1.device_type, **bad)


def test_legacy_typed_storages_are_npu_typed_storages():
    s = torch.npu.FloatStorage(4)
    assert s.device.type == "npu" and s.dtype == torch.float32 and s.size() == 4
    assert isinstance(s, torch.npu.FloatStorage) and not isinstance(s, torch.npu.IntStorage)
    t = torch.ones(3, dtype=torch.int32, device="npu")
    assert isinstance(t.storage(), torch.npu.IntStorage) and t.storage().type() == "torch.npu.IntStorage"
    assert not isinstance(torch.ones(3, dtype=torch.int32).storage(), torch.npu.IntStorage)   # a CPU one


def test_memory_snapshot_is_the_snapshots_segments_and_the_backend_is_native():
    t = torch.ones(1000, device="npu")
    segments = torch.npu.memory_snapshot()
    assert segments and all("blocks" in seg and "total_size" in seg for seg in segments)
    assert any(b["state"] == "active_allocated" for seg in segments for b in seg["blocks"])
    assert torch.npu.get_allocator_backend() == torch.npu.memory.get_allocator_backend() == "native"
    del t


def test_can_device_access_peer_as_torch_npu_answers():
    assert torch.npu.can_device_access_peer(0, 1) is True      # two devices of one simulated module
    assert torch.npu.can_device_access_peer(0, 0) is False
    with pytest.raises(AssertionError, match="Invalid device id"):
        torch.npu.can_device_access_peer(-1, 0)
    with pytest.raises(AssertionError, match="Invalid peer device id"):
        torch.npu.can_device_access_peer(0, torch.npu.device_count())


def test_the_streams_module_and_the_blas_handle_as_torch_npu_has_them():
    assert isinstance(torch.npu.current_stream(), torch.npu.streams.Stream)
    assert torch.npu.streams.Event is torch.npu.Event
    with pytest.warns(UserWarning, match="NPU does not use blas handle"):
        assert torch.npu.current_blas_handle() is None
