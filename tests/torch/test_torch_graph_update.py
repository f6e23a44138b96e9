"""Updating captured npu graphs (npurt/torch/graph_update.py, graph_update_plan.py): torch_npu's
op handlers, `torch.npu.graph(..., auto_dispatch_capture=True)`, `NPUGraph.update`,
task groups from torch, `ExternalEvent`, and update plans."""
from __future__ import annotations

import types

import pytest
import torch

from npurt.torch import graph_update as gu
from npurt.torch import graph_update_plan as plans


@pytest.fixture
def handlers():
    saved = dict(gu.HANDLERS)
    yield gu.HANDLERS
    gu.HANDLERS.clear()
    gu.HANDLERS.update(saved)


def test_the_registry_holds_handler_classes_under_each_name(handlers):
    @torch.npu.register_npu_graph_handler(["my_op", "my_op.default"])
    class H(torch.npu.NpuGraphOpHandler):
        UPDATE_SPECS = {"my_op": [("arg", 2, "batch")]}

    assert handlers["my_op"] is H and handlers["my_op.default"] is H
    assert H.get_update_specs("my_op") == [("arg", 2, "batch")]
    assert H.get_update_specs("my_op.default") == []


def test_torch_npus_fused_attention_ops_have_their_update_specs():
    assert ("arg", 5, "actual_seq_lengths") in gu.HANDLERS["npu_fused_infer_attention_score.out"].get_update_specs(
        "npu_fused_infer_attention_score.out")
    assert ("arg", 8, "actual_seq_kvlen") in gu.HANDLERS["npu_fused_infer_attention_score_v2"].get_update_specs(
        "npu_fused_infer_attention_score_v2")
    assert gu.HANDLERS["_npu_paged_attention.default"].get_update_specs("_npu_paged_attention.default") == [
        ("arg", 7, "context_lens")]
    fa3 = gu.HANDLERS["npu_fusion_attention_v3"]
    assert not fa3.should_handle(None, (), {"input_layout": "BNSD"})
    assert fa3.should_handle(None, (), {"input_layout": "TND"})


def test_an_auto_dispatch_capture_updates_a_handled_op_before_the_replay(handlers):
    @torch.npu.register_npu_graph_handler("add.out")
    class AddOut(torch.npu.NpuGraphOpHandler):
        UPDATE_SPECS = {"add.out": [("kwarg", "alpha", "alpha")]}

    x = torch.arange(4.0, device="npu")
    y = torch.ones(4, device="npu")
    out = torch.zeros(4, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g, auto_dispatch_capture=True):
        torch.add(x, y, alpha=2, out=out)
        doubled = out * 2                      # no handler: captured as usual
    records = g.graph_dispatch_mode.graph_dispatch_records
    assert [r.op_cache_entry.__name__ for r in records] == ["add.out"]
    for alpha in (5, 7):
        g.update(cpu_update_input=[{"alpha": alpha}])
        g.replay()
        torch.npu.synchronize()
        assert out.cpu().tolist() == [alpha + k for k in range(4)]
        assert doubled.cpu().tolist() == [2 * (alpha + k) for k in range(4)]


def test_update_needs_an_auto_dispatch_capture_and_a_payload_per_record(handlers):
    g = torch.npu.NPUGraph()
    x = torch.ones(2, device="npu")
    with torch.npu.graph(g):
        x.add_(1)
    with pytest.raises(RuntimeError, match="auto_dispatch_capture=True"):
        g.update([{}])
    g2 = torch.npu.NPUGraph()
    with torch.npu.graph(g2, auto_dispatch_capture=True):
        x.add_(1)
    with pytest.raises(RuntimeError, match="there are 0 operators"):
        g2.update([{}, {}])


def test_every_graph_shares_one_update_stream():
    assert torch.npu.NPUGraph().graph_dispatch_mode.update_stream is \
        torch.npu.NPUGraph().graph_dispatch_mode.update_stream


def test_task_groups_from_torch_are_replaced_by_an_update():
    x = torch.zeros(3, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        s = torch.npu.current_stream()
        torch.npu.graph_task_group_begin(s)
        x.add_(1)
        handle = torch.npu.graph_task_group_end(s)
    upd = torch.npu.Stream()
    with torch.npu.stream(upd):
        torch.npu.graph_task_update_begin(upd, handle)
        x.add_(10)
        torch.npu.graph_task_update_end(upd)
    upd.synchronize()
    g.replay()
    torch.npu.synchronize()
    assert x.cpu().tolist() == [10.0] * 3


def test_an_external_event_can_be_waited_for_before_its_record():
    ev = torch.npu.ExternalEvent()
    assert "uninitialized" in repr(ev)
    s = torch.npu.Stream()
    x = torch.zeros(2, device="npu")
    ev.wait(s)
    with torch.npu.stream(s):
        x.add_(1)
    torch.npu.current_stream().synchronize()
    assert not s.query()       # parked on the event: nothing recorded it yet
    ev.record()
    s.synchronize()
    assert x.cpu().tolist() == [1.0, 1.0]


# ---------------------------------------------------------------- update plans
class _Record:
    def __init__(self, op, kwargs=None):
        self.op_cache_entry = types.SimpleNamespace(__name__=op)
        self.kwargs = kwargs or {}


def test_a_plan_resolves_inputs_constants_and_lists():
    plan = [{"op": "npu_fused_infer_attention_score.out",
             "updates": {"actual_seq_lengths": {"kind": "list", "items": [{"kind": "input", "index": 1},
                                                                           {"kind": "constant", "value": 8}]},
                         "actual_seq_lengths_kv": {"kind": "none"}}}]
    plans.validate_aclgraph_update_plan(plan, [_Record("npu_fused_infer_attention_score.default")])
    assert plans.resolve_aclgraph_update_plan(plan, ["q", 5]) == [
        {"actual_seq_lengths": [5, 8], "actual_seq_lengths_kv": None}]
    with pytest.raises(RuntimeError, match="out of range"):
        plans.resolve_aclgraph_update_plan(plan, ["q"])


@pytest.mark.parametrize("plan, records, message", [
    ([], [_Record("npu_fused_infer_attention_score")], "missing ACLGraph update plan"),
    ([{"op": "x", "updates": {"k": {"kind": "none"}}}], [], "length mismatch"),
    ([{"op": "other", "updates": {"k": {"kind": "none"}}}], [_Record("x", {"k": 1})], "op mismatch"),
    ([{"op": "x", "updates": {}}], [_Record("x")], "no updates"),
    ([{"op": "x", "updates": {"nope": {"kind": "none"}}}], [_Record("x")], "cannot consume"),
    ([{"op": "x", "updates": {"k": {"kind": "constant", "value": [1, object()]}}}], [_Record("x", {"k": 1})],
     "unsupported constant"),
    ([{"op": "x", "updates": {"k": 3}}], [_Record("x", {"k": 1})], "invalid source"),
])
def test_a_plan_that_does_not_fit_the_records_is_refused(plan, records, message):
    with pytest.raises(RuntimeError, match=message):
        plans.validate_aclgraph_update_plan(plan, records)


def test_an_inductor_entry_maps_updatable_arguments_to_graph_inputs():
    class Arg:
        def __init__(self, name):
            self.name = name

    class Op:
        __name__ = "npu_fused_infer_attention_score_v2.default"
        _schema = type("S", (), {"arguments": [Arg(n) for n in ("query", "key", "value", "query_rope", "key_rope",
                                                                   "pse_shift", "atten_mask", "actual_seq_qlen",
                                                                   "actual_seq_kvlen")]})

    class Buffer:
        def get_name(self):
            return "arg0_1"

    entry = plans.build_aclgraph_update_plan_entry_for_inductor(
        Op(), ["q", "k", "v", None, None, None, None, Buffer(), [128]], {}, ["arg0_1"], {})
    assert entry == {"op": "npu_fused_infer_attention_score_v2.default", "updates": {"actual_seq_qlen": {"kind": "input", "index": 0},
                                                    "actual_seq_kvlen": {"kind": "list", "items": [
                                                        {"kind": "constant", "value": 128}]}}}
    with pytest.raises(RuntimeError, match="Tensor constant"):
        plans.build_aclgraph_update_plan_entry_for_inductor(
            Op(), ["q", "k", "v", None, None, None, None, torch.tensor([1]), None], {}, [], {})
    assert plans.build_aclgraph_update_plan_entry_for_inductor(
        types.SimpleNamespace(__name__="not_handled.default"), [], {}, [], {}) is None


def test_the_update_stream_is_made_anew_once_a_device_reset_destroyed_it():
    import npurt.runtime
    first = torch.npu.NPUGraph().graph_dispatch_mode.update_stream
    npurt.runtime.reset_device(torch.npu.current_device())
    second = torch.npu.NPUGraph().graph_dispatch_mode.update_stream
    assert second is not first and not gu.runtime_stream(second).destroyed
