"""The caching allocator's private-pool API that graph trees use (torch_npu._C's bindings,
torch_npu/csrc/npu/Module.cpp, as torch's torch._C._cuda_* ones in torch/csrc/cuda/Module.cpp
and c10/cuda/CUDACachingAllocator.cpp behave), over npurt's caching pools.

* A *private pool* is named by a pool id (`torch.npu.graph_pool_handle()`, a graph's `pool()`):
  per device, a caching pool of its own (a torch.npu.MemPool with that id, so its segments show
  in `memory_snapshot()` with their "segment_pool_id").
  `_npu_beginAllocateCurrentThreadToPool(device, id)` sends this thread's npu allocations on
  `device` there until `_npu_endAllocateToPool(device, id)`; `_npu_releasePool(device, id)`
  forgets an empty pool (one whose blocks are all free).
* `_npu_getCheckpointState(device, id)` records which blocks of the pool are live (address,
  size); `_npu_setCheckpointPoolState(device, state, stale_storages, storages_to_add_deleters_to)`
  puts the pool back to that: blocks live now and not then are freed (the storages holding
  them must be among `stale_storages`: "Any stale tensors which are being manually freed must
  be passed to set checkpoint"; their own free then does nothing), blocks live then are live
  again at the same addresses (runtime.take_at), and each storage of
  `storages_to_add_deleters_to` frees its block when it dies from then on.
* `_construct_storage_from_data_pointer(ptr, device, nbytes)` is a storage over memory it does not
  own (no deleter until a checkpoint gives it one). npurt's ops refuse memory no live block
  holds, where torch's pool lets such a storage reach freed memory: so its block is made live
  if it was free, and a block whose owner dies while such storages reach it stays live for them
  (storage.HANDOVER); both are out of the pool's count, as torch has them free.
  `_construct_NPU_Tensor_From_Storage_And_Metadata(metadata, storage)` is a tensor of the
  metadata's dtype, size, stride and offset over it (and its "npu_format", when given).
* `_free_And_Remove_DeleterFn(storage_cdata)`: the storage no longer frees its block ("Expected
  standard deleter" where it owns none). A storage made over memory it did not own frees it
  now; one npurt allocated keeps its block until it dies, out of the pool's count (npurt's
  pool hands the same block object out again, and a storage's free is tied to that object:
  freeing it now would let the stale storage free the next owner's memory), so that memory
  is reused later than torch reuses it; `_has_Standard_Deleter(cdata)`;
  `_npu_npuCachingAllocator_raw_delete(ptr)`; `_npu_checkPoolLiveAllocations(device, id, ptrs)`:
  whether the pool's live blocks are exactly those addresses.
* `_set_storage_access_error_msg(t, msg)` / `_set_storage_data_ptr_access_error_msg(cdata, msg)`
  record the message for the storage's address (`access_error(ptr)`); torch makes the
  tensor's data pointer raise it, which a Python device cannot: npurt's ops on such a tensor
  fail with npurt's message for memory that is no longer allocated.
"""
from __future__ import annotations

import torch

from ..runtime import take_at
from . import _dlpack, mem_pools, storage

_POOLS: dict = {}       # (device index, pool id) -> MemPool
# Who frees a block. A storage npurt allocated (storage.alloc) frees its own, through its
# owner tuple; graph_pools never frees those (npurt's pool hands the same Block object out
# again, and such a storage's free is tied to that object: freeing its block early would let
# it free the next owner's memory later). Every other block graph_pools touches is owned by a
# *cell* [owner tuple or None, storage cdata or None] (None: the pool state's, after a restore).
_CELLS: dict = {}       # (id(pool memory), address) -> the cell that frees the block
_VIEWS: dict = {}       # (id(pool memory), address) -> cells of storages over it that own nothing
_UNOWNED: dict = {}     # storage cdata -> its cell, for every storage made over a data pointer
_DETACHED: dict = {}    # (id(pool memory), address) -> block whose storage lost its deleter
# blocks whose owner died while storages that own nothing still reached them: npurt keeps them
# live for those (its ops refuse freed memory), torch's allocator has them free: out of the count
_HANDED: set = set()    # (id(pool memory), address)
_ACCESS_ERRORS: dict = {}  # address -> the message torch would raise on access


class AllocatorState:
    """torch_npu._C._npu_NPUAllocator_AllocatorState: a private pool's live blocks at a point."""

    __slots__ = ("device", "pool_id", "blocks")

    def __init__(self, device: int, pool_id: tuple, blocks: dict):
        self.device, self.pool_id, self.blocks = device, pool_id, blocks  # address -> (size, requested)

    def __repr__(self) -> str:
        return f"<AllocatorState npu:{self.device} pool {self.pool_id}: {len(self.blocks)} live blocks>"


def _index(device) -> int:
    if isinstance(device, torch.device):
        return device.index if device.index is not None else torch.npu.current_device()
    if isinstance(device, str):
        return _index(torch.device(device))
    return int(device)


def _pool(device, pool_id, create: bool = True):
    key = (_index(device), tuple(pool_id))
    pool = _POOLS.get(key)
    if pool is None and create:
        pool = _POOLS[key] = mem_pools.MemPool()
        pool._id = key[1]
    return pool


def _memory(device, pool_id, create: bool = True):
    pool = _pool(device, pool_id, create)
    return None if pool is None else pool.memory(storage.info(_index(device)).device)


def begin_allocate_current_thread_to_pool(device, pool_id) -> None:
    mem_pools.push_route(_pool(device, pool_id), _index(device))


def capture_begin(device, pool_id):
    """NPUGraph.capture_begin: a capture into a private pool of this API allocates from it, as
    torch's captures allocate from their pool; (device, pool id) then, else None (npurt's other
    captures keep allocating as before: their memory is the graph's while it lives)."""
    if (_index(device), tuple(pool_id)) not in _POOLS:
        return None
    begin_allocate_current_thread_to_pool(device, pool_id)
    return (_index(device), tuple(pool_id))


def end_allocate_to_pool(device, pool_id) -> None:
    pool = _pool(device, pool_id, create=False)
    if pool is not None:
        mem_pools.pop_route(pool, _index(device))


def release_pool(device, pool_id) -> None:
    key = (_index(device), tuple(pool_id))
    pool = _POOLS.get(key)
    if pool is not None and pool._users == 0 and not any(m.live for _d, m in pool._pools.values()):
        del _POOLS[key]


def get_checkpoint_state(device, pool_id) -> AllocatorState:
    mem = _memory(device, pool_id)
    blocks = {a: (b.size, b.requested) for a, b in _live_blocks(mem).items()}
    return AllocatorState(_index(device), tuple(pool_id), blocks)


def _owner(inf, mem, ptr: int) -> tuple:
    block = mem.live[ptr]
    return (storage.release, mem, ptr, block, block.requested, inf.counters)


def _own(cell: list, owner: tuple) -> None:
    cell[0] = owner
    _CELLS[(id(owner[1]), owner[2])] = cell


def hand_over(owner: tuple) -> bool:
    """storage.HANDOVER: a block's owner died; a storage over it that owns nothing takes it."""
    key = (id(owner[1]), owner[2])
    views = _VIEWS.get(key)
    if views:
        _own(views.pop(0), owner)
        if not views:
            del _VIEWS[key]
        _HANDED.add(key)
        return True
    _HANDED.discard(key)
    cell = _CELLS.get(key)
    if cell is not None and cell[0] is owner:
        del _CELLS[key]
    return False


def _take(inf, mem, ptr: int, size: int, requested: int, cell: list) -> bool:
    if not take_at(mem, ptr, size, requested):
        return False
    inf.counters.note(1, requested, size, 0, 0)
    _own(cell, _owner(inf, mem, ptr))
    return True


def _free_block(inf, mem, ptr: int) -> None:
    """Free a live block as torch's allocator frees one (raw_delete): the block's cell lets go of
    it; a block a storage npurt allocated owns is left to that storage, out of the count."""
    key = (id(mem), ptr)
    _HANDED.discard(key)
    cell = _CELLS.pop(key, None)
    if cell is None:
        _DETACHED[key] = mem.live[ptr]
        return
    owner, cell[0] = cell[0], None
    _VIEWS.pop(key, None)  # storages over it that own nothing reach freed memory now, as in torch
    storage.release(owner)


def set_checkpoint_pool_state(device, state, stale_storages, storages_to_add_deleters_to=()) -> None:
    if not isinstance(state, AllocatorState):
        raise TypeError(f"expected an _npu_NPUAllocator_AllocatorState, got {type(state).__name__}")
    inf = storage.info(_index(device))
    mem = _memory(state.device, state.pool_id)
    freed = [a for a, b in _live_blocks(mem).items() if state.blocks.get(a, (None,))[0] != b.size]
    for addr in freed:
        _free_block(inf, mem, addr)
    made = set()
    for addr, (size, requested) in state.blocks.items():
        if _live_memory(inf, addr) is mem:
            _HANDED.discard((id(mem), addr))  # live at the checkpoint: counted again
            continue
        if not _take(inf, mem, addr, size, requested, [None, None]):
            raise RuntimeError(f"setCheckpointPoolState: the block at {addr:#x} ({size} bytes) of pool {state.pool_id} "
                               "is no longer the pool's (its segment was given back)")
        made.add(addr)
    if len(set(stale_storages)) < sum(addr not in made for addr in freed):
        raise RuntimeError("Any stale tensors which are being manually freed must be passed to set checkpoint")
    for cdata in storages_to_add_deleters_to:
        cell = _UNOWNED.get(cdata)
        if cell is None:
            continue  # a storage npurt allocated: it frees its block already
        if cell[0] is not None:  # it holds a block npurt kept live for it: counted from now on
            _HANDED.discard((id(cell[0][1]), cell[0][2]))
            continue
        key = (id(mem), torch.UntypedStorage._new_with_weak_ptr(cdata).data_ptr())
        pool_cell = _CELLS.get(key)
        if pool_cell is not None and pool_cell[1] is None:  # the pool state's: this storage's now
            _own(cell, pool_cell[0])
            pool_cell[0] = None
            views = _VIEWS.get(key, [])
            if cell in views:
                views.remove(cell)


def _memories(inf) -> list:
    return [m for (index, _), pool in list(_POOLS.items()) if index == inf.index
            for _d, m in list(pool._pools.values())] + [inf.memory]


def _live_memory(inf, ptr: int):
    """The pool whose live block starts at `ptr` (None: none). Every pool of a device shares the
    device's table of live blocks; a block's page pool tells whose it is."""
    block = inf.memory.live.get(ptr)
    return None if block is None or block.pool is None else block.pool.owner


def _release_unowned(capsule_owner: tuple) -> None:
    """A storage made over a data pointer died."""
    cell = capsule_owner[1]
    _UNOWNED.pop(cell[1], None)
    for key, views in list(_VIEWS.items()):
        if cell in views:
            views.remove(cell)
            if not views:
                del _VIEWS[key]
    owner, cell[0] = cell[0], None
    if owner is not None:
        if _CELLS.get((id(owner[1]), owner[2])) is cell:
            del _CELLS[(id(owner[1]), owner[2])]
        storage.release(owner)


def construct_storage_from_data_pointer(data_ptr: int, device, size_bytes: int):
    inf = storage.info(_index(device))
    cell = [None, None]
    t = _dlpack.tensor_at(data_ptr, (size_bytes,), (1,), torch.uint8, inf.index, (_release_unowned, cell))
    s = t.untyped_storage()
    cell[1] = s._cdata
    _UNOWNED[s._cdata] = cell
    storage.HANDOVER = hand_over
    mem = _live_memory(inf, data_ptr)
    if mem is None:  # free memory: npurt's ops refuse memory no block holds, so it is allocated
        for candidate in _memories(inf):
            block = candidate.find(data_ptr)
            if block is not None:
                size = min(block.addr + block.size - data_ptr, max(512, -(-size_bytes // 512) * 512))
                if _take(inf, candidate, data_ptr, size, size_bytes or 1, cell):
                    _HANDED.add((id(candidate), data_ptr))  # free in torch's pool: out of the count
                    break
        return s
    _VIEWS.setdefault((id(mem), data_ptr), []).append(cell)  # no deleter until a checkpoint gives one
    return s


def construct_tensor(metadata: dict, s) -> torch.Tensor:
    t = torch.empty(0, dtype=metadata["dtype"], device=s.device)
    t.set_(s, metadata["storage_offset"], tuple(metadata["size"]), tuple(metadata["stride"]))
    if "npu_format" in metadata:
        from .shim import formats
        t = formats.npu_format_cast_(t, metadata["npu_format"])
    return t


def raw_delete(ptr: int) -> None:
    for index in sorted({index for index, _ in _POOLS} | {storage.info(None).index}):
        inf = storage.info(index)
        mem = _live_memory(inf, ptr)
        if mem is not None:
            _free_block(inf, mem, ptr)
            return
    raise RuntimeError(f"invalid device pointer: {ptr:#x}")


def _storage(cdata: int):
    return torch.UntypedStorage._new_with_weak_ptr(cdata)


def has_standard_deleter(cdata: int) -> bool:
    cell = _UNOWNED.get(cdata)
    if cell is not None:
        return cell[0] is not None and (id(cell[0][1]), cell[0][2]) not in _HANDED
    s = _storage(cdata)
    if s.device.type != "npu":
        return False
    mem = _live_memory(storage.info(s.device.index), s.data_ptr())
    return mem is not None and _DETACHED.get((id(mem), s.data_ptr())) is not mem.live[s.data_ptr()]


def free_and_remove_deleter(cdata: int) -> None:
    if not has_standard_deleter(cdata):
        raise RuntimeError("Expected standard deleter")
    s = _storage(cdata)
    inf = storage.info(s.device.index)
    cell = _UNOWNED.get(cdata)
    if cell is not None:
        _free_block(inf, cell[0][1], cell[0][2])
        return
    mem = _live_memory(inf, s.data_ptr())
    _DETACHED[(id(mem), s.data_ptr())] = mem.live[s.data_ptr()]


def _live_blocks(mem) -> dict:
    """The pool's live blocks, less those whose storage lost its deleter (free_and_remove_deleter)."""
    live = {a: b for a, b in list(mem.live.items())
            if b.pool is not None and b.pool.owner is mem and (id(mem), a) not in _HANDED}
    for key, block in list(_DETACHED.items()):
        if key[0] == id(mem):
            if live.get(key[1]) is block:
                del live[key[1]]
            elif mem.live.get(key[1]) is not block:
                _DETACHED.pop(key, None)  # freed since, by its storage
    return live


def check_pool_live_allocations(device, pool_id, expected) -> bool:
    return set(_live_blocks(_memory(device, pool_id))) == {int(p) for p in expected}


def set_access_error(ptr: int, message: str) -> None:
    _ACCESS_ERRORS[ptr] = message


def access_error(ptr: int) -> str | None:
    return _ACCESS_ERRORS.get(ptr)
