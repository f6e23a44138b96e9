"""One device allocation behind a DeviceArray and all its views: made from the pool, freed
(stream-ordered, by the runtime) when the last of them is garbage-collected.

`allocate(nbytes, device)` makes one. It is the hot path of every new array (npurt.empty,
each operator's result), so it is a plain function that fills the record's slots itself
(no `type.__call__` and `__init__` frames) and calls the device's pool directly (its C
fast path with the accelerator); a listening tool (HOOKS.active: sanitizer, profiler)
takes the runtime's `malloc_on` / `free` instead, which report to it.

With the C accelerator (npurt.runtime.accel, `rt.allocation_record`) the record is `npurt._speedups.Allocation` and
`allocate` a C entry: a cached block is taken and the record made without a Python frame,
and the record's dealloc frees the block through the pool's C fast path; everything else
(a listening tool, a cache miss, a block that queued work still uses) goes through the
Python functions below, which do the same for both records.
"""
from __future__ import annotations

from .. import runtime as rt
from ..runtime import HOOKS


class Allocation:
    """One device allocation; freed (stream-ordered, by the runtime) when garbage-collected."""

    __slots__ = ("ptr", "nbytes", "device", "block")

    def __init__(self, nbytes: int, device):
        memory = device.memory
        if HOOKS.active:
            self.ptr = ptr = rt.malloc_on(device, nbytes or 1, managed=True)
        else:  # the hot path: the pool itself
            self.ptr = ptr = memory.malloc(nbytes or 1)
        self.device = device
        self.nbytes = nbytes
        self.block = memory.live.get(ptr)

    def __del__(self) -> None:
        try:
            ptr = self.ptr
        except AttributeError:  # its malloc failed (out of memory): nothing to free
            return
        release(ptr, self.device, self.block)


def release(ptr: int, device, block) -> None:
    """Free an allocation's memory when its record is collected (the C record's dealloc
    calls this for what its fast path does not free)."""
    # Free only the allocation we made: after a device reset or a finalize (which empty
    # the live table) and a new init the same address may belong to someone else; the
    # pool's Block objects are new then, so identity tells.
    try:
        memory = device.memory
        if memory.live.get(ptr) is block:
            if HOOKS.active:
                rt.free(ptr, managed=True)
            else:
                memory.free(ptr)
    except Exception:  # noqa: BLE001 - interpreter shutdown, or a runtime torn down
        pass


_c_record = rt.allocation_record(release)
if _c_record is not None:
    Allocation = _c_record  # noqa: F811 - the same record, in C

_new_record = Allocation.__new__


def allocate(nbytes: int, device) -> Allocation:
    """A new Allocation of `nbytes` (at least 1 byte is taken) on a runtime Device: what
    `Allocation(nbytes, device)` makes, its __init__'s steps inlined."""
    memory = device.memory
    # the malloc first: a record whose malloc failed is never made (__del__ would find no ptr)
    if HOOKS.active:
        ptr = rt.malloc_on(device, nbytes or 1, managed=True)
    else:  # the hot path: the pool itself
        ptr = memory.malloc(nbytes or 1)
    mem = _new_record(Allocation)
    mem.ptr = ptr
    mem.device = device
    mem.nbytes = nbytes
    mem.block = memory.live.get(ptr)
    return mem


allocate = rt.fast_entry("allocate", allocate)
