"""Fault injection (NPURT_FAULTS, npurt.faults, the npurt_faults marker), as a program that tests its
error handling uses it: each injected fault reaches the program where the real one would, with the
real code, on every face, and a spec that cannot be armed is refused with the position of the mistake."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import npurt
import npurt.acl as acl
from npurt import runtime as rt
from npurt.runtime import constants as C
from tests.conftest import run_isolated

pytest_plugins = ["pytester"]


@pytest.fixture
def faults(rt):
    yield npurt.faults
    npurt.faults.clear()


@pytest.fixture
def pyacl(faults):
    """pyACL with device 0 set (the runtime fixture already initialized it)."""
    assert acl.rt.set_device(0) == 0
    yield acl
    acl.rt.reset_device(0)


# ---------------------------------------------------------------- the spec language
def test_the_forms_of_an_entry_parse():
    faults = rt.FAULTS.check("acl.rt.malloc@3=207001; aclrtMalloc@2+=ACL_ERROR_RT_MEMORY_ALLOCATION;"
                             "task:kernel@*2=aicore,stream=3; alloc,budget=1M; device:1@2s; task:copy@50%=uce;"
                             "seed=7")
    assert [(f.target, f.name, str(f.trigger), f.code) for f in faults] == [
        ("api", "malloc", "3", 207001), ("api", "malloc", "2+", 207001), ("task", "kernel", "*2", 507015),
        ("alloc", "alloc", "1+", None), ("device", "1", "2s", None), ("task", "copy", "50%", 507053)]
    assert faults[2].stream == 3 and faults[3].budget == 1 << 20


@pytest.mark.parametrize("name", ["acl.rt.memcpy_async", "aclrtMemcpyAsync", "memcpy_async",
                                  "npurt.runtime.memcpy_async"])
def test_the_pyacl_c_and_runtime_names_of_an_operation_mean_the_same_operation(name):
    assert rt.FAULTS.check(f"{name}@1=507899")[0].name == "memcpy_async"


@pytest.mark.parametrize("spec, position, words", [
    ("acl.rt.mallocc@3=207001", 0, "is not a runtime operation"),
    ("acl.rt.malloc@3=207001;aclrtFoo@1=1", 23, "aclrtFoo"),
    ("malloc@x=207001", 7, "bad trigger"),
    ("malloc@1", 8, "say which code"),
    ("task:kernal@1", 5, "unknown task kind"),
    ("task:kernel@1=badcode", 14, "bad code"),
    ("alloc,stream=1", 6, "does not apply"),
    ("seed=abc", 5, "integer"),
    ("malloc@0=207001", 7, "counts start at 1"),
])
def test_a_malformed_spec_is_refused_with_the_position_of_the_mistake(spec, position, words):
    with pytest.raises(rt.FaultSpecError) as info:
        rt.FAULTS.check(spec)
    assert info.value.position == position and words in str(info.value)
    assert str(info.value).splitlines()[-1] == " " * (position + 2) + "^"


def test_a_refused_spec_leaves_the_armed_faults_as_they_were(faults):
    faults.inject("malloc@1=207001")
    with pytest.raises(faults.FaultSpecError):
        faults.inject("malloc@nope=1")
    assert [f.text for f in rt.FAULTS.faults] == ["malloc@1=207001"]


# ---------------------------------------------------------------- API faults, on each face
def test_the_third_malloc_returns_the_injected_code_through_pyacl(pyacl, faults):
    faults.inject("acl.rt.malloc@3=207001")
    results = [pyacl.rt.malloc(64, 0) for _ in range(4)]
    assert [ret for _, ret in results] == [0, 0, C.ACL_ERROR_RT_MEMORY_ALLOCATION, 0]
    assert results[2][0] == 0
    assert "injected fault 'acl.rt.malloc@3=207001'" in pyacl.get_recent_err_msg()
    assert faults.summary() == {"acl.rt.malloc@3=207001": 1}
    for ptr, ret in results:
        if not ret:
            assert pyacl.rt.free(ptr) == 0


def test_the_c_name_injects_into_the_same_operation(pyacl, faults):
    faults.inject("aclrtCreateStream@2=207008")
    s1, r1 = pyacl.rt.create_stream()
    s2, r2 = pyacl.rt.create_stream()
    assert (r1, r2, s2) == (0, C.ACL_ERROR_RT_NO_STREAM_RESOURCE, 0)
    assert pyacl.rt.destroy_stream(s1) == 0


def test_the_pythonic_face_raises_the_error_of_the_injected_code(faults):
    faults.inject("create_stream@1=207008")
    with pytest.raises(npurt.ResourceExhaustedError) as info:
        npurt.Stream()
    assert info.value.code == C.ACL_ERROR_RT_NO_STREAM_RESOURCE
    npurt.Stream().synchronize()  # the next call is served


def test_every_nth_and_from_the_nth_on(pyacl, faults):
    faults.inject("get_device_count@*2=507899; synchronize_device@3+=507046")
    assert [pyacl.rt.get_device_count()[1] for _ in range(5)] == [0, 507899, 0, 507899, 0]
    assert [pyacl.rt.synchronize_device() for _ in range(4)] == [0, 0, 507046, 507046]


def test_a_percentage_is_deterministic_given_the_seed(pyacl, faults):
    def pattern(seed):
        faults.inject("get_device_count@30%=507899", seed=seed)
        return [pyacl.rt.get_device_count()[1] for _ in range(40)]
    first = pattern(11)
    assert first == pattern(11) and 0 < first.count(507899) < 40
    assert first != pattern(12)


def test_a_gated_operation_keeps_its_signature_and_gets_its_code_back(faults):
    faults.clear()  # (NPURT_FAULTS may have gated it already)
    op = getattr(rt.malloc, "__wrapped__", rt.malloc)  # the Python operation behind a C entry point
    before = (inspect.signature(op), op.__code__)
    faults.inject("malloc@1=207001")
    assert inspect.signature(op) == before[0] and op.__code__ is not before[1]
    with pytest.raises(npurt.OutOfMemoryError):  # the C entry point's fast path is held off meanwhile
        rt.malloc(64)
    faults.clear()
    assert op.__code__ is before[1]


# ---------------------------------------------------------------- task faults
def test_a_kernel_task_fails_with_the_device_error_at_the_next_synchronize(faults):
    x = npurt.ones(8)
    faults.inject("task:kernel@1=507015")
    y = x + x  # accepted: the failure is the device's, found when the host synchronizes
    with pytest.raises(npurt.TaskError) as info:
        npurt.synchronize()
    assert info.value.code == C.ACL_ERROR_RT_AICORE_EXCEPTION and "injected fault" in info.value.message
    assert "injected fault" in rt.get_recent_err_msg()
    assert (x + x).numpy().tolist() == [2.0] * 8  # the second kernel runs
    del y


def test_the_exception_callback_sees_an_injected_task_fault(pyacl, faults):
    seen = []
    assert pyacl.rt.set_exception_info_callback(
        lambda info: seen.append(pyacl.rt.get_error_code_from_exception_info(info))) == 0
    stream, _ = pyacl.rt.create_stream()
    src, _ = pyacl.rt.malloc(64, 0)
    dst, _ = pyacl.rt.malloc(64, 0)
    faults.inject("task:copy@1=uce")
    assert pyacl.rt.memcpy_async(dst, 64, src, 64, 3, stream) == 0
    assert pyacl.rt.synchronize_stream(stream) == C.ACL_ERROR_RT_DEVICE_MEM_ERROR
    assert seen == [C.ACL_ERROR_RT_DEVICE_MEM_ERROR]
    pyacl.rt.set_exception_info_callback(None)
    for p in (src, dst):
        pyacl.rt.free(p)
    pyacl.rt.destroy_stream(stream)


def test_a_task_fault_can_be_limited_to_one_stream(faults):
    a, b = npurt.Stream(), npurt.Stream()
    x = npurt.ones(4)
    npurt.synchronize()
    faults.inject(f"task:kernel@1+=vector,stream={b.stream_id}")
    with npurt.stream(a):
        ya = x * 3
    a.synchronize()
    with npurt.stream(b):
        x * 3
    with pytest.raises(npurt.TaskError) as info:
        b.synchronize()
    assert info.value.code == C.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION and ya.numpy().tolist() == [3.0] * 4


def test_a_hung_task_times_a_synchronize_out_and_an_abort_ends_it(pyacl, faults):
    stream, _ = pyacl.rt.create_stream()
    faults.inject("task:set@1=hang")
    ptr, _ = pyacl.rt.malloc(64, 0)
    assert pyacl.rt.memset_async(ptr, 64, 0, 64, stream) == 0
    assert pyacl.rt.synchronize_stream_with_timeout(stream, 100) == C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
    assert pyacl.rt.stream_abort(stream) == 0
    pyacl.rt.synchronize_stream(stream)
    assert pyacl.rt.memset_async(ptr, 64, 0, 64, stream) == 0  # the stream works again
    assert pyacl.rt.synchronize_stream(stream) == 0
    pyacl.rt.free(ptr)
    pyacl.rt.destroy_stream(stream)


# ---------------------------------------------------------------- allocations and devices
def test_allocations_past_a_byte_budget_fail_as_out_of_memory(faults):
    keep = npurt.empty(1000, dtype="uint8")
    faults.inject("alloc,budget=4K")
    more = npurt.empty(1000, dtype="uint8")
    with pytest.raises(npurt.OutOfMemoryError) as info:
        npurt.empty(4096, dtype="uint8")
    assert "injected out-of-memory" in info.value.message
    del more
    faults.clear()
    assert npurt.empty(4096, dtype="uint8").size == 4096 and keep.size == 1000


def test_the_nth_allocation_fails_whichever_face_makes_it(pyacl, faults):
    faults.inject("alloc@2")
    ptr, ret = pyacl.rt.malloc(64, 0)
    assert ret == 0
    with pytest.raises(npurt.OutOfMemoryError):
        npurt.empty(16)
    pyacl.rt.free(ptr)


def test_a_lost_device_fails_every_call_until_it_is_reset(pyacl, faults):
    x = npurt.ones(4)
    faults.inject("device:0@1")
    # `x + 1` queues a fill, then the add: the device is lost when the fill runs, which a
    # worker (or an inline run) may do before the add's launch; then the launch is refused,
    # else the synchronize reports the task's failure. Either way: the loss, with its code.
    with pytest.raises(npurt.NpuError) as info:
        x + 1
        npurt.synchronize()
    assert info.value.code == C.ACL_ERROR_RT_LOST_HEARTBEAT
    ptr, ret = pyacl.rt.malloc(64, 0)
    assert ret == C.ACL_ERROR_RT_LOST_HEARTBEAT and "is lost" in pyacl.get_recent_err_msg()
    del x
    assert pyacl.rt.reset_device(0) == 0  # the recovery path a serving stack takes
    npurt.runtime.RUNTIME.release_device(npurt.runtime.RUNTIME.device(0), "test")
    assert pyacl.rt.set_device(0) == 0
    ptr, ret = pyacl.rt.malloc(64, 0)
    assert ret == 0 and pyacl.rt.free(ptr) == 0


# ---------------------------------------------------------------- environment, exit summary, marker
def test_npurt_faults_reaches_an_unmodified_program_and_the_exit_summary_counts_it():
    code, out = run_isolated("""
        import npurt.acl as acl
        acl.init(); acl.rt.set_device(0)
        print([acl.rt.malloc(64, 0)[1] for _ in range(3)])
    """, env={"NPURT_FAULTS": "aclrtMalloc@2=207001"})
    assert code == 0, out
    assert "[0, 207001, 0]" in out
    assert "npurt: faults injected: 1 (aclrtMalloc@2=207001: 1)" in out


def test_a_malformed_npurt_faults_stops_the_program_at_start():
    code, out = run_isolated("import npurt", env={"NPURT_FAULTS": "aclrtMalloc@two=207001"})
    assert code != 0 and "bad fault spec at position 12" in out


def test_the_pytest_marker_and_fixture_arm_faults_for_the_test_body(pytester):
    pytester.makepyfile('''
        import pytest
        import npurt.acl as acl

        @pytest.mark.npurt_faults("acl.rt.get_device_count@1=507899")
        def test_marked(npurt_runtime):
            assert acl.rt.get_device_count()[1] == 507899
            assert acl.rt.get_device_count()[1] == 0

        def test_unmarked(npurt_runtime):
            assert acl.rt.get_device_count()[1] == 0

        def test_fixture(npurt_faults):
            npurt_faults.inject("get_device_count@1=507033")
            assert acl.rt.get_device_count()[1] == 507033
    ''')
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    assert not rt.FAULTS.armed


# ---------------------------------------------------------------- collectives
@pytest.fixture
def three_ranks(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_DEVICE_COUNT", "3")
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "1")  # the peers' wait for a rank that does not come
    fresh_runtime.init()
    yield
    npurt.faults.clear()


def _two_all_reduces(rank):
    """Two all-reduces; what this rank's synchronize of each said."""
    from npurt.hccl import Communicator
    comm = Communicator.world()
    said = []
    for _ in range(2):
        x = npurt.ones(8)
        comm.all_reduce(x)
        try:
            rt.synchronize_stream(npurt.current_stream().runtime_stream, 4000)  # > HCCL_EXEC_TIMEOUT
            said.append(int(x.numpy()[0]))
        except npurt.NpuError as exc:
            said.append(exc.code)
            rt.stream_abort(npurt.current_stream().runtime_stream)
            break
    return said


def test_a_rank_that_stops_answering_makes_its_peers_time_out(three_ranks):
    from npurt import hccl
    npurt.faults.inject("hccl:2@2=silent")
    said = hccl.spawn(_two_all_reduces, 3)
    assert said[0] == said[1] == [3, hccl.HCCL_E_TIMEOUT]      # the first ran; the second timed out
    assert said[2] == [3, C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT]  # the silent rank's own stream hangs


def test_a_rank_that_dies_in_a_collective_loses_its_device_and_its_peers_time_out(three_ranks):
    from npurt import hccl
    npurt.faults.inject("hccl:1@1=dead")
    said = hccl.spawn(_two_all_reduces, 3)
    assert said[0] == said[2] == [hccl.HCCL_E_TIMEOUT]
    assert said[1] == [C.ACL_ERROR_RT_LOST_HEARTBEAT]
