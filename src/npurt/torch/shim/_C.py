"""`torch_npu._C`: the private bindings real code calls directly, over torch.npu.

Names as torch_npu registers them (torch_npu/csrc/npu/Module.cpp). The CANN version queries
answer with the CANN release npurt models and compare as torch_npu does (cann_version.py).
"""
from __future__ import annotations

import torch

from ... import devices as _devices
from .. import forked as _forked
from .. import graph_pools as _graph_pools
from .. import mem_pools as _mem_pools
from .. import raw_runtime as _npurt  # noqa: F401 - torch_npu._C._npurt
from .. import cann_version


def _npu_getDeviceCount() -> int:
    """The runtime's count (started here; fixed from then on), where torch.npu.device_count()
    re-reads the environment until the runtime starts."""
    return _devices.device_count()


def _npu_isInBadFork() -> bool:
    return _forked.in_bad_fork


def _npu_getLocalDevice() -> int:
    return torch.npu.current_device()


def _npu_getDevice() -> int:
    return torch.npu.current_device()


def _npu_setDevice(device: int) -> None:
    torch.npu.set_device(device)


def _npu_getCurrentRawStream(device: int) -> int:
    """The current stream's native handle (aclrtStream) on `device`."""
    return torch.npu.current_stream(device).native_handle


def _npu_getCurrentRawStreamNoWait(device: int) -> int:
    return _npu_getCurrentRawStream(device)


def _npu_synchronize() -> None:
    torch.npu.synchronize()


def _get_cann_version(module: str = "CANN") -> str:
    return cann_version.get(module)


def _is_gte_cann_version(version: str, module: str = "CANN") -> bool:
    return cann_version.is_gte(version, module)


# ---------------------------------------------------------------- private pools and graph trees
# (graph_pools.py; torch_npu.npu._graph_tree calls them)
_npu_NPUAllocator_AllocatorState = _graph_pools.AllocatorState
_npu_beginAllocateCurrentThreadToPool = _graph_pools.begin_allocate_current_thread_to_pool
_npu_endAllocateToPool = _graph_pools.end_allocate_to_pool
_npu_releasePool = _graph_pools.release_pool
_npu_getCheckpointState = _graph_pools.get_checkpoint_state
_npu_setCheckpointPoolState = _graph_pools.set_checkpoint_pool_state
_npu_checkPoolLiveAllocations = _graph_pools.check_pool_live_allocations
_npu_npuCachingAllocator_raw_delete = _graph_pools.raw_delete
_construct_storage_from_data_pointer = _graph_pools.construct_storage_from_data_pointer
_construct_NPU_Tensor_From_Storage_And_Metadata = _graph_pools.construct_tensor
_free_And_Remove_DeleterFn = _graph_pools.free_and_remove_deleter
_has_Standard_Deleter = _graph_pools.has_standard_deleter
# torch's own (at::caching, c10 storages): device-independent
_set_cached_tensors_enabled = torch._C._set_cached_tensors_enabled
_add_cached_tensor = torch._C._add_cached_tensor
_remove_cached_tensor = torch._C._remove_cached_tensor
_storage_Use_Count = torch._C._storage_Use_Count


def _npu_isHistoryEnabled() -> bool:
    """Whether the caching allocator records allocation history (_record_memory_history)."""
    return _mem_pools.HISTORY.enabled is not None


def _tensors_data_ptrs_at_indices_equal(tensors, data_ptrs, indices) -> bool:
    return all(tensors[i].data_ptr() == data_ptrs[i] for i in indices)


def _set_storage_access_error_msg(t, message: str) -> None:
    _graph_pools.set_access_error(t.untyped_storage().data_ptr(), message)


def _set_storage_data_ptr_access_error_msg(storage_cdata: int, message: str) -> None:
    _graph_pools.set_access_error(torch.UntypedStorage._new_with_weak_ptr(storage_cdata).data_ptr(), message)
