"""Every pyACL runtime constant with its real value, as `npurt.acl.constants.ACL_...`.

The same names are also attributes of `acl` and `acl.rt` (so `acl.ACL_MEMCPY_HOST_TO_DEVICE`
and `acl.rt.ACL_MEMCPY_HOST_TO_DEVICE` both work). Real pyACL scripts usually define the
values themselves (the CANN docs never promise module attributes); the values here are the
ones of the C headers (`acl_rt.h`, `acl_base_rt.h`, `rt_error_codes.h`), so both styles give
the same numbers.

The values live in `npurt.runtime.constants` (the runtime uses them); this module
re-exports them and adds a few facade-only names. `GROUPS` maps a group title to the names
in it, in the order of the pyACL documentation:

| group | names start with |
| --- | --- |
| run mode, scheduler, device status, overflow mode, features | ACL_DEVICE/ACL_HOST, ACL_TS_ID_, ACL_RT_DEVICE_STATUS_, ACL_RT_OVERFLOW_MODE_, ACL_FEATURE_, ACL_DEVICE_INFO_ |
| device attributes and limits | ACL_DEV_ATTR_, ACL_RT_DEV_LIMIT_, ACL_RT_DEVS_TOPOLOGY_, ACL_RT_DEV_RES_ |
| system parameters | ACL_OPT_ |
| streams | ACL_STREAM_, ACL_CONTINUE_ON_FAILURE, ACL_STOP_ON_FAILURE |
| events | ACL_EVENT_ |
| memory | ACL_MEM_, ACL_DDR_MEM*, ACL_HBM_MEM*, ACL_HOST_REG*, ACL_MEMCPY_, ACL_RT_MEM_, ACL_RT_CMO_, ACL_RT_IPC_, ACL_RT_VMM_ |
| execution control and kernels | ACL_CALLBACK_, ACL_RT_MEMCPY_SDMA_, ACL_RT_THREAD_LEVEL, ACL_RT_LAUNCH_KERNEL_ATTR_, ACL_RT_ENGINE_TYPE_, ACL_RT_BINARY_LOAD_OPT_ |
| data types | ACL_DT_UNDEFINED, ACL_FLOAT ... ACL_BF16, ACL_INT4 ... ACL_FLOAT4_E1M2 |
| error codes | ACL_SUCCESS, ACL_ERROR_*, ACL_RT_SUCCESS |
| profiling (acl.prof) | ACL_PROF_, ACL_AICORE_, ACL_STEP_, ACL_SUBSCRIBE_ (acl_prof.h) |
"""
from __future__ import annotations

from ..runtime import constants as _runtime_constants
from ..runtime.constants import *  # noqa: F401,F403 - the real values

# ---------------------------------------------------------------- facade-only names
# aclrtDevResLimitType (the res-limit functions are not supported, but scripts name these)
ACL_RT_DEV_RES_CUBE_CORE = 0
ACL_RT_DEV_RES_VECTOR_CORE = 1
# notify export/import flags (notifies are not supported; values for completeness)
ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT = 0x0
ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION = 0x2
ACL_RT_NOTIFY_IMPORT_FLAG_DEFAULT = 0x0
ACL_RT_NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS = 0x2
# acl.op.start_dump_args
ACL_OP_DUMP_OP_AICORE_ARGS = 0x1

# acl.prof (acl_prof.h): data type switches, AI core metrics, step tags, subscription, config types
ACL_PROF_ACL_API = 0x0001
ACL_PROF_TASK_TIME = 0x0002
ACL_PROF_AICORE_METRICS = 0x0004
ACL_PROF_AICPU = 0x0008
ACL_PROF_L2CACHE = 0x0010
ACL_PROF_HCCL_TRACE = 0x0020
ACL_PROF_TRAINING_TRACE = 0x0040
ACL_PROF_MSPROFTX = 0x0080
ACL_PROF_RUNTIME_API = 0x0100
ACL_PROF_GE_API_L0 = 0x0200
ACL_PROF_FWK_SCHEDULE_L0 = ACL_PROF_GE_API_L0  # the documentation's name
ACL_PROF_TASK_TIME_L0 = 0x0800
ACL_PROF_TASK_MEMORY = 0x1000
ACL_PROF_TASK_TIME_L2 = 0x2000
ACL_PROF_OP_ATTR = 0x4000
ACL_PROF_TASK_TIME_L3 = 0x8000
ACL_PROF_GE_API_L1 = 0x01000000
ACL_PROF_FWK_SCHEDULE_L1 = ACL_PROF_GE_API_L1
ACL_PROF_API_STATS = 0x400000000
ACL_PROF_AICORE_SHAPE = 0x800000000
ACL_PROF_MAX_OP_NAME_LEN = 257
ACL_PROF_MAX_OP_TYPE_LEN = 65
ACL_AICORE_ARITHMETIC_UTILIZATION = 0
ACL_AICORE_PIPE_UTILIZATION = 1
ACL_AICORE_MEMORY_BANDWIDTH = 2
ACL_AICORE_L0B_AND_WIDTH = 3
ACL_AICORE_RESOURCE_CONFLICT_RATIO = 4
ACL_AICORE_MEMORY_UB = 5
ACL_AICORE_L2_CACHE = 6
ACL_AICORE_PIPE_EXECUTE_UTILIZATION = 7
ACL_AICORE_MEMORY_ACCESS = 8
ACL_AICORE_NONE = 0xFF
ACL_STEP_START = 0
ACL_STEP_END = 1
ACL_SUBSCRIBE_OP = 0
ACL_SUBSCRIBE_SUBGRAPH = 1
ACL_SUBSCRIBE_OP_THREAD = 2
ACL_SUBSCRIBE_NONE = 0xFF
ACL_SUBSCRIBE_ATTRI_THREADID = 0
ACL_SUBSCRIBE_ATTRI_NONE = 1
ACL_PROF_ARGS_MIN = 0
ACL_PROF_STORAGE_LIMIT = 1
ACL_PROF_SYS_HARDWARE_MEM_FREQ = 3
ACL_PROF_LLC_MODE = 4
ACL_PROF_SYS_IO_FREQ = 5
ACL_PROF_SYS_INTERCONNECTION_FREQ = 6
ACL_PROF_DVPP_FREQ = 7
ACL_PROF_HOST_SYS = 8
ACL_PROF_HOST_SYS_USAGE = 9
ACL_PROF_HOST_SYS_USAGE_FREQ = 10
ACL_PROF_LOW_POWER_FREQ = 11
ACL_PROF_SYS_MEM_SERVICEFLOW = 12
ACL_PROF_SYS_CPU_FREQ = 13
ACL_PROF_OPTYPE = 14
ACL_PROF_NTS_METRICS = 15
ACL_PROF_PATH = 16
ACL_PROF_ARGS_MAX = 17
_PROFILING = [n for n in list(globals()) if n.startswith(("ACL_PROF_", "ACL_AICORE_", "ACL_STEP_", "ACL_SUBSCRIBE_"))]

_NAMES = [n for n in dir(_runtime_constants) if n.startswith("ACL_")]
_NAMES += ["ACL_RT_DEV_RES_CUBE_CORE", "ACL_RT_DEV_RES_VECTOR_CORE", "ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT",
           "ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION", "ACL_RT_NOTIFY_IMPORT_FLAG_DEFAULT",
           "ACL_RT_NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS", "ACL_OP_DUMP_OP_AICORE_ARGS", *_PROFILING]

_DATA_TYPES = ("ACL_DT_UNDEFINED", "ACL_FLOAT", "ACL_FLOAT16", "ACL_INT8", "ACL_INT32", "ACL_UINT8",
               "ACL_INT16", "ACL_UINT16", "ACL_UINT32", "ACL_INT64", "ACL_UINT64", "ACL_DOUBLE", "ACL_BOOL",
               "ACL_STRING", "ACL_COMPLEX64", "ACL_COMPLEX128", "ACL_BF16", "ACL_INT4", "ACL_UINT1",
               "ACL_COMPLEX32", "ACL_HIFLOAT8", "ACL_FLOAT8_", "ACL_FLOAT6_", "ACL_FLOAT4_")
_GROUP_RULES = [  # a rule item matches itself, NAME_..., or (ending in "_") any NAME...; first group wins
    ("error codes", ("ACL_SUCCESS", "ACL_ERROR_", "ACL_RT_SUCCESS")),
    ("data types", _DATA_TYPES),
    ("memory", ("ACL_MEM", "ACL_MEMCPY", "ACL_DDR_MEM", "ACL_HBM_MEM", "ACL_HOST_REG", "ACL_HOST_REGISTER",
                "ACL_RT_MEM", "ACL_RT_CMO", "ACL_RT_IPC", "ACL_RT_VMM")),
    ("run mode, scheduler, device status, overflow mode, features",
     ("ACL_DEVICE", "ACL_HOST", "ACL_TS_ID", "ACL_RT_DEVICE_STATUS", "ACL_RT_OVERFLOW_MODE", "ACL_FEATURE")),
    ("device attributes and limits", ("ACL_DEV_ATTR", "ACL_RT_DEV_LIMIT", "ACL_RT_DEVS_TOPOLOGY", "ACL_RT_DEV_RES")),
    ("system parameters", ("ACL_OPT",)),
    ("streams", ("ACL_STREAM", "ACL_CONTINUE_ON_FAILURE", "ACL_STOP_ON_FAILURE")),
    ("events", ("ACL_EVENT",)),
    ("execution control and kernels",
     ("ACL_CALLBACK", "ACL_RT_MEMCPY_SDMA", "ACL_RT_THREAD_LEVEL", "ACL_RT_LAUNCH_KERNEL_ATTR",
      "ACL_RT_ENGINE_TYPE", "ACL_RT_BINARY_LOAD_OPT", "ACL_OP_DUMP", "ACL_RT_NOTIFY")),
    ("profiling (acl.prof)", ("ACL_PROF_", "ACL_AICORE_", "ACL_STEP_", "ACL_SUBSCRIBE_")),
]


def _group_of(name: str) -> str:
    for title, items in _GROUP_RULES:
        for item in items:
            if name == item or name.startswith(item + "_") or (item.endswith("_") and name.startswith(item)):
                return title
    return "other"


GROUPS: dict[str, list[str]] = {title: [] for title, _ in _GROUP_RULES}
for _name in sorted(set(_NAMES), key=lambda n: (globals()[n] if isinstance(globals()[n], int) else 0, n)):
    GROUPS.setdefault(_group_of(_name), []).append(_name)

__all__ = sorted(set(_NAMES))
