"""torch_npu.npu.memory.NPUPluggableAllocator: npu tensors' memory from a shared library's own
allocation functions (torch_npu/npu/memory.py, torch_npu/csrc/npu/NPUPluggableAllocator.cpp).

`NPUPluggableAllocator(path, alloc_fn_name, free_fn_name)` loads the library with ctypes and
looks the two functions up, with torch_npu's signatures:

    void *alloc(ssize_t size, int device, aclrtStream stream);
    void free(void *ptr, ssize_t size, int device, aclrtStream stream);

`change_current_allocator(a)` makes every later npu tensor come from it (refused once npu
memory has been allocated: "Can't swap an already initialized allocator");
`torch.npu.MemPool(a.allocator())` makes the tensors created under `use_mem_pool` of that pool
come from it. Each tensor is one call of `alloc` (torch's pluggable allocator caches nothing),
and dropping the tensor calls `free` with the same size, device and stream.

The pointer `alloc` returns must be npurt device memory of that device, e.g. what the
library got from `aclrtMalloc` of npurt's C interface (libacl_rt.so of `npurt cann-home`,
loaded into this process: it runs on this process's runtime), since torch's kernels here read
device memory through npurt; anything else is refused with a RuntimeError naming the address.
"""
from __future__ import annotations

import ctypes

from ..runtime import fork_safe_lock

_ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)


class CustomAllocator:
    """The allocator object torch_npu's `_npu_customAllocator` makes (`NPUPluggableAllocator
    ._allocator`): the two C functions, and what they hold now (pointer -> size, device, stream)."""

    def __init__(self, alloc_fn: int, free_fn: int, library=None):
        self.alloc_fn, self.free_fn = _ALLOC(alloc_fn), _FREE(free_fn)
        self.library = library  # kept loaded while the allocator lives
        self.lock = fork_safe_lock()
        self.held: dict[int, tuple[int, int, int]] = {}

    def allocate(self, size: int, device: int, stream: int) -> int:
        ptr = self.alloc_fn(size, device, stream) or 0
        with self.lock:
            self.held[ptr] = (size, device, stream)
        return ptr

    def release(self, ptr: int) -> None:
        with self.lock:
            size, device, stream = self.held.pop(ptr)
        self.free_fn(ptr, size, device, stream)


class NPUPluggableAllocator:
    """NPU memory allocator loaded from a .so file (torch_npu.npu.memory.NPUPluggableAllocator)."""

    def __init__(self, path_to_so_file: str, alloc_fn_name: str, free_fn_name: str):
        library = ctypes.CDLL(path_to_so_file)
        alloc_fn = ctypes.cast(getattr(library, alloc_fn_name), ctypes.c_void_p).value
        free_fn = ctypes.cast(getattr(library, free_fn_name), ctypes.c_void_p).value
        if alloc_fn is None:
            raise RuntimeError("alloc_fn is None")
        if free_fn is None:
            raise RuntimeError("free_fn is None")
        self._allocator = CustomAllocator(alloc_fn, free_fn, library)

    def allocator(self) -> CustomAllocator:
        return self._allocator


class PluggableMemory:
    """What npurt.torch.storage allocates npu tensors from (a DeviceMemory's part of the
    interface), over a CustomAllocator on one device: each tensor is one `alloc` of the library,
    found in the device's live blocks (npurt memory the library got from aclrtMalloc)."""

    expandable = no_split = False
    vmm = None
    reserved = segment_maps = segment_unmaps = 0  # the library's segments are its own

    def __init__(self, device, allocator: CustomAllocator, stream_of):
        self.device, self.allocator, self.stream_of = device, allocator, stream_of
        self.live = device.memory.live

    def malloc(self, size: int, policy: int = 0, *_rules) -> int:
        ptr = self.allocator.allocate(size, self.device.id, self.stream_of(self.device.id))
        if not ptr or ptr not in self.live:
            if ptr:
                self.allocator.release(ptr)
            raise RuntimeError(f"the pluggable allocator's alloc({size}) returned 0x{ptr:x}, which is not npurt "
                               f"device memory of npu:{self.device.id} (allocate it with aclrtMalloc of npurt's "
                               "C interface, libacl_rt.so from `npurt cann-home`)")
        return ptr

    def malloc_large(self, size: int, *_rules) -> int:
        return self.malloc(size)

    def free(self, ptr: int) -> None:
        self.allocator.release(ptr)


CURRENT: list = []  # [CustomAllocator] after change_current_allocator


def change_current_allocator(allocator, initialized: bool) -> None:
    """Make `allocator` (an NPUPluggableAllocator or its CustomAllocator) the one every npu
    tensor comes from; `initialized`: npu memory was allocated already (refused, as torch_npu)."""
    custom = allocator.allocator() if isinstance(allocator, NPUPluggableAllocator) else allocator
    if not isinstance(custom, CustomAllocator):
        raise TypeError(f"change_current_allocator expects an NPUPluggableAllocator, got {type(allocator).__name__}")
    if initialized:
        raise RuntimeError("Can't swap an already initialized allocator")
    CURRENT[:] = [custom]
