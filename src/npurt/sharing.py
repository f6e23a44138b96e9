"""Sharing device arrays between processes: `npurt.ipc_export(array)` and `npurt.ipc_import(handle)`.

The processes of one device namespace share the simulated devices (docs/memory.md), so another
process can use an array's memory in place, at the same device address, once it is exported
(the runtime's IPC memory: aclrtIpcMemGetExportKey / ImportByKey)::

    # process A (e.g. a trainer)
    w = npurt.to_device(weights)
    handle = npurt.ipc_export(w)          # picklable: send it over a pipe, a queue, a file
    ...
    # process B (e.g. an inference server)
    w = npurt.ipc_import(handle)          # a DeviceArray over A's memory: no copy
    y = w @ x                             # reads A's bytes; writes are seen by A

`IpcHandle` carries the key, the array's layout and the device; `str(handle)` is the bare key
(what the C and pyACL faces pass around). `pids`: the processes allowed to import (default:
any process of the namespace). The export lives until `ipc_close(handle)` in the exporter (or
its exit); an imported array closes its import when the last view of it is collected (or with
`ipc_close`). The importer cannot free the memory; if the exporter frees or closes first, the
memory stays reserved until the importers close (no one else's allocation ever lands on it).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from . import devices as _devices
from . import runtime as rt
from .array import DeviceArray
from .array.layout import layout_of

_EXPORTED: dict[str, object] = {}   # key -> the exported array's allocation (kept alive while exported)


@dataclasses.dataclass(frozen=True)
class IpcHandle:
    """What `ipc_import` needs to rebuild an exported array in another process."""

    key: str
    shape: tuple
    dtype: str
    strides: tuple
    offset: int        # bytes from the exported range's start to the array's first element
    nbytes: int        # the exported range
    device: int        # physical device

    def __str__(self) -> str:
        return self.key


def ipc_export(array: DeviceArray, pids=None) -> IpcHandle:
    """Export the memory of `array` to the other processes of the device namespace; a
    picklable handle for `ipc_import`. `pids`: a list of process ids allowed to import it
    (None: any process of the namespace)."""
    if not isinstance(array, DeviceArray):
        raise rt.InvalidValueError(f"ipc_export takes a DeviceArray, got {type(array).__name__}; "
                                   "copy host data to the device first (npurt.to_device)")
    mem = array._mem
    if isinstance(mem, _Imported):
        raise rt.InvalidValueError("ipc_export: this array is memory imported from another process; "
                                   "only its exporter can export it")
    start, nbytes = mem.ptr, max(mem.nbytes, 1)
    key = rt.ipc_mem_get_export_key(start, nbytes, rt.ipc.EXPORT_FLAG_DEFAULT if pids is not None
                                    else rt.ipc.EXPORT_FLAG_DISABLE_PID_VALIDATION)
    if pids is not None:
        try:
            rt.ipc_mem_set_import_pid(key, list(pids))
        except BaseException:
            rt.ipc_mem_close(key)
            raise
    _EXPORTED[key] = mem
    return IpcHandle(key, tuple(array.shape), array.dtype.str, tuple(array.strides), array.ptr - start,
                     nbytes, mem.device.backend.physical_id)


class _Imported:
    """The allocation behind an imported array: closes the import when collected."""

    __slots__ = ("ptr", "nbytes", "device", "key", "open", "block")

    def __init__(self, key: str, ptr: int, nbytes: int, device, block):
        self.key, self.ptr, self.nbytes, self.device, self.open = key, ptr, nbytes, device, True
        self.block = block

    def close(self) -> None:
        if self.open:
            self.open = False
            rt.ipc_mem_close(self.key)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown, or a runtime torn down
            pass


def ipc_import(handle) -> DeviceArray:
    """The array another process exported with `ipc_export`: a DeviceArray over its memory
    (no copy). A bare key (a str) gives the whole exported range as a 1-D uint8 array."""
    if isinstance(handle, str):
        key, layout = handle, None
    elif isinstance(handle, IpcHandle):
        key, layout = handle.key, handle
    else:
        raise rt.InvalidValueError(f"ipc_import takes an IpcHandle (from ipc_export) or a key str, "
                                   f"got {type(handle).__name__}")
    _devices.current_runtime_device()  # the Pythonic API binds the current device on first use
    ptr = rt.ipc_mem_import_by_key(key)
    record_device = rt.RUNTIME.device_by_physical[rt.address.physical_device(ptr)]
    memory = record_device.memory
    block = memory.live.get(ptr)
    nbytes = block.requested if block is not None else (layout.nbytes if layout else 0)
    mem = _Imported(key, ptr, nbytes, record_device, block)
    obj = DeviceArray.__new__(DeviceArray)
    obj._mem = mem
    if layout is None:
        shape, dtype, _, strides = layout_of((nbytes,), np.uint8)
        obj._ptr, obj.shape, obj.dtype, obj.strides = ptr, shape, dtype, strides
    else:
        obj._ptr = ptr + layout.offset
        obj.shape, obj.dtype, obj.strides = tuple(layout.shape), np.dtype(layout.dtype), tuple(layout.strides)
    return obj


def ipc_close(what) -> None:
    """End an export (an IpcHandle or key this process exported: no new imports; the memory
    is the exporter's again once no process imports it) or an import (an array `ipc_import`
    made: using it afterwards is an error)."""
    if isinstance(what, DeviceArray):
        mem = what._mem
        if not isinstance(mem, _Imported):
            raise rt.InvalidValueError("ipc_close: this array was not imported (ipc_import); to end an "
                                       "export pass the handle ipc_export returned")
        mem.close()
        return
    key = what.key if isinstance(what, IpcHandle) else what
    if key not in _EXPORTED:
        raise rt.InvalidValueError(f"ipc_close: {key!r} is not an export of this process (close an "
                                   "imported array by passing the array)")
    rt.ipc_mem_close(key)
    del _EXPORTED[key]
