"""Every collective and data type family against numpy on 4 ranks in one process (threads
made by `npurt.hccl.spawn`, one simulated device each), including the error paths: ranks that
disagree, invalid arguments, and a rank that never arrives (HCCL_E_TIMEOUT, not a hang).
The same checks run across 4 processes in test_hccl_processes.py."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
import npurt.hccl as hccl
from hccl_checks import CHECKS, run_checks, timeout_phase
from npurt.hccl import Communicator, spawn

N = 64


@pytest.fixture
def four_devices(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_DEVICE_COUNT", "4")
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "30")  # a bug shows as a failure, not a 30-minute wait
    fresh_runtime.init()


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_collective_matches_numpy_on_four_ranks_in_one_process(four_devices, name):
    results = spawn(lambda rank: run_checks(rank, [name], N), 4)
    for rank, result in enumerate(results):
        assert result[name] == "ok", f"rank {rank}: {result[name]}"


def test_rank_that_never_arrives_makes_the_others_time_out(four_devices, monkeypatch):
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "0.5")
    outcomes = spawn(lambda rank: timeout_phase(rank, leaver=3), 4)
    assert outcomes == ["timeout", "timeout", "timeout", "left"]


def test_timeout_is_reported_by_synchronize_with_the_missing_ranks(four_devices, monkeypatch):
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "0.3")

    def rank_main(rank):
        comm = Communicator.world()
        if rank:
            return None
        comm.all_reduce(npurt.ones(8))
        with pytest.raises(npurt.TaskError) as info:
            npurt.current_stream().synchronize()
        return info.value

    err = spawn(rank_main, 3)[0]
    assert err.code == hccl.HCCL_E_TIMEOUT
    assert "[1, 2]" in str(err) and "HCCL_EXEC_TIMEOUT" in str(err) and "HCCL_E_TIMEOUT" in str(err)


def test_exception_on_one_rank_fails_the_others_at_once_and_is_raised(four_devices):
    def rank_main(rank):
        comm = Communicator.world()
        if rank == 2:
            raise KeyError("bad batch")
        comm.all_reduce(npurt.ones(8))
        npurt.current_stream().synchronize()  # fails: rank 2 is gone

    with pytest.raises(KeyError, match="bad batch") as info:
        spawn(rank_main, 4)
    assert any("rank 2" in note for note in info.value.__notes__)


def test_spawn_runs_each_rank_on_its_own_device_and_returns_results_in_order(four_devices):
    assert spawn(lambda rank: (rank, npurt.current_device(), hccl.current_world().size), 3) == \
        [(0, 0, 3), (1, 1, 3), (2, 2, 3)]


def test_spawn_refuses_more_ranks_than_devices(four_devices):
    with pytest.raises(ValueError, match="NPURT_DEVICE_COUNT"):
        spawn(lambda rank: rank, 5)


def test_world_of_one_process_is_a_communicator_of_one(four_devices):
    comm = Communicator.world()
    assert (comm.rank, comm.size, comm.device) == (0, 1, 0)
    x = npurt.to_device(np.arange(6, dtype=np.float32))
    assert np.array_equal(comm.all_reduce(x).to_host(), np.arange(6))
    assert comm.all_gather(x).to_host().shape == (1, 6)


def test_init_all_drives_every_device_from_one_thread(four_devices):
    comms = Communicator.init_all([0, 1, 2])
    xs = [npurt.to_device(np.full(5, r + 1, np.int32), device=r) for r in range(3)]
    for comm, x in zip(comms, xs):  # enqueue on every device first, then wait
        comm.all_reduce(x, op="prod")
    assert [x.to_host().tolist() for x in xs] == [[6] * 5] * 3


def test_collective_waits_for_earlier_work_on_its_stream(four_devices):
    """A rank's collective runs only when its stream reaches it: here behind an event that is
    recorded later; the other rank's stream stays parked until then."""
    comms = Communicator.init_all([0, 1])
    gate = npurt.Event()
    s0, s1 = npurt.Stream(0), npurt.Stream(1)
    x0 = npurt.to_device(np.ones(4, np.float32), device=0, stream=s0)
    x1 = npurt.to_device(np.full(4, 2, np.float32), device=1, stream=s1)
    s1.wait_event(gate)
    comms[0].all_reduce(x0, stream=s0)
    comms[1].all_reduce(x1, stream=s1)
    assert not s0.query() and not s1.query()
    gate.record(npurt.Stream(0))
    s0.synchronize()
    s1.synchronize()
    assert x0.to_host(s0).tolist() == [3.0] * 4 and x1.to_host(s1).tolist() == [3.0] * 4


def test_pythonic_arguments_are_checked_with_clear_errors(four_devices):
    comm = Communicator.world()
    x = npurt.ones((3, 2))
    with pytest.raises(hccl.HcclError, match="multiple of"):
        Communicator.init_all([0, 1])[0].reduce_scatter(npurt.ones(3))
    with pytest.raises(hccl.HcclError, match="DeviceArray"):
        comm.all_reduce(np.ones(3))
    with pytest.raises(hccl.HcclError, match="device 1"):
        comm.all_reduce(npurt.ones(3, device=1))
    with pytest.raises(hccl.HcclError, match="contiguous"):
        comm.all_reduce(x.T)
    with pytest.raises(hccl.HcclError, match="elements"):
        comm.all_reduce(x, out=npurt.ones(5))
    with pytest.raises(hccl.HcclError, match="no data type") as info:
        comm.broadcast(npurt.zeros(3, np.bool_))
    assert info.value.code == hccl.HCCL_E_NOT_SUPPORT
    assert comm.all_reduce(x).to_host().tolist() == [[1, 1]] * 3  # still usable


def test_destroyed_communicator_refuses_new_work(four_devices):
    with Communicator.init_all([0])[0] as comm:
        comm.barrier()
    with pytest.raises(hccl.HcclError, match="destroyed") as info:
        comm.barrier()
    assert info.value.code == hccl.HCCL_E_PARA


def test_async_error_keeps_the_first_failure(four_devices):
    def rank_main(rank):
        comm = Communicator.world()
        comm.all_reduce(npurt.ones(4 + rank))  # counts differ
        with pytest.raises(npurt.TaskError):
            npurt.current_stream().synchronize()
        return comm.async_error

    assert spawn(rank_main, 2) == [hccl.HCCL_E_PARA] * 2
