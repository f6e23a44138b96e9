"""acl.rt functions of groups the simulated NPU does not have.

Each one exists (a pyACL script that calls it gets a return code, never an AttributeError),
records the failure, and returns ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000) in the shape of
the real function. docs/compatibility.md lists them.
"""
from __future__ import annotations

from ._wrap import not_supported

_RES = ("per-device / per-stream core limits (aclrtDevResLimitType) are not simulated: "
        "kernels may use every AI core")
_NOTIFY = "notifies (aclrtNotify) are not simulated; use events (create_event, stream_wait_event)"

# name -> (what, shape, value returned in place of the outputs)
_TABLE = {
    "get_device_res_limit": (_RES, "one", 0),
    "set_device_res_limit": (_RES, "ret", None),
    "reset_device_res_limit": (_RES, "ret", None),
    "get_stream_res_limit": (_RES, "one", 0),
    "set_stream_res_limit": (_RES, "ret", None),
    "reset_stream_res_limit": (_RES, "ret", None),
    "use_stream_res_in_current_thread": (_RES, "ret", None),
    "unuse_stream_res_in_current_thread": (_RES, "ret", None),
    "get_res_in_current_thread": (_RES, "one", 0),
    "create_notify": (_NOTIFY, "one", 0),
    "destroy_notify": (_NOTIFY, "ret", None),
    "record_notify": (_NOTIFY, "ret", None),
    "wait_and_reset_notify": (_NOTIFY, "ret", None),
    "get_notify_id": (_NOTIFY, "one", 0),
    "notify_batch_reset": (_NOTIFY, "ret", None),
    "notify_get_export_key": (_NOTIFY, "one", None),
    "notify_set_import_pid": (_NOTIFY, "ret", None),
    "notify_import_by_key": (_NOTIFY, "one", 0),
}

for _name, (_what, _shape, _value) in _TABLE.items():
    globals()[_name] = not_supported(f"acl.rt.{_name}", _what, _shape, _value)

NOT_SUPPORTED = list(_TABLE)
__all__ = list(_TABLE)
