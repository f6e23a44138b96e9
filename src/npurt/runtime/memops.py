"""Copies and sets: where the two addresses really are, whether the call may do what it
asks, and the copy itself.

The checks come in the order CANN makes them (aclrt_memory.cpp, then api_error.cc): a count
of 0 is a successful no-op before anything else; null pointers and unknown kinds are the ACL
layer's ACL_ERROR_INVALID_PARAM; count > dest_max is the runtime's ACL_ERROR_RT_PARAM_INVALID.
Then every address is located before anything moves: device addresses must lie inside a
live allocation of a visible device (up to its usable end: ALIGN_UP(size, 32) + 32 bytes, as
ACL pads allocations), host addresses must be mapped. Errors name what each address really is.

The kind: the hardware copies by address (the driver's drvMemcpy takes no kind, and
MemcpyKindAutoCorrect in api_error.cc replaces a kind that contradicts device or pinned
addresses), so a contradicting kind is copied as the addresses say, with one warning per
call site (MemcpyKindWarning) and a memcpy_kind observer event. memcpy_async with pageable
host memory only allows the kinds the runtime allows for it (else 107000).
NPURT_MEMCPY_KIND=strict refuses every contradicting kind instead.

A synchronous copy first waits, briefly, for the tasks in flight that write its source
(await_writers). The real one waits for no stream: aclrtMemcpyImpl
(src/acl/aclrt_impl/memory.cpp) calls ApiImpl::MemCopySync (src/runtime/api/impl/api_impl.cc),
a driver copy (NpuDriver::MemCopySync, src/runtime/driver/npu_driver_mem.cc). A program that
launches a kernel and at once copies its output (hicann/runtime's
example/1_basic_features/memory/5_d2d_sync_memory_copy) passes on hardware by timing: the
kernel starts within microseconds and is done before the driver reads. npurt's launch is
slower, so the copy would read what was there before. The wait models that timing, not an
ordering: only writers of the source range (a kernel whose pointer argument points into the
source allocation, a queued copy or set whose destination overlaps it; not readers, not
tasks using only the destination), only those that can run now (running, or nothing gated
ahead of them on their stream: no event or notify wait not yet satisfied, host function,
callback or anything else waiting for the host: Task.gated), and only while their stream
makes progress (WRITER_STALL_S without a task retiring or starting) up to WRITER_CAP_S in
all; then the copy proceeds as it would have. It is unobserved (no host_wait event), so the
sanitizer still reports the race. With nothing in flight on the source allocation the check
is one attribute test.

Copies are single numpy copies over byte views, which run at memory bandwidth and release
the GIL.
"""
from __future__ import annotations

import os
import sys
import warnings
from time import monotonic, perf_counter_ns
from typing import TYPE_CHECKING

import numpy as np

from . import address
from .address import Span, _quick, dead_address_message, locate, record_use, refused  # noqa: F401 - re-exported
from . import constants as C
from .errors import (AddressUnalignedError, FeatureNotSupportedError, InvalidValueError, MemcpyKindWarning,
                     ParamInvalidError, as_int)
from .context import current_context
from .interrupts import held
from . import graph
from .observers import HOOKS
from .stream import Stream, enqueue_array_copy, enqueue_copy
from .tasks import ArrayCopyTask, Copy2dTask, CopyTask, MemsetTask, copy2d

if TYPE_CHECKING:
    from .runtime import Runtime

H2H, H2D, D2H, D2D = (C.ACL_MEMCPY_HOST_TO_HOST, C.ACL_MEMCPY_HOST_TO_DEVICE,
                      C.ACL_MEMCPY_DEVICE_TO_HOST, C.ACL_MEMCPY_DEVICE_TO_DEVICE)
KIND_NAMES = {
    C.ACL_MEMCPY_HOST_TO_HOST: "ACL_MEMCPY_HOST_TO_HOST",
    C.ACL_MEMCPY_HOST_TO_DEVICE: "ACL_MEMCPY_HOST_TO_DEVICE",
    C.ACL_MEMCPY_DEVICE_TO_HOST: "ACL_MEMCPY_DEVICE_TO_HOST",
    C.ACL_MEMCPY_DEVICE_TO_DEVICE: "ACL_MEMCPY_DEVICE_TO_DEVICE",
    C.ACL_MEMCPY_DEFAULT: "ACL_MEMCPY_DEFAULT",
    C.ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE",
    C.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE: "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE",
    C.ACL_MEMCPY_INTER_DEVICE_TO_DEVICE: "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE",
}
# the kinds aclrtMemcpy / aclrtMemcpyAsync accept (aclrt_memory.cpp MemcpyKindTranslate)
COPY_KINDS = (0, 1, 2, 3, C.ACL_MEMCPY_DEFAULT, C.ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE)
# what each kind asserts about (dst, src); DEFAULT asserts nothing
_KIND_DIRECTION = {0: H2H, 1: H2D, 2: D2H, 3: D2D, 5: H2D, 6: D2D, 7: D2D}
# memcpy_async with pageable host memory: the kinds the runtime lets through, by (source is
# pageable / pinned host / device, destination likewise): api_error.cc MemcpyKindReviseMap
_PAGEABLE, _PINNED, _DEVICE = "pageable", "pinned", "device"
_ASYNC_ALLOWED = {
    (_PAGEABLE, _DEVICE): (H2D, D2D), (_DEVICE, _PAGEABLE): (D2H, D2D),
    (_PINNED, _PAGEABLE): (H2H, H2D), (_PAGEABLE, _PINNED): (H2H, D2H),
    (_PAGEABLE, _PAGEABLE): (H2H, H2D, D2H, D2D),
}
SHORT = {H2H: "H2H", H2D: "H2D", D2H: "D2H", D2D: "D2D"}
# (destination is host, source is host) -> the copy's real direction
DIRECTION = {(True, True): H2H, (True, False): D2H, (False, True): H2D, (False, False): D2D}
_VA_BASE = address.VA_BASE


def check_kind(rt: "Runtime", kind, dst: Span, src: Span, op: str = "memcpy", nbytes: int = 0,
               pageable_rule: bool = False, executor=None) -> int:
    """The copy's real direction. A kind that contradicts the addresses is copied by address
    (warned once per call site), refused in strict mode, and refused (107000) by memcpy_async
    (`pageable_rule`) with pageable host memory when the runtime does not allow it. A copy
    between two devices needs peer access from the device that runs it (`executor`: the
    stream's, or the current device) to the other one: peer access is per direction."""
    actual = DIRECTION[dst.device is None, src.device is None]
    if (kind == actual or kind == C.ACL_MEMCPY_DEFAULT) and type(kind) is int and (
            actual != D2D or dst.device is src.device):
        return actual  # the common case: nothing to explain
    check_copy_kind(kind)
    claimed = _KIND_DIRECTION.get(kind)
    if claimed is not None and claimed != actual:
        _kind_mismatch(rt, op, kind, actual, dst, src, nbytes, pageable_rule)
    if actual == D2D and src.device is not dst.device:
        runner = executor or src.device
        for other in (src.device, dst.device):
            if other is not runner and other.id not in runner.peer_access:
                raise InvalidValueError(
                    f"copy between device {src.device.id} and device {dst.device.id} runs on device {runner.id}, "
                    f"which has no peer access to device {other.id}: call device_enable_peer_access({other.id}, 0) "
                    f"with device {runner.id} current (peer access is per direction)")
    return actual


def check_copy_kind(kind) -> None:
    """ACL_ERROR_INVALID_PARAM for a kind aclrtMemcpy does not know (MemcpyKindTranslate)."""
    if type(kind) is not int or kind not in COPY_KINDS:
        raise InvalidValueError(f"unknown memcpy kind {kind!r}; use ACL_MEMCPY_HOST_TO_HOST (0), HOST_TO_DEVICE (1), "
                                "DEVICE_TO_HOST (2), DEVICE_TO_DEVICE (3), DEFAULT (4) or HOST_TO_BUF_TO_DEVICE (5)")


def _where(span: Span) -> str:
    return _DEVICE if span.device is not None else (_PINNED if span.pinned else _PAGEABLE)


def _kind_mismatch(rt, op: str, kind: int, actual: int, dst: Span, src: Span, nbytes: int,
                   pageable_rule: bool) -> None:
    site = call_site()
    allowed = _ASYNC_ALLOWED.get((_where(src), _where(dst))) if pageable_rule else None
    strict = rt.settings.memcpy_kind == "strict"
    refused_ = strict or (allowed is not None and _KIND_DIRECTION[kind] not in allowed)
    if HOOKS.active:
        HOOKS.emit("memcpy_kind", op=op, kind=kind, actual=actual, dst=dst.addr, src=src.addr, nbytes=nbytes,
                   site=site, refused=refused_)
    what = (f"{op}: kind {KIND_NAMES[kind]} ({kind}) contradicts the addresses (destination {dst.describe()}, "
            f"source {src.describe()}): this copy is {KIND_NAMES[actual]} ({actual})")
    if strict:
        raise refused("kind_mismatch", dst.addr, 0, dst.device,
                      f"{what}. Pass that kind or ACL_MEMCPY_DEFAULT (NPURT_MEMCPY_KIND=strict refuses "
                      "contradicting kinds; by default the copy goes by address, as on the hardware)")
    if refused_:
        names = ", ".join(KIND_NAMES[k] for k in allowed)
        raise ParamInvalidError(f"{what}; with pageable host memory memcpy_async accepts only {names} or "
                                "ACL_MEMCPY_DEFAULT here")
    if site not in _WARNED:
        _WARNED.add(site)
        filename, lineno = site if site is not None else ("<unknown>", 0)
        warnings.warn_explicit(f"{what}; copied as {KIND_NAMES[actual]}, as the hardware copies by address. "
                               f"Pass {KIND_NAMES[actual]} or ACL_MEMCPY_DEFAULT (this warning is given once "
                               "per call site; NPURT_MEMCPY_KIND=strict refuses such copies)",
                               MemcpyKindWarning, filename, lineno)


_WARNED: set = set()  # call sites already warned about a contradicting memcpy kind
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def call_site() -> tuple[str, int] | None:
    """(filename, line) of the innermost caller outside npurt (and its generated wrappers)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(_PACKAGE) or name.startswith("<npurt")):
            return name, frame.f_lineno
        frame = frame.f_back
    return None


def _check_counts(dest_max, count) -> tuple[int, int]:
    """(dest_max, count) as ints; an error if negative, ACL_ERROR_RT_PARAM_INVALID if count >
    dest_max (api_error.cc MemCopySync / MemcpyAsync / MemsetAsync)."""
    if type(count) is not int or type(dest_max) is not int:
        dest_max, count = as_int(dest_max, "dest_max"), as_int(count, "count")
    if dest_max < 0 or count < 0:
        raise InvalidValueError(f"dest_max and count must be non-negative, got {dest_max} and {count}")
    if count > dest_max:
        raise ParamInvalidError(f"count ({count}) is larger than dest_max ({dest_max}), the capacity "
                                "of the destination")
    return dest_max, count


def _check_null(*addrs) -> None:
    """The ACL layer's null checks (ACL_REQUIRES_NOT_NULL: ACL_ERROR_INVALID_PARAM)."""
    for role, addr in zip(("destination", "source"), addrs):
        if addr is None or addr == 0:
            raise InvalidValueError(f"the {role} address is null")


# ---------------------------------------------------------------- synchronous
WRITER_STALL_S = 1.0  # a writer's stream that neither retires nor starts a task for this long is stuck
WRITER_CAP_S = 2.0    # the most one synchronous copy waits for writers of its source, in all


def await_writers(span: Span, nbytes: int) -> None:
    """Wait, unobserved and bounded, for the runnable tasks in flight that write
    [span.addr, span.addr + nbytes) (see the module docstring), then return."""
    block = span.block
    uses = block.uses
    lo, hi = span.addr, span.addr + nbytes
    give_up = None
    for stream, last in list(uses.items()):
        if not isinstance(stream, Stream) or stream.completed_seq >= last:
            continue  # a graph's hold (it runs no tasks), or done
        if stream.scheduler.controlled is not None:
            continue  # a controlled schedule (tests): its device moves only when polled
        seq = _runnable_writer(stream, last, block, lo, hi)
        if seq:
            if give_up is None:
                give_up = monotonic() + WRITER_CAP_S
            _await_retired(stream, seq, give_up)


def _runnable_writer(stream: Stream, last: int, block, lo: int, hi: int) -> int:
    """The sequence number of the last task up to `last` of `stream` that writes [lo, hi)
    of `block` and can run now (running, or nothing gated ahead of it); 0 if none."""
    current = stream.current
    done, dropped = stream.completed_seq, stream.dropped_upto
    found = 0
    for task in tuple(stream.queue):  # a snapshot (one C call: no enqueue can interleave)
        seq = task.seq
        if seq > last:
            break
        if seq <= done or seq <= dropped:
            continue  # retired, or dropped: it writes nothing
        gated = task.gated()
        if task.writes(block, lo, hi):
            if gated and task is not current:
                break
            found = seq
        if gated:
            break  # what is queued behind it waits for something the copy must not wait for
    return found


def _await_retired(stream: Stream, seq: int, give_up: float) -> None:
    """Wait until task `seq` of `stream` retired, the stream stalls (WRITER_STALL_S with no
    task retiring or starting) or `give_up` passes. Not a synchronize: nothing is observed,
    nothing runs inline, nothing is raised."""
    cond = stream.cond
    progress = (stream.completed_seq, stream.current)
    stall = min(monotonic() + WRITER_STALL_S, give_up)
    while stream.completed_seq < seq and stream.dropped_upto < seq:
        now = monotonic()
        if now >= stall:
            return
        with held(cond):
            stream.waiters += 1  # notify_retired wakes us (it tests waiters after the store)
            try:
                if stream.completed_seq < seq:
                    cond.wait(min(stall - now, 0.05))  # a slice: `current` changes notify nobody
            finally:
                stream.waiters -= 1
        now_progress = (stream.completed_seq, stream.current)
        if now_progress != progress:
            progress = now_progress
            stall = min(monotonic() + WRITER_STALL_S, give_up)


def memcpy(rt: "Runtime", dst, dest_max, src, count, kind) -> None:
    """Immediate copy in the calling thread (no implicit stream synchronization)."""
    if count == 0 and type(count) is int:
        return  # aclrtMemcpyImpl: count 0 succeeds before any check
    _check_null(dst, src)
    check_copy_kind(kind)
    dest_max, count = _check_counts(dest_max, count)
    d = locate(rt, dst, count, "destination")
    s = locate(rt, src, count, "source")
    runner = current_context().device if d.device is not None and s.device is not None else None
    direction = check_kind(rt, kind, d, s, "memcpy", count, executor=runner)
    if count and d.addr != s.addr:  # MemCopySync: the same address is a no-op
        if s.block is not None and s.block.uses:
            await_writers(s, count)
        if HOOKS.active:
            HOOKS.emit("host_access", addr=s.addr, nbytes=count, mode="r", what="memcpy")
            HOOKS.emit("host_access", addr=d.addr, nbytes=count, mode="w", what="memcpy")
            _observed("memcpy", d.addr, s.addr, count, SHORT[direction], np.copyto, address.view(d.addr, count),
                      address.view(s.addr, count))
        else:
            np.copyto(address.view(d.addr, count), address.view(s.addr, count))


def _observed(op: str, dst: int, src, nbytes: int, direction: str, fn, *args) -> None:
    """Run a synchronous copy or set, then tell observers (host_copy) when it began."""
    t0 = perf_counter_ns()
    fn(*args)
    HOOKS.emit("host_copy", op=op, dst=dst, src=src, nbytes=nbytes, direction=direction, t0_ns=t0)


def memcpy2d(rt: "Runtime", dst, dpitch, src, spitch, width, height, kind, stream=None,
             allowed=(H2D, D2H)) -> None:
    d, s, direction, (dpitch, spitch, width, height) = _check_2d(
        rt, dst, dpitch, src, spitch, width, height, kind, allowed, stream)
    if stream is None:
        if width and height and s.block is not None and s.block.uses:
            await_writers(s, spitch * (height - 1) + width)
        if HOOKS.active:
            if width and height:
                HOOKS.emit("host_access", addr=s.addr, nbytes=spitch * (height - 1) + width, mode="r",
                           what="memcpy2d", width=width, pitch=spitch)
                HOOKS.emit("host_access", addr=d.addr, nbytes=dpitch * (height - 1) + width, mode="w",
                           what="memcpy2d", width=width, pitch=dpitch)
            _observed("memcpy2d", d.addr, s.addr, width * height, SHORT[direction], copy2d, d.addr, dpitch,
                      s.addr, spitch, width, height)
        else:
            copy2d(d.addr, dpitch, s.addr, spitch, width, height)
        return
    seq = stream.enqueue(Copy2dTask(d.addr, dpitch, s.addr, spitch, width, height, SHORT[direction]),
                         holders=(d.block, s.block))
    if not (d.pinned and s.pinned):  # pageable host memory: returns once the copy has run
        stream.synchronize(until=seq, report_errors=False)


def _check_2d(rt, dst, dpitch, src, spitch, width, height, kind, allowed, stream=None):
    dpitch, spitch, width, height = (as_int(v, n) for v, n in (
        (dpitch, "dpitch"), (spitch, "spitch"), (width, "width"), (height, "height")))
    for name, value in (("dpitch", dpitch), ("spitch", spitch), ("width", width), ("height", height)):
        if value < 0:
            raise InvalidValueError(f"{name} must be a non-negative int, got {value!r}")
    if width > dpitch or width > spitch:
        raise InvalidValueError(f"width ({width}) must not exceed dpitch ({dpitch}) or spitch ({spitch})")
    if width > 5_000_000 or height > 5_242_880:
        raise InvalidValueError(f"memcpy2d limits: width <= 5000000 and height <= 5242880 "
                                f"(got {width} x {height})")
    dspan = dpitch * (height - 1) + width if height else 0
    sspan = spitch * (height - 1) + width if height else 0
    d = locate(rt, dst, dspan, "destination")
    s = locate(rt, src, sspan, "source")
    runner = stream.device if stream is not None else (
        current_context().device if d.device is not None and s.device is not None else None)
    direction = check_kind(rt, kind, d, s, "memcpy2d", width * height, executor=runner)
    if direction not in allowed:
        names = " and ".join(KIND_NAMES[k] for k in allowed)
        raise InvalidValueError(f"memcpy2d supports only {names}; this copy is {KIND_NAMES[direction]}")
    return d, s, direction, (dpitch, spitch, width, height)


def memset(rt: "Runtime", ptr, max_count, value, count) -> None:
    if count == 0 and type(count) is int:
        return  # aclrtMemsetImpl: count 0 succeeds before any check
    span, byte, count = _check_set(rt, ptr, max_count, value, count)
    if count:
        view = address.view(span.addr, count)
        if HOOKS.active:
            HOOKS.emit("host_access", addr=span.addr, nbytes=count, mode="w", what="memset")
            _observed("memset", span.addr, None, count, "H" if span.device is None else "D", view.fill, byte)
        else:
            view.fill(byte)


def _check_set(rt, ptr, max_count, value, count):
    if ptr is None or ptr == 0:
        raise InvalidValueError("the memset address is null")
    max_count, count = _check_counts(max_count, count)
    value = as_int(value, "memset value")
    if not -(1 << 31) <= value < (1 << 31):
        raise InvalidValueError(f"memset value must be an int32, got {value!r}")
    return locate(rt, ptr, count, "memset"), value & 0xFF, count


# ---------------------------------------------------------------- asynchronous
def memcpy_async(rt: "Runtime", dst, dest_max, src, count, kind, stream: "Stream",
                 require_aligned: bool = True, keep=None) -> int:
    """Enqueue a copy. With pageable host memory (not malloc_host / host_register) the call
    returns only once the copy is done, as ACL's does, unless `keep` holds the host buffer
    alive (the Pythonic API's choice). Returns the task's sequence number."""
    if type(count) is int and type(dest_max) is int and 0 < count <= dest_max and type(dst) is int \
            and type(src) is int:
        # fast path: block starts and pinned buffers, each end looked up as address._quick
        # does, written out here (two calls fewer: a tenth of a small copy's enqueue)
        if dst >= _VA_BASE:
            ddev = rt.device_by_physical.get((dst - _VA_BASE) >> 40)
            dblock = ddev.memory.live.get(dst) if ddev is not None else None
            dok = dblock is not None and count <= dblock.requested
        else:
            ddev, dblock = None, rt.host.ranges.get(dst)
            dok = dblock is not None and count <= dblock.size and not dblock.readonly
        if dok:
            if src >= _VA_BASE:
                sdev = rt.device_by_physical.get((src - _VA_BASE) >> 40)
                sblock = sdev.memory.live.get(src) if sdev is not None else None
                sok = sblock is not None and count <= sblock.requested
            else:
                sdev, sblock = None, rt.host.ranges.get(src)
                sok = sblock is not None and count <= sblock.size and not sblock.readonly
            if sok:
                direction = DIRECTION[ddev is None, sdev is None]
                if ((kind == direction or kind == C.ACL_MEMCPY_DEFAULT) and type(kind) is int
                        and direction != H2H and (ddev is sdev or ddev is None or sdev is None)
                        and not (require_aligned and (dst | src) & 63)):
                    # the holders: a device block or a pinned host range each
                    if enqueue_copy is not None:  # the same in C (stream.py)
                        return enqueue_copy(stream, dst, src, count, SHORT[direction], keep, dblock, sblock)
                    return stream.enqueue(CopyTask(dst, src, count, SHORT[direction], keep), holders=(dblock, sblock))
    return _memcpy_async_checked(rt, dst, dest_max, src, count, kind, stream, require_aligned, keep)


def _memcpy_async_checked(rt, dst, dest_max, src, count, kind, stream, require_aligned, keep) -> int:
    """memcpy_async with every check and message (anything the fast path does not cover)."""
    if count == 0 and type(count) is int:
        return stream.enqueued_seq  # aclrtMemcpyAsyncImpl: count 0 succeeds, nothing is queued
    _check_null(dst, src)
    check_copy_kind(kind)
    dest_max, count = _check_counts(dest_max, count)
    trusted = keep is not None  # the caller hands us the buffer object: no need to probe it
    d = locate(rt, dst, count, "destination", trusted)
    s = locate(rt, src, count, "source", trusted)
    direction = check_kind(rt, kind, d, s, "memcpy_async", count, pageable_rule=True, executor=stream.device)
    if direction == H2H:
        raise FeatureNotSupportedError(
            "memcpy_async host to host is not supported on a host-attached (EP) device; use memcpy")
    # the 64-byte rule binds device and pinned memory, which the DMA engine reads directly;
    # pageable memory is staged by the runtime (the call is synchronous), so it may be
    # wherever numpy put it
    aligned_addrs = (d.addr if d.pinned else 0) | (s.addr if s.pinned else 0)
    if require_aligned and aligned_addrs & 63:
        bad = d.addr if d.pinned and d.addr & 63 else s.addr
        raise AddressUnalignedError(
            f"memcpy_async needs 64-byte aligned addresses; 0x{bad:x} is not (malloc and "
            "malloc_host return aligned memory; keep offsets multiples of 64)")
    pageable = keep is None and not (d.pinned and s.pinned)
    if pageable and graph._active:  # aclmdlRICaptureBegin: the capture mode limits an asynchronous copy
        # of non-pinned host memory as it limits the synchronous copies (107030)
        graph.check_capture_safe("an asynchronous copy of pageable host memory (memcpy_async)")
    seq = stream.enqueue(CopyTask(d.addr, s.addr, count, SHORT[direction], keep), holders=(d.block, s.block))
    if pageable and stream.capture is None:
        # pageable host memory: return once the copy has run, as ACL does (the caller may
        # free the buffer right after); failures stay on the stream for its synchronize.
        # A capturing stream (one the mode allows it on) or one bound to a built model records
        # the copy: it reads the host memory when the graph or model runs
        stream.synchronize(until=seq, report_errors=False)
    return seq


def copy_array_async(rt: "Runtime", dev: int, arr: np.ndarray, stream: "Stream", to_device: bool,
                     block=None) -> int:
    """Enqueue a copy between the device memory at `dev` and the whole of `arr`, a
    C-contiguous numpy array (writable when it is the destination), which the task holds
    until the copy ran. `block`: the live block that holds [dev, dev + arr.nbytes), when the
    caller owns it (a DeviceArray's allocation), which spares the look-up. Returns the task's
    sequence number."""
    n = arr.nbytes
    if block is not None:  # still this runtime's live block? (the look-up below says why not:
        # freed by a reset or a finalize, a parent's before a fork; memory imported from another
        # process is found there)
        device = rt.device_by_physical.get((dev - _VA_BASE) >> 40) if dev >= _VA_BASE else None
        if device is None or device.memory.live.get(block.addr) is not block:
            block = None
    if block is None:
        quick = _quick(rt, dev, n) if dev >= _VA_BASE else None
        if quick is not None and quick[0] is not None:  # the start of a live device block
            block = quick[1]
        else:
            span = locate(rt, dev, n, "destination" if to_device else "source")
            if span.device is None:
                raise InvalidValueError(f"0x{dev:x} is host memory; a device address is expected here")
            block = span.block
    direction = "H2D" if to_device else "D2H"
    if enqueue_array_copy is not None:  # a CopyTask that holds the array, its address read in C
        seq = enqueue_array_copy(stream, dev, arr, n, direction, block, rt.host)
        if seq is not NotImplemented:
            return seq
    # the array may lie in pinned memory: its free waits for the copy too
    pinned = rt.host.containing(address.host_address(arr)) if rt.host.starts else None
    return stream.enqueue(ArrayCopyTask(dev, arr, n, direction), holders=(block, pinned))


def memset_async(rt: "Runtime", ptr, max_count, value, count, stream: "Stream") -> int:
    if count == 0 and type(count) is int:
        return stream.enqueued_seq  # aclrtMemsetAsyncImpl: count 0 succeeds, nothing is queued
    span, byte, count = _check_set(rt, ptr, max_count, value, count)
    seq = stream.enqueue(MemsetTask(span.addr, byte, count), holders=(span.block,))
    if span.device is None and not span.pinned:  # pageable host memory: as memcpy_async
        stream.synchronize(until=seq, report_errors=False)
    return seq
