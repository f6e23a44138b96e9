"""A logical device: its driver device, memory manager, scheduler, contexts and limits."""
from __future__ import annotations

import itertools
import threading
import time
from typing import TYPE_CHECKING

from .errors import ContextError, ResourceExhaustedError
from .memory import DeviceMemory
from .scheduler import Scheduler
from .stream import Stream
from .vmm import VirtualMemory

# the kernel stacks of RawDevice::AllocStackPhyBaseForCloudV2, (32 + 16) KiB x (50 + 25) cores,
# held in 2 MiB pages (4 MiB): the rest of the device stays one run of huge pages
RUNTIME_STACKS = (32 + 16) * 1024 * 75
STACK_PAGE = 2 << 20
RUNTIME_HELD = -(-RUNTIME_STACKS // STACK_PAGE) * STACK_PAGE

if TYPE_CHECKING:
    from ..driver import DeviceBackend
    from .context import Context
    from .runtime import Runtime


class Device:
    """One visible device (logical id = index in ASCEND_RT_VISIBLE_DEVICES order)."""

    def __init__(self, runtime: "Runtime", logical_id: int, backend: "DeviceBackend"):
        settings = runtime.settings
        self.runtime = runtime
        self.id = logical_id
        self.backend = backend
        self.spec = backend.spec
        self.memory = DeviceMemory(backend, poison=settings.poison_freed)
        self.vmm = self.memory.vmm = VirtualMemory(self)
        self.scheduler = Scheduler(self, settings.workers)
        self.lock = threading.RLock()
        self.default_context: Context | None = None
        self.set_count = 0          # set_device reference count
        # while the last reset_device's release runs: (releasing thread, done); a set_device in
        # another thread waits for it, or it would get the context and memory being freed
        self.releasing: tuple[int, threading.Event] | None = None
        self.contexts: set[Context] = set()
        self.events: set = set()
        self.finishing: set = set()  # force-destroyed streams whose queued work still runs
        # bumped by every enqueue and capture start on the device's streams: while it has not
        # moved since every stream was found drained, they still are (drained_since)
        self.work_epoch = 0
        self._drained_at = -1
        # the streams given work or a capture since they were last found drained: only they can
        # be busy, hold a failure or be capturing, so neither drained() nor synchronize_device
        # walks the other streams (a device with hundreds of streams and one busy is common)
        self.touched: dict = {}  # (a dict as an ordered set: a destroyed stream leaves it at once)
        self._drain_lock = threading.Lock()
        self.max_streams = settings.max_streams or self.spec.max_streams
        self.max_events = self.spec.max_events
        self.stream_count = 0
        self.event_count = 0
        self.stream_ids = itertools.count(0)
        self.event_ids = itertools.count(0)
        self.peer_access: set[int] = set()   # logical ids this device may access
        self.boot_ns = time.perf_counter_ns()
        self.sat_mode = 1  # ACL_RT_OVERFLOW_MODE_INFNAN
        self.res_limits: dict[int, int] = {}  # aclrtDevResLimitType -> cores kernels may use (absent: all)
        self.runtime_memory: int | None = None  # offset of what the runtime holds while the device is open

    def open_memory(self) -> None:
        """What the runtime itself holds on a device once it is open (its first context), until
        the device is released: the AI Core / Vector Core kernel stacks a real runtime allocates
        at device init (RawDevice::AllocStackPhyBaseForCloudV2: 32 KiB and 16 KiB for each of 75
        cores, RT_SCALAR_BUFFER_SIZE_32K_75 / _16K_75 in spec/base_info.hpp), so aclrtGetMemInfo's
        free is below its total on an open device, as on a real one."""
        with self.lock:
            if self.runtime_memory is None:
                self.runtime_memory = self.backend.map_pages(RUNTIME_HELD, STACK_PAGE)

    def memory_released(self) -> None:
        """The backend was reset (the device released): the runtime's own memory went with it."""
        self.runtime_memory = None

    def __repr__(self) -> str:
        return f"<npurt device {self.id} ({self.spec.name}, physical {self.backend.physical_id})>"

    def new_stream(self, context: "Context", priority: int = 0, flags: int = 0,
                   is_default: bool = False) -> "Stream":
        stream = Stream(context, priority, flags, is_default)
        with self.lock:  # checked and counted with the context's teardown excluded
            if context.closing:
                raise ContextError("the context was destroyed (or its device reset) while this stream was "
                                   "being created; set a device or context again")
            if self.stream_count >= self.max_streams:
                raise ResourceExhaustedError(
                    f"device {self.id} has no stream left: {self.stream_census()}. Destroy streams "
                    "(and graphs: aclmdlRIDestroy) you no longer need, or raise the limit with NPURT_MAX_STREAMS.")
            self.stream_count += 1
            if not is_default:
                context.streams.add(stream)
        stream.handle = self.runtime.streams.add(stream)
        return stream

    def stream_census(self) -> str:
        """Who holds the device's streams, for the out-of-streams message (issue 25): "1,980 of
        1,984 in use: 1,200 held by 40 captured graphs, ..." (callers hold self.lock)."""
        defaults = graph_held = capturing = bound = other = 0
        graphs = set()
        for ctx in list(self.contexts):
            if ctx.default_stream is not None:
                defaults += 1
            for s in list(ctx.streams):
                if s.held_by is not None:
                    graph_held += 1
                    graphs.add(s.held_by)
                elif s.capture is not None and hasattr(s.capture, "lanes"):
                    capturing += 1
                elif s.capture is not None and hasattr(s.capture, "program"):
                    bound += 1
                else:
                    other += 1
        parts = [f"{graph_held:,} held by {len(graphs):,} captured graph(s) (their joined lanes and "
                 "aclmdlRIExecute streams)" if graph_held else None,
                 f"{capturing:,} being captured" if capturing else None,
                 f"{bound:,} bound to built models" if bound else None,
                 f"{other:,} created by the application", f"{defaults:,} default stream(s) of contexts",
                 f"{len(self.finishing):,} destroyed with work still running" if self.finishing else None]
        return (f"{self.stream_count:,} of {self.max_streams:,} in use: "
                + ", ".join(p for p in parts if p))

    def release_stream(self, stream: "Stream") -> None:
        """Free a stream's slot and handle, once (racing destroyers, a context's teardown and
        a garbage-collected Pythonic Stream may all get here)."""
        with self.lock:
            if stream.destroyed:
                return
            stream.destroyed = True
            self.stream_count -= 1
            stream.context.streams.discard(stream)
        self.runtime.streams.remove(stream.handle)
        recorder = stream.capture  # a graph capture it was in ends with it (graph.Capture.abandon)
        if recorder is not None:
            stream.capture = None
            abandon = getattr(recorder, "abandon", None)
            if abandon is not None:
                abandon(stream)
        if stream.touched and stream.completed_seq >= stream.enqueued_seq:
            with self._drain_lock:  # done: nothing to wait for (work still queued keeps it there)
                stream.touched = False
                self.touched.pop(stream, None)

    def drained(self) -> bool:
        """True if every stream has retired all it was given, holds no failure and is not
        being captured; the host has then waited for each (the inline-execution streak starts
        again). O(1) while nothing was enqueued since the last time it was true: a stream
        changes from drained only by an enqueue or a capture start (both move `work_epoch` and
        put the stream on `touched`); retiring, reporting a failure and creating or destroying
        streams cannot undrain it. Otherwise it looks at the touched streams only."""
        epoch = self.work_epoch  # read before the scan: an enqueue during it moves it on
        if epoch == self._drained_at:
            return True
        with self._drain_lock:
            # take the list and clear each flag *before* looking at its stream: an enqueue that
            # comes after a stream was looked at finds its flag clear and puts it on the new list
            pending, self.touched = self.touched, {}
            for s in pending:
                s.touched = False
            clean = True
            for s in pending:
                if s.completed_seq < s.enqueued_seq or s.error is not None or s.capture is not None:
                    clean = False
                    break
            if not clean:
                for s in pending:  # all of them stay touched until a scan finds them all drained
                    if not s.touched:
                        s.touched = True
                        self.touched[s] = None
                return False
            for s in pending:
                s.streak = 0
            self._drained_at = epoch
            return True

    def touch(self, stream) -> None:
        """`stream` is given work or starts a capture: the device is not drained."""
        self.work_epoch += 1
        if not stream.touched:
            stream.touched = True
            self.touched[stream] = None

    def busy_streams(self) -> list["Stream"]:
        """The streams that may have work queued, a failure or a capture (a superset), in the
        order they were given work: what synchronize_device waits for. Under the drain lock:
        a drained() in another thread empties the set for the moment it looks at the streams."""
        with self._drain_lock:
            return list(self.touched)

    def all_streams(self) -> list["Stream"]:
        streams = []
        for ctx in list(self.contexts):
            streams.append(ctx.default_stream)
            streams.extend(list(ctx.streams))
        for s in list(self.finishing):  # a reset or finalize waits for their work too
            if s.completed_seq < s.enqueued_seq:
                streams.append(s)
            else:
                self.finishing.discard(s)
        return streams
