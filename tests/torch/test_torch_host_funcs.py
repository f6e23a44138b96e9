"""Python functions in stream order (npurt/torch/host_funcs.py): torch_npu's
torch.npu._launch_host_func (a blocking callback on a subscribed stream),
_launch_host_func_pending (a host function handed the tensors' bytes) and _subscribe_report."""
from __future__ import annotations

import pytest
import torch

from npurt.runtime import SubscriptionError


def test_a_callback_runs_in_stream_order_and_the_stream_waits_for_it():
    s = torch.npu.Stream()
    seen = []
    x = torch.zeros(3, device="npu")
    torch.npu._subscribe_report(s)
    try:
        with torch.npu.stream(s):
            x.add_(1)
            torch.npu._launch_host_func(s, lambda data: seen.append((data, x.cpu().tolist())), "first")
            x.add_(1)
        s.synchronize()
        assert seen == [("first", [1.0, 1.0, 1.0])] and x.cpu().tolist() == [2.0] * 3
    finally:
        torch.npu._unsubscribe_report(s)
    with pytest.raises(SubscriptionError):
        torch.npu._launch_host_func(s, print, None)      # no report thread for it any more


def test_captured_callbacks_run_at_every_replay():
    s = torch.npu.Stream()
    calls = []
    torch.npu._subscribe_report(s)
    try:
        g = torch.npu.NPUGraph()
        with torch.npu.graph(g, stream=s):
            torch.npu._launch_host_func(torch.npu.current_stream(), calls.append, "tick")
        assert calls == []
        for _ in range(3):
            g.replay()
        torch.npu.synchronize()
        assert calls == ["tick"] * 3
    finally:
        torch.npu._unsubscribe_report(s)


def test_a_pending_host_func_gets_the_bytes_of_host_tensors_as_they_are_when_it_runs():
    from npurt.torch import graph_debug
    host = torch.zeros(4, dtype=torch.int32).pin_memory()
    got = []
    s = torch.npu.current_stream()
    x = torch.arange(4, dtype=torch.int32, device="npu")
    host.copy_(x, non_blocking=True)
    torch.npu._launch_host_func_pending(s, lambda name, spec: got.append(
        (name, graph_debug.materialize_tensor_arg(spec).tolist())), ("h", graph_debug.make_tensor_ptr_spec(host)))
    s.synchronize()
    assert got == [("h", [0, 1, 2, 3])]
