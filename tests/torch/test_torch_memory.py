"""npu tensors live in npurt's caching pool: data_ptr() is the device address, the refcount
drives npurt's stream-ordered free, torch.npu.memory_* report the pool, and pinned memory is
npurt's page-locked host memory."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import npurt.acl as acl
from npurt.runtime import constants as C
from npurt.runtime.address import VA_BASE
from npurt.runtime.runtime import RUNTIME


def test_data_ptr_is_an_npurt_device_address_of_a_live_allocation():
    t = torch.zeros(256, device="npu")
    ptr = t.data_ptr()
    assert ptr >= VA_BASE
    block = RUNTIME.device(0).memory.live[ptr]
    assert block.requested >= 256 * 4
    assert t[10:].data_ptr() == ptr + 40  # views share the storage


def test_pyacl_calls_work_on_a_tensors_data_ptr():
    t = torch.arange(16, dtype=torch.float32, device="npu")
    torch.npu.synchronize()
    host = np.zeros(16, np.float32)
    assert acl.rt.memcpy(host.ctypes.data, 64, t.data_ptr(), 64, C.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    assert host.tolist() == list(range(16))


def test_a_freed_tensors_address_is_refused_as_use_after_free():
    t = torch.ones(1024, device="npu")
    ptr = t.data_ptr()
    del t
    torch.npu.synchronize()
    host = np.zeros(16, np.float32)
    ret = acl.rt.memcpy(host.ctypes.data, 64, ptr, 64, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert ret == C.ACL_ERROR_INVALID_PARAM
    assert "use after free" in acl.get_recent_err_msg()


def test_a_copy_past_the_end_of_a_tensor_is_refused():
    t = torch.ones(4, device="npu")
    host = np.zeros(64, np.float32)
    ret = acl.rt.memcpy(host.ctypes.data, 256, t.data_ptr(), 256, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert ret == C.ACL_ERROR_INVALID_PARAM
    assert "past the end" in acl.get_recent_err_msg()


def test_memory_a_queued_op_still_reads_is_not_reused_when_its_tensor_dies(gate):
    gate.hold()
    x = torch.full((1024,), 3.0, device="npu")
    y = x * 2                          # queued behind the gate: reads x later
    ptr = x.data_ptr()
    del x
    others = [torch.full((1024,), 7.0, device="npu") for _ in range(8)]
    assert ptr not in [o.data_ptr() for o in others]
    gate.open()
    assert torch.equal(y.cpu(), torch.full((1024,), 6.0))


def test_memory_counters_follow_tensor_lifetimes():
    torch.npu.synchronize()
    before = torch.npu.memory_allocated()
    t = torch.empty(1 << 20, dtype=torch.uint8, device="npu")
    assert torch.npu.memory_allocated() - before >= 1 << 20
    assert torch.npu.max_memory_allocated() >= torch.npu.memory_allocated()
    assert torch.npu.memory_reserved() >= torch.npu.memory_allocated()
    del t
    assert torch.npu.memory_allocated() == before
    torch.npu.reset_peak_memory_stats()
    assert torch.npu.max_memory_allocated() == before
    stats = torch.npu.memory_stats()
    assert stats["allocated_bytes.all.current"] == before
    assert stats["reserved_bytes.all.peak"] >= stats["reserved_bytes.all.current"]


def test_torch_and_the_pythonic_api_name_the_pool_counters_alike():
    import npurt
    t = torch.empty(1 << 16, dtype=torch.uint8, device="npu")
    torch.npu.synchronize()
    mine, theirs = npurt.memory_stats(0), torch.npu.memory_stats(0)
    # what the pool holds from the device is one figure on both faces; torch's allocated bytes
    # are the part npu tensors hold (as torch_npu's caching allocator counts its own blocks)
    for key in ("reserved_bytes.all.current", "reserved_bytes.all.peak", "segment.all.current", "num_ooms"):
        assert theirs[key] == mine[key], key
    assert 1 << 16 <= theirs["allocated_bytes.all.current"] <= mine["allocated_bytes.all.current"]
    assert torch.npu.memory_allocated() == theirs["allocated_bytes.all.current"]
    del t


def test_memory_stats_is_an_ordered_dict_of_torch_npus_keys_by_pool():
    import collections
    import gc
    torch.npu.synchronize()
    torch.npu.reset_accumulated_memory_stats()
    before = torch.npu.memory_stats()
    assert isinstance(before, collections.OrderedDict) and list(before) == sorted(before)
    for stat in ("allocation", "active", "allocated_bytes", "active_bytes", "requested_bytes", "reserved_bytes",
                 "segment"):
        for pool in ("all", "small_pool", "large_pool"):
            for metric in ("current", "peak", "allocated", "freed"):
                assert f"{stat}.{pool}.{metric}" in before
    small = torch.empty(1000, dtype=torch.uint8, device="npu")            # a block of 1 MiB or less
    large = torch.empty(3 << 20, dtype=torch.uint8, device="npu")
    during = torch.npu.memory_stats()
    assert during["requested_bytes.small_pool.current"] - before["requested_bytes.small_pool.current"] == 1000
    assert during["requested_bytes.large_pool.current"] - before["requested_bytes.large_pool.current"] == 3 << 20
    assert during["allocation.all.allocated"] == before["allocation.all.allocated"] + 2
    del small, large
    gc.collect()
    after = torch.npu.memory_stats()
    assert after["requested_bytes.all.freed"] == (3 << 20) + 1000
    assert after["active.all.current"] == before["active.all.current"]
    torch.npu.reset_accumulated_memory_stats()
    assert torch.npu.memory_stats()["active_bytes.all.freed"] == 0
    assert torch.npu.memory_stats_as_nested_dict()["allocation"]["all"]["freed"] == 0


def test_empty_cache_gives_unused_segments_back():
    t = torch.empty(64 << 20, dtype=torch.uint8, device="npu")
    del t
    reserved = torch.npu.memory_reserved()
    torch.npu.synchronize()
    torch.npu.empty_cache()
    assert torch.npu.memory_reserved() <= reserved - (64 << 20)
    assert torch.npu.max_memory_reserved() >= reserved


def test_mem_get_info_reports_the_simulated_hbm():
    free, total = torch.npu.mem_get_info()
    assert total == torch.npu.get_device_properties().total_memory
    assert 0 < free <= total


def test_record_stream_marks_the_block_used_by_that_stream(gate):
    s = torch.npu.Stream()
    gate.hold(s)
    with torch.npu.stream(s):
        x = torch.ones(8, device="npu")
    t = torch.zeros(8, device="npu")
    t.record_stream(s)
    block = RUNTIME.device(0).memory.live[t.data_ptr()]
    assert block.uses[s.npurt_stream.runtime_stream] == s.npurt_stream.runtime_stream.enqueued_seq
    gate.open()
    del x


def test_resize_that_grows_moves_to_a_new_allocation_keeping_the_values():
    t = torch.arange(4.0, device="npu")
    t.resize_(1000)
    assert t.shape == (1000,)
    assert t[:4].cpu().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_untyped_storage_can_be_made_on_npu():
    s = torch.UntypedStorage(64, device="npu")
    assert s.device == torch.device("npu:0") and s.nbytes() == 64
    s2 = torch.UntypedStorage(8).npu()
    assert s2.device.type == "npu"


def test_pin_memory_puts_the_tensor_in_npurt_page_locked_memory():
    t = torch.arange(10.0)
    p = t.pin_memory()
    assert p.is_pinned() and not t.is_pinned()
    assert torch.equal(p, t)
    assert RUNTIME.host.find(p.data_ptr(), 40) is not None


def test_non_blocking_copy_from_pinned_memory_reads_it_when_the_stream_runs(gate):
    src = torch.zeros(1024).pin_memory()
    gate.hold()
    dst = src.to("npu", non_blocking=True)
    src.fill_(5.0)                        # before the stream reached the copy
    gate.open()
    assert dst.cpu().eq(5.0).all()        # the device read the pinned buffer itself


def test_a_pageable_source_is_taken_at_the_call(gate):
    src = torch.zeros(1024)
    gate.hold()
    dst = src.to("npu", non_blocking=True)
    src.fill_(5.0)
    gate.open()
    assert dst.cpu().eq(0.0).all()


def test_non_blocking_copy_into_pinned_memory_returns_before_the_copy(gate):
    x = torch.full((1024,), 2.0, device="npu")
    out = torch.zeros(1024).pin_memory()
    gate.hold()
    out.copy_(x, non_blocking=True)
    assert out.eq(0.0).all()              # not copied yet: the stream is held
    gate.open()
    torch.npu.synchronize()
    assert out.eq(2.0).all()


def test_dataloader_with_pin_memory_yields_pinned_batches():
    data = torch.utils.data.TensorDataset(torch.randn(12, 3), torch.arange(12))
    loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True)
    seen = 0
    for x, y in loader:
        assert x.is_pinned() and y.is_pinned()
        xd = x.to("npu", non_blocking=True)
        seen += int(xd.shape[0])
    assert seen == 12


def test_an_empty_output_cannot_grow_over_other_tensors_memory():
    # an empty npu tensor has no address; a CPU kernel resizing its host view must not write
    # into device memory at all (it once grew an arena view over the first allocation)
    from npurt.torch import refs
    empty = torch.empty(0, dtype=torch.int64, device="npu")
    view = refs.write_view(refs.ref(empty, []))
    with pytest.raises(RuntimeError, match="not resizable"):
        view.resize_(16)


def test_embedding_bag_side_outputs_have_the_cpu_kernels_shapes():
    # its meta kernel disagrees with the CPU kernel about offset2bag / max_indices
    for mode in ("sum", "mean", "max"):
        torch.manual_seed(0)
        cpu = torch.nn.EmbeddingBag(20, 4, mode=mode)
        npu = torch.nn.EmbeddingBag(20, 4, mode=mode).npu()
        npu.load_state_dict(cpu.state_dict())
        idx, off = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 3])
        cpu(idx, off).pow(2).sum().backward()
        npu(idx.npu(), off.npu()).pow(2).sum().backward()
        torch.testing.assert_close(npu.weight.grad.cpu(), cpu.weight.grad)


def test_memory_summary_is_torch_npus_table_of_memory_stats():
    from npurt.torch.memory_summary import summary
    stats = {"num_ooms": 3, "num_alloc_retries": 0, "allocated_bytes.all.current": 5 << 20,
             "allocated_bytes.large_pool.current": 5 << 20, "allocation.all.allocated": 2_000_000}
    lines = summary(stats, 1).splitlines()
    assert all(len(line) == 77 and line[0] == line[-1] == "|" for line in lines)  # 75 columns in borders
    assert lines[1] == "|" + " " * 18 + "PyTorch NPU memory summary, device ID 1" + " " * 18 + "|"
    assert "NPU OOMs: 3 " in lines[3] and "npuMalloc retries: 0 " in lines[3]
    assert lines[7] == "| Allocated memory      |   5120 KiB |      0 B   |      0 B   |      0 B   |"
    allocations = next(line for line in lines if line.startswith("| Allocations"))
    assert "   2000 K  " in allocations                 # 2e6 counts in thousands
    assert len(summary(stats, 1, abbreviated=True).splitlines()) == len(lines) - 16  # no pool rows
    live = torch.empty(1 << 20, device="npu")
    text = torch.npu.memory_summary()
    assert text.startswith("|" + "=" * 75 + "|\n") and "device ID 0" in text and live.numel()


def test_the_counters_fold_their_events_in_order_with_exact_peaks():
    """TensorCounters applies allocations and frees when read (and every FOLD_AT events):
    the same currents, peaks and totals as counting each event at once."""
    import random as _random
    from npurt.torch.storage import SMALL_SIZE, TensorCounters
    counts, rng, live, want = TensorCounters(), _random.Random(7), [], {"all": [0, 0], "small_pool": [0, 0]}
    for _ in range(3 * TensorCounters.FOLD_AT + 5):
        if live and rng.random() < 0.45:
            size = live.pop(rng.randrange(len(live)))
            sign = -1
        else:
            size = rng.choice((512, 1024, 4096))
            live.append(size)
            sign = 1
        counts.note(sign, size - 7, size, 0, 0)
        for pool in ("all", "small_pool"):
            w = want[pool]
            w[0] += sign * size
            w[1] = max(w[1], w[0])
    assert size <= SMALL_SIZE
    for pool in ("all", "small_pool"):
        current, peak, allocated, freed = counts.values[("allocated_bytes", pool)]
        assert [current, peak] == want[pool] and allocated - freed == current
        assert counts.values[("allocation", pool)][0] == len(live)
    assert counts.flat()["requested_bytes.all.current"] == sum(s - 7 for s in live)
