"""torch_npu's super-kernel hints (npurt/torch/super_kernel.py): options checked as torch_npu
checks them, scopes' names too; a captured graph replays as before."""
from __future__ import annotations

import pytest
import torch


def test_a_captured_graph_takes_valid_options_and_replays_the_same():
    x = torch.ones(4, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        torch.npu.super_kernel_scope_begin("scope")
        y = x * 3
        torch.npu.super_kernel_scope_end("scope")
    g.super_kernel_optimize(optimize_options={"preload_code": 1, "opt_extend": "x",
                                              "dcci_before_kernel_start": ["k"],
                                              "aggressive_opt_strategies": {"event_breaker_bypass": 1}},
                            debug_options={"debug_sync_all": 0})
    g.replay()
    torch.npu.synchronize()
    assert y.cpu().tolist() == [3.0] * 4


@pytest.mark.parametrize("optimize, debug", [
    ("invalid", None), (None, "invalid"), ({"nope": 1}, None), (None, {"debug_extend": 1}),
    ({"split_mode": "1"}, None), ({"dcci_after_kernel_end": ["a", 2]}, None),
    ({"aggressive_opt_strategies": {"task_breaker_bypass": "1"}}, None),
    ({"aggressive_opt_strategies": {"other": 1}}, None), ({"ubuf_lock_ignore_kernel": 1}, None),
])
def test_options_torch_npu_refuses_are_refused(optimize, debug):
    with pytest.raises(RuntimeError):
        torch.npu.NPUGraph().super_kernel_optimize(optimize_options=optimize, debug_options=debug)


def test_optimize_needs_a_capture_and_scope_names_must_not_be_blank():
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        torch.npu.NPUGraph().super_kernel_optimize()
    for blank in ("", "   "):
        with pytest.raises(RuntimeError, match="non-empty"):
            torch.npu.super_kernel_scope_begin(blank)
    torch.npu.super_kernel_scope_begin()
    torch.npu.super_kernel_scope_end()
