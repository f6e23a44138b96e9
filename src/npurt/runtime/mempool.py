"""Stream-ordered memory pools (acl_rt_memory_soma.h: aclrtMemPoolCreate ... aclrtMemPoolTrimTo).

A pool holds *segments* of device memory (2 MB multiples: DEVICE_POOL_MIN_BLOCK_SIZE of the
runtime's soma feature), taken from the device's caching pool and kept while the pool is
alive. `malloc_async(size, stream)` hands out a free segment of the pool that the stream may
use (best fit by size) or takes a new one; `free_async(ptr, stream)` returns it to the pool
in stream order: the segment is free for `stream` at once (its later work runs after the
free), and for other streams once the work queued before the free has completed, or at once
with a dependency the runtime inserts (an event wait), as the pool's reuse attributes allow:

* ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC: reuse a segment whose freeing work has finished;
* ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES: reuse a segment still in use by another
  stream, making the allocating stream wait for the free first;
* ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES: recorded (the event-ordered reuse it permits
  is covered by the two above: a segment freed before an event the stream waited for has
  finished by then).

Error codes: the soma feature's own failures (a pool that would grow past maxSize, a destroy
with allocations in use) are internal codes the runtime's error table does not list, which it
reports as ACL_ERROR_RT_INTERNAL_ERROR (507000); an unknown or destroyed pool, a read-only
attribute, a bad value are RT_ERROR_INVALID_VALUE: ACL_ERROR_RT_PARAM_INVALID (107000).

Statistics: reserved (segments held) and used (handed out) bytes, current and high-water
marks. The release threshold (default 0) keeps that many idle bytes when the pool gives idle
segments back to the device; npurt does so whenever an allocation or free finds more idle
bytes than the threshold whose work has finished (CANN: at the next stream synchronize), and
`trim_to(min_bytes)` does it at once with its own bound (which takes precedence).
"""
from __future__ import annotations

import bisect
import threading

from . import constants as C
from .errors import InvalidValueError, NpuError, ParamInvalidError

MIN_BLOCK = 2 << 20  # DEVICE_POOL_MIN_BLOCK_SIZE (src/runtime/feature/soma/stream_mem_pool.hpp)

REUSE_ATTRS = (C.ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES, C.ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC,
               C.ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
READ_ONLY_ATTRS = (C.ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT, C.ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT)


class Segment:
    __slots__ = ("addr", "size", "stream", "seq", "event")

    def __init__(self, addr: int, size: int):
        self.addr, self.size = addr, size
        self.stream = None   # the stream that freed it, and the work it waits for
        self.seq = 0
        self.event = None    # recorded on that stream at the free (for a cross-stream wait)


class MemPool:
    """One aclrtMemPool of a device."""

    def __init__(self, device, max_size: int, ops):
        self.device, self.max_size, self.ops = device, max_size, ops
        self.lock = threading.RLock()
        self.live: dict[int, Segment] = {}
        self.idle: dict[int, list[Segment]] = {}   # size -> free segments of that size
        self.idle_sizes: list[int] = []
        self.reserved = self.reserved_high = 0
        self.used = self.used_high = 0
        self.threshold = 0
        self.reuse = {attr: 1 for attr in REUSE_ATTRS}
        self.handle = 0
        self.destroyed = False

    # ------------------------------------------------------------ allocation
    def malloc_async(self, size: int, stream) -> int:
        size = -(-size // MIN_BLOCK) * MIN_BLOCK
        with self.lock:
            self._check_alive()
            seg = self._reusable(size, stream)
            if seg is None:
                self._release_idle(self.threshold)
                if self.reserved + size > self.max_size:
                    self._release_idle(0)
                if self.reserved + size > self.max_size:  # RT_ERROR_MEM_POOL_ALLOC: reported as 507000
                    raise NpuError(
                        f"memory pool 0x{self.handle:x}: {size} more bytes would exceed its maxSize ({self.max_size} "
                        f"bytes; {self.reserved} reserved, {self.used} in use)", C.ACL_ERROR_RT_INTERNAL_ERROR)
                addr = self.ops.malloc(self.device, size)
                seg = Segment(addr, size)
                self.reserved += size
                self.reserved_high = max(self.reserved_high, self.reserved)
            self.live[seg.addr] = seg
            self.used += seg.size
            self.used_high = max(self.used_high, self.used)
            return seg.addr

    def _reusable(self, size: int, stream) -> Segment | None:
        """The best-fitting idle segment `stream` may use now (caller holds the lock)."""
        i = bisect.bisect_left(self.idle_sizes, size)
        for k in range(i, len(self.idle_sizes)):
            candidates = self.idle[self.idle_sizes[k]]
            for j, seg in enumerate(candidates):
                same = seg.stream is stream or seg.stream is None
                if same:
                    ok = True   # stream order: its later work runs after the free
                elif seg.stream.completed_seq >= seg.seq and self.reuse[C.ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC]:
                    ok = True   # the freeing work has finished
                elif self.reuse[C.ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES] and seg.event is not None:
                    self.ops.wait(stream, seg.event)  # the allocating stream waits for the free
                    ok = True
                else:
                    ok = False
                if ok:
                    del candidates[j]
                    if not candidates:
                        del self.idle[seg.size]
                        del self.idle_sizes[k]
                    self._drop_event(seg)
                    return seg
        return None

    def free_async(self, ptr: int, stream) -> None:
        with self.lock:
            self._check_alive()
            seg = self.live.pop(ptr, None)
            if seg is None:
                raise InvalidValueError(f"0x{ptr:x} is not an allocation of this memory pool in use")
            self.used -= seg.size
            seg.stream, seg.seq = stream, stream.enqueued_seq
            seg.event = self.ops.record(stream) if self.reuse[C.ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES] else None
            lst = self.idle.get(seg.size)
            if lst is None:
                lst = self.idle[seg.size] = []
                bisect.insort(self.idle_sizes, seg.size)
            lst.append(seg)
            if self.reserved - self.used > self.threshold:
                self._release_idle(self.threshold)

    def contains(self, ptr: int) -> bool:
        return ptr in self.live

    # ------------------------------------------------------------ giving memory back
    def _release_idle(self, keep: int) -> int:
        """Give idle segments whose freeing work has finished back to the device until at
        most `keep` idle bytes remain (largest first); bytes released."""
        released = 0
        for size in sorted(self.idle_sizes, reverse=True):
            lst = self.idle[size]
            for seg in list(lst):
                if self.reserved - self.used <= keep:
                    break
                if seg.stream is not None and seg.stream.completed_seq < seg.seq:
                    continue  # queued work still uses it
                lst.remove(seg)
                self._drop_event(seg)
                self.ops.free(seg.addr)
                self.reserved -= seg.size
                released += seg.size
            if not lst:
                del self.idle[size]
                self.idle_sizes.remove(size)
        return released

    def trim_to(self, keep: int) -> None:
        with self.lock:
            self._check_alive()
            self._release_idle(keep)

    def destroy(self) -> None:
        with self.lock:
            self._check_alive()
            if self.live:
                raise NpuError(f"memory pool 0x{self.handle:x} still has {len(self.live)} allocation(s) in use; "
                               "free them (aclrtMemPoolFreeAsync) before destroying the pool",
                               C.ACL_ERROR_RT_INTERNAL_ERROR)  # RT_ERROR_POOL_OP_INVALID
            for lst in self.idle.values():
                for seg in lst:
                    if seg.stream is not None and seg.stream.completed_seq < seg.seq:
                        seg.stream.synchronize(seg.seq, report_errors=False)
                    self._drop_event(seg)
                    self.ops.free(seg.addr)
            self.idle.clear()
            self.idle_sizes.clear()
            self.reserved = 0
            self.destroyed = True

    def _drop_event(self, seg: Segment) -> None:
        if seg.event is not None:
            self.ops.drop(seg.event)
            seg.event = None

    # ------------------------------------------------------------ attributes
    def get_attr(self, attr: int) -> int:
        with self.lock:
            self._check_alive()
            if attr in REUSE_ATTRS:
                return self.reuse[attr]
            values = {C.ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD: self.threshold,
                      C.ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT: self.reserved,
                      C.ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH: self.reserved_high,
                      C.ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT: self.used,
                      C.ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH: self.used_high}
            if attr not in values:
                raise ParamInvalidError(f"memory pool attribute {attr!r} is not an aclrtMemPoolAttr value (1-8)")
            return values[attr]

    def set_attr(self, attr: int, value: int) -> None:
        with self.lock:
            self._check_alive()
            if attr in READ_ONLY_ATTRS:
                raise ParamInvalidError(f"memory pool attribute {attr} is read-only and does not support setting")
            if type(value) is not int or value < 0:
                raise ParamInvalidError(f"memory pool attribute value must be a non-negative int, got {value!r}")
            if attr in REUSE_ATTRS:
                self.reuse[attr] = 1 if value else 0
            elif attr == C.ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD:
                self.threshold = value
            elif attr in (C.ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH, C.ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH):
                if value != 0:  # a high-water mark can only be reset
                    raise ParamInvalidError("a memory pool's high-water mark can only be reset (set to 0)")
                if attr == C.ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH:
                    self.reserved_high = self.reserved
                else:
                    self.used_high = self.used
            else:
                raise ParamInvalidError(f"memory pool attribute {attr!r} is not an aclrtMemPoolAttr value (1-8)")

    def _check_alive(self) -> None:
        if self.destroyed:
            raise ParamInvalidError("the memory pool was destroyed")
