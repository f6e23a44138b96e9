"""The caching allocator's private-pool API (torch_npu._C's `_npu_beginAllocateCurrentThreadToPool`,
`_npu_getCheckpointState`, `_npu_setCheckpointPoolState`, `_construct_storage_from_data_pointer`,
... : torch_npu/csrc/npu/Module.cpp, as torch's torch._C._cuda_* bindings behave), which graph
trees run on (npurt/torch/graph_pools.py)."""
from __future__ import annotations

import itertools

import pytest
import torch

import npurt.torch.shim as torch_npu

C = torch_npu._C
_ids = itertools.count(1000)


@pytest.fixture
def pool():
    pool_id = (0, next(_ids))
    yield pool_id
    C._npu_endAllocateToPool(0, pool_id)
    C._npu_releasePool(0, pool_id)


def _in_pool(pool_id, make):
    C._npu_beginAllocateCurrentThreadToPool(0, pool_id)
    try:
        return make()
    finally:
        C._npu_endAllocateToPool(0, pool_id)


def _pool_addresses(pool_id):
    return {seg["address"] + sum(b["size"] for b in seg["blocks"][:i])
            for seg in torch.npu.memory_snapshot() if tuple(seg["segment_pool_id"]) == pool_id
            for i, b in enumerate(seg["blocks"]) if b["state"] == "active_allocated"}


def test_allocations_of_this_thread_go_to_the_private_pool_between_begin_and_end(npu, pool):
    inside = _in_pool(pool, lambda: torch.ones(16, device=npu))
    outside = torch.ones(16, device=npu)
    assert inside.data_ptr() in _pool_addresses(pool)
    assert outside.data_ptr() not in _pool_addresses(pool)
    assert C._npu_checkPoolLiveAllocations(0, pool, {inside.untyped_storage().data_ptr()})
    assert not C._npu_checkPoolLiveAllocations(0, pool, set())
    del inside
    assert C._npu_checkPoolLiveAllocations(0, pool, set())


def test_a_checkpoint_puts_the_pools_live_blocks_back(npu, pool):
    a, b = _in_pool(pool, lambda: (torch.ones(64, device=npu), torch.ones(64, device=npu)))
    pa, pb = a.data_ptr(), b.data_ptr()
    state = C._npu_getCheckpointState(0, pool)
    assert isinstance(state, C._npu_NPUAllocator_AllocatorState)
    del b  # freed since the checkpoint
    assert C._npu_checkPoolLiveAllocations(0, pool, {pa})
    C._npu_setCheckpointPoolState(0, state, [], [])
    assert C._npu_checkPoolLiveAllocations(0, pool, {pa, pb})  # live again, at its address
    # a storage over it that owns nothing gets its deleter from the checkpoint
    s = C._construct_storage_from_data_pointer(pb, npu, 64 * 4)
    assert not C._has_Standard_Deleter(s._cdata)
    C._npu_setCheckpointPoolState(0, state, [], [s._cdata])
    assert C._has_Standard_Deleter(s._cdata)
    del s
    assert C._npu_checkPoolLiveAllocations(0, pool, {pa})


def test_a_checkpoint_frees_what_was_allocated_since_only_for_stale_storages(npu, pool):
    a = _in_pool(pool, lambda: torch.ones(64, device=npu))
    state = C._npu_getCheckpointState(0, pool)
    later = _in_pool(pool, lambda: torch.ones(128, device=npu))  # allocated since the checkpoint
    with pytest.raises(RuntimeError, match="Any stale tensors which are being manually freed must be passed"):
        C._npu_setCheckpointPoolState(0, state, [], [])
    C._npu_setCheckpointPoolState(0, state, [later.untyped_storage()._cdata], [])
    assert C._npu_checkPoolLiveAllocations(0, pool, {a.data_ptr()})
    # npurt leaves a storage it allocated its block until it dies (out of the pool's count)
    assert torch.equal(later.cpu(), torch.ones(128))
    freed = C._construct_storage_from_data_pointer(_in_pool(pool, lambda: torch.ones(8, device=npu)).data_ptr(),
                                                   npu, 32)
    # memory free in the pool, reached by a storage that owns it not: out of the count, as in torch
    assert C._npu_checkPoolLiveAllocations(0, pool, {a.data_ptr()})
    assert not C._has_Standard_Deleter(freed._cdata)


def test_a_tensor_from_storage_and_metadata_reads_the_memory_it_is_given(npu):
    x = torch.arange(12, dtype=torch.float32, device=npu)
    s = C._construct_storage_from_data_pointer(x.untyped_storage().data_ptr(), npu, x.untyped_storage().nbytes())
    meta = {"dtype": torch.float32, "size": (3, 2), "stride": (1, 3), "storage_offset": 2, "device": npu}
    t = C._construct_NPU_Tensor_From_Storage_And_Metadata(meta, s)
    assert t.device == x.device and t.data_ptr() == x.data_ptr() + 8
    assert torch.equal(t.cpu(), torch.arange(12.)[2:].as_strided((3, 2), (1, 3)))
    del x  # the view owns nothing, but npurt keeps memory a live tensor reaches allocated
    assert torch.equal(t.cpu(), torch.arange(12.)[2:].as_strided((3, 2), (1, 3)))
    assert C._tensors_data_ptrs_at_indices_equal([t, 1], [t.data_ptr(), 5], [0])
    assert not C._tensors_data_ptrs_at_indices_equal([t], [t.data_ptr() + 4], [0])


def test_free_and_remove_deleter_and_raw_delete(npu, pool):
    with pytest.raises(RuntimeError, match="Expected standard deleter"):
        C._free_And_Remove_DeleterFn(C._construct_storage_from_data_pointer(
            torch.empty(8, device=npu).data_ptr(), npu, 32)._cdata)
    a = _in_pool(pool, lambda: torch.ones(64, device=npu))
    state = C._npu_getCheckpointState(0, pool)
    pa = a.data_ptr()
    del a
    C._npu_setCheckpointPoolState(0, state, [], [])   # live again, the pool state's
    C._npu_npuCachingAllocator_raw_delete(pa)
    assert C._npu_checkPoolLiveAllocations(0, pool, set())
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        C._npu_npuCachingAllocator_raw_delete(pa)
    b = _in_pool(pool, lambda: torch.ones(64, device=npu))
    assert C._has_Standard_Deleter(b.untyped_storage()._cdata)
    C._free_And_Remove_DeleterFn(b.untyped_storage()._cdata)  # out of the pool's count from now on
    assert not C._has_Standard_Deleter(b.untyped_storage()._cdata)
    assert C._npu_checkPoolLiveAllocations(0, pool, set())


def test_cached_tensor_and_history_bindings_are_torchs(npu):
    t = torch.ones(4, device=npu)
    C._set_cached_tensors_enabled(True)
    try:
        C._add_cached_tensor(t)
        C._remove_cached_tensor(t)
    finally:
        C._set_cached_tensors_enabled(False)
    assert C._storage_Use_Count(t.untyped_storage()._cdata) >= 1
    assert C._npu_isHistoryEnabled() is False
    torch.npu.memory._record_memory_history(max_entries=10)
    try:
        assert C._npu_isHistoryEnabled() is True
    finally:
        torch.npu.memory._record_memory_history(enabled=None)
