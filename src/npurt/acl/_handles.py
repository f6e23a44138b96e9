"""Int handles of the graph engine's objects (data buffers, tensor descs, datasets, model
descs, AIPP parameter sets, config handles, op attributes and op handles).

In real pyACL these are raw C pointers; ACL checks them for null and returns
ACL_ERROR_INVALID_PARAM (100000). npurt's handles are tagged per kind, so a stale or foreign
handle is also recognised: it gets 100000 too, with a message naming what the handle is.
These objects are plain host records, as in ACL: they outlive acl.finalize.
"""
from __future__ import annotations

from ..runtime import HandleTable, NpuError, constants as C, handle_table


class GeHandles(HandleTable):
    def get(self, handle):
        obj = self.lookup(handle)
        if obj is None:
            raise self._error(handle)
        return obj

    def _error(self, handle) -> NpuError:
        if handle == 0:
            return NpuError(f"the {self.kind} is null (0)", C.ACL_ERROR_INVALID_PARAM)
        return NpuError(super()._error(handle).message, C.ACL_ERROR_INVALID_PARAM)

    def register(self, obj) -> int:
        """Give `obj` a handle (stored on obj.handle) and return it."""
        obj.handle = self.add(obj)
        return obj.handle

    def drop(self, obj) -> None:
        if obj is not None and obj.handle:
            self.remove(obj.handle)
            obj.handle = 0


def _table(kind: str) -> GeHandles:
    return handle_table(kind, GeHandles)


buffers = _table("data buffer")
tensor_descs = _table("tensor desc")
datasets = _table("dataset")
model_descs = _table("model desc")
aipps = _table("aipp")
configs = _table("model config")
exec_configs = _table("exec config")
op_attrs = _table("op attr")
op_handles = _table("op handle")
kernel_descs = _table("kernel desc")
