"""DataParallel's scatter / gather refuse bad arguments with torch_npu's words
(torch_npu/csrc/npu/DataParallelComm.cpp); device indexes with torch_npu/npu/utils.py's."""
from __future__ import annotations

import pytest
import torch
from torch.nn.parallel import comm


def test_scatter_needs_devices_and_matching_chunk_sizes():
    x = torch.arange(6.0)
    with pytest.raises(RuntimeError, match="Expected at least one device to scatter to"):
        comm.scatter(x, ())
    with pytest.raises(RuntimeError, match="Expected devices and chunk_sizes to be of same length"):
        comm.scatter(x, (0, 1), (2, 2, 2))
    a, b = comm.scatter(x, (0, 1), (4, 2))
    assert a.device.index == 0 and b.device.index == 1 and b.cpu().tolist() == [4.0, 5.0]


def test_gather_checks_its_inputs_and_keeps_the_layout():
    x, y = torch.randn(2, 5, device="npu:0"), torch.randn(2, 5, device="npu:1")
    with pytest.raises(RuntimeError, match="Expected at least one tensor to gather from"):
        comm.gather(())
    with pytest.raises(RuntimeError, match="Expected all input tensors to be NPU tensors"):
        comm.gather((x.cpu(), y))
    with pytest.raises(RuntimeError, match="the same number of dimensions"):
        comm.gather((x, y.unsqueeze(0)))
    with pytest.raises(RuntimeError, match="Input tensor at index 1 has invalid shape"):
        comm.gather((x, y[:, 1:]), dim=0)
    out = comm.gather((x, y), -1, destination="cpu")
    assert out.shape == (2, 10) and torch.equal(out[:, 5:], y.cpu())
    nhwc = torch.randn(2, 3, 4, 4, device="npu:0").to(memory_format=torch.channels_last)
    assert comm.gather((nhwc, nhwc), 0).is_contiguous(memory_format=torch.channels_last)


def test_a_cpu_device_is_refused_with_torch_npus_words():
    with pytest.raises(ValueError, match="Expected a npu device, but got: cpu"):
        torch.npu.synchronize(torch.device("cpu"))
