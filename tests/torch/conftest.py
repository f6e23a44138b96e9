"""The torch tests: skipped as a whole when PyTorch is absent (it is an optional extra,
`pip install 'npurt[torch]'`; CI installs the CPU build explicitly)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import npurt.torch  # noqa: E402,F401 - registers the npu device


@pytest.fixture(autouse=True)
def drained():
    """Every test leaves no queued work behind (and a failure left on a stream fails it)."""
    yield
    for i in range(torch.npu.device_count()):
        torch.npu.synchronize(i)


@pytest.fixture
def npu():
    return torch.device("npu:0")
