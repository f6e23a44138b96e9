"""npu tensors sent with torch.multiprocessing travel as IPC keys (npurt/torch/sharing.py); interprocess
events travel as their IPC handles (npurt/torch/streams.py).

The child is spawned (a new interpreter, sharing this process's device namespace); each step
waits for the other side's message, so nothing depends on timing."""
from __future__ import annotations

import os
import pickle
import sys

import pytest

torch = pytest.importorskip("torch")
import torch.multiprocessing as mp  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import mp_sharing_worker  # noqa: E402


def test_a_spawned_process_works_on_the_senders_npu_tensor_in_place():
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    t = torch.arange(6, dtype=torch.float32, device="npu").reshape(2, 3)
    view = t[1]                                     # a view: its offset travels too
    torch.npu.synchronize()                         # the data is written before the child reads it
    child = ctx.Process(target=mp_sharing_worker.double_in_place, args=(inbox, outbox))
    child.start()
    try:
        inbox.put(view)
        device, shape, ptr, values = outbox.get(timeout=120)
        assert (device, shape, values) == ("npu:0", (3,), [3.0, 4.0, 5.0])
        assert ptr == view.data_ptr()               # the same device address in both processes
        assert outbox.get(timeout=120) == "doubled"
        assert t.cpu().tolist() == [[0.0, 1.0, 2.0], [6.0, 8.0, 10.0]]   # the sender sees the writes
        inbox.put("drop")
        assert outbox.get(timeout=120) == "dropped"
    finally:
        child.join(timeout=120)
    assert child.exitcode == 0


def test_a_non_leaf_tensor_that_requires_grad_is_refused_as_torch_does():
    from multiprocessing.reduction import ForkingPickler
    x = torch.ones(3, device="npu", requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(x)


def test_cpu_tensors_still_go_through_torchs_own_reduction():
    from multiprocessing.reduction import ForkingPickler
    t = torch.arange(4)
    assert pickle.loads(ForkingPickler.dumps(t)).tolist() == [0, 1, 2, 3]


# ---------------------------------------------------------------- interprocess events
def test_an_interprocess_event_crosses_a_spawn_queue_and_records_flow_both_ways():
    ctx = mp.get_context("spawn")
    to_child, to_parent = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=mp_sharing_worker.wait_then_record, args=(to_child, to_parent))
    child.start()
    try:
        ev = torch.npu.Event(interprocess=True)
        x = torch.ones(1024, device="npu")
        x.mul_(2)
        ev.record()
        to_child.put(ev)
        assert to_parent.get(timeout=120) == ("waited", True)
        to_child.put("record")                 # the child records the same event
        assert to_parent.get(timeout=60) == "recorded"
        ev.synchronize()
        assert ev.query()
    finally:
        child.join(60)
    assert child.exitcode == 0


def test_interprocess_events_refuse_timing_and_bad_handles():
    with pytest.raises(RuntimeError, match="interprocess cannot be specified together"):
        torch.npu.Event(enable_timing=True, interprocess=True)
    with pytest.raises(RuntimeError, match="size 64"):
        torch.npu.Event.from_ipc_handle(0, b"short")
    with pytest.raises(RuntimeError, match="PrivateUse1"):
        torch.npu.Event.from_ipc_handle("cpu", bytes(64))
    ev = torch.npu.Event(interprocess=True)
    assert len(ev.ipc_handle()) == 64 and ev.device == torch.device("npu", torch.npu.current_device())
