"""torch.save / torch.load of npu tensors: back on npu (or where map_location says), views
still sharing their storage."""
from __future__ import annotations

import io

import torch


def _roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kw)


def test_npu_tensors_load_back_on_npu_with_their_values():
    t = torch.randn(3, 4).npu()
    back = _roundtrip({"t": t})["t"]
    assert back.device == torch.device("npu:0") and torch.equal(back.cpu(), t.cpu())


def test_views_keep_sharing_their_storage_after_a_round_trip():
    base = torch.arange(12.0, device="npu")
    d = _roundtrip({"base": base, "row": base.view(3, 4)[1]})
    assert d["row"].untyped_storage().data_ptr() == d["base"].untyped_storage().data_ptr()
    d["row"].fill_(-1.0)
    assert d["base"].cpu()[4:8].eq(-1.0).all()


def test_map_location_loads_npu_tensors_on_the_cpu_or_another_npu():
    t = torch.ones(2, device="npu")
    assert _roundtrip(t, map_location="cpu").device.type == "cpu"
    assert _roundtrip(t, map_location="npu:1").device == torch.device("npu:1")


def test_a_module_state_dict_round_trips():
    m = torch.nn.Linear(4, 3).npu()
    m2 = torch.nn.Linear(4, 3).npu()
    m2.load_state_dict(_roundtrip(m.state_dict()))
    assert torch.equal(m2.weight.cpu(), m.weight.detach().cpu())


def test_cpu_tensors_load_onto_npu_with_map_location():
    assert _roundtrip(torch.arange(3), map_location="npu").device == torch.device("npu:0")
