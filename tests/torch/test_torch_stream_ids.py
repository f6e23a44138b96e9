"""torch_npu's stream pools and stream ids, external streams, torch_npu.npu.npurt() and the
Dynamo device interface (torch_npu/csrc/core/npu/NPUStream.cpp, torch_npu/npu/streams.py,
torch_npu/csrc/npu/npurt.cpp, torch_npu/utils/_dynamo_device.py)."""
from __future__ import annotations

import contextlib
import ctypes
import mmap

import pytest
import torch

import npurt
import npurt.torch.shim as torch_npu
from npurt.torch import stream_ids


def test_a_stream_id_says_which_pool_the_stream_comes_from():
    assert torch.npu.default_stream().stream_id == 0
    for priority, kind in ((0, 3), (1, 3), (5, 3), (-1, 4), (-9, 4)):
        assert torch.npu.Stream(priority=priority).stream_id >> 5 == kind
    assert torch.npu.Stream(is_sync_launch=True).stream_id >> 5 == 2
    assert torch.npu.SyncLaunchStream().stream_id >> 5 == 2


def test_the_pool_hands_its_32_streams_out_round_robin():
    first = torch.npu.Stream(device=1, priority=-1)
    seen = {first.stream_id} | {torch.npu.Stream(device=1, priority=-1).stream_id for _ in range(31)}
    assert len(seen) == 32
    again = [torch.npu.Stream(device=1, priority=-1) for _ in range(32)]
    assert sorted(s.stream_id for s in again) == sorted(seen)
    assert {s.npu_stream for s in again} == {torch.npu.Stream(stream_id=i, device_index=1, device_type=20).npu_stream
                                            for i in seen}


def test_a_sync_launch_stream_is_not_a_torch_npu_stream_but_runs_work():
    s = torch.npu.SyncLaunchStream()
    assert not isinstance(s, torch.npu.Stream) and isinstance(s, torch.Stream)
    with torch.npu.stream(s):
        y = torch.ones(3, device="npu") * 2
    s.synchronize()
    assert y.cpu().tolist() == [2.0] * 3


@pytest.mark.parametrize("stream_id, message", [
    (0 | 1, "non-zero index"), ((3 << 5) | 31, "Uninitialized NPU stream"), ((2 << 5) | 4, "Invalid sync launch"),
    (1 << 5, "secondary"), (7 << 5, "didn't recognize the stream type"), ((1 << 30) | 12345, "Unrecognized external"),
])
def test_rebuilding_an_id_no_stream_has_fails_with_torch_npus_words(stream_id, message, monkeypatch):
    # a process whose pools are fresh: earlier tests may have handed out all 32 of a pool's streams
    monkeypatch.setattr(stream_ids, "_reg", stream_ids._Registry())
    torch.npu.Stream(device=0)  # one pool stream exists (index 0); index 31 does not
    with pytest.raises(RuntimeError, match=message):
        torch.npu.Stream(stream_id=stream_id, device_index=0, device_type=20)


@contextlib.contextmanager
def raw_stream():
    rt = torch_npu.npu.npurt()
    handle = ctypes.c_void_p(0)
    assert rt.npuStreamCreate(ctypes.addressof(handle)) == 0 and handle.value
    try:
        yield handle.value
    finally:
        assert rt.npuStreamDestroy(handle.value) == 0


def test_an_external_stream_wraps_a_raw_handle_and_runs_ops():
    with raw_stream() as handle:
        ext = torch.npu.ExternalStream(handle)
        assert ext.npu_stream == handle and ext.device.index == torch.npu.current_device()
        assert ext.stream_id & (1 << 30) and isinstance(ext, torch.npu.Stream)
        assert torch.npu.ExternalStream(handle) == ext
        with torch.npu.stream(ext):
            assert torch.npu.current_stream().npu_stream == handle
            y = torch.arange(4.0, device="npu") + 1
        torch.npu.synchronize()
        assert y.cpu().tolist() == [1.0, 2.0, 3.0, 4.0]


def test_torch_npu_does_not_synchronize_query_or_record_on_an_external_stream():
    with raw_stream() as handle:
        ext = torch.npu.ExternalStream(handle)
        with pytest.raises(RuntimeError, match="NPUStream::synchronize"):
            ext.synchronize()
        with pytest.raises(RuntimeError, match="Cannot query"):
            ext.query()
        with pytest.raises(RuntimeError, match="NPUEvent::record"):
            ext.record_event()
        with pytest.raises(RuntimeError, match="NPUEvent::block"):
            ext.wait_stream(torch.npu.current_stream())
        with pytest.raises(RuntimeError, match="record_stream"):
            torch.ones(2, device="npu").record_stream(ext)
        with pytest.raises(RuntimeError, match="Priority was explicitly set"):
            torch.npu.Stream(priority=-1, stream_ptr=handle)


def test_an_external_stream_needs_a_live_handle_of_its_device():
    with pytest.raises(RuntimeError, match="not the handle"):
        torch.npu.ExternalStream(0x1234)
    with raw_stream() as handle:
        with pytest.raises(RuntimeError, match="belongs to npu:0"):
            torch.npu.ExternalStream(handle, device=1)


def test_the_raw_runtime_calls_return_acl_error_numbers():
    rt = torch_npu.npu.npurt()
    assert rt is torch_npu._C._npurt
    assert rt.npuStreamCreate(0) == 100000 and rt.npuStreamDestroy(0) == 100000  # ACL_ERROR_INVALID_PARAM
    assert rt.npuStreamDestroy(0x7FFF_0000_0001) != 0
    page = mmap.mmap(-1, 4096)  # a page-aligned host range
    addr = ctypes.addressof(ctypes.c_char.from_buffer(page))
    assert rt.npuHostRegister(addr + 1, 4096, 0) != 0  # not page aligned: an aclError, no exception
    assert rt.npuHostRegister(addr, 4096, 0) == 0  # ACL_HOST_REGISTER_MAPPED
    assert rt.npuHostUnregister(addr) == 0
    assert rt.npuHostUnregister(addr) != 0  # no longer registered


def test_npurt_streams_made_outside_torch_get_external_ids_without_the_restrictions():
    s = npurt.Stream()
    with npurt.stream(s):
        cur = torch.npu.current_stream()
        assert cur.stream_id & (1 << 30)
        assert torch.npu.Stream(stream_id=cur.stream_id, device_index=cur.device_index, device_type=20) == cur
        cur.synchronize()
        assert cur.query()


def test_dynamos_device_interface_reads_the_current_raw_stream():
    from torch._dynamo.device_interface import get_interface_for_device
    from npurt.torch.shim.utils._dynamo import _dynamo_register_interface_for_device
    _dynamo_register_interface_for_device()
    s = torch.npu.Stream()
    with torch.npu.stream(s):
        assert get_interface_for_device("npu").get_raw_stream(0) == s.npu_stream
        assert torch_npu._C._npu_getCurrentRawStream(0) == s.npu_stream
