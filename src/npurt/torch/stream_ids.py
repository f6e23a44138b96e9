"""torch_npu's stream ids and stream pools, over npurt's runtime streams.

torch_npu (torch_npu/csrc/core/npu/NPUStream.cpp) never hands a new hardware stream to
`torch.npu.Stream()`: it takes the next one, round robin, of a pool of 32 per device and
priority class, made on first use and kept for the process. A stream's id (the `stream_id` of
its torch.Stream, what `torch.npu.Stream(stream_id=, device_index=, device_type=)` rebuilds it
from) encodes where it comes from:

| bits | kind | id |
| --- | --- | --- |
| type << 5 \\| index | DEFAULT (0), SECONDARY (1), SYNCLAUNCH (2), NORMAL (3), HIGH (4) | index: 0 for the default stream, 0-31 in a pool, 0-3 in the sync-launch pool |
| 1 << 30 \\| index | EXT | index: the n-th external stream registered on the device |

`priority` picks the pool: `clamp(-priority, 0, 1)`, so 0 and positive values are NORMAL and
negative ones HIGH (`stream_id >> 5` is 3 or 4); every pool stream is created with ACL priority
0, as torch_npu creates them. `is_sync_launch=True` takes one of the 4 sync-launch streams.
`ExternalStream(handle)` registers a stream made outside torch (`npuStreamCreate`,
`acl.rt.create_stream`) under the next EXT index of its device; the same handle gets the same
id. npurt's own streams (`npurt.Stream()`, made current with `npurt.stream(...)`) are outside
torch_npu's pools too: they get EXT ids, held weakly, so the stream still goes when its owner
drops it; only streams registered through `ExternalStream` carry torch_npu's external-stream
restrictions (`is_external`). torch_npu's `STREAMS_PER_DEVICE=8` option (3 index bits) is not
modelled: pools hold 32.

Rebuilding an id that does not name a live stream of this process fails at once, with
torch_npu's messages (`NPUStream_internals`). A forked child starts with empty pools (the
parent's streams do not exist there).
"""
from __future__ import annotations

import weakref

from .. import streams as _np_streams
from ..runtime import RUNTIME, fork_safe_lock, on_fork_child

STREAMS_PER_POOL_BITS = 5
STREAMS_PER_POOL = 1 << STREAMS_PER_POOL_BITS
SYNC_LAUNCH_STREAMS = 4
MAX_PRIORITIES = 2
EXTERNAL_MARKER = 1 << 30
EXTERNAL_INDEX_MASK = EXTERNAL_MARKER - 1

DEFAULT, SECONDARY, SYNCLAUNCH, NORMAL, HIGH, EXT = 0, 1, 2, 3, 4, 5

_lock = fork_safe_lock()


class _Registry:
    def __init__(self):
        self.pools: dict = {}                   # (device, kind) -> [runtime stream or None] * size
        self.owners: list = []                  # the npurt.Streams that own the pool streams
        self.counters: dict = {}                # (device, kind) -> streams handed out so far
        self.held: dict = {}                    # (device, id) -> runtime stream, kept for the process
        self.loose = weakref.WeakValueDictionary()  # (device, id) -> npurt stream made outside torch
        self.ids = weakref.WeakKeyDictionary()  # runtime stream -> its id
        self.externals: dict = {}               # device -> EXT indexes handed out
        self.external_handles: dict = {}        # (device, handle) -> id (ExternalStream registrations)
        self.external_ids: set = set()          # (device, id) registered through ExternalStream


_reg = _Registry()


def _reset_after_fork() -> None:
    global _reg
    _reg = _Registry()


on_fork_child(_reset_after_fork)


def make_id(kind: int, index: int) -> int:
    if kind == EXT:
        return EXTERNAL_MARKER | index
    return (kind << STREAMS_PER_POOL_BITS) | index


def kind_of(stream_id: int) -> int:
    if stream_id & EXTERNAL_MARKER:
        return EXT
    return (stream_id & 0xFFFFFFFF) >> STREAMS_PER_POOL_BITS


def index_of(stream_id: int) -> int:
    if stream_id & EXTERNAL_MARKER:
        return stream_id & EXTERNAL_INDEX_MASK
    return stream_id & (STREAMS_PER_POOL - 1)


def from_pool(device: int, priority: int = 0, sync_launch: bool = False):
    """The next stream of `device`'s pool for `priority` (or of its sync-launch pool), made on
    first use; returns (runtime stream, id)."""
    if sync_launch:
        kind, size = SYNCLAUNCH, SYNC_LAUNCH_STREAMS
    else:
        kind, size = NORMAL + min(max(-int(priority), 0), MAX_PRIORITIES - 1), STREAMS_PER_POOL
    with _lock:
        reg = _reg
        pool = reg.pools.setdefault((device, kind), [None] * size)
        n = reg.counters.get((device, kind), 0)
        reg.counters[(device, kind)] = n + 1
        index = n % size
        rt = pool[index]
        if rt is None or rt.destroyed:
            # torch_npu: AclrtCreateStreamWithConfig(&stream, 0, ...), ACL priority 0. The
            # npurt.Stream owns (and on collection destroys) its runtime stream: keep it too.
            owner = _np_streams.Stream(device=device, priority=0)
            rt = owner.runtime_stream
            pool[index] = rt
            reg.owners.append(owner)
            reg.held[(device, make_id(kind, index))] = rt
            reg.ids[rt] = make_id(kind, index)
    return rt, make_id(kind, index)


def register_external(device: int, handle: int):
    """ExternalStream(handle) on `device`: (runtime stream, id); the same handle, the same id."""
    rt = RUNTIME.streams.lookup(handle) if type(handle) is int else None
    if rt is None or rt.destroyed:
        raise RuntimeError(f"{handle!r} is not the handle (aclrtStream) of a live stream of this process: "
                           "an external stream is made with torch_npu.npu.npurt().npuStreamCreate or "
                           "acl.rt.create_stream")
    if rt.device.id != device:
        raise RuntimeError(f"the external stream {handle:#x} belongs to npu:{rt.device.id}, not npu:{device}: "
                           "pass device= the device it was created on")
    with _lock:
        reg = _reg
        sid = reg.external_handles.get((device, handle))
        if sid is None:
            known = reg.ids.get(rt)
            if known is not None and kind_of(known) == EXT:
                sid = known  # an npurt stream torch had seen already keeps its id
            else:
                sid = _next_external(reg, device)
                if known is None:
                    reg.ids[rt] = sid
            reg.external_handles[(device, handle)] = sid
            reg.held[(device, sid)] = rt
            reg.external_ids.add((device, sid))
    return rt, sid


def _next_external(reg: _Registry, device: int) -> int:
    n = reg.externals.get(device, 0)
    if n > EXTERNAL_INDEX_MASK:
        raise RuntimeError("Too many external NPU streams are registered.")
    reg.externals[device] = n + 1
    return make_id(EXT, n)


def id_of(rt) -> int:
    """The torch_npu id of runtime stream `rt` (an EXT id, held weakly, for one made outside torch)."""
    reg = _reg
    sid = reg.ids.get(rt)
    if sid is not None:
        return sid
    device = rt.device.id
    if rt.is_default and rt is _np_streams.default_runtime_stream(device):
        return make_id(DEFAULT, 0)
    with _lock:
        sid = reg.ids.get(rt)
        if sid is None:
            sid = _next_external(reg, device)
            reg.ids[rt] = sid
            reg.loose[(device, sid)] = rt
    return sid


def is_external(device: int, stream_id: int) -> bool:
    """True for a stream registered through ExternalStream (torch_npu's isExternalStreamId)."""
    return (device, stream_id) in _reg.external_ids


def lookup(device: int, stream_id: int):
    """The live runtime stream of (device, id), or RuntimeError with torch_npu's message."""
    kind, index = kind_of(stream_id), index_of(stream_id)
    reg = _reg
    if kind == EXT:
        rt = reg.held.get((device, stream_id)) or reg.loose.get((device, stream_id))
        if rt is None:
            raise RuntimeError(f"Unrecognized external NPU stream {stream_id} on npu:{device}")
    elif kind == DEFAULT:
        if index != 0:
            raise RuntimeError(f"Unrecognized stream {stream_id} (I think this should be the default stream, but I "
                               f"got a non-zero index {index}). Did you manufacture the StreamId yourself?  Don't do "
                               "that; use the official API like torch.npu.Stream() to get a new stream.")
        return _np_streams.default_runtime_stream(device)
    elif kind in (NORMAL, HIGH):
        rt = reg.held.get((device, stream_id))
        if rt is None:
            raise RuntimeError(f"Uninitialized NPU stream {stream_id} Did you manufacture the StreamId yourself?  "
                               "Don't do that; use the official API like torch.npu.Stream() to get a new stream.")
    elif kind == SECONDARY:
        raise RuntimeError(f"Uninitialized secondary NPU stream for device {device}")
    elif kind == SYNCLAUNCH:
        if index >= SYNC_LAUNCH_STREAMS:
            raise RuntimeError(f"Invalid sync launch stream index {index} for NPU stream {stream_id} "
                               f"(pool size is {SYNC_LAUNCH_STREAMS})")
        rt = reg.held.get((device, stream_id))
        if rt is None:
            raise RuntimeError(f"Uninitialized sync launch NPU stream for device {device}, index {index}")
    else:
        raise RuntimeError(f"Unrecognized stream {stream_id} (I didn't recognize the stream type, {kind})")
    if rt.destroyed:
        raise RuntimeError(f"stream {stream_id} of npu:{device} was destroyed")
    return rt
