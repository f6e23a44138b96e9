"""The Pythonic module-level device and memory functions (issue 6, scope 1)."""
from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

import npurt
from gates import Gate
from npurt.runtime import constants as C


@pytest.fixture(autouse=True)
def _fresh(fresh_runtime):
    """Each test starts uninitialized: the Pythonic API initializes on first use."""
    yield


def test_import_npurt_is_light_and_does_not_initialize():
    # (npurt's own modules load with it, npurt.ops and the kernel model included: DeviceArray's
    # operators need them, and npurt imports none of its modules lazily; the optional extras stay out)
    code = ("import sys, npurt\n"
            "heavy = [m for m in ('ml_dtypes', 'matplotlib', 'rich', 'torch', 'onnxruntime', 'PIL') "
            "if m in sys.modules]\n"
            "assert not heavy, heavy\n"
            "from npurt.runtime.runtime import RUNTIME\n"
            "assert not RUNTIME.initialized\n"
            "from npurt import kernel, GM\n"
            "assert callable(kernel) and GM is npurt.GM\n"
            "assert npurt.ops.relu is npurt.ops.array_ops.relu\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError):
        npurt.no_such_thing


def test_first_use_initializes_the_runtime_and_picks_device_0():
    from npurt.runtime.runtime import RUNTIME
    assert not RUNTIME.initialized
    assert npurt.current_device() == 0
    assert RUNTIME.initialized


def test_device_count_reports_the_visible_devices(monkeypatch, fresh_runtime):
    monkeypatch.setenv("NPURT_DEVICE_COUNT", "3")
    assert npurt.device_count() == 3


def test_set_device_changes_the_current_device():
    npurt.set_device(1)
    assert npurt.current_device() == 1
    x = npurt.empty((4,))
    assert x.device == 1


def test_device_context_manager_restores_the_previous_device():
    npurt.set_device(1)
    with npurt.device(0):
        assert npurt.current_device() == 0
        with npurt.device(1):
            assert npurt.current_device() == 1
        assert npurt.current_device() == 0
    assert npurt.current_device() == 1


def test_device_context_manager_restores_after_an_exception():
    with pytest.raises(RuntimeError):
        with npurt.device(1):
            raise RuntimeError("boom")
    assert npurt.current_device() == 0


def test_invalid_device_id_raises_invalid_device_error_with_its_code():
    with pytest.raises(npurt.InvalidDeviceError) as info:
        npurt.set_device(7)
    assert info.value.code == C.ACL_ERROR_RT_INVALID_DEVICEID
    assert "visible" in str(info.value)
    assert npurt.current_device() == 0  # still usable


def test_a_new_thread_starts_on_device_0():
    npurt.set_device(1)
    seen = []
    t = threading.Thread(target=lambda: seen.append(npurt.current_device()))
    t.start()
    t.join()
    assert seen == [0]
    assert npurt.current_device() == 1


def test_synchronize_waits_for_queued_work_on_every_stream():
    s = npurt.Stream()
    gate = Gate(s)  # holds s (a Pythonic event never recorded would add no wait)
    x = npurt.zeros((1024,), stream=s)
    assert not s.query()
    gate.record(npurt.Stream())
    npurt.synchronize()
    assert s.query()
    assert not x.to_host(stream=s).any()


def test_synchronize_after_finding_the_device_drained_still_waits_for_new_work():
    # the drained answer is kept while nothing is enqueued (Device.drained); new work on
    # any one of many streams must still be waited for
    streams = [npurt.Stream() for _ in range(40)]
    npurt.synchronize()
    npurt.synchronize()  # drained, twice: the kept answer
    s = streams[17]
    gate = Gate(s)
    x = npurt.ones((1024,), stream=s)
    assert not s.query()
    gate.record(streams[3])
    npurt.synchronize()
    assert s.query()
    assert x.to_host(stream=s).all()


def test_synchronize_after_finding_the_device_drained_refuses_a_capturing_stream():
    npurt.synchronize()  # drained: the kept answer must not hide the capture begun next
    s = npurt.Stream()
    g = npurt.Graph()
    g.capture_begin(s)
    with pytest.raises(npurt.NpuError) as e:
        npurt.synchronize()
    assert e.value.code == C.ACL_ERROR_RT_STREAM_CAPTURED
    g.capture_end()  # the refused wait did nothing and left the capture going on, as CANN's does
    npurt.synchronize()  # not capturing any more: drained again


def test_synchronize_of_another_device_keeps_the_current_device():
    npurt.zeros((16,), device=1)
    npurt.synchronize(1)
    assert npurt.current_device() == 0


def test_mem_get_info_returns_free_and_total_of_the_device():
    free, total = npurt.mem_get_info()
    assert total == npurt.get_device_properties(0).total_memory
    assert 0 < free <= total


def test_memory_allocated_counts_live_arrays_and_drops_when_collected():
    before = npurt.memory_allocated()
    x = npurt.empty((1 << 20,), dtype=np.uint8)
    assert npurt.memory_allocated() >= before + (1 << 20)
    del x
    assert npurt.memory_allocated() == before


def test_max_memory_allocated_tracks_the_peak_and_resets():
    x = npurt.empty((4 << 20,), dtype=np.uint8)
    peak = npurt.max_memory_allocated()
    assert peak >= 4 << 20
    del x
    assert npurt.max_memory_allocated() == peak
    npurt.reset_peak_memory_stats()
    assert npurt.max_memory_allocated() == npurt.memory_allocated() < peak


def test_memory_stats_is_the_runtime_stats_dict():
    x = npurt.empty((100,))
    stats = npurt.memory_stats()
    assert stats["active_blocks"] >= 1
    assert stats["allocated_bytes"] == npurt.memory_allocated()
    assert {"reserved_bytes", "pool_hits", "num_allocs", "pending_free_blocks"} <= set(stats)
    del x


def test_empty_cache_gives_cached_memory_back():
    x = npurt.empty((8 << 20,), dtype=np.uint8)
    del x
    reserved = npurt.memory_reserved()
    assert reserved >= 8 << 20  # the pool keeps the freed block cached
    npurt.empty_cache()
    assert npurt.memory_reserved() < reserved


def test_memory_functions_take_a_device_argument():
    x = npurt.empty((1 << 20,), dtype=np.uint8, device=1)
    assert npurt.memory_allocated(1) >= 1 << 20
    assert npurt.memory_allocated(0) < 1 << 20
    del x


def test_get_device_properties_reports_the_soc():
    props = npurt.get_device_properties(1)
    assert props.name == "Ascend910B3"
    assert props.multi_processor_count == 20
    assert props.total_memory == 62432 << 20  # as torch_npu: get_mem_info's total
    assert npurt.get_device_name() == "Ascend910B3"
