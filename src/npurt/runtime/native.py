"""Native kernels: host-built Ascend C kernels (machine code) as ordinary npurt kernels.

npurt's host Ascend C toolchain (`npurt cann-home`: tikcpp/ascendc_kernel_cmake) compiles
kernel sources with g++ against npurt's `kernel_operator.h`. Every `__global__ __aicore__`
function gets a *trampoline*, a C function

    int32_t trampoline(void *kernel, uint32_t block_idx, uint32_t block_num, const uint64_t *slots)

that sets the block's GetBlockIdx/GetBlockNum, unpacks one 8-byte slot per parameter into
the kernel's parameter types and calls it. Its parameter list is described by a *kinds*
string, one character per parameter:

| kind | parameter |
| --- | --- |
| P | a pointer (`__gm__ T*`): read and written by the kernel |
| R | a pointer to const (`__gm__ const T*`): only read |
| b B h H i I q Q | int8 uint8 int16 uint16 int32 uint32 int64 uint64 |
| e f d ? | half, float, double, bool (a bfloat16_t scalar passes as its bits: H) |

A `NativeKernel` is a `KernelFunction` whose parameters come from the kinds, so a native
launch is an ordinary kernel task: enqueue checks of every pointer argument, stream order,
stream-ordered free, timeouts, exception callbacks, the profiler and the sanitizer all
apply. When a block runs, each pointer argument is translated from its device address to
the host address of the simulated HBM behind it (a kernel dereferences it directly), the
trampoline is called with the GIL released (blocks of a launch run in parallel on the
driver's core pool), and the sanitizer sees one access per pointer argument covering the
rest of its allocation from that address: "rw" for P, "r" for R (a native kernel's
accesses cannot be observed one by one).

Trampoline results: 0 done; 1 the kernel trapped (`asm("trap")` / `trap()`); 2 a C++
exception escaped the kernel. A failing block fails the launch with the code the SoC
reports for a trapping vector kernel: ACL_ERROR_RT_VECTOR_CORE_EXCEPTION 507035 on SoCs
with vector cores (the Ascend 910B/910_93 family), ACL_ERROR_RT_AICORE_EXCEPTION 507015
on the others.

Kernel binaries: what `ascendc_fatbin_library` produces is a shared object exporting

    const KernelEntry *npurtKernelTable(uint32_t *count)
    struct KernelEntry { const char *name; void *kernel; void *trampoline; const char *kinds; }

`load_elf` dlopens it (through a private temporary file, for data given in memory) and makes one
NativeKernel per entry. Native code runs in the process, exactly as a loaded device binary
is trusted: a kernel that writes past its buffers corrupts memory as it would on the NPU.
"""
from __future__ import annotations

import ctypes
import inspect
import os
import tempfile

import numpy as np

from . import address
from . import constants as C
from .forking import fork_safe_lock
from .errors import InvalidValueError, NpuError
from .managed import MANAGED
from .kernel import GM, KernelFunction, enqueue_launch
from .memory import LIVE, usable_size
from .runtime import RUNTIME
from .stream import Stream

KIND_TYPES: dict[str, type] = {
    "b": np.int8, "B": np.uint8, "h": np.int16, "H": np.uint16, "i": np.int32, "I": np.uint32,
    "q": np.int64, "Q": np.uint64, "e": np.float16, "f": np.float32, "d": np.float64, "?": np.bool_,
}
POINTER_KINDS = ("P", "R")
TRAP, CXX_EXCEPTION = 1, 2

_TRAMPOLINE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32,
                               ctypes.c_char_p)


class KernelTrap(NpuError):
    """A native kernel trapped (or threw); `aicore_code` is what its SoC reports."""

    def __init__(self, message: str, aicore_code: int):
        super().__init__(message, aicore_code)
        self.aicore_code = aicore_code


def trap_code(device) -> int:
    """507035 on SoCs with vector cores (Ascend C kernels run on them), else 507015."""
    if getattr(device.spec, "vector_core_num", 0):
        return C.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION
    return C.ACL_ERROR_RT_AICORE_EXCEPTION


def check_kinds(kinds: str, name: str) -> str:
    if not isinstance(kinds, str) or any(k not in KIND_TYPES and k not in POINTER_KINDS for k in kinds):
        raise InvalidValueError(f"native kernel {name!r}: parameter kinds {kinds!r} are not of "
                                f"P R {' '.join(KIND_TYPES)}")
    return kinds


class NativeKernel(KernelFunction):
    """A host-built kernel: its trampoline, the kernel's address and its parameter kinds."""

    vector_kernel = True  # an Ascend C vector kernel: vector cores where the SoC has them

    def __init__(self, name: str, kernel_addr: int, trampoline_addr: int, kinds: str, binary=None):
        check_kinds(kinds, name)
        self.kinds = kinds
        self.kernel_addr = kernel_addr
        self.trampoline_addr = trampoline_addr
        self._call = _TRAMPOLINE(trampoline_addr)  # a ctypes call releases the GIL
        self.pointer_modes = tuple("r" if k == "R" else "rw" for k in kinds if k in POINTER_KINDS)
        body = self._body

        def fn(ctx, *values):  # the block body; its signature is the kinds' (below)
            body(ctx, values)

        fn.__name__ = fn.__qualname__ = name
        P = inspect.Parameter
        fn.__signature__ = inspect.Signature(
            [P("ctx", P.POSITIONAL_OR_KEYWORD)]
            + [P(f"arg{i}", P.POSITIONAL_OR_KEYWORD, annotation=GM if k in POINTER_KINDS else KIND_TYPES[k])
               for i, k in enumerate(kinds)])
        super().__init__(fn, name)
        self.binary = binary
        _BY_ADDRESS[kernel_addr] = self

    def __repr__(self) -> str:
        return f"<npurt native kernel {self.name}({self.kinds}) at 0x{self.kernel_addr:x}>"

    def _body(self, ctx, values) -> None:
        host = list(values)
        for slot, mode in zip(self.gm_slots, self.pointer_modes):
            ptr = values[slot]
            if ptr:
                host[slot] = host_address(ctx, ptr, mode)
        packed = self.struct.pack(*host)
        rc = self._call(self.kernel_addr, ctx.block_idx, ctx.block_num, packed)
        if rc:
            what = "trapped" if rc == TRAP else "raised a C++ exception"
            raise KernelTrap(f"native kernel {self.name!r} {what} in block {ctx.block_idx}", trap_code(ctx.device))


def host_address(ctx, ptr: int, mode: str) -> int:
    """The host address behind device address `ptr` for this block, reporting an access of
    the rest of its allocation (or registered host range) to observers; raises the
    kernel-memory error a Python kernel's gm() would for a dead or foreign address."""
    extent = _extent(ctx.device, ptr)
    view = ctx.gm(ptr, np.uint8, extent, mode)
    return view.ctypes.data


def _extent(device, ptr: int) -> int:
    """Bytes from `ptr` to the end of what holds it (1 when unknown: gm() then explains)."""
    if ptr < address.VA_BASE:
        managed = MANAGED.find(ptr)
        return managed.addr + managed.size - ptr if managed is not None else 1
    if address.is_host_alias(ptr):
        for rng in list(RUNTIME.host.aliases.values()):
            if rng.alias <= ptr < rng.alias + rng.size:
                return rng.alias + rng.size - ptr
        return 1
    owner = RUNTIME.device_by_physical.get(address.physical_device(ptr)) or device
    block = owner.memory.live.get(ptr) or owner.memory.find(ptr)
    if block is None:
        return 1
    end = block.addr + (usable_size(block) if block.state == LIVE else block.requested)
    return max(1, end - ptr)


# ------------------------------------------------------------------ <<<>>> launches
_LAUNCHED: dict[tuple, NativeKernel] = {}
_BY_ADDRESS: dict[int, NativeKernel] = {}  # kernel address -> the newest NativeKernel made for it


def native_kernel_at(kernel_addr: int) -> NativeKernel | None:
    """The native kernel whose code is at `kernel_addr`, if npurt has met it (a <<<>>> launch
    of it, or a loaded kernel binary holding it); None otherwise."""
    return _BY_ADDRESS.get(kernel_addr)
_lock = fork_safe_lock()


def native_kernel(name: str, kernel_addr: int, trampoline_addr: int, kinds: str) -> NativeKernel:
    """The NativeKernel for a kernel compiled into the program (one per kernel address, so
    its int handle and profiler name stay the same from launch to launch)."""
    key = (kernel_addr, trampoline_addr, kinds)
    func = _LAUNCHED.get(key)
    if func is None:
        with _lock:
            func = _LAUNCHED.get(key)
            if func is None:
                func = _LAUNCHED[key] = NativeKernel(name, kernel_addr, trampoline_addr, kinds)
    return func


def launch_native(name: str, kernel_addr: int, trampoline_addr: int, kinds: str, num_blocks: int,
                  stream: Stream, slots: bytes) -> int:
    """`kernel<<<num_blocks, l2ctrl, stream>>>(args...)`: enqueue one launch of a native
    kernel with its packed argument slots (device addresses in the pointer slots) on
    `stream` (a Stream: resolve a handle or None with stream_of first). Returns the task's
    sequence number."""
    RUNTIME.check_initialized()
    if not kernel_addr or not trampoline_addr:
        raise InvalidValueError(f"native kernel {name!r}: null kernel or trampoline address")
    func = native_kernel(name, kernel_addr, trampoline_addr, kinds)
    return enqueue_launch(func, num_blocks, stream, func.unpack(slots))


# ------------------------------------------------------------------ kernel binaries
class _Entry(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kernel", ctypes.c_void_p), ("trampoline", ctypes.c_void_p),
                ("kinds", ctypes.c_char_p)]


_TABLE = ctypes.CFUNCTYPE(ctypes.POINTER(_Entry), ctypes.POINTER(ctypes.c_uint32))


class NativeLibrary:
    """A loaded shared object of native kernels (kept loaded for the process: launches
    queued before an unload still run)."""

    def __init__(self, lib: ctypes.CDLL, origin: str):
        self.lib, self.origin = lib, origin


def load_elf(data: bytes | None, path: str | None, origin: str) -> tuple[NativeLibrary, dict[str, NativeKernel]]:
    """dlopen a kernel shared object (from `path`, or from `data` through a private temp
    file) and read its kernel table. NpuError ACL_ERROR_PARSE_FILE when it is not one."""
    tmp = None
    if path is None:
        fd, tmp = tempfile.mkstemp(prefix="npurt-kernels-", suffix=".so")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        path = tmp
    try:
        lib = ctypes.CDLL(os.path.abspath(path), mode=os.RTLD_LAZY | os.RTLD_LOCAL)
    except OSError as exc:
        raise NpuError(f"{origin} is an ELF file npurt cannot load as a kernel binary ({exc}); npurt loads "
                       "shared objects built by its ascendc_fatbin_library (and Python kernel files)",
                       C.ACL_ERROR_PARSE_FILE) from None
    finally:
        if tmp is not None:
            os.unlink(tmp)
    try:
        table = _TABLE(("npurtKernelTable", lib))
    except AttributeError:
        raise NpuError(f"{origin} has no npurt kernel table (npurtKernelTable): is it a real Ascend device "
                       "binary? Build kernels with npurt's ascendc_fatbin_library (npurt cann-home)",
                       C.ACL_ERROR_PARSE_FILE) from None
    count = ctypes.c_uint32(0)
    entries = table(ctypes.byref(count))
    native = NativeLibrary(lib, origin)
    kernels: dict[str, NativeKernel] = {}
    for i in range(count.value):
        e = entries[i]
        name = e.name.decode()
        kernels.setdefault(name, NativeKernel(name, e.kernel, e.trampoline, e.kinds.decode(), None))
    if not kernels:
        raise NpuError(f"{origin} defines no kernels (its kernel table is empty)", C.ACL_ERROR_PARSE_FILE)
    return native, kernels
