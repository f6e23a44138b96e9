"""acl.prof: pyACL's profiling API over npurt's profiler (npurt.tools.profiler).

Collection sessions (aclprofInit / CreateConfig / Start / Stop / Finalize), msproftx markers
(stamps, mark, mark_ex, push/pop, range_start/stop), step timestamps and model
subscription, with the real extension's argument parsing: every function takes positional
arguments only, a wrong count or type raises TypeError ("acl.prof.<name> args parse
failed!"), a malformed device list TypeError or ValueError, and everything else is a
return code (recorded for acl.get_recent_err_msg). Return shapes as in pyACL: `ret`;
`create_config` / `create_stamp` / `create_step_info` / `create_subscribe_config` return a
handle (0 on failure); `destroy_stamp` / `destroy_step_info` return None;
`range_start` returns (range_id, ret).

What a session writes: `start` makes `<result path>/PROF_<n>_<time>_<tag>/` and `stop` writes
its `mindstudio_profiler_output/` (msprof.json, op_summary.csv, op_statistic.csv,
task_time.csv, api_statistic.csv, msprof_tx.csv, ... as msprof's export does), ready for
`npurt plot <result path>`. The data type switches select what is collected:

| switch | collects |
| --- | --- |
| ACL_PROF_TASK_TIME, _TASK_TIME_L0/L2/L3 | device tasks (op_summary, op_statistic, task_time, the stream tracks) |
| ACL_PROF_ACL_API, _RUNTIME_API, _API_STATS | host API calls (api_statistic, the host tracks) and synchronous copies |
| ACL_PROF_MSPROFTX | stamps, marks, push/pop and ranges (msprof_tx) |
| ACL_PROF_TASK_MEMORY | the device memory counter |
| ACL_PROF_TRAINING_TRACE | steps from get_step_timestamp |
| AICORE_METRICS, AICPU, L2CACHE, HCCL_TRACE, GE_API_L0/L1, OP_ATTR, AICORE_SHAPE | accepted; no hardware counters exist on the simulated NPU, so nothing more is written |

docs/compatibility.md lists the error codes chosen where the CANN documentation names none.
"""
from __future__ import annotations

import os
import random
import string
import time

from ..runtime import RUNTIME, constants as C, enqueue
from ..tools.profiler import markers
from ..tools.profiler import session as _session
from ..tools.profiler.markers import MarkerTask
from ..tools.profiler.session import Profile
from ._wrap import fail, stream_of
from .constants import (ACL_AICORE_NONE, ACL_PROF_MSPROFTX, ACL_PROF_PATH, ACL_PROF_STORAGE_LIMIT,
                        ACL_PROF_TASK_MEMORY, ACL_PROF_TRAINING_TRACE, ACL_STEP_END, ACL_STEP_START)
from ._prof_state import (ALREADY, API, CONFIG_TYPES, INVALID, KNOWN_SWITCHES, MAX_CONFIG, MAX_MARK,
                          MAX_PATH, METRICS, NOT_RUN, OUTPUT_DIR, TASK_TIME, _Config, _Stamp, _configs,
                          _error, _parse, _running, _stamps, _state, _step_index, _step_infos)
from ._prof_subscribe import (create_subscribe_config, destroy_subscribe_config, model_subscribe,
                              model_unsubscribe, get_op_desc_size, get_op_num, get_op_type, get_op_name,
                              get_op_type_v2, get_op_name_v2, get_op_type_len, get_op_name_len,
                              get_op_start, get_op_end, get_op_duration, get_model_id,
                              model_un_subscribe, register_model_device,
                              unregister_model_device)  # noqa: F401 - acl.prof's (and the C interface's)

__all__ = ["init", "finalize", "start", "stop", "create_config", "destroy_config", "set_config",
           "create_stamp", "destroy_stamp", "set_stamp_trace_message", "mark", "mark_ex", "push", "pop",
           "range_start", "range_stop", "create_step_info", "destroy_step_info", "get_step_timestamp",
           "create_subscribe_config", "destroy_subscribe_config", "model_subscribe", "model_unsubscribe",
           "model_un_subscribe", "get_op_desc_size", "get_op_num", "get_op_type", "get_op_name",
           "get_op_type_v2", "get_op_name_v2", "get_op_type_len", "get_op_name_len", "get_op_start",
           "get_op_end", "get_op_duration", "get_model_id"]


# ---------------------------------------------------------------- collection sessions
def init(*args):
    """acl.prof.init(profiler_result_path) -> ret: where sessions write (made if missing)."""
    (path,) = _parse(args, "s", "acl.prof.Init args parse failed!")
    with _state.lock:
        if _state.subscribed:
            return _error(C.ACL_ERROR_PROF_API_CONFLICT, "init", "a model subscription is active; "
                          "aclprofInit cannot be mixed with aclprofModelSubscribe (unsubscribe first)")
        if _state.initialized:
            return _error(ALREADY, "init", "profiling is already initialized; call acl.prof.finalize first")
        if not RUNTIME.acl_initialized:
            return _error(C.ACL_ERROR_UNINITIALIZE, "init", "call acl.init before acl.prof.init")
        checked = _check_path(path, "init")
        if isinstance(checked, int):
            return checked
        _state.path, _state.initialized = checked, True
    return 0


def _check_path(path: str, where: str):
    if not path or len(path.encode()) > MAX_PATH:
        return _error(INVALID, where, f"Value {path!r} for parameter profilerResultPath is invalid. Reason: the "
                      f"path must be 1 to {MAX_PATH} bytes long.")
    try:
        return _session.check_out_dir(path)
    except Exception as exc:  # noqa: BLE001 - becomes the code
        return _error(INVALID, where, f"Value {path} for output is invalid. Reason: {getattr(exc, 'message', exc)}.")


def finalize(*args):
    """acl.prof.finalize() -> ret. A session still running is stopped and written first."""
    with _state.lock:
        if not _state.initialized:
            return _error(NOT_RUN, "finalize", "Please call the APIs in the following order: call aclprofInit "
                          "first, then aclprofFinalize.")
        if _running() is not None:
            code = _stop_and_write("finalize")
            if code:
                return code
        _state.initialized = False
        _state.path = None
        _state.settings.clear()
    return 0


def create_config(*args):
    """acl.prof.create_config(device_id_list, aicore_metrics, aicore_events, data_type_config)
    -> config handle (0 on failure). data_type_config: an OR of ACL_PROF_* switches."""
    devices, metrics, events, switches = _parse(args, "OikK", "acl.prof.create_config args parse failed!")
    if not isinstance(devices, list):
        raise TypeError("argument 1 is not list")
    ids = []
    for item in devices:
        if not isinstance(item, int):
            raise TypeError("the first argument is not list of int")
        if not 0 <= item < (1 << 64):
            raise ValueError("PyLong_AsUnsignedLong failed")
        ids.append(item & 0xFFFFFFFF)
    where = "create_config"
    if not RUNTIME.acl_initialized:
        _error(C.ACL_ERROR_UNINITIALIZE, where, "call acl.init before acl.prof.create_config")
        return 0
    count = len(RUNTIME.devices)
    if not ids:
        _error(INVALID, where, "Value [] for parameter device id list is invalid. Reason: list at least one device")
        return 0
    for dev in ids:
        if dev >= count:
            _error(INVALID, where, f"Value {dev} for parameter device id is invalid. Reason: The device id should "
                   f"be in range [0, {count})")
            return 0
    if len(set(ids)) != len(ids):
        _error(INVALID, where, f"Value {ids} for parameter device id list is invalid. Reason: a device is listed twice")
        return 0
    if metrics not in METRICS:
        _error(INVALID, where, f"Value {metrics} for parameter aicoreMetrics is invalid. Reason: not an "
               "aclprofAicoreMetrics value (0..8 or ACL_AICORE_NONE 0xFF)")
        return 0
    if events:
        _error(INVALID, where, "aicoreEvents is reserved: pass 0")
        return 0
    if switches & ~KNOWN_SWITCHES:
        _error(C.ACL_ERROR_PROF_MODULES_UNSUPPORTED, where,
               f"Parameter dataTypeConfig bits 0x{switches & ~KNOWN_SWITCHES:x} are not supported")
        return 0
    return _configs.add(_Config(tuple(ids), metrics, events, switches))


def destroy_config(*args):
    """acl.prof.destroy_config(config) -> ret."""
    (handle,) = _parse(args, "k", "acl.prof.destroy_config args parse failed!")
    if not handle:
        return _error(INVALID, "destroy_config", "aclprofDestroyConfig failed because parameter profilerConfig "
                      "cannot be a null pointer.")
    if _configs.lookup(handle) is None:
        return _error(INVALID, "destroy_config", f"0x{handle:x} is not a live profiling config (destroyed twice?)")
    _configs.remove(handle)
    return 0


_FREQ_TYPES = {3, 5, 6, 7, 10, 11, 13}  # *_FREQ settings: a positive number of samples per second


def set_config(*args):
    """acl.prof.set_config(config_type, config) -> ret: an aclprofConfigType setting, before start."""
    config_type, value = _parse(args, "is", "acl.prof.set_config args parse failed!")
    where = "set_config"
    if config_type not in CONFIG_TYPES:
        return _error(INVALID, where, f"Value {config_type} for parameter configType is invalid. Reason: not an "
                      "aclprofConfigType setting (1, 3..16)")
    if not value or len(value.encode()) > MAX_CONFIG:
        return _error(INVALID, where, f"Value {value!r} for parameter config is invalid. Reason: 1 to {MAX_CONFIG} "
                      "bytes")
    with _state.lock:
        if _running() is not None:
            return _error(ALREADY, where, "Please call the APIs in the following order: call aclprofSetConfig "
                          "first, then aclprofStart.")
        if config_type == ACL_PROF_STORAGE_LIMIT:
            digits = value[:-2] if value.endswith("MB") else ""
            if not digits.isdigit() or not 200 <= int(digits) <= 4294967295:
                return _error(INVALID, where, f"Value {value} for parameter storage limit is invalid. Reason: "
                              "use <n>MB with n in [200, 4294967295]")
        elif config_type == ACL_PROF_PATH:
            checked = _check_path(value, where)
            if isinstance(checked, int):
                return checked
            _state.path = checked
        elif config_type in _FREQ_TYPES and (not value.isdigit() or int(value) < 1):
            return _error(INVALID, where, f"Value {value} for a sampling frequency is invalid. Reason: use a "
                          "positive integer")
        _state.settings[config_type] = value
    return 0


def start(*args):
    """acl.prof.start(config) -> ret: collect what the config's switches select, on its devices."""
    (handle,) = _parse(args, "k", "acl.prof.start args parse failed!")
    where = "start"
    with _state.lock:
        if _state.subscribed:
            return _error(C.ACL_ERROR_PROF_API_CONFLICT, where, "Failed to start Profiling in aclapi mode because "
                          "it is already in subscribe mode.")
        if _state.path is None:
            return _error(NOT_RUN, where, "Please call the APIs in the following order: call aclprofInit first, "
                          "then aclprofStart.")
        config = _config(handle, where)
        if isinstance(config, int):
            return config
        if _running() is not None or _session.ACTIVE is not None:
            return _error(ALREADY, where, "a profiling session is already running in this process (acl.prof.start, "
                          "npurt.profiler or npurt run --profile); stop it first")
        prof_dir = _new_prof_dir()
        if isinstance(prof_dir, int):
            return prof_dir
        s = config.switches
        try:
            profile = Profile(os.path.join(prof_dir, OUTPUT_DIR), devices=config.devices, tasks=bool(s & TASK_TIME),
                              api_calls=bool(s & API), memory=bool(s & ACL_PROF_TASK_MEMORY),
                              markers=bool(s & ACL_PROF_MSPROFTX),
                              copies=bool(s & (API | TASK_TIME)))
            profile.start()
        except Exception as exc:  # noqa: BLE001 - becomes the code
            return fail(exc, "acl.prof.start")
        _state.profile, _state.started, _state.prof_dir = profile, config.key(), prof_dir
        _state.switches = config.switches
    return 0


def _config(handle: int, where: str):
    if not handle:
        return _error(INVALID, where, f"aclprof{where.title()} failed because parameter profilerConfig cannot be a "
                      "null pointer.")
    config = _configs.lookup(handle)
    if config is None:
        return _error(INVALID, where, f"0x{handle:x} is not a live profiling config (from acl.prof.create_config)")
    return config


def _new_prof_dir():
    _state.sessions += 1
    stamp = time.strftime("%Y%m%d%H%M%S") + f"{int(time.time() * 1000) % 1000:03d}"
    tag = "".join(random.choices(string.ascii_uppercase, k=16))
    path = os.path.join(_state.path, f"PROF_{_state.sessions:06d}_{stamp}_{tag}")
    try:
        os.makedirs(path)
    except OSError as exc:
        return _error(C.ACL_ERROR_PROFILING_FAILURE, "start", f"cannot create {path}: {exc.strerror}")
    return path


def stop(*args):
    """acl.prof.stop(config) -> ret: stop collecting and write the session's files. The config
    must have the content start was given."""
    (handle,) = _parse(args, "k", "acl.prof.stop args parse failed!")
    with _state.lock:
        if _running() is None:
            return _error(NOT_RUN, "stop", "Please call the APIs in the following order: call aclprofStart first, "
                          "then aclprofStop.")
        config = _config(handle, "stop")
        if isinstance(config, int):
            return config
        if config.key() != _state.started:
            return _error(C.ACL_ERROR_INVALID_PROFILING_CONFIG, "stop", "the config differs from the one "
                          "acl.prof.start was given (devices, metrics and switches must be the same)")
        return _stop_and_write("stop")


def _stop_and_write(where: str) -> int:
    profile = _state.profile
    _state.profile = _state.started = None
    try:
        profile.stop()
    except OSError as exc:
        return _error(C.ACL_ERROR_PROFILING_FAILURE, where, f"cannot write the profile: {exc}")
    except Exception as exc:  # noqa: BLE001
        return fail(exc, f"acl.prof.{where}")
    return 0


# ---------------------------------------------------------------- msproftx
def _tx(where: str, need_stamp: int | None = None):
    """The running profile (and the stamp) for a marker call, or an error code."""
    profile = _running()
    if profile is None:
        return _error(NOT_RUN, where, "Please call the APIs in the following order: call aclprofStart first, "
                      f"then aclprof{where.title().replace('_', '')}.")
    if need_stamp is not None:
        stamp = _stamps.lookup(need_stamp) if need_stamp else None
        if stamp is None:
            return _error(INVALID, where, f"0x{need_stamp:x} is not a live stamp (from acl.prof.create_stamp)")
        return profile, stamp
    return profile, None


def create_stamp(*args):
    """acl.prof.create_stamp() -> stamp handle (0 on failure: no session running)."""
    if _running() is None:
        _error(NOT_RUN, "create_stamp", "Please call the APIs in the following order: call aclprofStart first, "
               "then aclprofCreateStamp.")
        return 0
    return _stamps.add(_Stamp())


def destroy_stamp(*args):
    """acl.prof.destroy_stamp(stamp) -> None."""
    (handle,) = _parse(args, "k", "acl.prof.destroy_stamp args parse failed!")
    if _stamps.lookup(handle) is None:
        _error(INVALID, "destroy_stamp", f"0x{handle:x} is not a live stamp")
    _stamps.remove(handle)
    return None


def set_stamp_trace_message(*args):
    """acl.prof.set_stamp_trace_message(stamp, msg, msg_len) -> ret: the stamp's text."""
    handle, msg, length = _parse(args, "ksI", "acl.prof.set_stamp_trace_message args parse failed!")
    stamp = _stamps.lookup(handle)
    if stamp is None:
        return _error(INVALID, "set_stamp_trace_message", f"0x{handle:x} is not a live stamp")
    data = msg.encode()
    if length > len(data):
        return _error(INVALID, "set_stamp_trace_message", f"msg_len {length} is longer than the message "
                      f"({len(data)} bytes)")
    stamp.message = data[:length].decode(errors="replace")
    return 0


def mark(*args):
    """acl.prof.mark(stamp) -> ret: an instant marker on this thread."""
    (handle,) = _parse(args, "k", "acl.prof.mark args parse failed!")
    got = _tx("mark", handle)
    if isinstance(got, int):
        return got
    markers.mark(got[1].message)
    return 0


def mark_ex(*args):
    """acl.prof.mark_ex(msg, stream) -> ret: a marker on this thread and, where the stream
    reaches it, on the stream."""
    msg, stream = _parse(args, "sk", "acl.prof.mark_ex args parse failed!")
    if len(msg.encode()) > MAX_MARK:
        return _error(INVALID, "mark_ex", f"the message is {len(msg.encode())} bytes; at most {MAX_MARK}")
    got = _tx("mark_ex")
    if isinstance(got, int):
        return got
    try:
        s = stream_of(stream)
        markers.mark(msg)
        if _state.switches & ACL_PROF_MSPROFTX:  # the marker task is msproftx data too
            enqueue(s, MarkerTask(msg))
    except Exception as exc:  # noqa: BLE001
        return fail(exc, "acl.prof.mark_ex")
    return 0


def push(*args):
    """acl.prof.push(stamp) -> ret: open a range on this thread (closed by pop)."""
    (handle,) = _parse(args, "k", "acl.prof.push args parse failed!")
    got = _tx("push", handle)
    if isinstance(got, int):
        return got
    markers.push(got[1].message)
    return 0


def pop(*args):
    """acl.prof.pop() -> ret: close the range this thread pushed last."""
    got = _tx("pop")
    if isinstance(got, int):
        return got
    if not markers.pop():
        return _error(INVALID, "pop", "this thread has no range open: call acl.prof.push first (push and pop "
                      "must be on the same thread)")
    return 0


def range_start(*args):
    """acl.prof.range_start(stamp) -> (range_id, ret): open a range any thread may stop."""
    (handle,) = _parse(args, "k", "acl.prof.range_start args parse failed!")
    got = _tx("range_start", handle)
    if isinstance(got, int):
        return 0, got
    return markers.start(got[1].message) & 0xFFFFFFFF, 0


def range_stop(*args):
    """acl.prof.range_stop(range_id) -> ret."""
    (rid,) = _parse(args, "I", "acl.prof.range_stop args parse failed!")
    got = _tx("range_stop")
    if isinstance(got, int):
        return got
    if not markers.stop(rid):
        return _error(INVALID, "range_stop", f"no range {rid} is open (acl.prof.range_start returns the id)")
    return 0


# ---------------------------------------------------------------- step timestamps
class _StepInfo:
    __slots__ = ("index",)

    def __init__(self):
        self.index = 0


def create_step_info(*args):
    """acl.prof.create_step_info() -> step info handle."""
    return _step_infos.add(_StepInfo())


def destroy_step_info(*args):
    """acl.prof.destroy_step_info(step_info) -> None."""
    (handle,) = _parse(args, "k", "acl.prof.destroy_step_info args parse failed!")
    if _step_infos.lookup(handle) is None:
        _error(INVALID, "destroy_step_info", f"0x{handle:x} is not a live step info")
    _step_infos.remove(handle)
    return None


def get_step_timestamp(*args):
    """acl.prof.get_step_timestamp(step_info, tag, stream) -> ret: mark where a step starts
    (ACL_STEP_START) or ends (ACL_STEP_END) on the stream."""
    handle, tag, stream = _parse(args, "kik", "acl.prof.get_step_timestamp args parse failed!")
    where = "get_step_timestamp"
    info = _step_infos.lookup(handle) if handle else None
    if info is None:
        return _error(INVALID, where, f"0x{handle:x} is not a live step info (from acl.prof.create_step_info)")
    if tag not in (ACL_STEP_START, ACL_STEP_END):
        return _error(INVALID, where, f"tag must be ACL_STEP_START (0) or ACL_STEP_END (1), got {tag}")
    got = _tx(where)
    if isinstance(got, int):
        return got
    if tag == ACL_STEP_END and not info.index:
        return _error(INVALID, where, "ACL_STEP_END before ACL_STEP_START for this step info")
    try:
        s = stream_of(stream)
        if tag == ACL_STEP_START:
            info.index = next(_step_index)
        if _state.switches & ACL_PROF_TRAINING_TRACE:
            label = f"step {info.index} {'start' if tag == ACL_STEP_START else 'end'}"
            enqueue(s, MarkerTask(label, (handle, info.index, tag)))
    except Exception as exc:  # noqa: BLE001
        return fail(exc, "acl.prof.get_step_timestamp")
    return 0
