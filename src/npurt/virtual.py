"""VirtualBuffer: device memory that grows in place, and can sleep and wake at the same address.

Built on the runtime's virtual memory management (aclrtReserveMemAddress / aclrtMallocPhysical
/ aclrtMapMem): the buffer reserves `capacity` bytes of device addresses once and maps
physical memory into them one granularity-sized chunk at a time, so growing never moves the
data nor invalidates pointers and arrays made from it (what torch_npu's expandable segments
do for its allocator). `sleep()` copies the mapped bytes to host memory, unmaps the chunks
and frees their physical memory (the device memory is given back); `wake()` maps new physical
memory at the same addresses and restores the bytes (vLLM's sleep mode, which offloads
weights between requests)::

    buf = npurt.VirtualBuffer(1 << 30)          # 1 GiB of addresses, nothing mapped yet
    buf.resize(weights.nbytes)                  # map what the weights need
    w = buf.array(weights.shape, weights.dtype)
    w.copy_from_host(weights)                   # npurt arrays work on the mapped memory
    buf.sleep()                                 # device memory freed, the bytes kept on the host
    buf.wake()                                  # same address, same bytes: `w` is valid again

Reading or writing the buffer while it sleeps, or past `size`, is refused like any access to
memory that is not there (an InvalidValueError naming the reserved range).
"""
from __future__ import annotations

import numpy as np

from . import runtime as rt
from . import devices as _devices
from .array import DeviceArray
from .array.layout import layout_of


class _Extent:
    """What a DeviceArray made from a VirtualBuffer holds on to (its `_mem`)."""

    __slots__ = ("ptr", "nbytes", "device", "block", "buffer")

    def __init__(self, buffer: "VirtualBuffer", ptr: int, nbytes: int):
        self.ptr, self.nbytes, self.device, self.block, self.buffer = ptr, nbytes, buffer._device, None, buffer


class VirtualBuffer:
    """`capacity` bytes of reserved device addresses; `size` of them (a multiple of the
    granularity) mapped onto physical memory."""

    def __init__(self, capacity: int, size: int = 0, device: int | None = None):
        if type(capacity) is not int or capacity <= 0:
            raise rt.InvalidValueError(f"VirtualBuffer capacity must be a positive int, got {capacity!r}")
        self._device = _devices.current_runtime_device() if device is None else _devices.runtime_device(device)
        self._prop = {"location": {"type": rt.constants.ACL_MEM_LOCATION_TYPE_DEVICE, "id": self._device.id},
                      "memAttr": rt.constants.ACL_HBM_MEM_HUGE}
        with _devices.device(self._device.id):
            self.granularity = rt.mem_get_allocation_granularity(self._prop, 0)
            self.capacity = -(-capacity // self.granularity) * self.granularity
            self.ptr = rt.reserve_mem_address(self.capacity)
        self._chunks: list[int] = []      # physical handles, mapped at ptr + i * granularity
        self._host: np.ndarray | None = None  # the bytes while asleep
        self._asleep_size = 0
        self.closed = False
        if size:
            self.resize(size)

    # ---------------------------------------------------------- facts
    @property
    def size(self) -> int:
        """Bytes mapped now (0 while asleep)."""
        return len(self._chunks) * self.granularity

    @property
    def asleep(self) -> bool:
        return self._host is not None

    @property
    def device(self) -> int:
        return self._device.id

    def __repr__(self) -> str:
        state = "asleep" if self.asleep else f"{self.size} B mapped"
        return f"<npurt.VirtualBuffer 0x{self.ptr:x} on device {self.device}: {state} of {self.capacity} B>"

    # ---------------------------------------------------------- growing and shrinking
    def resize(self, nbytes: int) -> None:
        """Map or unmap chunks at the end so that at least `nbytes` are mapped (rounded up to
        the granularity); the bytes below stay where they are."""
        self._check_open()
        if self.asleep:
            raise rt.InvalidValueError("VirtualBuffer.resize: the buffer is asleep; wake() it first")
        if type(nbytes) is not int or not 0 <= nbytes <= self.capacity:
            raise rt.InvalidValueError(f"VirtualBuffer.resize: {nbytes!r} is not in [0, capacity={self.capacity}]")
        want = -(-nbytes // self.granularity)
        while len(self._chunks) < want:
            self._map_chunk(len(self._chunks))
        while len(self._chunks) > want:
            self._unmap_last()

    def _map_chunk(self, index: int) -> None:
        handle = rt.malloc_physical(self.granularity, self._prop)
        try:
            rt.map_mem(self.ptr + index * self.granularity, self.granularity, 0, handle)
        except BaseException:
            rt.free_physical(handle)
            raise
        self._chunks.append(handle)

    def _unmap_last(self) -> None:
        index = len(self._chunks) - 1
        rt.synchronize_device()  # no queued work may still use the chunk (unmap is immediate)
        rt.unmap_mem(self.ptr + index * self.granularity)
        rt.free_physical(self._chunks.pop())

    # ---------------------------------------------------------- sleep and wake
    def sleep(self) -> None:
        """Offload: copy the mapped bytes to host memory, then unmap and free every chunk."""
        self._check_open()
        if self.asleep:
            return
        size = self.size
        host = np.empty(size, np.uint8)
        with _devices.device(self._device.id):
            rt.synchronize_device()
            if size:
                rt.memcpy(host.ctypes.data, size, self.ptr, size, rt.constants.ACL_MEMCPY_DEVICE_TO_HOST)
            while self._chunks:
                self._unmap_last()
        self._host, self._asleep_size = host, size

    def wake(self) -> None:
        """Map new physical memory at the same addresses and restore the bytes."""
        self._check_open()
        if not self.asleep:
            return
        host, size = self._host, self._asleep_size
        with _devices.device(self._device.id):
            while self.size < size:
                self._map_chunk(len(self._chunks))
            if size:
                rt.memcpy(self.ptr, size, host.ctypes.data, size, rt.constants.ACL_MEMCPY_HOST_TO_DEVICE)
        self._host = None

    # ---------------------------------------------------------- arrays
    def array(self, shape, dtype="float32", offset: int = 0) -> DeviceArray:
        """A DeviceArray over mapped bytes [offset, offset + nbytes) of the buffer."""
        self._check_open()
        shape, dtype, nbytes, strides = layout_of(shape, dtype)
        if type(offset) is not int or offset < 0 or offset + nbytes > self.capacity:
            raise rt.InvalidValueError(f"VirtualBuffer.array: {nbytes} bytes at offset {offset!r} do not fit the "
                                       f"buffer's capacity ({self.capacity} bytes)")
        mem = _Extent(self, self.ptr + offset, nbytes)
        arr = DeviceArray.__new__(DeviceArray)
        arr._mem, arr._ptr = mem, mem.ptr
        arr.shape, arr.dtype, arr.strides = shape, dtype, strides
        return arr

    # ---------------------------------------------------------- teardown
    def close(self) -> None:
        """Unmap and free everything and release the addresses (arrays of it become invalid)."""
        if self.closed:
            return
        with _devices.device(self._device.id):
            while self._chunks:
                self._unmap_last()
            rt.release_mem_address(self.ptr)
        self._host = None
        self.closed = True

    def _check_open(self) -> None:
        if self.closed:
            raise rt.InvalidValueError("the VirtualBuffer was closed")

    def __enter__(self) -> "VirtualBuffer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
