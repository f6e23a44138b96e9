"""acl.prof's shared part: its argument rules (PyArg_ParseTuple's, as the extension's
wrappers apply them), its return codes and limits, and the one state of the process
(the path, the settings, the running session, the subscribed models) that the collection
sessions (prof.py) and the model subscriptions (_prof_subscribe.py) both read.
"""
from __future__ import annotations

import threading

from ..runtime import constants as C, handle_table
from ..tools.profiler.session import Profile
from ._args import CONVERTERS
from ._wrap import record
from .constants import (ACL_AICORE_ARITHMETIC_UTILIZATION, ACL_AICORE_MEMORY_ACCESS, ACL_AICORE_NONE,
                        ACL_PROF_ACL_API, ACL_PROF_AICORE_METRICS, ACL_PROF_AICORE_SHAPE, ACL_PROF_AICPU,
                        ACL_PROF_API_STATS, ACL_PROF_ARGS_MAX, ACL_PROF_ARGS_MIN, ACL_PROF_GE_API_L0,
                        ACL_PROF_GE_API_L1, ACL_PROF_HCCL_TRACE, ACL_PROF_L2CACHE, ACL_PROF_MSPROFTX,
                        ACL_PROF_OP_ATTR, ACL_PROF_RUNTIME_API, ACL_PROF_TASK_MEMORY,
                        ACL_PROF_TASK_TIME, ACL_PROF_TASK_TIME_L0, ACL_PROF_TASK_TIME_L2,
                        ACL_PROF_TASK_TIME_L3, ACL_PROF_TRAINING_TRACE)

INVALID = C.ACL_ERROR_INVALID_PARAM
NOT_RUN = C.ACL_ERROR_PROF_NOT_RUN
ALREADY = C.ACL_ERROR_PROF_ALREADY_RUN
TASK_TIME = ACL_PROF_TASK_TIME | ACL_PROF_TASK_TIME_L0 | ACL_PROF_TASK_TIME_L2 | ACL_PROF_TASK_TIME_L3
API = ACL_PROF_ACL_API | ACL_PROF_RUNTIME_API | ACL_PROF_API_STATS
KNOWN_SWITCHES = (TASK_TIME | API | ACL_PROF_AICORE_METRICS | ACL_PROF_AICPU | ACL_PROF_L2CACHE | ACL_PROF_HCCL_TRACE
                  | ACL_PROF_TRAINING_TRACE | ACL_PROF_MSPROFTX | ACL_PROF_GE_API_L0 | ACL_PROF_GE_API_L1
                  | ACL_PROF_TASK_MEMORY | ACL_PROF_OP_ATTR | ACL_PROF_AICORE_SHAPE)
METRICS = set(range(ACL_AICORE_ARITHMETIC_UTILIZATION, ACL_AICORE_MEMORY_ACCESS + 1)) | {ACL_AICORE_NONE}
CONFIG_TYPES = set(range(ACL_PROF_ARGS_MIN + 1, ACL_PROF_ARGS_MAX)) - {2}
OUTPUT_DIR = "mindstudio_profiler_output"
MAX_PATH, MAX_CONFIG, MAX_MARK = 4096, 256, 127


# ---------------------------------------------------------------- argument parsing
def _parse(args: tuple, fmt: str, message: str) -> tuple:
    """`args` converted as PyArg_ParseTuple(args, fmt) converts them (the rules of _args.py);
    any mismatch raises TypeError(message), as the extension's wrappers do."""
    if len(args) != len(fmt):
        raise TypeError(message)
    return tuple(CONVERTERS[code](value, message) for value, code in zip(args, fmt))


def _error(code: int, where: str, message: str) -> int:
    return record(code, f"acl.prof.{where}: {message} [{code}]")


# ---------------------------------------------------------------- state
class _Config:
    __slots__ = ("devices", "metrics", "events", "switches")

    def __init__(self, devices, metrics, events, switches):
        self.devices, self.metrics, self.events, self.switches = devices, metrics, events, switches

    def key(self) -> tuple:
        return (self.devices, self.metrics, self.events, self.switches)


class _Stamp:
    __slots__ = ("message",)

    def __init__(self):
        self.message = ""


class _State:
    def __init__(self):
        self.lock = threading.RLock()
        self.path: str | None = None         # aclprofInit / ACL_PROF_PATH
        self.initialized = False
        self.settings: dict = {}             # aclprofSetConfig values
        self.profile: Profile | None = None  # the running session
        self.started: tuple | None = None    # the content of the config it started with
        self.switches = 0                    # its data type switches
        self.prof_dir: str | None = None
        self.sessions = 0
        self.subscribed: dict = {}           # model id -> _SubscribeConfig


_state = _State()
_configs = handle_table("profiling config")
_stamps = handle_table("msproftx stamp")
_step_infos = handle_table("step info")
_sub_configs = handle_table("subscribe config")
_step_index = iter(range(1, 1 << 62))


def _running() -> Profile | None:
    p = _state.profile
    return p if p is not None and p.running else None
