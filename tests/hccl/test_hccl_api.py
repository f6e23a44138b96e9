"""The HCCL C API in pyACL style (`npurt.hccl.*`): return shapes, handles, the HcclResult
codes of bad input at the call, failures at the stream's synchronize, communicator creation
from root info, rank tables and device lists, and that the runtime stays usable after errors."""
from __future__ import annotations

import json
import threading

import numpy as np
import pytest

import npurt.acl as acl
import npurt.hccl as hccl

H = hccl
FP32 = hccl.HCCL_DATA_TYPE_FP32


@pytest.fixture
def two_devices(fresh_runtime, monkeypatch):
    """acl.init with 2 devices; device 0 current; HCCL timeouts short enough for tests."""
    monkeypatch.setenv("NPURT_DEVICE_COUNT", "2")
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "20")
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0


def device_buffer(values: np.ndarray) -> int:
    ptr, ret = acl.rt.malloc(max(values.nbytes, 1), 0)
    assert ret == 0
    if values.nbytes:
        assert acl.rt.memcpy(ptr, values.nbytes, values.ctypes.data, values.nbytes, 1) == 0
    return ptr


def read(ptr: int, count: int, dtype=np.float32) -> np.ndarray:
    out = np.empty(count, dtype)
    assert acl.rt.memcpy(out.ctypes.data, out.nbytes, ptr, out.nbytes, 2) == 0
    return out


def on_threads(*fns):
    """Run fns concurrently (one thread each, as ranks do); their results in order."""
    results, errors = [None] * len(fns), []

    def body(i):
        try:
            results[i] = fns[i]()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]
    return results


@pytest.fixture
def pair(two_devices):
    """comm_init_all over devices 0 and 1, with a stream on each: [(comm, stream)] by rank."""
    comms, ret = hccl.comm_init_all(2, [0, 1])
    assert ret == hccl.HCCL_SUCCESS and len(comms) == 2
    out = []
    for dev, comm in enumerate(comms):
        acl.rt.set_device(dev)
        stream, ret = acl.rt.create_stream()
        assert ret == 0
        out.append((comm, stream))
    acl.rt.set_device(0)
    return out


# ---------------------------------------------------------------- values and shapes
def test_constants_have_the_values_of_hccl_types_h():
    assert (H.HCCL_SUCCESS, H.HCCL_E_PARA, H.HCCL_E_PTR, H.HCCL_E_NOT_SUPPORT, H.HCCL_E_TIMEOUT,
            H.HCCL_E_RUNTIME, H.HCCL_E_REMOTE, H.HCCL_E_OPRETRY_FAIL) == (0, 1, 2, 5, 9, 15, 21, 23)
    assert (H.HCCL_REDUCE_SUM, H.HCCL_REDUCE_PROD, H.HCCL_REDUCE_MAX, H.HCCL_REDUCE_MIN,
            H.HCCL_REDUCE_RESERVED) == (0, 1, 2, 3, 255)
    assert (H.HCCL_DATA_TYPE_INT8, H.HCCL_DATA_TYPE_INT16, H.HCCL_DATA_TYPE_INT32, H.HCCL_DATA_TYPE_FP16,
            H.HCCL_DATA_TYPE_FP32, H.HCCL_DATA_TYPE_INT64, H.HCCL_DATA_TYPE_UINT64, H.HCCL_DATA_TYPE_UINT8,
            H.HCCL_DATA_TYPE_UINT16, H.HCCL_DATA_TYPE_UINT32, H.HCCL_DATA_TYPE_FP64, H.HCCL_DATA_TYPE_BFP16,
            H.HCCL_DATA_TYPE_INT128, H.HCCL_DATA_TYPE_RESERVED) == (*range(13), 255)
    assert H.HCCL_ROOT_INFO_BYTES == 4108


def test_error_string_describes_a_result():
    assert hccl.get_error_string(hccl.HCCL_E_TIMEOUT) == "timeout"
    assert hccl.get_error_string(hccl.HCCL_E_PARA) == "parameter error"
    assert hccl.get_error_string(999) == "unknown error"


def test_root_info_is_a_fresh_blob_of_the_header_size(two_devices):
    (a, ret), (b, _) = hccl.get_root_info(), hccl.get_root_info()
    assert ret == 0 and isinstance(a, bytes) and len(a) == hccl.HCCL_ROOT_INFO_BYTES and a != b


def test_comm_init_all_returns_one_handle_per_device_with_rank_and_size(pair):
    for rank, (comm, _) in enumerate(pair):
        assert hccl.get_rank_id(comm) == (rank, 0)
        assert hccl.get_rank_size(comm) == (2, 0)


def test_comm_init_root_info_connects_threads_of_one_process(two_devices):
    root_info, _ = hccl.get_root_info()

    def rank(r):
        def run():
            assert acl.rt.set_device(r) == 0
            comm, ret = hccl.comm_init_root_info(2, root_info, r)
            assert ret == 0
            stream, _ = acl.rt.create_stream()
            buf = device_buffer(np.full(4, r + 1, np.float32))
            assert hccl.all_reduce(buf, buf, 4, FP32, hccl.HCCL_REDUCE_SUM, comm, stream) == 0
            assert acl.rt.synchronize_stream(stream) == 0
            out = read(buf, 4)
            assert hccl.comm_destroy(comm) == 0
            return out.tolist()
        return run

    assert on_threads(rank(0), rank(1)) == [[3.0] * 4] * 2


def test_every_collective_through_the_pyacl_style_functions(pair):
    (c0, s0), (c1, s1) = pair
    n = 6
    bufs = {}
    for r in (0, 1):
        acl.rt.set_device(r)
        bufs[r] = {"x": device_buffer(np.arange(n, dtype=np.float32) + 10 * r),
                   "big": device_buffer(np.zeros(2 * n, np.float32)), "y": device_buffer(np.zeros(n, np.float32))}
    calls = [  # each rank's call, in order (every rank enqueues all, then both synchronize)
        lambda r, c, s: hccl.all_reduce(bufs[r]["x"], bufs[r]["y"], n, FP32, hccl.HCCL_REDUCE_SUM, c, s),
        lambda r, c, s: hccl.all_gather(bufs[r]["x"], bufs[r]["big"], n, FP32, c, s),
        lambda r, c, s: hccl.broadcast(bufs[r]["y"], n, FP32, 1, c, s),
        lambda r, c, s: hccl.reduce_scatter(bufs[r]["big"], bufs[r]["y"], n, FP32, hccl.HCCL_REDUCE_MAX, c, s),
        lambda r, c, s: hccl.reduce(bufs[r]["x"], bufs[r]["y"], n, FP32, hccl.HCCL_REDUCE_MIN, 0, c, s),
        lambda r, c, s: hccl.barrier(c, s),
    ]
    for call in calls:
        for r, (c, s) in enumerate(pair):
            assert call(r, c, s) == 0
    for _, s in pair:
        assert acl.rt.synchronize_stream(s) == 0
    x0, x1 = np.arange(n, dtype=np.float32), np.arange(n, dtype=np.float32) + 10
    assert read(bufs[0]["big"], 2 * n).tolist() == np.concatenate([x0, x1]).tolist()
    assert read(bufs[0]["y"], n).tolist() == np.minimum(x0, x1).tolist()  # reduce to root 0 came last
    assert read(bufs[1]["y"], n).tolist() == np.concatenate([x0, x1])[n:].tolist()  # reduce_scatter


def test_all_to_all_and_send_recv_through_the_pyacl_style_functions(pair):
    (c0, s0), (c1, s1) = pair
    src, dst = {}, {}
    for r in (0, 1):
        acl.rt.set_device(r)
        src[r] = device_buffer(np.arange(4, dtype=np.int32) + 100 * r)
        dst[r] = device_buffer(np.zeros(4, np.int32))
    for r, (c, s) in enumerate(pair):
        assert hccl.all_to_all(src[r], 2, hccl.HCCL_DATA_TYPE_INT32, dst[r], 2, hccl.HCCL_DATA_TYPE_INT32, c, s) == 0
    assert hccl.all_to_all_v(src[0], [1, 3], [0, 1], hccl.HCCL_DATA_TYPE_INT32, dst[0], [1, 1], [2, 3],
                             hccl.HCCL_DATA_TYPE_INT32, c0, s0) == 0
    assert hccl.all_to_all_v(src[1], [1, 0], [3, 0], hccl.HCCL_DATA_TYPE_INT32, dst[1], [3, 0], [0, 0],
                             hccl.HCCL_DATA_TYPE_INT32, c1, s1) == 0
    assert hccl.send(src[0], 4, hccl.HCCL_DATA_TYPE_INT32, 1, c0, s0) == 0
    assert hccl.recv(src[1], 4, hccl.HCCL_DATA_TYPE_INT32, 0, c1, s1) == 0
    for _, s in pair:
        assert acl.rt.synchronize_stream(s) == 0
    # all_to_all gave [0, 1, 100, 101] and [2, 3, 102, 103]; all_to_all_v then overwrote parts
    assert read(dst[0], 4, np.int32).tolist() == [0, 1, 0, 103]
    assert read(dst[1], 4, np.int32).tolist() == [1, 2, 3, 103]
    assert read(src[1], 4, np.int32).tolist() == [0, 1, 2, 3]


# ---------------------------------------------------------------- bad input at the call
def test_bad_arguments_return_the_hccl_codes_and_leave_everything_usable(pair):
    (c0, s0), _ = pair
    x = device_buffer(np.ones(8, np.float32))
    host = np.ones(8, np.float32)
    cases = {
        "null communicator": (hccl.all_reduce(x, x, 8, FP32, 0, 0, s0), H.HCCL_E_PTR),
        "stale communicator": (hccl.all_reduce(x, x, 8, FP32, 0, 0xCC << 40 | 99999, s0), H.HCCL_E_PARA),
        "null stream": (hccl.all_reduce(x, x, 8, FP32, 0, c0, 0), H.HCCL_E_PTR),
        "stream of the other rank's device": (hccl.all_reduce(x, x, 8, FP32, 0, c0, pair[1][1]), H.HCCL_E_PARA),
        "null buffer": (hccl.all_reduce(0, x, 8, FP32, 0, c0, s0), H.HCCL_E_PTR),
        "host buffer": (hccl.all_reduce(host.ctypes.data, x, 8, FP32, 0, c0, s0), H.HCCL_E_PARA),
        # 17 floats: past the 32 bytes of padding every allocation has (ALIGN_UP(32, 32) + 32)
        "buffer too small": (hccl.all_reduce(x, x, 17, FP32, 0, c0, s0), H.HCCL_E_PARA),
        "negative count": (hccl.all_reduce(x, x, -1, FP32, 0, c0, s0), H.HCCL_E_PARA),
        "count above the maximum": (hccl.broadcast(x, H.SYS_MAX_COUNT + 1, FP32, 0, c0, s0), H.HCCL_E_PARA),
        "unknown data type": (hccl.all_reduce(x, x, 8, 99, 0, c0, s0), H.HCCL_E_NOT_SUPPORT),
        "int128 moved": (hccl.broadcast(x, 1, H.HCCL_DATA_TYPE_INT128, 0, c0, s0), H.HCCL_E_NOT_SUPPORT),
        "uint8 reduced": (hccl.all_reduce(x, x, 8, H.HCCL_DATA_TYPE_UINT8, 0, c0, s0), H.HCCL_E_NOT_SUPPORT),
        "prod of bfloat16": (hccl.all_reduce(x, x, 8, H.HCCL_DATA_TYPE_BFP16, 1, c0, s0), H.HCCL_E_NOT_SUPPORT),
        "unknown op": (hccl.all_reduce(x, x, 8, FP32, 7, c0, s0), H.HCCL_E_NOT_SUPPORT),
        "root out of range": (hccl.broadcast(x, 8, FP32, 2, c0, s0), H.HCCL_E_PARA),
        "send to itself": (hccl.send(x, 8, FP32, 0, c0, s0), H.HCCL_E_PARA),
        "partly overlapping buffers": (hccl.all_reduce(x, x + 4, 4, FP32, 0, c0, s0), H.HCCL_E_PARA),
        "all_gather in place": (hccl.all_gather(x, x, 4, FP32, c0, s0), H.HCCL_E_PARA),
        "all_to_all_v on one buffer": (hccl.all_to_all_v(x, [1, 1], [0, 1], FP32, x, [1, 1], [0, 1], FP32, c0, s0),
                                       H.HCCL_E_PARA),
        "counts list too short": (hccl.all_to_all_v(x, [1], [0], FP32, x + 64, [1], [0], FP32, c0, s0), H.HCCL_E_PARA),
        "different send and recv types": (hccl.all_to_all(x, 1, FP32, x + 64, 1, H.HCCL_DATA_TYPE_INT32, c0, s0),
                                          H.HCCL_E_PARA),
    }
    wrong = {name: got for name, (got, want) in cases.items() if got != want}
    assert not wrong
    assert hccl.all_to_all(x, 1, FP32, x + 64, 2, FP32, c0, s0) == H.HCCL_E_PARA
    assert "send_count" in acl.get_recent_err_msg()
    # nothing was enqueued: a matching collective on both ranks still works
    bufs = []
    for r, (c, s) in enumerate(pair):
        acl.rt.set_device(r)
        bufs.append(device_buffer(np.full(2, r + 1, np.float32)))
        assert hccl.all_reduce(bufs[r], bufs[r], 2, FP32, 0, c, s) == 0
    for r, (c, s) in enumerate(pair):
        assert acl.rt.synchronize_stream(s) == 0
        assert read(bufs[r], 2).tolist() == [3.0, 3.0]


def test_init_arguments_are_checked(two_devices):
    root_info, _ = hccl.get_root_info()
    assert hccl.comm_init_root_info(2, b"not a root info", 0) == (0, H.HCCL_E_PARA)
    assert hccl.comm_init_root_info(2, root_info, 2) == (0, H.HCCL_E_PARA)
    assert hccl.comm_init_root_info(0, root_info, 0) == (0, H.HCCL_E_PARA)
    assert hccl.comm_init_all(2, [0, 0]) == ((), H.HCCL_E_PARA)
    assert hccl.comm_init_all(3, [0, 1]) == ((), H.HCCL_E_PARA)
    assert hccl.comm_init_all(1, [7]) == ((), H.HCCL_E_PARA)
    assert hccl.get_rank_size(0) == (0, H.HCCL_E_PTR)


def test_init_without_a_device_in_the_thread_is_a_runtime_error(two_devices):
    root_info, _ = hccl.get_root_info()
    got = on_threads(lambda: hccl.comm_init_root_info(1, root_info, 0))[0]
    assert got == (0, H.HCCL_E_RUNTIME)


def test_rank_that_never_joins_makes_init_time_out(two_devices, monkeypatch):
    monkeypatch.setenv("HCCL_CONNECT_TIMEOUT", "0.3")
    root_info, _ = hccl.get_root_info()
    assert hccl.comm_init_root_info(2, root_info, 0) == (0, H.HCCL_E_TIMEOUT)
    assert "HCCL_CONNECT_TIMEOUT" in acl.get_recent_err_msg()


def test_bad_timeout_setting_is_a_parameter_error_naming_the_variable(two_devices, monkeypatch):
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "soon")
    assert hccl.comm_init_all(1, [0]) == ((), H.HCCL_E_PARA)
    assert "HCCL_EXEC_TIMEOUT" in acl.get_recent_err_msg()


# ---------------------------------------------------------------- failures at synchronize
def test_ranks_that_disagree_fail_at_synchronize_with_para_and_async_error(pair):
    (c0, s0), (c1, s1) = pair
    acl.rt.set_device(0)
    a = device_buffer(np.ones(8, np.float32))
    acl.rt.set_device(1)
    b = device_buffer(np.ones(8, np.float32))
    assert hccl.all_reduce(a, a, 8, FP32, 0, c0, s0) == 0
    assert hccl.broadcast(b, 8, FP32, 0, c1, s1) == 0  # a different collective
    assert acl.rt.synchronize_stream(s0) == H.HCCL_E_PARA
    message = acl.get_recent_err_msg()  # (reading it clears it, as in ACL)
    assert "disagree" in message and "broadcast" in message
    assert acl.rt.synchronize_stream(s1) == H.HCCL_E_PARA
    assert hccl.get_comm_async_error(c0) == (H.HCCL_E_PARA, 0)


def test_a_rank_that_never_arrives_fails_the_other_at_synchronize(two_devices, monkeypatch):
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "0.3")
    comms, _ = hccl.comm_init_all(2, [0, 1])
    stream, _ = acl.rt.create_stream()
    x = device_buffer(np.ones(8, np.float32))
    assert hccl.all_reduce(x, x, 8, FP32, 0, comms[0], stream) == 0  # rank 1 never calls
    assert acl.rt.synchronize_stream(stream) == H.HCCL_E_TIMEOUT
    assert hccl.get_comm_async_error(comms[0]) == (H.HCCL_E_TIMEOUT, 0)
    assert hccl.barrier(comms[0], stream) == 0  # accepted, but the communicator is unusable:
    assert acl.rt.synchronize_stream(stream) == H.HCCL_E_TIMEOUT
    assert "unusable" in acl.get_recent_err_msg()
    assert acl.rt.memcpy(x, 32, x, 32, 3) == 0  # the runtime itself is fine


def test_destroyed_communicator_is_refused(pair):
    (c0, s0), _ = pair
    assert hccl.comm_destroy(c0) == 0
    assert hccl.comm_destroy(c0) == H.HCCL_E_PARA
    assert hccl.barrier(c0, s0) == H.HCCL_E_PARA


# ---------------------------------------------------------------- rank tables
def _table(tmp_path, devices, server="node-0"):
    doc = {"version": "1.0", "status": "completed", "server_count": "1",
           "server_list": [{"server_id": server, "device": [
               {"device_id": str(d), "device_ip": f"192.168.1.{d}", "rank_id": str(r)} for r, d in enumerate(devices)]}]}
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_comm_init_cluster_info_uses_the_rank_table(two_devices, tmp_path):
    path = _table(tmp_path, [1, 0])  # rank 0 on device 1, rank 1 on device 0

    def rank(r, dev):
        def run():
            acl.rt.set_device(dev)
            comm, ret = hccl.comm_init_cluster_info(path, r)
            assert ret == 0
            return hccl.get_rank_id(comm)[0], hccl.get_rank_size(comm)[0]
        return run

    assert on_threads(rank(0, 1), rank(1, 0)) == [(0, 2), (1, 2)]


def test_rank_table_problems_are_parameter_errors(two_devices, tmp_path):
    assert hccl.comm_init_cluster_info(str(tmp_path / "missing.json"), 0) == (0, H.HCCL_E_PARA)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert hccl.comm_init_cluster_info(str(bad), 0) == (0, H.HCCL_E_PARA)
    path = _table(tmp_path, [1, 0])
    assert hccl.comm_init_cluster_info(path, 0) == (0, H.HCCL_E_PARA)  # this thread is on device 0
    assert "set_device(1)" in acl.get_recent_err_msg()
    assert hccl.comm_init_cluster_info(path, 5) == (0, H.HCCL_E_PARA)


def test_a_collective_no_rank_can_join_any_more_fails_when_the_communicators_are_destroyed(two_devices,
                                                                                         monkeypatch):
    # issue 29: it stayed parked (its stream with it) after every communicator was destroyed
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "600")
    comms, _ = hccl.comm_init_all(2, [0, 1])
    stream, _ = acl.rt.create_stream()
    x = device_buffer(np.ones(8, np.float32))
    assert hccl.all_reduce(x, x, 8, FP32, 0, comms[0], stream) == 0  # rank 1 never calls
    assert hccl.comm_destroy(comms[0]) == 0  # queued operations still run: it waits on
    assert hccl.comm_destroy(comms[1]) == 0  # rank 1 is gone: it never can
    assert acl.rt.synchronize_stream_with_timeout(stream, 30_000) == H.HCCL_E_INTERNAL
    assert "destroyed their communicator" in acl.get_recent_err_msg()
    assert acl.rt.memset_async(x, 32, 0, 32, stream) == 0  # the stream goes on
    assert acl.rt.synchronize_stream(stream) == 0


def test_a_collective_queued_before_destroy_still_meets_the_other_rank(pair):
    (c0, s0), (c1, s1) = pair
    x0, x1 = device_buffer(np.ones(4, np.float32)), None
    acl.rt.set_device(1)
    x1 = device_buffer(np.full(4, 2, np.float32))
    acl.rt.set_device(0)
    assert hccl.all_reduce(x0, x0, 4, FP32, 0, c0, s0) == 0
    assert hccl.comm_destroy(c0) == 0  # rank 0 is destroyed, but rank 1 still comes
    assert hccl.all_reduce(x1, x1, 4, FP32, 0, c1, s1) == 0
    assert acl.rt.synchronize_stream(s0) == 0 and acl.rt.synchronize_stream(s1) == 0
    assert read(x0, 4).tolist() == [3.0] * 4
    assert hccl.comm_destroy(c1) == 0
