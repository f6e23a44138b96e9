"""Kernels: Python functions that run on the simulated NPU's AI cores.

A kernel is a function marked with `@kernel` whose parameters after `ctx` are annotated
`GM` (a global-memory address: an int) or a numpy scalar type::

    @kernel
    def vadd(ctx, x: GM, y: GM, z: GM, n: np.int32):
        lo, hi = ctx.block_range(n)
        xs, ys, zs = (ctx.gm(p, np.float32, n)[lo:hi] for p in (x, y, z))
        np.add(xs, ys, out=zs)

Packed arguments (what launch_kernel reads from device memory and the kernel_args_*
builder produces) give every parameter one 8-byte little-endian slot in signature order,
the value in the low bytes: three GM and one np.int32 parameter take 32 bytes. The packing
struct is built once, by the decorator, so a launch costs one struct.pack.

A launch is one task of its stream. When it runs, `num_blocks` instances of the kernel run
on the driver's core pool in parallel (numpy releases the GIL, so blocks doing array work
overlap on host cores); each sees `ctx.block_idx` and `ctx.block_num`, as Ascend C's
GetBlockIdx/GetBlockNum. The next task of the stream starts after every block finished.

Kernels reach memory only through `ctx.gm(ptr, dtype, count)` (count may be a shape): a
numpy view bounds-checked against the live allocation holding `ptr` (an allocation freed
while the launch was queued stays readable by it: frees are stream-ordered), or against the
registered host range behind a host_register alias. Out-of-bounds, use-after-free, host or
unreachable-device accesses raise; nothing reads memory it should not. When an observer is
registered, every gm() reports a "mem_access" event. `ctx.block_range(n, align=1)` is the
slice of range(n) a block owns when n is split evenly (by block_idx modulo block_num).

At enqueue, every GM argument must be 0 (a null pointer, e.g. an optional buffer; gm(0)
raises) or a live device address of the stream's device (or of a peer it may access), or a
registered host alias; the launch records that it uses those allocations, so freeing one
while the launch is queued does not let a new malloc reuse it before the kernel ran.

Error codes (decisions, as the real runtime's docs rarely name one):

| situation | code |
| --- | --- |
| args_size differs from the kernel's packed size, a value that does not fit its parameter, num_blocks outside [1, max_block_dim], a GM argument that is not a live device address, a bad launch config | ACL_ERROR_INVALID_PARAM 100000 |
| launching something that is not a kernel | ACL_ERROR_RT_INVALID_DEVICE_FUNCTION 107044 |
| an exception in a kernel block, including an out-of-bounds or freed-memory access | ACL_ERROR_RT_AICORE_EXCEPTION 507015 (at the next synchronize) |
| a native kernel's trap (npurt.runtime.native) | ACL_ERROR_RT_VECTOR_CORE_EXCEPTION 507035 on SoCs with vector cores, else 507015 |
| a kernel that ran longer than its timeout (launch cfg TIMEOUT / TIMEOUT_US, else the op execute timeout in effect: set_op_execute_timeout*, default 1091 s) | ACL_ERROR_RT_AICORE_TIMEOUT 507014 (after it finished: Python code cannot be pre-empted) |

Launch config attributes (ACL_RT_LAUNCH_KERNEL_ATTR_*): BLOCKDIM_OFFSET adds to every
block's `block_idx` (block_num stays num_blocks); TIMEOUT (s) / TIMEOUT_US (µs), 0 = never;
SCHEM_MODE 0 or 1 (1, "wait for all cores", needs num_blocks <= the AI core count);
ENGINE_TYPE AIC (0) or AIV (1); DYN_UBUF_SIZE 0..192 KiB (the A2 unified buffer);
BLOCK_TASK_PREFETCH, DATA_DUMP, ENABLE_PROFILING 0 or 1 (accepted, no effect here).
"""
from __future__ import annotations

import functools
import inspect
import struct
import time
from typing import Callable

import numpy as np

from . import address
from . import constants as C
from .dtypes import RESOLVED as _DTYPES, resolve as resolve_dtype  # noqa: F401 - the one dtype table; re-exported
from .api import stream_of
from .errors import InvalidHandleError, InvalidValueError, NpuError, TaskError
from .memops import dead_address_message, locate, refused
from .memory import LIVE, PENDING, usable_size
from .observers import HOOKS
from .runtime import RUNTIME
from .scheduler import TLS, thread_token
from .stream import Stream
from .tasks import Task
from .watchdog import WATCHDOG, abort_bodies, enter_body, leave_body

MAX_PARAMS = 128              # kernel parameters, as the A2 runtime allows
SLOT = 8                      # bytes per packed parameter
UB_SIZE = 192 * 1024          # A2 unified buffer per core: the DYN_UBUF_SIZE limit

_VA_BASE = address.VA_BASE
_is_alias = address.is_host_alias


class GM:
    """Annotation marker: the parameter is a global-memory address (a device pointer int)."""

    __slots__ = ()


# scalar annotation -> struct code of one 8-byte slot (value in the low bytes)
_SCALAR_CODES: dict[type, str] = {
    np.int8: "b7x", np.uint8: "B7x", np.int16: "h6x", np.uint16: "H6x",
    np.int32: "i4x", np.uint32: "I4x", np.int64: "q", np.uint64: "Q",
    np.float16: "e6x", np.float32: "f4x", np.float64: "d", np.bool_: "?7x",
    int: "q", float: "d", bool: "?7x",
}


# ---------------------------------------------------------------- the kernel object
class KernelFunction:
    """A kernel: the Python function, its parameter list and its argument packing.

    `params` is a tuple of (name, annotation) for the parameters after ctx; `args_size` is
    the packed size in bytes (8 per parameter)."""

    def __init__(self, fn: Callable, name: str | None = None):
        self.fn = fn
        self.name = name or fn.__name__
        self.params = _parse_params(fn, self.name)
        self.args_size = SLOT * len(self.params)
        self.struct = struct.Struct("<" + "".join("Q" if a is GM else _SCALAR_CODES[a] for _, a in self.params))
        self.gm_slots = tuple(i for i, (_, a) in enumerate(self.params) if a is GM)
        self.handle = 0          # int handle once registered (binary_get_function)
        self.binary = None       # the Binary it came from, if any
        self.label = None        # optional fn(values) -> what one launch computes, for tools
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        sig = ", ".join(f"{n}: {'GM' if a is GM else a.__name__}" for n, a in self.params)
        return f"<npurt kernel {self.name}(ctx, {sig})>"

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel {self.name!r} runs on the device, it cannot be called: launch it with "
                        f"{self.name}[blocks](args...), {self.name}[blocks, stream](args...) or "
                        f"npurt.launch({self.name}, blocks, args...) from Python, or acl.rt.launch_kernel* "
                        "from pyACL (npurt.launch, not the `npurt launch` command, which starts processes)")

    def __getitem__(self, config):
        """A KernelFunction made by the runtime's own decorator launches through the runtime's
        operations; `k[blocks](...)` belongs to the Pythonic `Kernel` (`@npurt.kernel`)."""
        raise TypeError(f"kernel {self.name!r} was made with npurt.runtime's kernel_function: launch it with "
                        f"npurt.launch({self.name}, blocks, args...) or the runtime's launch; "
                        f"{self.name}[blocks](args...) needs @npurt.kernel")

    def pack(self, *values) -> bytes:
        """The packed argument block for `values` (one 8-byte slot each)."""
        try:
            return self.struct.pack(*values)
        except (struct.error, OverflowError, TypeError, ValueError):
            raise self._mismatch(values) from None

    def unpack(self, data) -> tuple:
        """The parameter values in a packed argument block."""
        if len(data) != self.args_size:
            raise InvalidValueError(f"kernel {self.name!r} takes {self.args_size} bytes of arguments "
                                    f"({len(self.params)} parameters x 8), got {len(data)}")
        return self.struct.unpack(data)

    def values(self, args) -> tuple:
        """Canonical parameter values from host args: packed bytes or a tuple of values."""
        if isinstance(args, (bytes, bytearray, memoryview)):
            return self.unpack(args)
        if not isinstance(args, (tuple, list)):
            raise InvalidValueError(f"kernel {self.name!r} arguments must be a tuple of values or the "
                                    f"packed bytes, got {type(args).__name__}")
        s = self.struct
        try:
            return s.unpack(s.pack(*args))
        except (struct.error, OverflowError, TypeError, ValueError):
            raise self._mismatch(args) from None

    def _mismatch(self, values) -> InvalidValueError:
        """Name the first argument that does not fit its parameter."""
        if len(values) != len(self.params):
            names = ", ".join(n for n, _ in self.params)
            return InvalidValueError(f"kernel {self.name!r} takes {len(self.params)} arguments ({names}), "
                                     f"got {len(values)}")
        for (name, ann), value in zip(self.params, values):
            code = "Q" if ann is GM else _SCALAR_CODES[ann]
            try:
                struct.pack("<" + code, value)
            except (struct.error, OverflowError, TypeError, ValueError) as exc:
                want = "a device address (non-negative int)" if ann is GM else f"a {ann.__name__} value"
                return InvalidValueError(f"kernel {self.name!r} argument {name!r} must be {want}, "
                                         f"got {value!r} ({exc})")
        return InvalidValueError(f"kernel {self.name!r}: arguments do not match its signature")


def _parse_params(fn, name: str) -> tuple:
    if not callable(fn):
        raise TypeError(f"@kernel needs a function, got {type(fn).__name__}")
    try:
        sig = inspect.signature(fn, eval_str=True)  # resolves `from __future__ import annotations`
    except NameError as exc:
        raise TypeError(f"kernel {name!r}: an annotation cannot be resolved ({exc})") from None
    params = list(sig.parameters.values())
    if not params:
        raise TypeError(f"kernel {name!r} must take ctx as its first parameter")
    out = []
    for p in params[1:]:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError(f"kernel {name!r}: parameter {p.name!r} must be a plain positional parameter")
        ann = p.annotation
        if isinstance(ann, type) and issubclass(ann, GM):
            ann = GM
        elif ann not in _SCALAR_CODES:
            if isinstance(ann, np.dtype) and ann.type in _SCALAR_CODES:
                ann = ann.type
            else:
                raise TypeError(f"kernel {name!r}: parameter {p.name!r} must be annotated GM or a numpy "
                                f"scalar type (np.int32, np.float32, ...), got {ann!r}")
        out.append((p.name, ann))
    if len(out) > MAX_PARAMS:
        raise TypeError(f"kernel {name!r} has {len(out)} parameters; at most {MAX_PARAMS} are allowed")
    return tuple(out)


def kernel(fn: Callable | None = None, *, name: str | None = None):
    """Mark a function as a kernel: `@kernel` or `@kernel(name="other_name")`."""
    if fn is None:
        return lambda f: KernelFunction(f, name)
    return KernelFunction(fn, name)


def function_of(func) -> KernelFunction:
    """A KernelFunction from itself or its int handle."""
    if isinstance(func, KernelFunction):
        return func
    if type(func) is int:
        obj = RUNTIME.functions.get(func)
        if isinstance(obj, KernelFunction):
            return obj
    if callable(func):
        raise NpuError(f"{getattr(func, '__qualname__', func)!r} is not a kernel: mark it with @kernel "
                       "(or get one with binary_get_function)", C.ACL_ERROR_RT_INVALID_DEVICE_FUNCTION)
    raise InvalidHandleError(f"expected a kernel function or its handle, got {func!r}")


def function_handle(func: KernelFunction) -> int:
    """The int handle of a kernel (registered on first request, per runtime lifetime)."""
    RUNTIME.check_initialized()
    h = func.handle
    if h:
        try:
            if RUNTIME.functions.get(h) is func:
                return h
        except InvalidHandleError:
            pass
    func.handle = RUNTIME.functions.add(func)
    return func.handle


# ---------------------------------------------------------------- inside a kernel
class KernelMemoryError(NpuError, IndexError):
    """A kernel accessed memory it may not (out of bounds, freed, host, another device)."""

    code = C.ACL_ERROR_RT_AICORE_EXCEPTION


_MODES = ("rw", "r", "w")


class KernelContext:
    """What one block of a running kernel sees: its index, the block count, and `gm()`."""

    __slots__ = ("block_idx", "block_num", "task", "device")

    def __init__(self, block_idx: int, block_num: int, task: "KernelTask", device):
        self.block_idx, self.block_num, self.task, self.device = block_idx, block_num, task, device

    def block_range(self, n: int, align: int = 1) -> tuple[int, int]:
        """[lo, hi) of range(n) that this block handles when n is split evenly over the blocks
        (chunks are multiples of `align` except the last)."""
        nb = self.block_num
        chunk = -(-n // nb)
        if align > 1:
            chunk = -(-chunk // align) * align
        lo = min(n, (self.block_idx % nb) * chunk)
        return lo, min(n, lo + chunk)

    def gm(self, ptr, dtype, count, mode: str = "rw") -> np.ndarray:
        """A numpy view of `count` elements of `dtype` at global-memory address `ptr`
        (`count` may be a shape tuple). Raises KernelMemoryError unless the whole range lies
        inside one allocation this launch may use.

        `mode` declares what the kernel does with the view, as an Ascend C kernel's data
        copies do: "r" (an input: the view is read-only), "w" (an output: every element is
        written, none read first) or "rw" (the default: anything). Tools use it: the
        sanitizer treats an "rw" view as read and finds what was written by comparing."""
        if mode not in _MODES:
            raise KernelMemoryError(f"gm mode must be 'r', 'w' or 'rw', got {mode!r}")
        try:
            dt = _DTYPES[dtype]
        except (KeyError, TypeError):
            dt = resolve_dtype(dtype)
        if type(count) is int:
            n, shape = count, None
        elif isinstance(count, (tuple, list)):
            try:
                shape = tuple(int(d) for d in count)
            except (TypeError, ValueError):
                raise KernelMemoryError(f"gm shape must be ints, got {count!r}") from None
            n = -1 if any(d < 0 for d in shape) else int(np.prod(shape, dtype=np.int64))
        elif isinstance(count, np.integer):
            n, shape = int(count), None
        else:
            raise KernelMemoryError(f"gm count must be an int or a shape tuple, got {count!r}")
        if n < 0:
            raise KernelMemoryError(f"gm count must not be negative, got {count!r}")
        nbytes = n * dt.itemsize
        if type(ptr) is not int:
            if not isinstance(ptr, (int, np.integer)) or isinstance(ptr, bool):
                raise KernelMemoryError(f"gm needs an address int, got {type(ptr).__name__}")
            ptr = int(ptr)
        device = self.device
        block = device.memory.live.get(ptr)  # fast path: the start of a live allocation here
        if block is not None and ptr + nbytes <= block.addr + block.requested:
            buf = device.backend.view(ptr, nbytes)
        else:
            buf = self._view(ptr, nbytes)
        if mode != "r" and not buf.flags.writeable:
            raise self._refused("read_only", ptr, nbytes, device,
                                f"gm(0x{ptr:x}, mode {mode!r}): host memory registered with ACL_HOST_REGISTER_READONLY "
                                "is read-only for kernels; take it with mode 'r'")
        if HOOKS.active:
            HOOKS.emit("mem_access", device=self.device, addr=ptr, nbytes=nbytes, task=self.task, mode=mode)
        arr = buf.view(dt)
        if shape is not None:
            arr = arr.reshape(shape)
        if mode == "r":
            arr.flags.writeable = False
        return arr

    def _view(self, ptr: int, nbytes: int) -> np.ndarray:
        if ptr < _VA_BASE:
            if ptr == 0:
                raise self._refused("invalid_address", ptr, nbytes, None,
                                    "gm(0): null pointer (an optional buffer that was not given?)")
            raise self._refused("invalid_address", ptr, nbytes, None,
                                f"gm(0x{ptr:x}): that is a host address; kernels reach device memory, "
                                "or host memory through its host_register device alias")
        device = RUNTIME.device_by_physical.get(address.physical_device(ptr))
        if device is None:
            raise self._refused("invalid_address", ptr, nbytes, None,
                                f"gm(0x{ptr:x}): the address belongs to no visible device")
        if device is not self.device and device.id not in self.device.peer_access:
            raise self._refused("invalid_address", ptr, nbytes, device,
                                f"gm(0x{ptr:x}): memory of device {device.id} is not reachable from "
                                f"device {self.device.id} (enable peer access first)")
        if _is_alias(ptr):
            try:
                host, rng = RUNTIME.host.alias_range(ptr, nbytes)
            except InvalidValueError as exc:
                raise self._refused("out_of_bounds", ptr, nbytes, device,
                                    f"gm(0x{ptr:x}, {nbytes} bytes): {exc.message}") from None
            view = address.host_view(host, nbytes)
            if rng.readonly:  # registered ACL_HOST_REGISTER_READONLY: the device only reads it
                view.flags.writeable = False
            return view
        memory = device.memory
        block = memory.live.get(ptr)
        if block is None:
            block = memory.find(ptr)
            if block is None or not self._usable(block):
                raise self._refused("invalid_address" if block is None else "use_after_free", ptr, nbytes,
                                    device, f"gm: {dead_address_message(device, ptr, block, 'kernel')}")
        elif block.state != LIVE and not self._usable(block):
            raise self._refused("use_after_free", ptr, nbytes, device,
                                f"gm: {dead_address_message(device, ptr, block, 'kernel')}")
        end = block.addr + usable_size(block)  # the padding ACL gives every allocation
        if ptr + nbytes > end:
            raise self._refused(
                "out_of_bounds", ptr, nbytes, device,
                f"gm(0x{ptr:x}, {nbytes} bytes) runs past the end of its allocation (0x{block.addr:x}, "
                f"{block.requested} bytes requested, {end - block.addr} usable) by {ptr + nbytes - end} bytes")
        return device.backend.view(ptr, nbytes)

    def _refused(self, kind: str, ptr: int, nbytes: int, device, message: str) -> "KernelMemoryError":
        if HOOKS.active:
            HOOKS.emit("mem_error", kind=kind, addr=ptr, nbytes=nbytes, device=device, message=message,
                       task=self.task)
        return KernelMemoryError(message)

    def _usable(self, block) -> bool:
        """LIVE, or freed (PENDING) while this launch, which uses it, was queued."""
        if block.state == LIVE:
            return True
        if block.state == PENDING:
            task = self.task
            uses = block.uses
            return bool(uses) and uses.get(task.stream, 0) >= task.seq
        return False


# ---------------------------------------------------------------- the launch task
class _BlockFailure(Exception):
    def __init__(self, block_idx: int, exc: BaseException):
        super().__init__(block_idx, exc)
        self.block_idx, self.exc = block_idx, exc


class KernelTask(Task):
    """One kernel launch: `num_blocks` instances of `func` over the device's AI cores."""

    __slots__ = ("func", "num_blocks", "values", "args_ptr", "offset", "timeout_ns", "threads", "aborted")
    kind = "kernel"
    error_code = C.ACL_ERROR_RT_AICORE_EXCEPTION

    def __init__(self, func: KernelFunction, num_blocks: int, values, args_ptr: int = 0,
                 offset: int = 0, timeout_ns: int | None = None):
        self.func, self.num_blocks, self.values, self.args_ptr = func, num_blocks, values, args_ptr
        self.offset, self.timeout_ns = offset, timeout_ns
        self.threads: list[int] = []  # threads inside the kernel body (see watchdog.enter_body)
        self.aborted = False

    def describe(self) -> str:
        return f"kernel {self.func.name} ({self.num_blocks} block{'s' if self.num_blocks != 1 else ''})"

    def details(self) -> dict:
        func = self.func
        name = func.name
        if func.label is not None and self.values is not None:  # e.g. "relu" for the unary kernel
            try:
                name = func.label(self.values)
            except Exception:  # noqa: BLE001 - a label is cosmetic
                pass
        return {"name": name, "kernel": func.name, "blocks": self.num_blocks}

    def accesses(self) -> tuple:
        # the packed args launch_kernel reads from device memory; the views report themselves
        return ((self.args_ptr, self.func.args_size, "r"),) if self.values is None else ()

    def run(self) -> None:
        func = self.func
        values = self.values
        if values is None:  # the args live in device memory: read them now, as the AI core does
            values = func.struct.unpack(address.view(self.args_ptr, func.args_size).tobytes())
        fn = func.fn
        n = self.num_blocks
        offset = self.offset
        device = self.stream.device
        timeout = self.timeout_ns
        if timeout is None:
            timeout = self.timeout_ns = _default_timeout_ns()
        start = time.perf_counter_ns()
        if timeout:  # the watchdog aborts the kernel at its deadline (see expire)
            WATCHDOG.watch(self, time.monotonic() + timeout / 1e9)
        try:
            if n == 1:  # inline: no hand-off to another thread
                ident = enter_body(self)
                try:
                    fn(KernelContext(offset, 1, self, device), *values)
                except Exception as exc:  # noqa: BLE001 - becomes the AI core exception
                    raise self._failure(offset, exc) from exc
                finally:
                    leave_body(self, ident)
            else:
                def body(i: int) -> None:
                    idx = offset + i
                    try:
                        fn(KernelContext(idx, n, self, device), *values)
                    except Exception as exc:  # noqa: BLE001
                        raise _BlockFailure(idx, exc) from exc

                try:
                    RUNTIME.driver.cores.run(n, body, self._lane_hooks())
                except _BlockFailure as failure:
                    raise self._failure(failure.block_idx, failure.exc) from failure.exc
        finally:
            if timeout:
                WATCHDOG.unwatch(self)
        elapsed = time.perf_counter_ns() - start
        if timeout and elapsed > timeout:
            raise NpuError(f"kernel {func.name!r} ran {elapsed / 1e6:.3f} ms, longer than its timeout of "
                           f"{timeout / 1e6:.3f} ms (AI core timeout)", C.ACL_ERROR_RT_AICORE_TIMEOUT)

    def _lane_hooks(self):
        """What each core-pool lane does around its blocks: count as inside the kernel body
        (so an abort reaches it) and run as the launching thread (so a block that
        synchronizes this stream is refused as the launching thread would be)."""
        token = thread_token()

        def enter():
            saved, TLS.token = TLS.token, token
            return saved, enter_body(self)

        def leave(state):
            TLS.token = state[0]
            leave_body(self, state[1])

        return enter, leave, lambda: abort_bodies(self)

    def expire(self, code: int = C.ACL_ERROR_RT_AICORE_TIMEOUT, why: str = "") -> bool:
        """Abort the kernel if it is still running (the watchdog at its deadline, or a device
        reset): fail and retire it, raise KernelAborted in the threads running its blocks, and
        hand its stream to the workers, which go on with the next task (a worker stuck in the
        kernel leaves the pool; a new one takes its place). True if it was running."""
        s = self.stream
        me = thread_token()
        if s.current is not self:  # test and set, no call in between: the owner checks
            return False           # s.runner right after clearing s.current
        owner = s.runner
        s.runner = me
        s.current = None
        try:
            abort_bodies(self)
            if not why:
                why = (f"did not finish within its timeout of {self.timeout_ns / 1e6:.3f} ms and was aborted "
                       "at its deadline (AI core timeout; set_op_execute_timeout_us, or the launch config's "
                       "ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT)")
            where = f"stream {s.stream_id} (device {s.device.id}) task #{self.seq} {self.describe()}"
            error = TaskError(f"{where} {why}; the stream went on with its next task", code, where)
            if HOOKS.active:
                HOOKS.emit("task_finished", task=self, error=error)
            s.fail(self, error)
            s.completed_seq = self.seq
            s.notify_retired()
        finally:
            s.scheduler.release(s, me)
            if getattr(owner, "worker", False):
                s.scheduler.retire_worker(owner)
        return True

    def _failure(self, block_idx: int, exc: BaseException) -> NpuError:
        msg = exc.message if isinstance(exc, NpuError) else f"{type(exc).__name__}: {exc}"
        # a native kernel's trap carries the code its SoC reports (native.KernelTrap)
        code = getattr(exc, "aicore_code", C.ACL_ERROR_RT_AICORE_EXCEPTION)
        return NpuError(f"kernel {self.func.name!r} failed in block {block_idx} of {self.num_blocks}: {msg}", code)


def _default_timeout_ns() -> int:
    """The op execute timeout (set_op_execute_timeout*) for launches that carry none."""
    from .api import effective_op_execute_timeout_us
    return effective_op_execute_timeout_us() * 1000


# ---------------------------------------------------------------- validation at enqueue
def check_blocks(num_blocks, device, offset: int = 0) -> int:
    if type(num_blocks) is int and 1 <= num_blocks <= 32 and not offset:  # every SoC allows 32
        return num_blocks
    limit = device.spec.max_block_dim
    if type(num_blocks) is not int:
        if isinstance(num_blocks, (int, np.integer)) and not isinstance(num_blocks, bool):
            num_blocks = int(num_blocks)
        else:
            raise InvalidValueError(f"num_blocks must be an int, got {type(num_blocks).__name__}")
    if not 1 <= num_blocks <= limit or num_blocks + offset > limit:
        raise InvalidValueError(f"num_blocks must be in [1, {limit}] (the device's block dimension limit"
                                f"{', block offset included' if offset else ''}), got {num_blocks}")
    return num_blocks


def gm_blocks(func: KernelFunction, values: tuple, device, extents=None) -> list:
    """The allocations the GM arguments point into; an error for any that is not a live
    device address reachable from `device` (0, a null pointer, is allowed and skipped).
    `extents` (bytes per GM parameter, in order) also checks each range fits its allocation."""
    blocks = []
    live = device.memory.live
    for j, i in enumerate(func.gm_slots):
        ptr = values[i]
        block = live.get(ptr)  # fast path: the start of a live allocation of this device
        if block is None:
            if ptr == 0:
                continue
            block = _slow_gm_block(func, i, ptr, device)
            if block is None:  # a host_register alias: checked when the kernel runs
                continue
        if extents is not None and ptr + extents[j] > block.addr + block.requested and (
                ptr + extents[j] > block.addr + usable_size(block)):
            end = block.addr + usable_size(block)
            raise refused(
                "out_of_bounds", ptr, extents[j], device,
                f"kernel {func.name!r} argument {func.params[i][0]!r}: {extents[j]} bytes at 0x{ptr:x} run past "
                f"the end of its allocation (0x{block.addr:x}, {block.requested} bytes requested, "
                f"{end - block.addr} usable) by {ptr + extents[j] - end} bytes")
        blocks.append(block)
    return blocks


def _slow_gm_block(func: KernelFunction, i: int, ptr: int, device):
    name = func.params[i][0]
    if ptr < _VA_BASE:
        raise refused("invalid_address", ptr, 0, None,
                      f"kernel {func.name!r} argument {name!r} = 0x{ptr:x} is a host address; "
                      "GM arguments must be device memory (malloc) or the device alias of "
                      "registered host memory (host_register)")
    owner = RUNTIME.device_by_physical.get(address.physical_device(ptr))
    if owner is None:
        raise refused("invalid_address", ptr, 0, None,
                      f"kernel {func.name!r} argument {name!r} = 0x{ptr:x} belongs to no visible device")
    if owner is not device and owner.id not in device.peer_access:
        raise InvalidValueError(f"kernel {func.name!r} argument {name!r} = 0x{ptr:x} is memory of "
                                f"device {owner.id}, but the launch runs on device {device.id} "
                                "(enable peer access, or launch on a stream of that device)")
    if _is_alias(ptr):
        try:
            RUNTIME.host.alias_target(ptr, 1)
        except InvalidValueError:
            raise refused("invalid_address", ptr, 0, owner,
                          f"kernel {func.name!r} argument {name!r} = 0x{ptr:x} is not inside "
                          "a registered host range's device alias (unregistered?)") from None
        return None
    memory = owner.memory
    block = memory.live.get(ptr) or memory.find(ptr)
    if block is None or block.state != LIVE or ptr >= block.addr + usable_size(block):
        if block is not None and block.state == LIVE:
            kind = "out_of_bounds"
            why = f"the address is past the end of the allocation at 0x{block.addr:x} ({block.requested} bytes)"
        else:
            kind = "invalid_address" if block is None and ptr not in memory.released else "use_after_free"
            why = dead_address_message(owner, ptr, block, "argument")
        raise refused(kind, ptr, 0, owner,
                      f"kernel {func.name!r} argument {name!r} is not a live device address: {why}")
    return block


def enqueue_launch(func: KernelFunction, num_blocks: int, stream, values, *, args_ptr: int = 0,
                   extra_blocks=(), cfg=None, extents=None) -> int:
    """Validate and enqueue one launch (values: canonical tuple, or None to read the packed
    args from device memory at `args_ptr` when the task runs)."""
    device = stream.device
    offset, timeout_ns = parse_cfg(cfg, num_blocks, device) if cfg else (0, None)
    num_blocks = check_blocks(num_blocks, device, offset)
    blocks = gm_blocks(func, values, device, extents) if values is not None else []
    if extra_blocks:
        blocks.extend(extra_blocks)
    return stream.enqueue(KernelTask(func, num_blocks, values, args_ptr, offset, timeout_ns), holders=blocks)


# ---------------------------------------------------------------- launch config

def parse_cfg(cfg, num_blocks, device) -> tuple[int, int | None]:
    """(block offset, timeout in ns or None) from a launch config: a list of
    {"id": attr, "value": v} dicts (pyACL's aclrtLaunchKernelCfg) or a dict {attr: v}."""
    if isinstance(cfg, dict):
        items = list(cfg.items())
    elif isinstance(cfg, (list, tuple)):
        items = []
        for entry in cfg:
            if not isinstance(entry, dict) or "id" not in entry or "value" not in entry:
                raise InvalidValueError(f"launch config entries must be {{'id': attr, 'value': v}} dicts, "
                                        f"got {entry!r}")
            items.append((entry["id"], entry["value"]))
    else:
        raise InvalidValueError(f"launch config must be a list of {{'id', 'value'}} dicts, got {type(cfg).__name__}")
    offset, timeout_ns = 0, None
    for attr, value in items:
        if isinstance(value, dict) and len(value) == 1:  # a value union given by member name
            value = next(iter(value.values()))
        if type(value) is not int or value < 0:
            raise InvalidValueError(f"launch config attribute {attr!r} needs a non-negative int value, "
                                    f"got {value!r}")
        if attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET:
            offset = value
        elif attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT:
            timeout_ns = value * 1_000_000_000
        elif attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US:
            timeout_ns = value * 1000
        elif attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE:
            if value not in (C.ACL_RT_ENGINE_TYPE_AIC, C.ACL_RT_ENGINE_TYPE_AIV):
                raise InvalidValueError(f"ENGINE_TYPE must be ACL_RT_ENGINE_TYPE_AIC (0) or "
                                        f"ACL_RT_ENGINE_TYPE_AIV (1), got {value}")
        elif attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE:
            if value not in (0, 1):
                raise InvalidValueError(f"SCHEM_MODE must be 0 (start when any core is free) or 1 (wait "
                                        f"for all cores), got {value}")
            cores = device.spec.aicore_num
            if value == 1 and type(num_blocks) is int and num_blocks > cores:
                raise InvalidValueError(f"SCHEM_MODE 1 starts all blocks at once, so num_blocks ({num_blocks}) "
                                        f"must not exceed the {cores} AI cores of {device.spec.name}")
        elif attr == C.ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE:
            if value > UB_SIZE:
                raise InvalidValueError(f"DYN_UBUF_SIZE {value} exceeds the {UB_SIZE}-byte unified buffer")
        elif attr in (C.ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH, C.ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP,
                      C.ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING):
            if value not in (0, 1):
                raise InvalidValueError(f"launch config attribute {attr} is a switch: 0 or 1, got {value}")
        else:
            raise InvalidValueError(f"unknown launch config attribute id {attr!r} "
                                    "(see aclrtLaunchKernelAttrId: 1..9)")
    return offset, timeout_ns


# ---------------------------------------------------------------- runtime operations
def launch(func, num_blocks: int, args=(), stream=None, cfg=None, extents=None, canonical: bool = False) -> int:
    """Launch a kernel with host-side args (a tuple of values, or the packed bytes) on
    `stream` (None: the current context's default stream). Returns the task's sequence
    number. The Pythonic API and the built-in ops launch through here. `extents`, bytes
    per GM parameter in order, makes the enqueue also check each buffer is large enough.
    `canonical`: the caller guarantees `args` is a tuple of exact ints (and floats) that fit
    their parameters, so they are not packed and unpacked to check them."""
    f = func if type(func) is KernelFunction else function_of(func)
    s = stream if type(stream) is Stream and not stream.destroyed else stream_of(stream)
    return enqueue_launch(f, num_blocks, s, args if canonical else f.values(args), cfg=cfg, extents=extents)


def launch_kernel(func, num_blocks: int, args_ptr: int, args_size: int, stream=None, cfg=None) -> int:
    """acl.rt.launch_kernel: the packed args are in device memory at `args_ptr` and are read
    when the task runs (so a memcpy_async earlier on the stream may fill them). `cfg`, a
    launch config, is aclrtLaunchKernelV2's.

    Stream-ordered free covers the args buffer and, best effort, the GM pointers it holds at
    this call: a pointer written into the args later (by a queued copy) is not protected, so
    freeing its allocation before the launch ran lets a new malloc reuse it."""
    f = function_of(func)
    s = stream_of(stream)
    check_args_size(f, args_size)
    span = locate(RUNTIME, args_ptr, args_size, "kernel args")
    if span.device is None:
        raise InvalidValueError(f"launch_kernel args_data 0x{span.addr:x} is host memory; it must be device "
                                "memory holding the packed args (copy them there first), or use "
                                "launch_kernel_with_host_args")
    blocks = [span.block]
    try:  # best effort: the GM arguments the buffer holds now, to keep them from reuse
        now = f.struct.unpack(address.view(span.addr, args_size).tobytes())
        blocks += gm_blocks(f, now, s.device)
    except NpuError:
        pass  # the args may be written later in stream order; ctx.gm checks every access
    return enqueue_launch(f, num_blocks, s, None, args_ptr=span.addr, extra_blocks=blocks, cfg=cfg)


def check_args_size(f: KernelFunction, args_size) -> None:
    if type(args_size) is not int or args_size != f.args_size:
        raise InvalidValueError(f"args_size {args_size!r} does not match kernel {f.name!r}, which takes "
                                f"{f.args_size} bytes ({len(f.params)} parameters, 8 bytes each)")


def host_bytes(data, size, what: str) -> bytes:
    """A copy of `size` bytes of host data given as a host address or a bytes-like object."""
    if isinstance(data, (bytes, bytearray, memoryview, np.ndarray)):
        if isinstance(data, np.ndarray):
            data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        raw = memoryview(data).cast("B")
        if size is None:
            size = len(raw)
        if type(size) is not int or not 0 <= size <= len(raw):
            raise InvalidValueError(f"{what}: size {size!r} exceeds the {len(raw)} bytes given")
        return bytes(raw[:size])
    if type(data) is not int or isinstance(data, bool):
        raise InvalidValueError(f"{what} must be a host address int or bytes, got {type(data).__name__}")
    if type(size) is not int or size < 0:
        raise InvalidValueError(f"{what}: size must be a non-negative int, got {size!r}")
    if data >= _VA_BASE:
        raise InvalidValueError(f"{what} 0x{data:x} is a device address; host memory is expected here")
    if size and (data <= 0 or not address.host_readable(data, size)):
        raise InvalidValueError(f"{what} 0x{data:x} (+{size} bytes) is not readable host memory")
    return address.host_view(data, size).tobytes() if size else b""


def stage_on_device(stream, chunks: list[bytes]) -> tuple[int, list[int]]:
    """Copy host data chunks into one temporary device allocation (64-byte aligned pieces).
    Returns (address, offsets). The caller frees it after enqueueing the task that uses it
    (the free is stream-ordered, so the memory lives until that task ran)."""
    offsets, total = [], 0
    for chunk in chunks:
        offsets.append(total)
        total += (len(chunk) + 63) // 64 * 64 or 64
    device = stream.device
    addr = device.memory.malloc(total, C.ACL_MEM_MALLOC_HUGE_FIRST)
    if HOOKS.active:
        HOOKS.emit("mem_alloc", device=device, addr=addr, size=total, managed=True)
    view = device.backend.view(addr, total)
    if HOOKS.active:
        HOOKS.emit("host_access", addr=addr, nbytes=total, mode="w", what="kernel argument staging")
    for chunk, off in zip(chunks, offsets):
        view[off:off + len(chunk)] = np.frombuffer(chunk, np.uint8)
    return addr, offsets


def free_staged(stream, addr: int) -> None:
    device = stream.device
    if HOOKS.active:
        block = device.memory.live.get(addr)
        HOOKS.emit("mem_free", device=device, addr=addr, size=block.requested if block else 0, managed=True,
                   uses=dict(block.uses or {}) if block else {})
    device.memory.free(addr)


def launch_kernel_with_host_args(func, num_blocks: int, stream, cfg, host_args, args_size,
                                 place_holders=None, place_holder_num: int = 0) -> int:
    """acl.rt.launch_kernel_with_host_args: the packed args are in host memory (copied at
    this call). Each placeholder {"addrOffset", "dataOffset"} makes the runtime copy the
    host data from dataOffset on to the device and patch its address into the argument
    slot at addrOffset; args_size then covers the args and that data."""
    f = function_of(func)
    s = stream_of(stream)
    place_holders = list(place_holders or [])
    if type(place_holder_num) is not int or place_holder_num != len(place_holders):
        raise InvalidValueError(f"place_holder_num ({place_holder_num!r}) must equal the length of the "
                                f"placeholder list ({len(place_holders)})")
    if not place_holders:
        check_args_size(f, args_size)
    elif type(args_size) is not int or args_size < f.args_size:
        raise InvalidValueError(f"args_size {args_size!r} is smaller than kernel {f.name!r}'s "
                                f"{f.args_size} bytes of arguments")
    raw = host_bytes(host_args, args_size, "host_args")
    if not place_holders:
        return enqueue_launch(f, num_blocks, s, f.struct.unpack(raw), cfg=cfg)
    slots, data_offsets = [], []
    for ph in place_holders:
        if not isinstance(ph, dict) or "addrOffset" not in ph or "dataOffset" not in ph:
            raise InvalidValueError(f"placeholders are {{'addrOffset', 'dataOffset'}} dicts, got {ph!r}")
        a, d = ph["addrOffset"], ph["dataOffset"]
        if type(a) is not int or a % SLOT or not 0 <= a < f.args_size or (a // SLOT) not in f.gm_slots:
            raise InvalidValueError(f"placeholder addrOffset {a!r} is not the offset of a GM parameter slot "
                                    f"of kernel {f.name!r} (multiples of 8 below {f.args_size})")
        if type(d) is not int or not f.args_size <= d < args_size:
            raise InvalidValueError(f"placeholder dataOffset {d!r} must point into the data after the "
                                    f"{f.args_size} bytes of arguments (below args_size {args_size})")
        slots.append(a // SLOT)
        data_offsets.append(d)
    base = f.args_size
    addr, _ = stage_on_device(s, [raw[base:]])
    try:
        values = list(f.struct.unpack(raw[:base]))
        for slot, d in zip(slots, data_offsets):
            values[slot] = addr + (d - base)
        staged = s.device.memory.live[addr]
        return enqueue_launch(f, num_blocks, s, tuple(values), extra_blocks=[staged], cfg=cfg)
    finally:
        free_staged(s, addr)


def launch_kernel_with_config(func, num_blocks: int, stream, cfg, args, reserve=None) -> int:
    """acl.rt.launch_kernel_with_config: launch with a finalized kernel_args_* block."""
    from .kernel_args import args_of  # late: kernel_args builds on this module
    f = function_of(func)
    s = stream_of(stream)
    if reserve not in (None, 0):
        raise InvalidValueError("launch_kernel_with_config: reserve must be 0")
    a = args_of(args)
    if a.func is not f:
        raise InvalidValueError(f"these kernel args were built for kernel {a.func.name!r}, not {f.name!r}")
    raw, holders = a.launch_image()
    if not holders:
        return enqueue_launch(f, num_blocks, s, f.struct.unpack(raw), cfg=cfg)
    addr, offsets = stage_on_device(s, [data for _, data in holders])
    try:
        values = list(f.struct.unpack(raw))
        for (slot, _), off in zip(holders, offsets):
            values[slot] = addr + off
        staged = s.device.memory.live[addr]
        return enqueue_launch(f, num_blocks, s, tuple(values), extra_blocks=[staged], cfg=cfg)
    finally:
        free_staged(s, addr)
