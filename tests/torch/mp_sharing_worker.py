"""Child side of tests/torch/test_torch_multiprocessing.py (spawned: a fresh interpreter)."""
import torch


def double_in_place(inbox, outbox):
    t = inbox.get()                      # an npu tensor over the sender's memory
    outbox.put((str(t.device), tuple(t.shape), t.data_ptr(), t.cpu().tolist()))
    t.mul_(2)
    torch.npu.synchronize()
    outbox.put("doubled")
    assert inbox.get() == "drop"
    del t
    outbox.put("dropped")


def wait_then_record(q_in, q_out):
    ev = q_in.get()
    assert ev.device == torch.device("npu", 0), ev.device
    s = torch.npu.Stream()
    ev.wait(s)
    s.synchronize()
    q_out.put(("waited", ev.query()))
    assert q_in.get() == "record"
    ev.record(s)
    s.synchronize()
    q_out.put("recorded")
