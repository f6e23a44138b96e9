"""Taking a block at a given address of a caching pool: how a checkpointed pool state is put back.

torch's caching allocator restores a private pool to a checkpoint (setCheckpointPoolState,
which inductor's graph trees and torch_npu's port of them call before recording a graph that
follows a replayed one): the blocks live at the checkpoint are live again, at the same
addresses, whatever was freed since. `take_at(memory, addr, size)` does that for one block of
a DeviceMemory: a free block (cached in a bin) holding `[addr, addr + size)` is split around it
and handed out; a block freed while queued work (or a captured graph) still used it is live
again at once (it leaves the pending queue: the replayed graph writes it, as at the checkpoint),
keeping the uses of the work still queued on it, so that its next free waits for them.
"""
from __future__ import annotations

import heapq

from .memory import FREE, LIVE, PENDING


def _unpark(memory, block) -> None:
    """Take `block` out of the pending queues (caller holds the lock)."""
    for stream, heap in list(memory.pending.items()):
        kept = [entry for entry in heap if entry[2] is not block]
        if len(kept) != len(heap):
            memory.pending_count -= len(heap) - len(kept)
            heapq.heapify(kept)
            heap[:] = kept
            if not heap:
                del memory.pending[stream]


def take_at(memory, addr: int, size: int, requested: int | None = None) -> bool:
    """Make the block at `addr` of `size` bytes live in `memory`; False where no free or pending
    block holds that range (it is live already, or was given back to the driver)."""
    with memory.lock:
        if addr in memory.live:
            return False
        block = memory.find(addr)
        if block is None or block.addr + block.size < addr + size:
            return False
        if block.state == PENDING:
            if block.addr != addr:
                return False
            _unpark(memory, block)
            # its uses stay: the work still queued on it must retire before the next free can
            # let the block (or its segment's pages) go (a cleared record let a pool's release
            # unmap memory a worker was writing)
        elif block.state == FREE:
            pool = block.pool
            if not pool.claim(block):
                return False
            if block.addr < addr:  # the front stays cached
                memory._split(block, addr - block.addr)
                front, block = block, block.next
                if not pool.claim(block):
                    pool.push(front)
                    return False
                pool.push(front)
            if block.size > size:
                memory._split(block, size)  # the tail stays cached
        else:
            return False
        block.state = LIVE
        block.requested = size if requested is None else requested
        memory.live[block.addr] = block
        memory.allocated += block.size
        memory.peak = max(memory.peak, memory.allocated)
        return True
