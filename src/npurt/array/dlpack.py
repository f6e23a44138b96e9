"""DLPack capsules of memory at addresses npurt chooses: DeviceArray's export
(`__dlpack__` / `__dlpack_device__`: `torch.from_dlpack(x)` is an npu tensor over the same
device memory) and the torch face's tensors (npurt/torch/_dlpack.py: npu tensors over npurt
device memory, CPU tensors over host views of it). One implementation for both.

A DeviceArray is exported as device memory: DLDeviceType kDLExtDev (12, what torch maps to
its PrivateUse1 device, "npu") with the array's device id, its strides in elements. Before
the capsule is handed over, the work queued on the current stream of the array's device (or
on `stream=`, an npurt.Stream) is waited for, since a consumer outside npurt cannot order
itself after npurt's streams; `stream=-1` skips the wait (the consumer orders it, as the
DLPack spec says). A consumer that asks for the host (`dl_device=(kDLCPU, 0)`, as
`np.from_dlpack(x, device="cpu")` does) gets a host copy unless it forbade copies
(`copy=False`: BufferError); `copy=True` on the array's own device exports a device copy.
Anything else a consumer asks that cannot be met is a BufferError that says what to do.
Device memory can be read in place only by a consumer that knows npurt's devices: one that
registers itself (`add_device_consumer`; npurt.torch registers torch). With none, an export
that asks for no device (a plain `np.from_dlpack(x)`, `torch.as_tensor(x)`) is refused with a
BufferError that says how to copy to the host; with torch registered, a plain
`np.from_dlpack(x)` gets the device capsule, which numpy refuses itself ("Unsupported device").

How a capsule is made: with the C accelerator (npurt.runtime.accel), `capsule_at` is its
`capsule`, one C allocation holding the DLManagedTensor and its shape and strides, whose C
deleter calls `owner[0](owner)` with the GIL held and the thread's exception saved and
restored (a few times cheaper: every npu op's output is one). Without it: numpy exports a one-element array of its own as a (legacy,
"dltensor") DLManagedTensor capsule, whose DLTensor fields are then rewritten (address,
device, dtype, shape, strides). numpy's deleter is C code that drops the array, so when the
consumer frees the tensor, what the array holds is released by the array's finalizer
(`owner[0](owner)`), or simply dropped: a DeviceArray exported keeps its memory alive this
way. That is the point of the detour: a deleter written in Python (a ctypes callback) runs
while a consumer may be unwinding with an exception set, and replaces that exception with a
SystemError; Python runs finalizers with the exception saved. Fields are read and written
through one memoryview over the process's address space, only at addresses of capsules numpy
just made for us.
"""
from __future__ import annotations

import ctypes
import struct

import numpy as np

from .. import runtime as _rt
from .. import streams as _streams

KDL_CPU = 1       # DLDeviceType kDLCPU
KDL_EXT_DEV = 12  # DLDeviceType kDLExtDev: torch maps it to PrivateUse1 ("npu")
# DLDataTypeCode: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6
_KIND_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}

_MEM = memoryview((ctypes.c_char * (1 << 47)).from_address(0)).cast("B")
_U64 = struct.Struct("<Q")
# DLTensor's first fields: data, device {type, id}, ndim, dtype {code, bits, lanes}
_HEAD = struct.Struct("<QiiiBBH")
_DIMS = [struct.Struct(f"<{n}q") for n in range(65)]
_ONES = [(1,) * n for n in range(65)]
_CAPSULE_POINTER = 16  # offset of PyCapsule's pointer (after PyObject_HEAD)
_SCRATCH = np.zeros(8, np.float32)
_F32 = np.dtype(np.float32)
_new = np.ndarray.__new__

# Who reads an exported DeviceArray in place (kDLExtDev at npurt's device addresses): a consumer
# registers itself when it loads (npurt.torch does: torch.from_dlpack(x) is then an npu tensor
# over it). With none, an export that asks for no device is refused with what to do instead.
DEVICE_CONSUMERS: set[str] = set()


def add_device_consumer(name: str) -> None:
    """Say that `name` (a library loaded in this process) reads npurt's device memory in place."""
    DEVICE_CONSUMERS.add(name)


class _Owned(np.ndarray):
    """The array behind a capsule; its finalizer calls owner[0](owner) (then drops owner)."""

    def __del__(self):
        try:
            owner = self.__dict__.pop("owner", None)
            if owner is not None:
                owner[0](owner)
        except Exception:  # noqa: BLE001 - interpreter shutdown or a torn-down runtime
            pass


def _numpy_capsule_at(ptr: int, shape, strides, code: int, bits: int, device_type: int, device_id: int,
                      owner: tuple | None):
    """A DLPack capsule ("dltensor") of memory at `ptr`: `shape`, `strides` in elements, dtype
    (DLDataTypeCode `code`, `bits`), on (`device_type`, `device_id`). When the consumer frees
    it, `owner[0](owner)` is called (if there is an owner)."""
    ndim = len(shape)
    if owner is None:
        arr = _new(np.ndarray, _ONES[ndim], _F32, _SCRATCH)
    else:
        arr = _new(_Owned, _ONES[ndim], _F32, _SCRATCH)
        arr.owner = owner
    capsule = arr.__dlpack__()
    mem = _MEM
    p = _U64.unpack_from(mem, id(capsule) + _CAPSULE_POINTER)[0]
    _HEAD.pack_into(mem, p, ptr, device_type, device_id, ndim, code, bits, 1)
    if ndim:  # numpy's shape and strides arrays (their pointers follow dtype in DLTensor)
        dims = _DIMS[ndim]
        dims.pack_into(mem, _U64.unpack_from(mem, p + 24)[0], *shape)
        dims.pack_into(mem, _U64.unpack_from(mem, p + 32)[0], *strides)
    return capsule


# With the C accelerator, the same capsule made in one C allocation (its deleter calls the owner
# with the thread's exception saved, as the finalizer above is called): each npu op's output
capsule_at = _rt.dlpack_capsule or _numpy_capsule_at


def dl_dtype(dtype: np.dtype) -> tuple[int, int] | None:
    """(DLDataTypeCode, bits) of a numpy dtype (bfloat16 included), or None."""
    if dtype.name == "bfloat16":
        return 4, 16
    code = _KIND_CODES.get(dtype.kind)
    return None if code is None else (code, dtype.itemsize * 8)


def _keep(owner: tuple) -> None:
    """The finalizer of an exported DeviceArray's capsule: dropping `owner` lets the array go."""


def device_of(x) -> tuple[int, int]:
    """`__dlpack_device__` of a DeviceArray: (kDLExtDev, its device id)."""
    return KDL_EXT_DEV, x.device


def export(x, stream=None, max_version=None, dl_device=None, copy=None):
    """`__dlpack__` of a DeviceArray `x` (the module docstring says what each argument does)."""
    if dl_device is not None:
        dl_device = (int(dl_device[0]), int(dl_device[1]))
        if dl_device == (KDL_CPU, 0):
            if copy is False:
                raise BufferError("DeviceArray.__dlpack__: the host was asked for with copy=False, but a "
                                  "DeviceArray lives in device memory: allow the copy (copy=None or True, as "
                                  "np.from_dlpack(x, device='cpu') does) or copy it yourself with x.to_host()")
            return x.to_host(stream if stream != -1 else None).__dlpack__()
        if dl_device != device_of(x):
            raise BufferError(f"DeviceArray.__dlpack__: the array is on {device_of(x)} (kDLExtDev, device "
                              f"{x.device}); it cannot be exported to DLPack device {dl_device}: move it first "
                              "(x.to(device)) or ask for the host, (1, 0)")
    elif not DEVICE_CONSUMERS:
        raise BufferError("DeviceArray.__dlpack__: a DeviceArray lives in device memory, which nothing in this "
                          "process reads in place. Copy it to the host first: np.from_dlpack(x, device='cpu') or "
                          "x.to_host(); or `import npurt.torch` (npurt run --torch-npu), and torch.from_dlpack(x) "
                          "is an npu tensor over it")
    if stream is not None and stream != -1 and not isinstance(stream, _streams.Stream):
        raise BufferError(f"DeviceArray.__dlpack__: stream must be None (wait for the current stream), -1 "
                          f"(no wait) or an npurt.Stream, got {stream!r}")
    if copy is True:
        x = x.copy(stream if stream != -1 else None)
    code = dl_dtype(x.dtype)
    if code is None:
        raise BufferError(f"DeviceArray.__dlpack__: DLPack has no type for {x.dtype}")
    item = x.dtype.itemsize
    if any(s % item for s in x.strides):
        raise BufferError(f"DeviceArray.__dlpack__: strides {x.strides} (bytes) are not whole elements of "
                          f"{x.dtype}: DLPack counts strides in elements; export x.contiguous()")
    if stream != -1:
        (_streams._runtime_stream(x.device) if stream is None else stream._s).synchronize()
    return capsule_at(x.ptr, x.shape, tuple(s // item for s in x.strides), *code, KDL_EXT_DEV, x.device,
                      (_keep, x))

