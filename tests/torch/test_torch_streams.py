"""torch.npu streams and events: ops queue on the current stream of their device, streams
order through wait_stream / events, backward runs on the forward's stream, errors surface at
the next synchronize as on an NPU."""
from __future__ import annotations

import threading

import pytest
import torch

from npurt.runtime.errors import TaskError


def _seq(s) -> int:
    return s.npurt_stream.runtime_stream.enqueued_seq


def test_an_npu_stream_is_a_torch_stream_of_the_npu_device():
    s = torch.npu.Stream()
    assert isinstance(s, torch.Stream)
    assert s.device == torch.device("npu:0") and s.device_type == 20
    assert s.stream_id >> 5 == 3  # torch_npu's id layout: a NORMAL pool stream (test_torch_stream_ids.py)
    assert torch.npu.Stream(device="npu:1").device_index == 1


def test_ops_queue_on_the_current_stream_and_the_default_is_restored():
    s = torch.npu.Stream()
    assert torch.npu.current_stream() == torch.npu.default_stream()
    before_default = _seq(torch.npu.default_stream())
    x = torch.ones(4, device="npu")
    s.wait_stream(torch.npu.default_stream())       # x is written on the default stream
    d, before_s = _seq(torch.npu.default_stream()), _seq(s)
    with torch.npu.stream(s):
        assert torch.npu.current_stream() == s
        y = x * 3
    assert _seq(s) == before_s + 1 and _seq(torch.npu.default_stream()) == d
    assert torch.npu.current_stream() == torch.npu.default_stream()
    assert d > before_default
    s.synchronize()
    assert y.cpu().tolist() == [3.0] * 4


def test_set_stream_makes_a_stream_current_without_a_with_block():
    s = torch.npu.Stream()
    torch.npu.set_stream(s)
    try:
        assert torch.npu.current_stream() == s
    finally:
        torch.npu.set_stream(torch.npu.default_stream())


def test_wait_stream_orders_work_across_streams(gate):
    s1, s2 = torch.npu.Stream(), torch.npu.Stream()
    x = torch.zeros(1024, device="npu")
    s1.wait_stream(torch.npu.current_stream())
    gate.hold(s1)
    with torch.npu.stream(s1):
        x.fill_(1.0)
    s2.wait_stream(s1)
    with torch.npu.stream(s2):
        y = x * 2
    assert not s2.query()          # waits for s1, which is held
    gate.open()
    s2.synchronize()
    assert y.cpu().eq(2.0).all()


def test_events_record_wait_query_and_time_work(gate):
    s1, s2 = torch.npu.Stream(), torch.npu.Stream()
    start, done = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    gate.hold(s1)
    with torch.npu.stream(s1):
        start.record()
        a = torch.ones(256, 256, device="npu") @ torch.ones(256, 256, device="npu")
        done.record()
    assert not done.query()
    done.wait(s2)
    with torch.npu.stream(s2):
        b = a + 1
    gate.open()
    done.synchronize()
    assert done.query() and start.elapsed_time(done) >= 0.0
    s2.synchronize()
    assert b.cpu()[0, 0].item() == 257.0


def test_synchronize_waits_for_every_stream_of_the_device(gate):
    s = torch.npu.Stream()
    gate.hold(s)
    with torch.npu.stream(s):
        x = torch.ones(8, device="npu") * 5
    gate.open()
    torch.npu.synchronize()
    assert s.query() and x.cpu().eq(5.0).all()


def test_backward_runs_on_the_stream_the_forward_ran_on():
    s = torch.npu.Stream()
    s.wait_stream(torch.npu.current_stream())
    w = torch.randn(64, 64, device="npu", requires_grad=True)
    x = torch.randn(16, 64, device="npu")
    torch.npu.synchronize()
    default_before = _seq(torch.npu.default_stream())
    with torch.npu.stream(s):
        loss = (x @ w).tanh().sum()
        forward_done = _seq(s)
        loss.backward()
    assert _seq(s) > forward_done                       # backward's ops went to s ...
    assert _seq(torch.npu.default_stream()) == default_before  # ... not to the default stream
    s.synchronize()
    wc = w.detach().cpu().requires_grad_()
    (x.cpu() @ wc).tanh().sum().backward()
    assert torch.equal(w.grad.cpu(), wc.grad)


def test_host_threads_each_with_their_own_stream_get_their_own_results():
    results = {}

    def work(i):
        s = torch.npu.Stream()
        with torch.npu.stream(s):
            x = torch.full((256,), float(i), device="npu")
            for _ in range(20):
                x = x + 1
        s.synchronize()
        results[i] = x.cpu()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results[i].eq(i + 20).all() for i in range(4))


def test_a_failing_op_reports_at_the_next_synchronize_and_the_device_stays_usable():
    emb = torch.nn.Embedding(4, 2).npu()
    out = emb(torch.tensor([7], device="npu"))         # out of range: returns at once
    with pytest.raises(TaskError) as info:
        torch.npu.synchronize()
    assert isinstance(info.value, RuntimeError)
    assert info.value.code == 507015 and "index" in str(info.value).lower()
    del out
    assert (torch.ones(2, device="npu") + 1).cpu().tolist() == [2.0, 2.0]


def test_stream_and_event_reprs_are_torch_npus():
    s = torch.npu.current_stream()
    assert repr(s) == f"<torch_npu.npu.Stream device=npu:{s.device_index} npu_stream={s.npu_stream:#x}>"
    e = torch.npu.Event()
    assert repr(e) == "<torch_npu.npu.Event uninitialized>"
    s.record_event(e)
    assert repr(e) == f"<torch_npu.npu.Event {e.npu_event:#x}>"
