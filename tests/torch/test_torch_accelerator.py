"""torch's device-generic layer on npu: torch.accelerator's device, stream, synchronize and
memory functions are torch.npu's, and torch.Stream / torch.Event of device npu are npurt's."""
from __future__ import annotations

import gc

import pytest
import torch


def test_accelerator_current_stream_follows_torch_npu_stream():
    s = torch.npu.Stream()
    assert torch.accelerator.current_stream() == torch.npu.current_stream()
    with torch.npu.stream(s):
        assert torch.accelerator.current_stream() == s
    assert torch.accelerator.current_stream() == torch.npu.default_stream()


def test_set_stream_and_a_generic_stream_context_make_an_npurt_stream_current():
    s = torch.Stream()
    assert isinstance(s, torch.npu.Stream) and isinstance(s, torch.Stream)
    assert torch.Stream(device="npu:1").device_index == 1
    prev = torch.accelerator.current_stream()
    with s:
        assert torch.npu.current_stream() == s
        y = torch.ones(8, device="npu") * 3
    assert torch.accelerator.current_stream() == prev
    torch.accelerator.set_stream(s)
    try:
        assert torch.npu.current_stream() == s
    finally:
        torch.accelerator.set_stream(prev)
    # y was made on s: the default stream must wait for it, as on hardware (without the wait
    # the sum can run first and read the tensor before s wrote it)
    torch.npu.current_stream().wait_stream(s)
    assert y.sum().item() == 24.0


def test_a_stream_context_re_entered_restores_what_each_enter_found():
    prev = torch.accelerator.current_stream()
    s0, s1 = torch.Stream(), torch.Stream()
    with s0, s0:
        assert torch.accelerator.current_stream() == s0
    assert torch.accelerator.current_stream() == prev
    with s0:
        with s1:
            with s0:
                assert torch.accelerator.current_stream() == s0
            assert torch.accelerator.current_stream() == s1
        assert torch.accelerator.current_stream() == s0
    assert torch.accelerator.current_stream() == prev


def test_set_device_index_moves_torch_npus_device():
    assert torch.accelerator.current_device_index() == torch.npu.current_device() == 0
    with torch.accelerator.device_index(1):
        assert torch.npu.current_device() == 1
        assert torch.accelerator.current_stream().device_index == 1
    assert torch.npu.current_device() == 0
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        torch.accelerator.set_device_index("cpu")


def test_generic_event_times_and_synchronizes_npu_work():
    start, end = torch.Event(enable_timing=True), torch.Event(enable_timing=True)
    assert isinstance(start, torch.Event) and start.device == torch.device("npu:0")
    start.record()
    x = torch.ones(256, 256, device="npu") @ torch.ones(256, 256, device="npu")
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0
    assert x[0, 0].item() == 256.0
    torch.accelerator.synchronize()


def test_generic_event_timing_checks_are_torchs():
    with pytest.raises(ValueError, match="created with argument 'enable_timing=True'"):
        torch.Event().elapsed_time(torch.Event())
    with pytest.raises(ValueError, match="must be recorded before calculating elapsed time"):
        torch.Event(enable_timing=True).elapsed_time(torch.Event(enable_timing=True))


def test_accelerator_memory_functions_are_torch_npus():
    # earlier tests' tensors caught in reference cycles would be freed by a collection in the
    # middle of the comparisons below (seen: 512 bytes between two reads after test_torch_streams)
    gc.collect()
    torch.npu.synchronize()
    t = torch.ones(1024, device="npu")
    assert torch.accelerator.memory_allocated() == torch.npu.memory_allocated() > 0
    assert torch.accelerator.memory_reserved() == torch.npu.memory_reserved()
    assert torch.accelerator.memory_stats()["allocated_bytes.all.current"] == torch.npu.memory_allocated()
    assert torch.accelerator.get_memory_info() == torch.npu.mem_get_info()
    del t
    torch.accelerator.reset_accumulated_memory_stats()
    assert torch.accelerator.memory_stats()["active_bytes.all.freed"] == 0


def test_torch_npu_event_device_is_none_until_recorded_and_elapsed_time_waits():
    a, b = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    assert a.device is None
    with pytest.raises(RuntimeError, match="Both events must be recorded"):
        a.elapsed_time(b)
    s = torch.npu.Stream(device=1)
    a.record(s)
    torch.npu._sleep(2000)        # on the current stream of npu:0: b waits for nothing of s
    b.record(s)
    assert a.device == torch.device("npu:1")
    assert a.elapsed_time(b) >= 0          # no synchronize first: elapsed_time waits itself
    assert b.recorded_time() >= a.recorded_time()
    with pytest.raises(RuntimeError, match="does not support Stream.priority_range"):
        torch.npu.Stream.priority_range()


def test_accelerator_graph_captures_the_current_stream_and_replays_on_npu():
    x = torch.ones(4, device="npu")
    y = torch.empty_like(x)
    g, s = torch.accelerator.Graph(), torch.Stream()
    with s, g:
        y.copy_(x + 1)
    y.zero_()
    g.replay()
    torch.accelerator.synchronize()
    assert y.cpu().tolist() == [2.0] * 4
    g.reset()
    with pytest.raises(RuntimeError, match="holds no capture"):
        g.replay()


def test_npugraph_getter_names_its_graph_and_is_refused_in_an_accelerator_graph_capture():
    x = torch.ones(1, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        assert torch.npu.NPUGraph.get_currently_capturing_graph() is g
        x.add_(1)
    with pytest.raises(RuntimeError, match="not currently capturing"):
        torch.npu.NPUGraph.get_currently_capturing_graph()
    acc, s = torch.accelerator.Graph(), torch.Stream()
    with s, acc:
        with pytest.raises(RuntimeError, match="during torch.accelerator.Graph capture"):
            torch.npu.NPUGraph.get_currently_capturing_graph()
        x.add_(1)
