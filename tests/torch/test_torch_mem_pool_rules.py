"""torch.npu.MemPool as torch_npu's private pools behave: several pools, each allowed all of the
device's memory, live together (their address space is reserved as they map memory); a live
pool's cache survives torch.npu.empty_cache(); MemPool(no_split=True) never splits; the
allocation history tags a pool's allocations with its id."""
from __future__ import annotations

import gc

import torch

MiB = 1 << 20


def test_five_pools_each_holding_memory_live_together(npu):
    pools = [torch.npu.MemPool() for _ in range(5)]  # 5 x 64 GiB is more than the VMM window
    held = []
    for pool in pools:
        with torch.npu.use_mem_pool(pool):
            held.append(torch.empty(20 * MiB, dtype=torch.uint8, device=npu))
    assert [len(torch.npu.memory.memory_snapshot(p.id)) for p in pools] == [1] * 5
    del held
    gc.collect()


def test_empty_cache_leaves_a_live_pools_cache_and_takes_a_deleted_ones(npu):
    pool = torch.npu.MemPool()
    with torch.npu.use_mem_pool(pool):
        x = torch.empty(4 * MiB, dtype=torch.uint8, device=npu)
    del x
    torch.npu.synchronize()
    torch.npu.empty_cache()
    assert len(pool.snapshot()) == 1                      # still cached for the pool's own reuse
    pool_id = pool.id
    del pool
    gc.collect()
    torch.npu.empty_cache()
    assert not any(tuple(s["segment_pool_id"]) == pool_id for s in torch.npu.memory._snapshot()["segments"])


def test_a_no_split_pool_gives_each_block_its_own_segment(npu):
    split, whole = torch.npu.MemPool(), torch.npu.MemPool(no_split=True)
    held = []
    for pool in (split, whole):
        with torch.npu.use_mem_pool(pool):
            held += [torch.empty(4 * MiB, dtype=torch.uint8, device=npu) for _ in range(2)]
    assert len(split.snapshot()) == 1 and len(split.snapshot()[0]["blocks"]) == 3  # two and the rest
    assert len(whole.snapshot()) == 2 and all(len(s["blocks"]) == 1 for s in whole.snapshot())
    del held


def test_the_history_tags_a_pools_allocations_with_its_id(npu):
    torch.npu.memory._record_memory_history("all")
    try:
        pool = torch.npu.MemPool()
        with torch.npu.use_mem_pool(pool):
            x = torch.empty(64, device=npu)
        y = torch.empty(64, device=npu)
        traces = [e for t in torch.npu.memory._snapshot()["device_traces"] for e in t if e["action"] == "alloc"]
        by_addr = {e["addr"]: e["pool_id"] for e in traces}
        assert by_addr[x.data_ptr()] == pool.id and by_addr[y.data_ptr()] == (0, 0)
        del x, y
    finally:
        torch.npu.memory._record_memory_history(None)
