"""The runtime's observer hooks: what tools see, and in which order."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.observers import HOOKS


class Recorder:
    """An observer that keeps (name, fields) of every event."""

    def __init__(self):
        self.events: list[tuple[str, dict]] = []
        self.lock = threading.Lock()

    def __call__(self, name, **fields):
        with self.lock:
            self.events.append((name, fields))

    def named(self, name):
        return [f for n, f in self.events if n == name]

    def __enter__(self):
        HOOKS.add(self)
        return self

    def __exit__(self, *exc):
        HOOKS.remove(self)


def test_task_enqueued_comes_before_task_started_for_every_task(rt):
    s = rt.create_stream()
    dev = rt.malloc(1 << 16, 0)
    host = rt.malloc_host(1 << 16)
    with Recorder() as rec:
        for _ in range(200):
            rt.memcpy_async(dev, 1 << 16, host, 1 << 16, C.ACL_MEMCPY_HOST_TO_DEVICE, s)
        rt.synchronize_stream(s)
    order = {}
    for i, (name, f) in enumerate(rec.events):
        if name in ("task_enqueued", "task_started"):
            order.setdefault(id(f["task"]), {})[name] = i
    assert len(order) == 200
    assert all(o["task_enqueued"] < o["task_started"] for o in order.values())


def test_a_wait_on_an_unfinished_record_emits_task_blocked_naming_the_blocker(rt):
    s1, s2 = rt.create_stream(), rt.create_stream()
    ev = rt.create_event()
    gate = threading.Event()
    rt.launch_host_func(s1, gate.wait, name="gate")
    rt.record_event(ev, s1)
    with Recorder() as rec:
        rt.stream_wait_event(s2, ev)
        waits = [f["task"] for f in rec.named("task_enqueued")]
        threading.Timer(0.05, gate.set).start()
        rt.synchronize_stream(s2)
    blocked = rec.named("task_blocked")
    assert blocked and blocked[0]["task"] is waits[0]
    assert "stream" in blocked[0]["blocker"].describe()


def test_a_synchronous_memcpy_emits_host_copy_with_bytes_and_direction(rt):
    dev = rt.malloc(4096, 0)
    a = np.arange(1024, dtype=np.float32)
    with Recorder() as rec:
        rt.memcpy(dev, 4096, a.ctypes.data, 4096, C.ACL_MEMCPY_HOST_TO_DEVICE)
        rt.memset(dev, 4096, 0, 100)
    copies = rec.named("host_copy")
    assert [(c["op"], c["nbytes"], c["direction"]) for c in copies] == [("memcpy", 4096, "H2D"),
                                                                        ("memset", 100, "D")]
    assert all(c["t0_ns"] > 0 for c in copies)


def test_task_details_name_kernels_copies_and_the_record_a_wait_waited_for(rt):
    import npurt
    s = rt.create_stream()
    dev = rt.malloc(1 << 12, 0)
    host = rt.malloc_host(1 << 12)
    ev = rt.create_event()
    with Recorder() as rec:
        rt.memcpy_async(dev, 1 << 12, host, 1 << 12, C.ACL_MEMCPY_HOST_TO_DEVICE, s)
        record_seq = rt.record_event(ev, s)
        rt.stream_wait_event(None, ev)
        x = npurt.to_device(np.ones(64, np.float32))
        npurt.ops.relu(x).to_host()
        rt.synchronize_stream(s)
    details = [(f["task"].kind, f["task"].details()) for f in rec.named("task_finished")]
    assert ("memcpy_async", {"name": "memcpy_async H2D", "bytes": 4096, "direction": "H2D"}) in details
    waits = [d for k, d in details if k == "stream_wait_event"]
    assert waits[0]["record"] == (0, s.stream_id, record_seq)
    kernels = [d for k, d in details if k == "kernel"]
    assert kernels and kernels[0]["name"] == "relu" and kernels[0]["blocks"] >= 1

