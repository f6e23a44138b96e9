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


@pytest.fixture
def gate():
    """Holds streams back until opened: a runtime event with ACL's semaphore semantics (a wait
    before any record blocks until one completes; torch.npu.Event, like torch_npu's, would not)."""
    from npurt.runtime import api as rt
    from npurt.runtime import constants as C
    opener = torch.npu.Stream()  # first: it gives this thread a context, which the event needs
    ev = rt.create_event(flags=C.ACL_EVENT_SYNC)
    opened = []

    class Gate:
        def hold(self, stream=None):
            rt.stream_wait_event((stream or torch.npu.current_stream()).npurt_stream.runtime_stream, ev)

        def open(self):
            if not opened:
                rt.record_event(ev, opener.npurt_stream.runtime_stream)
                opened.append(True)
    g = Gate()
    yield g
    g.open()
    torch.npu.synchronize()
    rt.destroy_event(ev)
