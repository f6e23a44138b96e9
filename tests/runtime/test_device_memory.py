"""Device memory: malloc policies and rounding, the caching pool (size classes, split and
merge, statistics, empty_cache), get_mem_info, pointer attributes, out of memory, and bad
frees (issue 2, scope 3)."""
from __future__ import annotations

import sys
import threading
import warnings

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.device import RUNTIME_HELD
from npurt.runtime.errors import InvalidValueError, NpuError, OutOfMemoryError

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def _stats(rt):
    return rt.memory_stats()


def _arena(rt):
    return rt.current_device().backend.arena


@pytest.fixture
def small_rt(fresh_runtime, monkeypatch):
    """A runtime on the 24 GiB DDR inference part (Ascend310P3), device 0 set."""
    monkeypatch.setenv("NPURT_SOC", "Ascend310P3")
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    return fresh_runtime


# ---------------------------------------------------------------- policies and page sizes
def test_policy_constants_have_their_real_values():
    assert C.ACL_MEM_MALLOC_HUGE_FIRST == 0
    assert (C.ACL_MEM_MALLOC_HUGE_ONLY, C.ACL_MEM_MALLOC_NORMAL_ONLY) == (1, 2)
    assert (C.ACL_MEM_MALLOC_HUGE_FIRST_P2P, C.ACL_MEM_MALLOC_HUGE_ONLY_P2P,
            C.ACL_MEM_MALLOC_NORMAL_ONLY_P2P) == (3, 4, 5)
    assert (C.ACL_MEM_MALLOC_HUGE1G_ONLY, C.ACL_MEM_MALLOC_HUGE1G_ONLY_P2P) == (6, 7)


@pytest.mark.parametrize("policy, size, page", [
    (C.ACL_MEM_MALLOC_HUGE_ONLY, 100, 2 * MiB),
    (C.ACL_MEM_MALLOC_HUGE_ONLY_P2P, 100, 2 * MiB),
    (C.ACL_MEM_MALLOC_NORMAL_ONLY, 100, 4 * KiB),
    (C.ACL_MEM_MALLOC_NORMAL_ONLY_P2P, 3 * MiB, 4 * KiB),
    (C.ACL_MEM_MALLOC_HUGE_FIRST, 3 * MiB, 2 * MiB),
    (C.ACL_MEM_MALLOC_HUGE_FIRST_P2P, 3 * MiB, 2 * MiB),
    (C.ACL_MEM_MALLOC_HUGE1G_ONLY, 100, 1 * GiB),
    (C.ACL_MEM_MALLOC_HUGE1G_ONLY_P2P, 100, 1 * GiB),
])
def test_malloc_policy_decides_the_page_size(rt, policy, size, page):
    ptr = rt.malloc(size, policy)
    attrs = rt.pointer_get_attributes(ptr)
    assert attrs["page_size"] == page
    assert attrs["location"] == {"id": 0, "type": C.ACL_MEM_LOCATION_TYPE_DEVICE}


def test_huge_first_puts_small_requests_on_normal_pages(rt):
    # small requests share 2 MiB segments of normal pages instead of taking a huge page each
    ptr = rt.malloc(1000, C.ACL_MEM_MALLOC_HUGE_FIRST)
    assert rt.pointer_get_attributes(ptr)["page_size"] == 4 * KiB


@pytest.mark.parametrize("size, page", [(100, 4 * KiB), (4 * MiB, 2 * MiB)])
def test_unknown_policy_uses_huge_pages_from_2_mib(rt, size, page):
    ptr = rt.malloc(size, 0x40)  # no base policy in it
    assert rt.pointer_get_attributes(ptr)["page_size"] == page


def test_policy_with_bandwidth_modifier_keeps_its_base(rt):
    ptr = rt.malloc(100, C.ACL_MEM_MALLOC_HUGE_ONLY | C.ACL_MEM_TYPE_HIGH_BAND_WIDTH)
    assert rt.pointer_get_attributes(ptr)["page_size"] == 2 * MiB


def test_policy_with_both_bandwidth_types_is_invalid(rt):
    with pytest.raises(InvalidValueError):
        rt.malloc(100, C.ACL_MEM_TYPE_LOW_BAND_WIDTH | C.ACL_MEM_TYPE_HIGH_BAND_WIDTH)


def test_negative_policy_is_invalid(rt):
    with pytest.raises(InvalidValueError) as info:
        rt.malloc(100, -1)
    assert info.value.code == C.ACL_ERROR_INVALID_PARAM


def test_huge1g_allocation_commits_a_1_gib_page(rt):
    rt.malloc(100, C.ACL_MEM_MALLOC_HUGE1G_ONLY)
    assert _arena(rt).committed["huge1g"] == 1 * GiB


# ---------------------------------------------------------------- addresses and rounding
def test_malloc_returns_64_byte_aligned_device_addresses(rt):
    rng = np.random.default_rng()
    for size in rng.integers(1, 100_000, size=50):
        ptr = rt.malloc(int(size))
        assert ptr % 64 == 0
        assert ptr >= 1 << 47


def test_malloc_adds_32_bytes_after_rounding_to_32(rt):
    rt.malloc(512)  # 512 -> 512 + 32 = 544 -> a 1024-byte size class
    assert _stats(rt)["allocated_bytes"] == 1024


def test_malloc_align32_rounds_to_32_without_the_extra_32(rt):
    rt.malloc(512, align32=True)  # 512 stays 512
    assert _stats(rt)["allocated_bytes"] == 512


def test_allocations_do_not_overlap(rt):
    rng = np.random.default_rng()
    spans = []
    for size in rng.integers(1, 300_000, size=200):
        ptr = rt.malloc(int(size))
        spans.append((ptr, ptr + int(size)))
    spans.sort()
    for (a0, a1), (b0, _) in zip(spans, spans[1:]):
        assert a1 <= b0


def test_allocations_hold_what_was_written(rt):
    rng = np.random.default_rng()
    bufs = {}
    for _ in range(20):
        n = int(rng.integers(1, 50_000))
        data = rng.integers(0, 256, n, dtype=np.uint8)
        ptr = rt.malloc(n)
        rt.memcpy(ptr, n, data.ctypes.data, n, C.ACL_MEMCPY_HOST_TO_DEVICE)
        bufs[ptr] = data
    for ptr, data in bufs.items():
        out = np.empty_like(data)
        rt.memcpy(out.ctypes.data, out.size, ptr, data.size, C.ACL_MEMCPY_DEVICE_TO_HOST)
        assert np.array_equal(out, data)


@pytest.mark.parametrize("size", [0, -1, -4096])
def test_malloc_of_zero_or_negative_size_is_invalid(rt, size):
    with pytest.raises(InvalidValueError) as info:
        rt.malloc(size)
    assert info.value.code == C.ACL_ERROR_INVALID_PARAM
    assert rt.malloc(64)  # the runtime keeps working


@pytest.mark.parametrize("size", [1.5, "64", None, True])
def test_malloc_of_a_non_int_size_is_invalid(rt, size):
    with pytest.raises(InvalidValueError):
        rt.malloc(size)


# ---------------------------------------------------------------- the caching pool
def test_freed_block_is_reused_from_the_cache(rt):
    ptr = rt.malloc(4000)
    rt.free(ptr)
    before = _stats(rt)
    again = rt.malloc(4000)
    after = _stats(rt)
    assert again == ptr
    assert after["pool_hits"] == before["pool_hits"] + 1
    assert after["segment_maps"] == before["segment_maps"]


def test_free_keeps_memory_reserved_in_the_cache(rt):
    ptr = rt.malloc(3 * MiB)
    reserved = _stats(rt)["reserved_bytes"]
    rt.free(ptr)
    s = _stats(rt)
    assert s["allocated_bytes"] == 0
    assert s["reserved_bytes"] == reserved > 0


def test_stats_count_allocs_frees_and_bytes(rt):
    ptrs = [rt.malloc(1000) for _ in range(5)]
    for p in ptrs[:3]:
        rt.free(p)
    s = _stats(rt)
    assert s["num_allocs"] == 5 and s["num_frees"] == 3
    assert s["active_blocks"] == 2
    assert s["allocated_bytes"] == 2 * 1536  # 1000 -> 1024 + 32 -> 1536-byte class


def test_peak_tracks_the_high_water_mark(rt):
    a = rt.malloc(1 * MiB)
    b = rt.malloc(1 * MiB)
    high = _stats(rt)["allocated_bytes"]
    rt.free(a)
    rt.free(b)
    rt.malloc(100)
    s = _stats(rt)
    assert s["peak_allocated_bytes"] == high
    assert s["allocated_bytes"] < high


def test_small_requests_share_one_segment(rt):
    for _ in range(100):
        rt.malloc(1000)
    assert _stats(rt)["segment_maps"] == 1


def test_a_cached_block_is_split_for_a_smaller_request(rt):
    big = rt.malloc(8 * MiB - 64, C.ACL_MEM_MALLOC_HUGE_ONLY)
    rt.free(big)
    before = _stats(rt)
    parts = [rt.malloc(2 * MiB - 64, C.ACL_MEM_MALLOC_HUGE_ONLY) for _ in range(4)]
    after = _stats(rt)
    assert after["segment_maps"] == before["segment_maps"]  # all four came from the cached block
    assert sorted(parts) == [big + i * 2 * MiB for i in range(4)]
    assert after["pool_hits"] - before["pool_hits"] == 4


def test_freed_neighbours_merge_so_a_big_request_reuses_them_without_a_new_segment(rt):
    big = rt.malloc(8 * MiB - 64, C.ACL_MEM_MALLOC_HUGE_ONLY)
    rt.free(big)
    parts = [rt.malloc(2 * MiB - 64, C.ACL_MEM_MALLOC_HUGE_ONLY) for _ in range(4)]
    for p in parts:
        rt.free(p)
    before = _stats(rt)
    again = rt.malloc(8 * MiB - 64, C.ACL_MEM_MALLOC_HUGE_ONLY)
    after = _stats(rt)
    assert after["segment_maps"] == before["segment_maps"]
    assert again == big


def test_slow_path_malloc_does_not_walk_the_whole_pool(rt, monkeypatch):
    from npurt.runtime.memory import PagePool

    calls = [0]
    original = PagePool.claim

    def counting_claim(self, block):
        calls[0] += 1
        return original(self, block)

    monkeypatch.setattr(PagePool, "claim", counting_claim)
    n = 1000
    for _ in range(n):  # each needs a new 4 MiB segment and leaves a ~1 MiB cached remainder
        rt.malloc(3 * MiB, C.ACL_MEM_MALLOC_HUGE_ONLY)
    assert calls[0] <= 10 * n, f"{calls[0]} block claims for {n} allocations"


def test_freed_neighbours_merge_when_the_device_is_full(small_rt):
    rt = small_rt
    big = rt.malloc(8 * MiB - 64, C.ACL_MEM_MALLOC_HUGE_ONLY)
    rt.free(big)
    parts = [rt.malloc(2 * MiB - 64, C.ACL_MEM_MALLOC_HUGE_ONLY) for _ in range(4)]
    for p in parts:
        rt.free(p)
    arena = _arena(rt)
    filler = rt.malloc(arena.free_bytes - 64, C.ACL_MEM_MALLOC_HUGE_ONLY)  # the rest of the device
    assert arena.free_bytes == 0
    again = rt.malloc(8 * MiB - 64, C.ACL_MEM_MALLOC_HUGE_ONLY)  # only the merged blocks fit
    assert again == big
    rt.free(filler)


def test_empty_cache_returns_every_committed_page(rt):
    ptrs = [rt.malloc(int(n)) for n in (100, 5000, 3 * MiB, 40 * MiB)]
    ptrs.append(rt.malloc(100, C.ACL_MEM_MALLOC_HUGE1G_ONLY))
    assert _arena(rt).committed_bytes > 0
    for p in ptrs:
        rt.free(p)
    rt.empty_cache()
    s = _stats(rt)
    assert _arena(rt).committed_bytes == RUNTIME_HELD  # the runtime's own (kernel stacks) stay
    assert s["reserved_bytes"] == 0 and s["committed_bytes"] == RUNTIME_HELD
    assert s["segment_unmaps"] == s["segment_maps"]


def test_a_64_gib_device_hands_out_more_memory_than_this_machine_has(rt):
    ptr = rt.malloc(48 * GiB)  # untouched device memory costs no RAM
    tail = ptr + 48 * GiB - 1 * MiB
    rt.memset(tail, 1 * MiB, 0x77, 1 * MiB)
    out = np.empty(1 * MiB, np.uint8)
    rt.memcpy(out.ctypes.data, out.size, tail, out.size, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert (out == 0x77).all()
    assert _arena(rt).resident_bytes() < 8 * MiB
    rt.free(ptr)
    rt.empty_cache()
    assert _arena(rt).committed_bytes == RUNTIME_HELD


def test_empty_cache_returns_resident_memory_to_the_os(rt):
    arena = _arena(rt)
    base = arena.resident_bytes()
    ptr = rt.malloc(64 * MiB)
    rt.memset(ptr, 64 * MiB, 0x5A, 64 * MiB)  # touch every page
    assert arena.resident_bytes() - base >= 64 * MiB
    rt.free(ptr)
    rt.empty_cache()
    assert arena.resident_bytes() - base < 1 * MiB
    assert arena.committed_bytes == RUNTIME_HELD


def test_empty_cache_keeps_segments_with_live_blocks(rt):
    keep = rt.malloc(1000)
    drop = rt.malloc(1000)
    rt.free(drop)
    rt.empty_cache()
    assert _stats(rt)["reserved_bytes"] > 0
    data = np.full(1000, 3, np.uint8)
    rt.memcpy(keep, 1000, data.ctypes.data, 1000, C.ACL_MEMCPY_HOST_TO_DEVICE)  # still usable
    rt.free(keep)
    rt.empty_cache()
    assert _stats(rt)["reserved_bytes"] == 0


def test_empty_cache_while_another_thread_frees_loses_no_block(rt, monkeypatch):
    """A free that found its bin list just before empty_cache ran must not leave the block
    in a list the pool no longer knows (the block would be cached forever)."""
    mem = rt.current_device().memory
    warm = rt.malloc(1000)
    rt.free(warm)
    ptr = rt.malloc(1000)  # takes `warm` back: its bin list now exists and is empty
    block = mem.live[ptr]
    pool = block.pool

    class EmptyCacheOnAppend(dict):
        """Simulates a thread switch between the free's bin lookup and its insertion."""
        untracked = False

        def __setitem__(self, item, value):
            mem.empty_cache()
            super().__setitem__(item, value)

    pool.bins[block.size] = EmptyCacheOnAppend(pool.bins[block.size])
    # the Python free (the C accelerator's free does the lookup and the insertion in one
    # step, with no thread switch possible between them)
    mem._free(ptr)
    rt.empty_cache()
    assert _stats(rt)["reserved_bytes"] == 0


def test_concurrent_malloc_and_free_from_many_threads_stay_consistent(rt):
    ctx = rt.get_context()
    errors = []

    def churn(seed):
        rt.set_context(ctx)
        rng = np.random.default_rng(seed)
        mine = []
        try:
            for _ in range(2000):
                if mine and rng.random() < 0.5:
                    rt.free(mine.pop(int(rng.integers(len(mine)))))
                else:
                    mine.append(rt.malloc(int(rng.choice([64, 700, 4096, 70_000]))))
            for p in mine:
                rt.free(p)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    s = _stats(rt)
    assert s["allocated_bytes"] == 0 and s["active_blocks"] == 0
    assert s["num_allocs"] == s["num_frees"]
    rt.empty_cache()
    assert _stats(rt)["reserved_bytes"] == 0


# ---------------------------------------------------------------- get_mem_info
def test_get_mem_info_reports_the_hbm_of_a_910b_without_the_system_reserve(rt):
    free, total = rt.get_mem_info(C.ACL_HBM_MEM)
    assert total == 62432 * MiB  # 64 GiB less what the driver keeps (torch_npu's total_memory)
    assert 0 < free <= total


def test_get_mem_info_free_drops_after_an_allocation(rt):
    free0, _ = rt.get_mem_info(C.ACL_HBM_MEM)
    rt.malloc(1 * GiB)
    free1, _ = rt.get_mem_info(C.ACL_HBM_MEM)
    assert free0 - free1 >= 1 * GiB


def test_get_mem_info_counts_cached_blocks_as_free(rt):
    free0, _ = rt.get_mem_info(C.ACL_HBM_MEM)
    ptr = rt.malloc(1 * GiB)
    rt.free(ptr)
    free1, _ = rt.get_mem_info(C.ACL_HBM_MEM)
    assert free1 == free0


def test_get_mem_info_ddr_attribute_on_an_hbm_part_is_zero(rt):
    assert rt.get_mem_info(C.ACL_DDR_MEM) == (0, 0)


def test_get_mem_info_huge1g_attribute_rounds_free_to_whole_gib(rt):
    rt.malloc(100)
    free, total = rt.get_mem_info(C.ACL_HBM_MEM_HUGE1G)
    assert free % GiB == 0 and total == 62432 * MiB


def test_get_mem_info_reports_the_ddr_of_a_310p(small_rt):
    free, total = small_rt.get_mem_info(C.ACL_DDR_MEM)
    assert total == 24 * GiB - 1164 * MiB and 0 < free <= total  # less the system reserve


def test_get_mem_info_hbm_attribute_on_a_ddr_part_falls_back_to_ddr(small_rt):
    assert small_rt.get_mem_info(C.ACL_HBM_MEM) == small_rt.get_mem_info(C.ACL_DDR_MEM)


def test_get_mem_info_unknown_attribute_is_invalid(rt):
    with pytest.raises(InvalidValueError):
        rt.get_mem_info(99)


def test_get_mem_info_is_for_the_current_device(rt):
    rt.malloc(2 * GiB)
    free0, _ = rt.get_mem_info(C.ACL_HBM_MEM)
    rt.set_device(1)
    free1, _ = rt.get_mem_info(C.ACL_HBM_MEM)
    assert free1 - free0 >= 2 * GiB


# ---------------------------------------------------------------- pointer attributes
def test_pointer_attributes_name_the_allocation_holding_an_interior_address(rt):
    ptr = rt.malloc(10_000)
    attrs = rt.pointer_get_attributes(ptr + 1234)
    assert attrs["allocation"] == ptr and attrs["size"] == 10_000
    assert attrs["location"]["type"] == C.ACL_MEM_LOCATION_TYPE_DEVICE


def test_pointer_attributes_name_the_device(rt):
    rt.set_device(1)
    ptr = rt.malloc(100)
    assert rt.pointer_get_attributes(ptr)["location"]["id"] == 1


def test_pointer_attributes_of_pageable_host_memory_say_unregistered(rt):
    buf = np.zeros(100, np.uint8)
    attrs = rt.pointer_get_attributes(buf.ctypes.data)
    assert attrs["location"]["type"] == C.ACL_MEM_LOCATION_TYPE_UNREGISTERED


def test_pointer_attributes_of_a_freed_address_are_an_error(rt):
    ptr = rt.malloc(100)
    rt.free(ptr)
    with pytest.raises(InvalidValueError, match="freed"):
        rt.pointer_get_attributes(ptr)


# ---------------------------------------------------------------- out of memory
def test_allocation_bigger_than_the_device_is_an_allocation_error(small_rt):
    with pytest.raises(OutOfMemoryError) as info:
        small_rt.malloc(25 * GiB)
    assert info.value.code == C.ACL_ERROR_RT_MEMORY_ALLOCATION == 207001
    assert not isinstance(info.value, MemoryError)
    assert "25" in str(info.value) or str(25 * GiB) in str(info.value)


def test_absurd_allocation_is_an_allocation_error_not_a_python_error(small_rt):
    with pytest.raises(OutOfMemoryError):
        small_rt.malloc(1 << 62)


def test_cached_memory_is_released_to_satisfy_a_request(small_rt):
    rt = small_rt
    cached = rt.malloc(16 * GiB, C.ACL_MEM_MALLOC_HUGE_ONLY)
    rt.free(cached)  # 16 GiB of huge pages sit in the cache
    unmaps = _stats(rt)["segment_unmaps"]
    # a normal-page request cannot use that block; it fits only once the cache is given back
    ptr = rt.malloc(16 * GiB, C.ACL_MEM_MALLOC_NORMAL_ONLY)
    assert rt.pointer_get_attributes(ptr)["page_size"] == 4 * KiB
    assert _stats(rt)["segment_unmaps"] > unmaps


def test_out_of_memory_gives_the_cache_back_before_failing(small_rt):
    rt = small_rt
    rt.free(rt.malloc(4 * GiB))
    assert _stats(rt)["reserved_bytes"] >= 4 * GiB
    live = rt.malloc(20 * GiB, C.ACL_MEM_MALLOC_NORMAL_ONLY)  # fits only after the cache is released
    with pytest.raises(OutOfMemoryError):
        rt.malloc(8 * GiB)
    assert _stats(rt)["reserved_bytes"] < 21 * GiB  # no stale cache left behind
    rt.free(live)


def test_runtime_keeps_working_after_out_of_memory(small_rt):
    with pytest.raises(OutOfMemoryError):
        small_rt.malloc(30 * GiB)
    ptr = small_rt.malloc(1 * MiB)
    small_rt.memset(ptr, 1 * MiB, 1, 1 * MiB)
    small_rt.free(ptr)
    assert _stats(small_rt)["num_ooms"] == 1


# ---------------------------------------------------------------- bad frees
def test_free_of_an_interior_pointer_is_invalid_param(rt):
    ptr = rt.malloc(1000)
    with pytest.raises(InvalidValueError) as info:
        rt.free(ptr + 64)
    assert info.value.code == C.ACL_ERROR_INVALID_PARAM
    assert "inside the allocation" in str(info.value)
    rt.free(ptr)  # the real allocation is untouched and frees fine


def test_double_free_is_invalid_param(rt):
    rt.malloc(1000)  # a neighbour, so the freed block does not merge away
    ptr = rt.malloc(1000)
    rt.malloc(1000)
    rt.free(ptr)
    with pytest.raises(InvalidValueError, match="double free"):
        rt.free(ptr)
    assert _stats(rt)["num_frees"] == 1


def test_free_of_a_never_allocated_device_address_is_invalid(rt):
    ptr = rt.malloc(100)
    with pytest.raises(InvalidValueError, match="no allocation"):
        rt.free(ptr + 10 * GiB)


def test_free_of_a_host_pointer_is_invalid_param(rt):
    buf = np.zeros(16, np.uint8)
    with pytest.raises(InvalidValueError, match="host address"):
        rt.free(buf.ctypes.data)


@pytest.mark.parametrize("ptr", [0, None, "0x1000"])
def test_free_of_null_or_non_int_is_invalid_param(rt, ptr):
    with pytest.raises(InvalidValueError):
        rt.free(ptr)


def test_free_after_reset_device_says_the_reset_released_it(rt):
    ptr = rt.malloc(100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        rt.reset_device(0)
    rt.set_device(0)
    with pytest.raises(InvalidValueError, match="reset_device"):
        rt.free(ptr)


def test_free_of_memory_of_another_device_works_from_any_device(rt):
    ptr = rt.malloc(100)
    rt.set_device(1)
    rt.free(ptr)  # the address says which device it belongs to
    rt.set_device(0)
    assert _stats(rt)["num_frees"] == 1


def test_every_memory_error_is_an_npu_error(small_rt):
    for call in (lambda: small_rt.malloc(0), lambda: small_rt.malloc(1 << 40), lambda: small_rt.free(12345)):
        with pytest.raises(NpuError):
            call()


# ---------------------------------------------------------------- randomized model check
def test_random_malloc_free_on_a_tiny_device_keeps_every_invariant():
    """Random mallocs (all policies, both roundings) and frees on a 64 MiB device, so that
    splitting, merging, out-of-memory and cache release all happen. After every step: live
    blocks do not overlap and keep their data, the pool's reserve equals the arena's
    committed bytes; after an out-of-memory no segment is held by the cache alone."""
    from npurt.driver.simulated import SimulatedDevice
    from npurt.driver.soc import SocSpec
    from npurt.runtime.memory import FREE, DeviceMemory

    spec = SocSpec(name="Tiny", memory_kind="HBM", memory_bytes=64 * MiB, memory_bandwidth=1e9,
                   host_link_bandwidth=1e9, aicore_num=1, vector_core_num=1, aicpu_num=1,
                   l2_size=MiB, max_streams=8, max_events=8, npu_arch=0)
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"seed {seed}")  # shown when the test fails
    rng = np.random.default_rng(seed)
    dev = SimulatedDevice(0, spec)
    mem = DeviceMemory(dev)
    live: dict[int, tuple[int, int]] = {}
    ooms = 0
    for step in range(4000):
        r = rng.random()
        if live and r < 0.45:
            ptr = list(live)[int(rng.integers(len(live)))]
            size, tag = live.pop(ptr)
            assert (dev.view(ptr, min(size, 64)) == tag).all(), f"step {step}: data of 0x{ptr:x} changed"
            mem.free(ptr)
        elif r < 0.46:
            mem.empty_cache()
        else:
            choices = [rng.integers(1, 2048), rng.integers(2048, MiB), rng.integers(MiB, 9 * MiB)]
            size = int(rng.choice(choices, p=[0.5, 0.3, 0.2]))
            try:
                ptr = mem.malloc(size, int(rng.integers(0, 6)), bool(rng.random() < 0.3))
            except OutOfMemoryError:
                ooms += 1
                assert live, f"step {step}: out of memory with nothing allocated"
                for pool in mem.pools.values():  # the cache was given back before failing
                    for seg in pool.segments.values():
                        block, held = seg.first, False
                        while block is not None:
                            held |= block.state != FREE
                            block = block.next
                        assert held, f"step {step}: a segment only the cache holds survived an OOM"
                continue
            tag = int(rng.integers(256))
            dev.view(ptr, min(size, 64))[:] = tag
            live[ptr] = (size, tag)
        spans = sorted((p, p + s) for p, (s, _) in live.items())
        assert all(a1 <= b0 for (_, a1), (b0, _) in zip(spans, spans[1:])), f"step {step}: overlap"
        assert dev.arena.committed_bytes == mem.reserved
    assert ooms > 0  # the device really ran full
    for ptr in list(live):
        mem.free(ptr)
    mem.empty_cache()
    assert mem.reserved == 0 and dev.arena.committed_bytes == 0


# ---------------------------------------------------------------- no quadratic merging (issue 29, item 2)
def _work_of_a_large_malloc_after_freeing(rt, monkeypatch, segments: int) -> int:
    """Fill `segments` small-block segments with 512-byte blocks, free them all, then malloc
    1 MB (which only a merge can serve): the block claims and block comparisons it makes."""
    M = sys.modules[type(rt.current_device().memory).__module__]  # the pool's module, wherever it lives
    per_segment = M.SMALL_SEGMENT // M.SIZE_CLASS
    rt.empty_cache()
    ptrs = [rt.malloc(M.SIZE_CLASS - 32) for _ in range(segments * per_segment)]
    for p in ptrs:
        rt.free(p)
    work = [0]
    claim = M.PagePool.claim

    def counted_claim(self, block):
        work[0] += 1
        return claim(self, block)

    def counted_eq(self, other):  # a list's remove compares the block to every one before it
        work[0] += 1
        return self is other

    monkeypatch.setattr(M.PagePool, "claim", counted_claim)
    monkeypatch.setattr(M.Block, "__eq__", counted_eq, raising=False)
    big = rt.malloc(1_000_000)
    monkeypatch.undo()
    rt.free(big)
    rt.empty_cache()
    return work[0]


def test_a_large_malloc_after_many_small_frees_costs_the_same_however_many_were_freed(rt, monkeypatch):
    # before issue 29 every freed block was merged (each claim a list.remove over its bin):
    # 128k freed blocks made a 1 MB malloc take 163 s with the device's memory lock held
    few = _work_of_a_large_malloc_after_freeing(rt, monkeypatch, segments=2)
    many = _work_of_a_large_malloc_after_freeing(rt, monkeypatch, segments=8)
    M = sys.modules[type(rt.current_device().memory).__module__]
    assert many <= few + 16, f"the malloc's work grew from {few} to {many} with 4x the freed blocks"
    assert many <= 2 * M.SMALL_SEGMENT // M.SIZE_CLASS  # about one segment's walk
