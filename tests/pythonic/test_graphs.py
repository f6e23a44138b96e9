"""npurt.Graph / npurt.graph / Graph.replay (issue 25 item 7, Pythonic face): array work in
the block is recorded, not run; replays run it on new inputs copied into the captured
buffers; forbidden calls raise CaptureError and leave npurt usable."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from npurt.runtime import constants as C


@pytest.fixture(autouse=True)
def _fresh(fresh_runtime):
    yield


def test_the_block_is_recorded_and_each_replay_uses_the_current_inputs():
    x = npurt.asarray(np.zeros(8, np.float32))
    y = npurt.asarray(np.zeros(8, np.float32))
    g = npurt.Graph()
    with npurt.graph(g) as captured:
        assert captured is g and npurt.is_capturing()
        y[...] = x * 2 + 1
    assert g.captured and not npurt.is_capturing()
    assert (y.to_host() == 0).all()          # nothing ran during the capture
    for k in (1.0, 5.0):
        x[...] = npurt.asarray(np.full(8, k, np.float32))
        g.replay()
        npurt.current_stream().synchronize()
        assert (y.to_host() == 2 * k + 1).all()
    g.reset()
    assert not g.captured
    with pytest.raises(npurt.CaptureError):
        g.replay()


def test_a_forbidden_call_in_the_block_is_refused_and_the_failed_block_leaves_no_graph():
    x = npurt.asarray(np.ones(4, np.float32))
    g = npurt.Graph()
    with pytest.raises(npurt.CaptureError) as err:
        with npurt.graph(g):
            x.to_host()                       # a copy and a wait: refused, nothing runs in capture
    assert err.value.code in (C.ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, C.ACL_ERROR_RT_STREAM_CAPTURED)
    assert "capture" in err.value.message
    assert not g.captured and not npurt.is_capturing()
    assert (x.to_host() == 1).all()           # usable again


def test_relaxed_mode_allows_synchronous_calls_and_modes_are_checked():
    x = npurt.asarray(np.ones(4, np.float32))
    g = npurt.Graph()
    other = npurt.Stream()
    with npurt.graph(g, mode="relaxed"):
        with npurt.stream(other):             # a synchronous copy on a stream not in the capture
            assert (x.to_host() == 1).all()
    with pytest.raises(npurt.InvalidValueError):
        npurt.graph(npurt.Graph(), mode="sideways").__enter__()
    with pytest.raises(npurt.InvalidValueError):
        npurt.graph(object())


def test_a_task_group_is_replaced_by_its_update_for_the_replays_after_it():
    x = npurt.asarray(np.ones(8, np.float32))
    y = npurt.asarray(np.zeros(8, np.float32))
    g = npurt.Graph()
    with npurt.graph(g):
        with g.task_group() as grp:
            y[...] = x * 2
    g.replay()
    npurt.current_stream().synchronize()
    assert (y.to_host() == 2).all()
    with grp.update():
        y[...] = x * 3                       # as many tasks, of the same kinds
    g.replay()
    npurt.current_stream().synchronize()
    assert (y.to_host() == 3).all()
    with pytest.raises(npurt.NpuError) as e:
        with grp.update():
            y[...] = x * 4
            y[...] = x * 5                   # one task too many: refused, the group unchanged
    assert e.value.code == C.ACL_ERROR_RT_PARAM_INVALID
    with pytest.raises(ZeroDivisionError):
        with grp.update():
            1 / 0                            # a failing block leaves update mode, nothing changed
    g.replay()
    npurt.current_stream().synchronize()
    assert (y.to_host() == 3).all()
    with pytest.raises(npurt.CaptureError):
        g.task_group()                       # outside the capture
    g.abort()
    g.reset()
