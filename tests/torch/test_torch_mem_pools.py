"""torch_npu's allocator extras over npurt's VMM (issue 26, item 6): memory snapshots in
PyTorch's format (torch.cuda._memory_viz reads them), torch.npu.MemPool / use_mem_pool, and
PYTORCH_NPU_ALLOC_CONF=expandable_segments:True, which needs free bytes where fixed segments
need a contiguous free run."""
from __future__ import annotations

import gc
import pickle

import pytest
import torch
from torch.cuda import _memory_viz

from npurt.torch import alloc_conf, mem_pools

MiB = 1 << 20


def test_a_snapshot_has_pytorchs_format_and_memory_viz_reads_it(npu, tmp_path):
    torch.npu.memory._record_memory_history(max_entries=1000)
    try:
        a = torch.randn(512, 512, device=npu)
        b = (a @ a).relu()
        del a
        torch.npu.synchronize()
        snap = torch.npu.memory._snapshot()
    finally:
        torch.npu.memory._record_memory_history(enabled=None)
    seg = next(s for s in snap["segments"] if any(blk["address"] == b.data_ptr() for blk in s["blocks"]))
    assert {"address", "total_size", "allocated_size", "active_size", "stream", "segment_type", "blocks"} <= set(seg)
    assert sum(blk["size"] for blk in seg["blocks"]) == seg["total_size"]
    (mine,) = [blk for blk in seg["blocks"] if blk["address"] == b.data_ptr()]
    assert mine["state"] == "active_allocated" and mine["requested_size"] == 512 * 512 * 4
    assert any(f["name"] == "test_a_snapshot_has_pytorchs_format_and_memory_viz_reads_it" for f in mine["frames"])
    actions = [e["action"] for e in snap["device_traces"][0]]
    assert {"segment_alloc", "alloc", "free_requested", "free_completed"} <= set(actions)
    # PyTorch's own viewer and summaries accept it (segsum checks every segment's accounting)
    assert "<html" in _memory_viz.trace_plot(snap).lower() and "<html" in _memory_viz.segment_plot(snap).lower()
    assert "total_reserved" in _memory_viz.segsum(snap)
    assert "alloc" in _memory_viz.trace(snap)
    torch.npu.memory._dump_snapshot(str(tmp_path / "s.pickle"))
    assert pickle.loads((tmp_path / "s.pickle").read_bytes())["segments"]


def test_a_snapshot_augmented_with_fx_traces_goes_through_torchs_augmenter(npu, monkeypatch):
    seen = []

    def augment(snapshot):  # torch's fills frames of FX-generated code with their node's metadata
        seen.append(snapshot)
        return {**snapshot, "augmented": True}
    monkeypatch.setattr(torch._utils, "_augment_memory_snapshot_stack_traces", augment)
    assert "augmented" not in torch.npu.memory._snapshot() and not seen
    snap = torch.npu.memory._snapshot(augment_with_fx_traces=True)
    assert snap["augmented"] and {"segments", "device_traces"} <= set(seen[0])


def test_a_mem_pool_holds_the_tensors_made_under_use_mem_pool(npu):
    pool = torch.npu.MemPool()
    gc.collect()  # earlier tests' cyclic garbage (tensors held by tracebacks) is not freed mid-test
    torch.npu.synchronize()
    before = torch.npu.memory_allocated()
    with torch.npu.use_mem_pool(pool):
        assert pool.use_count() == 2
        x = torch.arange(1 << 18, device=npu, dtype=torch.float32)
        y = x * 2 + 1
    z = torch.ones(4, device=npu)                          # outside: the device's own pool
    ranges = [(s["address"], s["address"] + s["total_size"]) for s in pool.snapshot()]
    inside = lambda t: any(lo <= t.data_ptr() < hi for lo, hi in ranges)  # noqa: E731
    assert inside(x) and inside(y) and not inside(z)
    assert all(s["segment_pool_id"] == pool.id for s in pool.snapshot())
    assert torch.equal(y.cpu(), torch.arange(1 << 18, dtype=torch.float32) * 2 + 1)
    assert torch.npu.memory_allocated() >= before + 2 * x.nbytes
    old = y.data_ptr()
    del y
    torch.npu.synchronize()
    with torch.npu.use_mem_pool(pool):
        w = torch.empty(1 << 18, device=npu)
    assert w.data_ptr() == old                             # the pool reuses its own memory
    with pytest.raises(TypeError):
        with torch.npu.use_mem_pool(object()):
            pass
    del x, w
    torch.npu.synchronize()
    held = torch.npu.memory_reserved()
    del pool                                               # a pool no tensor uses gives its memory back
    gc.collect()
    assert torch.npu.memory_reserved() < held


@pytest.fixture
def started(npu):
    """The runtime runs on this thread (the gate fixture's event needs a current context)."""
    torch.ones(1, device=npu)
    return npu


def test_a_free_that_queued_work_delays_completes_in_the_trace_after_that_work(started, gate):
    npu = started
    torch.npu.memory._record_memory_history()
    try:
        gate.hold()
        x = torch.full((1 << 16,), 3.0, device=npu)
        y = x * 2                                           # queued behind the gate: reads x later
        addr = x.data_ptr()
        del x                                               # requested now, completed after the op

        def frees():
            trace = torch.npu.memory._snapshot()["device_traces"][0]
            return [e["action"] for e in trace if e["addr"] == addr and e["action"].startswith("free")]

        assert frees() == ["free_requested"]
        gate.open()
        assert torch.equal(y.cpu(), torch.full((1 << 16,), 6.0))
        assert frees() == ["free_requested", "free_completed"]
    finally:
        torch.npu.memory._record_memory_history(enabled=None)

def _fill_free_alternate_and_ask(npu, n: int, piece: int, ask: int):
    """Fill the device with n pieces, free every other one, give the cache back, then ask for
    one allocation larger than any piece but smaller than what is free."""
    held = [torch.empty(piece // 4, device=npu) for _ in range(n)]
    for t in held[::2]:
        t.data_ptr()
    del held[::2]
    torch.npu.synchronize()
    torch.npu.empty_cache()
    return held, torch.empty(ask // 4, device=npu)


def test_expandable_segments_need_free_bytes_not_a_contiguous_run(fresh_runtime, monkeypatch, npu):
    monkeypatch.setenv("NPURT_HBM_SIZE", "256M")
    monkeypatch.delenv("PYTORCH_NPU_ALLOC_CONF", raising=False)
    alloc_conf.load_environment()
    mem_pools.refresh()
    with pytest.raises(torch.OutOfMemoryError):            # fixed segments: no 80 MiB run is free
        _fill_free_alternate_and_ask(npu, 10, 20 * MiB, 80 * MiB)
    fresh_runtime.finalize()
    monkeypatch.setenv("PYTORCH_NPU_ALLOC_CONF", "expandable_segments:True")
    alloc_conf.load_environment()
    mem_pools.refresh()
    try:
        held, big = _fill_free_alternate_and_ask(npu, 10, 20 * MiB, 80 * MiB)
        big.fill_(3.0)
        assert big.sum().item() == 3.0 * big.numel()
        assert any(s["is_expandable"] for s in torch.npu.memory._snapshot()["segments"])
        reserved = torch.npu.memory_reserved()
        del held, big
        torch.npu.synchronize()
        torch.npu.empty_cache()                            # unmaps what no tensor uses
        assert torch.npu.memory_reserved() < reserved - 80 * MiB
    finally:
        monkeypatch.delenv("PYTORCH_NPU_ALLOC_CONF")
        alloc_conf.load_environment()
        mem_pools.refresh()



@pytest.fixture
def limited(npu):
    """set_per_process_memory_fraction to what is reserved now plus `extra` bytes (restored after)."""
    saved = torch.npu.get_per_process_memory_fraction()

    def limit(extra: int):
        torch.npu.empty_cache()
        total = torch.npu.mem_get_info()[1]
        torch.npu.set_per_process_memory_fraction((torch.npu.memory_reserved() + extra) / total)
    yield limit
    torch.npu.empty_cache()
    torch.npu.set_per_process_memory_fraction(saved)


MB = 1 << 20


def test_the_memory_fraction_caps_the_reserved_bytes_of_every_pool_of_the_device(npu, limited):
    pool = torch.npu.MemPool()
    limited(48 * MB)
    with torch.npu.use_mem_pool(pool):
        a = torch.empty(40 * MB, dtype=torch.uint8, device=npu)   # the pool's segment: 40 MiB of the 48
    with pytest.raises(torch.OutOfMemoryError, match="set_per_process_memory_fraction"):
        torch.empty(40 * MB, dtype=torch.uint8, device=npu)       # the device's own pool: no room left
    # a small block's 2 MiB segment still fits (a 4 MiB request would take a 20 MiB one: torch's kLargeBuffer)
    small = torch.empty(MB // 2, dtype=torch.uint8, device=npu)
    del a, small, pool


def test_an_allocation_out_of_memory_falls_back_to_a_use_on_oom_pools_cached_block(npu, limited):
    keep, spare = torch.npu.MemPool(), torch.npu.MemPool(use_on_oom=True)
    limited(88 * MB)
    with torch.npu.use_mem_pool(keep):
        a = torch.empty(40 * MB, dtype=torch.uint8, device=npu)
    with torch.npu.use_mem_pool(spare):
        b = torch.empty(40 * MB, dtype=torch.uint8, device=npu)
    b_ptr = b.data_ptr()
    del a, b
    torch.npu.synchronize()
    c = torch.empty(30 * MB, dtype=torch.uint8, device=npu)       # outside any pool: spare's block
    assert c.data_ptr() == b_ptr
    with pytest.raises(torch.OutOfMemoryError):                   # keep (no use_on_oom) is never used
        torch.empty(30 * MB, dtype=torch.uint8, device=npu)
    with pytest.raises(torch.OutOfMemoryError):                   # nor is spare inside another pool's context
        with torch.npu.use_mem_pool(keep):
            torch.empty(50 * MB, dtype=torch.uint8, device=npu)
    del c, keep, spare


def test_a_mem_pool_short_of_the_fraction_gets_the_devices_cached_segments_back_first(npu, limited):
    limited(48 * MB)
    a = torch.empty(40 * MB, dtype=torch.uint8, device=npu)
    del a
    torch.npu.synchronize()                                       # 40 MiB cached in the device's pool
    pool = torch.npu.MemPool()
    with torch.npu.use_mem_pool(pool):
        b = torch.empty(40 * MB, dtype=torch.uint8, device=npu)   # fits once that cache is given back
    assert b.numel() == 40 * MB
    del b, pool
