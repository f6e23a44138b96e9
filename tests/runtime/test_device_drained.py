"""A device knows which of its streams can have work (Device.touched: those given work or a
capture since they were last found drained), so the device-wide synchronize (aclrtSynchronizeDevice,
torch.npu.synchronize) and its "nothing queued" exit look at those streams only: a device with
hundreds of idle streams and one busy one waits for the busy one, at the cost of one stream.
Every test here holds with the C accelerator and without it (the C enqueue keeps the set too)."""
from __future__ import annotations

import threading

import pytest

from npurt.runtime import Stream, TaskError
from npurt.runtime.tasks import HostFuncTask
from tests.isolation import run_isolated


def _device(rt):
    return rt.current_context().device


def test_a_device_with_many_idle_streams_is_drained_until_one_is_given_work(rt):
    streams = [rt.create_stream() for _ in range(50)]
    device = _device(rt)
    rt.synchronize_device()
    assert device.drained() and not device.touched
    gate = threading.Event()
    rt.launch_host_func(streams[17], gate.wait, 30)
    assert not device.drained()
    assert list(device.touched) == [streams[17]]  # the one stream with work, the others untouched
    gate.set()
    rt.synchronize_device()
    assert device.drained() and not device.touched


def test_the_device_synchronize_waits_only_for_the_streams_given_work(rt, monkeypatch):
    streams = [rt.create_stream() for _ in range(40)]
    rt.synchronize_device()
    waited = []
    real = Stream.synchronize

    def synchronize(self, *args, **kw):
        waited.append(self)
        return real(self, *args, **kw)

    monkeypatch.setattr(Stream, "synchronize", synchronize)
    gate, out = threading.Event(), []
    rt.launch_host_func(streams[3], gate.wait, 30)
    rt.launch_host_func(streams[3], out.append, 1)
    rt.launch_host_func(streams[30], out.append, 2)
    threading.Timer(0.05, gate.set).start()
    rt.synchronize_device()
    assert sorted(out) == [1, 2]
    assert set(waited) <= {streams[3], streams[30]} and streams[3] in waited


def test_a_failure_on_one_of_many_streams_is_raised_by_the_device_synchronize(rt):
    streams = [rt.create_stream() for _ in range(30)]
    rt.synchronize_device()

    def fail():
        raise ValueError("boom")

    streams[11].enqueue(HostFuncTask(fail))
    with pytest.raises(TaskError):
        rt.synchronize_device()
    rt.synchronize_device()  # reported once; the device is usable
    assert _device(rt).drained()


def test_a_force_destroyed_stream_with_queued_work_is_waited_for_and_then_let_go(rt):
    s = rt.create_stream()
    device = _device(rt)
    gate, out = threading.Event(), []
    rt.launch_host_func(s, gate.wait, 30)
    rt.launch_host_func(s, out.append, 1)
    rt.destroy_stream(s, force=True)
    assert not device.drained() and s in device.touched
    threading.Timer(0.05, gate.set).start()
    rt.synchronize_device()
    assert out == [1]
    assert device.drained() and s not in device.touched


def test_a_destroyed_idle_stream_leaves_the_set_at_once(rt):
    s = rt.create_stream()
    dev = rt.malloc(64)
    rt.memset_async(dev, 64, 1, 64, s)
    rt.destroy_stream(s)  # waits for its work
    assert s not in _device(rt).touched


def test_enqueues_racing_the_drained_check_are_never_missed(rt):
    """One thread gives a stream work while another asks whether the device is drained: an
    answer True means that everything enqueued before the question has finished."""
    s = rt.create_stream()
    device = _device(rt)
    stop = threading.Event()
    wrong = []

    def check():
        while not stop.is_set():
            before = s.enqueued_seq
            if device.drained() and s.completed_seq < before:
                wrong.append((before, s.completed_seq))

    checker = threading.Thread(target=check)
    checker.start()
    try:
        for _ in range(300):
            gate = threading.Event()
            rt.launch_host_func(s, gate.wait, 30)
            gate.set()
            rt.synchronize_stream(s)
    finally:
        stop.set()
        checker.join(30)
    assert not checker.is_alive() and not wrong, wrong[:5]
    rt.synchronize_device()
    assert device.drained()


_SCRIPT = """
import threading
from npurt import runtime as rt
from npurt.runtime import accel
rt.init(); rt.set_device(0)
streams = [rt.create_stream() for _ in range(20)]
device = rt.current_context().device
gate = threading.Event()
rt.launch_host_func(streams[5], gate.wait, 30)
dev = rt.malloc(64)
rt.memset_async(dev, 64, 1, 64, streams[9])
assert not device.drained() and set(device.touched) >= {streams[5]}
gate.set()
rt.synchronize_device()
assert device.drained() and not device.touched
print("OK", accel.SPEEDUPS is not None)
"""


@pytest.mark.parametrize("speedups", ["1", "0"])
def test_the_set_is_kept_with_and_without_the_extension(speedups):
    code, text = run_isolated(_SCRIPT, env={"NPURT_SPEEDUPS": speedups})
    assert code == 0 and "OK" in text, text
