"""Torch ops are ordinary npurt stream tasks: tools listening to the runtime's hooks (the
sanitizer, the profiler) see them as kernel tasks that list the byte ranges they read and
write (Task.accesses)."""
from __future__ import annotations

import pytest
import torch

from npurt.runtime.observers import HOOKS


@pytest.fixture
def events():
    seen = []

    def observer(name, **fields):
        seen.append((name, fields))
    HOOKS.add(observer)
    yield seen
    HOOKS.remove(observer)


def test_an_op_is_a_kernel_task_with_its_reads_and_writes(events):
    a, b = torch.ones(16, device="npu"), torch.ones(16, device="npu")
    torch.npu.synchronize()
    events.clear()
    c = a + b
    torch.npu.synchronize()
    enqueued = [f["task"] for n, f in events if n == "task_enqueued"]
    assert len(enqueued) == 1
    task = enqueued[0]
    assert task.kind == "kernel" and "aten::add" in task.describe()
    assert ("task_finished", task) in [(n, f.get("task")) for n, f in events]
    assert set(task.accesses()) == {(a.data_ptr(), 64, "r"), (b.data_ptr(), 64, "r"), (c.data_ptr(), 64, "w")}


def test_an_in_place_op_reads_and_writes_its_tensor(events):
    a, b = torch.ones(16, device="npu"), torch.ones(16, device="npu")
    torch.npu.synchronize()
    events.clear()
    a.add_(b)
    torch.npu.synchronize()
    task = next(f["task"] for n, f in events if n == "task_enqueued")
    assert set(task.accesses()) == {(a.data_ptr(), 64, "rw"), (b.data_ptr(), 64, "r")}


def test_allocations_and_frees_of_npu_tensors_are_reported(events):
    t = torch.empty(100, device="npu")
    ptr = t.data_ptr()
    del t
    allocs = [f for n, f in events if n == "mem_alloc" and f["addr"] == ptr]
    frees = [f for n, f in events if n == "mem_free" and f["addr"] == ptr]
    assert allocs and allocs[0]["size"] == 400 and allocs[0]["managed"] and frees and frees[0]["managed"]


def test_a_strided_view_reports_the_span_it_reaches(events):
    x = torch.zeros(8, 8, device="npu")
    torch.npu.synchronize()
    events.clear()
    x[:, 2].fill_(1.0)          # one column: 8 elements 8 apart; the span covers them
    torch.npu.synchronize()
    (task,) = [f["task"] for n, f in events if n == "task_enqueued"]
    # fill_ overwrites: it writes the span and reads nothing (add_ reads and writes its self)
    assert list(task.accesses()) == [(x.data_ptr() + 8, (7 * 8 + 1) * 4, "w")]
