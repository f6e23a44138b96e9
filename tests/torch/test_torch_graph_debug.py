"""Printing and saving tensors from captured graphs (npurt/torch/graph_debug.py): torch_npu's
torch.ops.npu.print_npugraph_tensor / save_npugraph_tensor, run at every replay."""
from __future__ import annotations

import os

import pytest
import torch

from npurt.torch import graph_debug as gd
from npurt.torch import host_funcs


def test_a_captured_print_shows_the_tensor_as_each_replay_left_it(capsys):
    x = torch.zeros(2, 3, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        x.add_(1)
        torch.ops.npu.print_npugraph_tensor(x, tensor_name="x")
    assert capsys.readouterr().out == ""            # captured, not run
    for _ in range(2):
        g.replay()
    torch.npu.synchronize()
    first, second = capsys.readouterr().out.split("x=")[1:]
    assert first.startswith("tensor([[1., 1., 1.],") and "[2., 2., 2.]" in second
    assert second.rstrip().endswith("]]), shape=(2, 3), dtype=torch.float32")


def test_saves_are_numbered_per_path_unless_overwritten(tmp_path):
    x = torch.arange(4.0, device="npu")
    path = str(tmp_path / "t.pt")
    torch.ops.npu.save_npugraph_tensor(x, save_path=path)
    torch.ops.npu.save_npugraph_tensor(x * 2, save_path=path)
    torch.ops.npu.save_npugraph_tensor.tensor_list([x, x + 1], save_path=str(tmp_path / "l"), overwrite=True)
    torch.npu.synchronize()
    idx = x.device.index
    assert torch.equal(torch.load(tmp_path / f"t_device_{idx}_0.pt"), x.cpu())
    assert torch.equal(torch.load(tmp_path / f"t_device_{idx}_1.pt"), (x * 2).cpu())
    saved = torch.load(tmp_path / f"l_device_{idx}.pt")
    assert torch.equal(saved[1], (x + 1).cpu())
    with pytest.raises(ValueError, match="same device"):
        torch.ops.npu.save_npugraph_tensor.tensor_list([x, x.cpu()])
    with pytest.raises(ValueError, match="file name"):
        gd.build_save_path(os.path.join(str(tmp_path), ""))


def test_tensor_specs_round_trip_through_host_bytes():
    t = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    spec = gd.make_tensor_ptr_spec(t)
    assert spec[:3] == (gd.TENSOR_PTR_SPEC, t.data_ptr(), 24) and spec[3:] == ((2, 3), torch.int32)
    buffered = host_funcs.read_ptr_specs([spec])
    assert buffered[0][0] == gd.TENSOR_BUFFER_SPEC
    assert torch.equal(gd.materialize_tensor_arg(buffered)[0], t)
    assert gd.materialize_tensor_arg((gd.TENSOR_BUFFER_SPEC, bytearray(), (0,), torch.float32)).shape == (0,)
