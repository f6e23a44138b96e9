"""Devices: selection, reset, peer access, device queries and settings (contexts: contexts.py)."""
from __future__ import annotations

import threading
import time

from .. import address
from .. import constants as C
from ..context import bind, current_context, peek_context, set_fallback
from ..device import Device
from ..errors import InvalidDeviceError, InvalidValueError, NpuError, ParamInvalidError, SyncTimeoutError
from ..observers import HOOKS
from ..runtime import RUNTIME
from ..stream import Stream
from .memory import memset_async
from .streams import _check_timeout, stream_of

rt = RUNTIME


# ================================================================ devices
def get_device_count() -> int:
    rt.check_initialized()
    return len(rt.devices)


def set_device(device_id: int) -> None:
    """Make `device_id` the calling thread's device: bind its default context (created on
    first use; reference counted per device)."""
    device = rt.device(device_id)
    while True:
        with device.lock:
            releasing = device.releasing
            if releasing is None or releasing[0] == threading.get_ident():
                ctx = rt.default_context(device)
                device.set_count += 1
                break
        releasing[1].wait()  # another thread's reset is releasing the device: set it afresh after
    bind(ctx)


def _thread_without_context(ctx):
    """current_context's fallback: start the runtime; a thread that never chose a device uses
    acl.init's config {"defaultDevice": {"default_device": "<id>"}} when there is one (an
    explicit set_device still wins)."""
    rt.ensure_initialized()
    if ctx is None and rt.default_device is not None:
        set_device(rt.default_device)
        return peek_context()
    return None


set_fallback(_thread_without_context)


def get_device() -> int:
    return current_context().device.id


def current_device() -> Device:
    return current_context().device


def reset_device(device_id: int) -> None:
    """Drop one set_device reference; at zero, wait for the device's work and free all it
    holds (memory, streams, events, contexts)."""
    device = rt.device(device_id)
    with device.lock:
        if device.set_count <= 0:  # runtime.cc PrimaryContextRelease: RT_ERROR_CONTEXT_DEL
            raise NpuError(f"reset_device({device_id}): the device is not set (set_device was not called, "
                           "or every reference was already reset)", C.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR)
        device.set_count -= 1
        if device.set_count:
            return
        done = threading.Event()
        device.releasing = (threading.get_ident(), done)
    try:
        _unbind_if_current(device)
        rt.release_device(device, f"reset_device({device_id})")
    finally:
        with device.lock:
            device.releasing = None
        done.set()


def reset_device_force(device_id: int) -> None:
    """Release the device whatever the set_device count."""
    device = rt.device(device_id)
    if device.set_count <= 0 and device.default_context is None:  # runtime.cc: RT_ERROR_CONTEXT_DEL
        raise NpuError(f"reset_device_force({device_id}): the device is not set",
                       C.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR)
    _unbind_if_current(device)
    rt.release_device(device, f"reset_device_force({device_id})")


def _unbind_if_current(device: Device) -> None:
    ctx = peek_context()
    if ctx is not None and ctx.device is device:
        bind(None)


def get_soc_name() -> str:
    rt.check_initialized()
    return rt.driver.spec.name


def get_run_mode() -> int:
    rt.check_initialized()
    return C.ACL_HOST


def synchronize_device(timeout_ms: int = -1) -> None:
    """Wait for every stream of the current device; then raise the first stream failure
    (the failures of other streams stay on them for their own synchronize)."""
    _check_timeout(timeout_ms)
    device = current_context().device
    deadline = None if timeout_ms is None or timeout_ms < 0 else time.monotonic() + timeout_ms / 1000
    if HOOKS.active:
        HOOKS.emit("host_sync", what="device", obj=device)
    hooked = HOOKS.active
    # the tools see a wait on every stream; otherwise only the streams given work since the
    # device was last found drained can have any (Device.touched)
    streams = device.all_streams() if hooked else device.busy_streams()
    for stream in streams:
        if stream.completed_seq >= stream.enqueued_seq and stream.capture is None and not hooked:
            stream.streak = 0  # done already: what its synchronize would do, without the call
            continue
        left = -1 if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
        try:
            stream.synchronize(timeout_ms=left, report_errors=False)
        except SyncTimeoutError as exc:
            raise SyncTimeoutError(f"synchronize_device timed out after {timeout_ms} ms: {exc.message}") from None
    for stream in streams:
        if stream.error is not None:
            stream.raise_error()


def get_device_info(device_id: int, attr: int) -> int:
    spec = rt.device(device_id).spec
    values = {
        C.ACL_DEV_ATTR_AICPU_CORE_NUM: spec.aicpu_num,
        C.ACL_DEV_ATTR_AICORE_CORE_NUM: spec.aicore_num,
        C.ACL_DEV_ATTR_CUBE_CORE_NUM: spec.aicore_num,
        C.ACL_DEV_ATTR_VECTOR_CORE_NUM: spec.vector_core_num,
        C.ACL_DEV_ATTR_LOCAL_MEM_PER_VECTOR_CORE: 192 * 1024,
        C.ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE: spec.memory_bytes,
        C.ACL_DEV_ATTR_L2_CACHE_SIZE: spec.l2_size,
        C.ACL_DEV_ATTR_PHY_CHIP_ID: rt.settings.visible_devices[device_id],
        C.ACL_DEV_ATTR_NPU_ARCH: spec.npu_arch,
        C.ACL_DEV_ATTR_HD_CONNECT_TYPE: 0,
        C.ACL_DEV_ATTR_DEVICE_FORM_FACTOR: 3,
        C.ACL_DEV_ATTR_IS_VIRTUAL: 0,
        C.ACL_DEV_ATTR_CUST_OP_PRIVILEGE: 0,
    }
    zero_attrs = {C.ACL_DEV_ATTR_WARP_SIZE, C.ACL_DEV_ATTR_MAX_THREAD_PER_VECTOR_CORE,
                  C.ACL_DEV_ATTR_MAX_GRID_DIM_X, C.ACL_DEV_ATTR_MAX_GRID_DIM_Y, C.ACL_DEV_ATTR_MAX_GRID_DIM_Z,
                  C.ACL_DEV_ATTR_MAX_BLOCK_PER_GRID, C.ACL_DEV_ATTR_MAX_THREADS_PER_BLOCK,
                  C.ACL_DEV_ATTR_MAX_BLOCK_DIM_X, C.ACL_DEV_ATTR_MAX_BLOCK_DIM_Y, C.ACL_DEV_ATTR_MAX_BLOCK_DIM_Z,
                  C.ACL_DEV_ATTR_SMP_ID, C.ACL_DEV_ATTR_SUPER_POD_DEVICE_ID, C.ACL_DEV_ATTR_SUPER_POD_SERVER_ID,
                  C.ACL_DEV_ATTR_SUPER_POD_ID, C.ACL_DEV_ATTR_MAINBOARD_ID, C.ACL_DEV_ATTR_SUPER_POD_CHASSIS_ID}
    if attr in values:
        return values[attr]
    if attr in zero_attrs:
        return 0  # SIMT / super-pod attributes: not present on this SoC
    raise InvalidValueError(f"unknown device attribute {attr!r} (see aclrtDevAttr)")


def _link(a: Device, b: Device) -> int:
    return rt.driver.spec.link(a.backend.physical_id, b.backend.physical_id)


def device_can_access_peer(device_id: int, peer_id: int) -> int:
    """1 if the two devices are linked directly (HCCS inside a module, or PCIe through the
    host bridge); 0 between HCCS modules, where data crosses the host's CPU sockets."""
    a, b = rt.device(device_id), rt.device(peer_id)
    if device_id == peer_id:
        raise InvalidValueError("device_can_access_peer needs two different device ids")
    return int(_link(a, b) != C.ACL_RT_DEVS_TOPOLOGY_SYS)


def device_enable_peer_access(peer_id: int, flag: int = 0) -> None:
    device = current_context().device
    peer = rt.device(peer_id)
    if flag != 0:
        raise InvalidValueError(f"device_enable_peer_access: flag must be 0, got {flag!r}")
    if peer is device:
        raise InvalidValueError("device_enable_peer_access: the peer must differ from the current device")
    if _link(device, peer) == C.ACL_RT_DEVS_TOPOLOGY_SYS:
        raise FeatureNotSupportedError(
            f"device {device.id} cannot access device {peer.id}: they are in different HCCS modules of the "
            f"simulated server (get_devices_topo is ACL_RT_DEVS_TOPOLOGY_SYS); copy through host memory, "
            "or use HCCL between them")
    device.peer_access.add(peer.id)


def device_disable_peer_access(peer_id: int) -> None:
    device = current_context().device
    peer = rt.device(peer_id)
    if peer is device:
        raise InvalidValueError("device_disable_peer_access: the peer must differ from the current device")
    if peer.id not in device.peer_access:
        raise InvalidValueError(f"peer access from device {device.id} to device {peer.id} is not enabled")
    device.peer_access.discard(peer.id)


def device_peer_access_status(device_id: int, peer_id: int) -> int:
    return int(rt.device(peer_id).id in rt.device(device_id).peer_access)


# ================================================================ device queries and settings
# (added for the pyACL facade: queries and process/context settings that do no device work)
from ..runtime import OP_TIMEOUT_INTERVAL_US, OP_TIMEOUT_MAX_INTERVALS  # noqa: E402,F401 - the rule's home
from ..errors import FeatureNotSupportedError
from ..stream import HIGHEST_PRIORITY, LOWEST_PRIORITY


def set_ts_device(ts_id: int) -> None:
    """Choose the task scheduler (ACL_TS_ID_*). One scheduler serves every engine here, so
    the choice changes nothing, as on SoCs that only have the AI Core scheduler."""
    rt.check_initialized()
    if type(ts_id) is not int or ts_id not in (C.ACL_TS_ID_AICORE, C.ACL_TS_ID_AIVECTOR, C.ACL_TS_ID_RESERVED):
        raise InvalidValueError(f"ts_id must be ACL_TS_ID_AICORE (0), ACL_TS_ID_AIVECTOR (1) or "
                                f"ACL_TS_ID_RESERVED (2), got {ts_id!r}")


def get_device_capability(device_id: int, feature: int) -> int:
    """1 if the device supports an aclrtDevFeatureType feature; the simulated SoC has none."""
    rt.device(device_id)
    if type(feature) is not int or feature not in (C.ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV,
                                                   C.ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV):
        raise InvalidValueError(f"unknown device feature {feature!r} (see aclrtDevFeatureType)")
    return 0


def get_hardware_info(device_id: int, info: int) -> int:
    """acl.get_device_capability: AI Core count, vector core count or L2 size (aclDeviceInfo)."""
    spec = rt.device(device_id).spec
    values = {C.ACL_DEVICE_INFO_AI_CORE_NUM: spec.aicore_num,
              C.ACL_DEVICE_INFO_VECTOR_CORE_NUM: spec.vector_core_num,
              C.ACL_DEVICE_INFO_L2_SIZE: spec.l2_size}
    if type(info) is not int or info not in values:
        raise InvalidValueError(f"unknown device info {info!r}: use ACL_DEVICE_INFO_AI_CORE_NUM (0), "
                                "ACL_DEVICE_INFO_VECTOR_CORE_NUM (1) or ACL_DEVICE_INFO_L2_SIZE (2)")
    return values[info]


def get_device_utilization_rate(device_id: int) -> dict:
    """aclrtUtilizationInfo. Compute utilization is not sampled here (-1, "unsupported");
    memory utilization is the percentage of device memory in use."""
    device = rt.device(device_id)
    arena = device.backend
    used = arena.usable - arena.free_bytes
    return {"cube_utilization": -1, "vector_utilization": -1, "aicpu_utilization": -1,
            "memory_utilization": used * 100 // arena.usable, "utilization_extend": 0}


def query_device_status(device_id: int) -> int:
    rt.device(device_id)
    return C.ACL_RT_DEVICE_STATUS_NORMAL


def set_device_sat_mode(mode: int) -> None:
    """Float overflow mode of the current device (recorded; numpy arithmetic is always inf/nan)."""
    device = current_context().device
    if type(mode) is not int or mode not in (C.ACL_RT_OVERFLOW_MODE_SATURATION, C.ACL_RT_OVERFLOW_MODE_INFNAN):
        raise InvalidValueError(f"overflow mode must be ACL_RT_OVERFLOW_MODE_SATURATION (0) or "
                                f"ACL_RT_OVERFLOW_MODE_INFNAN (1), got {mode!r}")
    device.sat_mode = mode


def get_device_sat_mode() -> int:
    return current_context().device.sat_mode


def device_get_stream_priority_range() -> tuple[int, int]:
    """(least, greatest) stream priority: 7 and 0."""
    rt.check_initialized()
    return LOWEST_PRIORITY, HIGHEST_PRIORITY


def get_devices_topo(device_id: int, other_id: int) -> int:
    """Link between two devices (ACL_RT_DEVS_TOPOLOGY_* bits), from the SoC's server layout:
    Ascend910B3 servers have 8-NPU full-mesh HCCS modules (HCCS inside one, SYS between two,
    with NPURT_DEVICE_COUNT above 8); Ascend910A has 4-NPU modules; Ascend310P3 cards are PCIe
    devices behind the host bridge (PHB)."""
    a, b = rt.device(device_id), rt.device(other_id)
    if device_id == other_id:
        raise InvalidValueError("get_devices_topo needs two different device ids")
    return _link(a, b)


# Device ids, as CANN names them: the *user* id is an index into ASCEND_RT_VISIBLE_DEVICES
# (what set_device takes); the *logic* id is the driver's index of the device on the host;
# the *physical* id is the chip's. The simulated host has no virtualization, so logic and
# physical ids are the same number (NPURT_DEVICE_COUNT devices, 0..n-1). The APIs named
# "...by_phy_dev_id" / "phy_dev_id_by_logic_dev_id" take and return *user* ids on the
# logic side (runtime.cc ChgUserDevIdToDeviceId / GetUserDevIdByDeviceId).
def _non_negative(value: int, name: str) -> None:
    if value < 0:  # rts_device API checks (api_c_device.cc): RT_ERROR_INVALID_VALUE
        raise ParamInvalidError(f"{name} must be >= 0, got {value}")


def _user_to_driver(user_id: int, name: str) -> int:
    rt.check_initialized()
    _non_negative(user_id, name)
    visible = rt.settings.visible_devices
    if user_id >= len(visible):
        raise InvalidDeviceError(f"{name} {user_id} is invalid: {len(visible)} device(s) are visible "
                                 f"(ids 0..{len(visible) - 1}; ASCEND_RT_VISIBLE_DEVICES / NPURT_DEVICE_COUNT)")
    return visible[user_id]


def _driver_to_user(driver_id: int, name: str) -> int:
    rt.check_initialized()
    _non_negative(driver_id, name)
    visible = rt.settings.visible_devices
    if driver_id not in visible:
        raise InvalidDeviceError(f"device {driver_id} is not visible to this process "
                                 f"(ASCEND_RT_VISIBLE_DEVICES maps user ids 0.. to devices {visible})")
    return visible.index(driver_id)


def get_logic_dev_id_by_user_dev_id(user_id: int) -> int:
    """The driver's id of the device behind a user (visible) id."""
    return _user_to_driver(user_id, "user_dev_id")


def get_user_dev_id_by_logic_dev_id(logic_id: int) -> int:
    """The user (visible) id of the device the driver calls `logic_id`."""
    return _driver_to_user(logic_id, "logic_dev_id")


def get_phy_dev_id_by_logic_dev_id(logic_id: int) -> int:
    """The physical id of a device, given its user id (the real runtime converts the
    argument as a user id first)."""
    return _user_to_driver(logic_id, "logic_dev_id")  # physical id == driver id here


def get_logic_dev_id_by_phy_dev_id(phy_id: int) -> int:
    """The user id of the device with physical id `phy_id`."""
    return _driver_to_user(phy_id, "phy_dev_id")


def device_get_uuid(device_id: int) -> dict:
    """{"bytes": [16 ints]}: a stable id derived from the SoC and the physical device; each
    byte a signed char, as pyACL builds the list from aclrtUuid's char array."""
    import uuid
    device = rt.device(device_id)
    raw = uuid.uuid5(uuid.NAMESPACE_OID, f"npurt/{device.spec.name}/{device.backend.physical_id}").bytes
    return {"bytes": [b - 256 if b > 127 else b for b in raw]}


def device_get_bare_tgid() -> int:
    import os
    rt.check_initialized()
    return os.getpid()


_DEVICE_LIMITS = {  # aclrtDeviceLimit -> (default, low (exclusive for SIMD stack), high, granule)
    C.ACL_RT_DEV_LIMIT_SIMD_STACK_SIZE: (32768, 32768, 192 * 1024, 16 * 1024),
    C.ACL_RT_DEV_LIMIT_SIMD_PRINTF_FIFO_SIZE_PER_CORE: (32768, 1024, 64 << 20, 8),
}


def device_set_limit(limit: int, value: int) -> None:
    """Process-wide device limit (takes effect at the next device setup, as in ACL). Only
    the SIMD limits exist on the simulated SoCs; SIMT ones are FEATURE_NOT_SUPPORT."""
    rt.check_initialized()
    spec = _device_limit(limit)
    if type(value) is not int or value < 0:
        raise InvalidValueError(f"device limit value must be a non-negative int, got {value!r}")
    default, low, high, granule = spec
    if limit == C.ACL_RT_DEV_LIMIT_SIMD_STACK_SIZE:
        if not low < value <= high:
            raise InvalidValueError(f"SIMD stack size must be in (32 KiB, 192 KiB], got {value}")
        value = (value + granule - 1) // granule * granule
    elif not low <= value <= high or value % granule:
        raise InvalidValueError(f"SIMD printf FIFO size must be a multiple of 8 in [1 KiB, 64 MiB], got {value}")
    rt.device_limits[limit] = value


def device_get_limit(limit: int) -> int:
    rt.check_initialized()
    default = _device_limit(limit)[0]
    return rt.device_limits.get(limit, default)


def _device_limit(limit):
    if limit in (C.ACL_RT_DEV_LIMIT_SIMT_STACK_SIZE, C.ACL_RT_DEV_LIMIT_SIMT_DVG_WARP_STACK_SIZE,
                 C.ACL_RT_DEV_LIMIT_SIMT_PRINTF_FIFO_SIZE):
        raise FeatureNotSupportedError(f"device limit {limit} is a SIMT limit; the simulated SoC has no SIMT units")
    spec = _DEVICE_LIMITS.get(limit) if type(limit) is int else None
    if spec is None:
        raise InvalidValueError(f"unknown device limit {limit!r} (see aclrtDeviceLimit)")
    return spec


_SYS_PARAM_OPTS = (C.ACL_OPT_DETERMINISTIC, C.ACL_OPT_ENABLE_DEBUG_KERNEL, C.ACL_OPT_STRONG_CONSISTENCY,
                   C.ACL_OPT_ENABLE_KERNEL_EARLY_START)


def _check_sys_param(opt, value=0) -> None:
    if type(opt) is not int or opt not in _SYS_PARAM_OPTS:
        raise InvalidValueError(f"unknown system parameter option {opt!r} (see aclSysParamOpt)")
    if type(value) is not int:
        raise InvalidValueError(f"system parameter value must be an int, got {value!r}")


def set_sys_param_opt(opt: int, value: int) -> None:
    """Process-wide option (last call wins)."""
    rt.check_initialized()
    _check_sys_param(opt, value)
    rt.sys_params[opt] = value


def get_sys_param_opt(opt: int) -> int:
    """The process-wide option; 0 when never set."""
    rt.check_initialized()
    _check_sys_param(opt)
    return rt.sys_params.get(opt, 0)


def get_op_timeout_interval() -> int:
    """Granule of op execute timeouts, in microseconds. Needs a current context
    (ApiImpl::GetOpTimeOutInterval)."""
    current_context()
    return OP_TIMEOUT_INTERVAL_US


def effective_op_execute_timeout_us() -> int:
    """The op execute timeout in effect, in microseconds: the setting rounded up to whole
    intervals, capped at 254 intervals; 0 (not set) means the maximum. A kernel launched
    without its own timeout that runs longer fails with ACL_ERROR_RT_AICORE_TIMEOUT once it
    has finished (a running kernel body is Python code and cannot be preempted)."""
    return rt.effective_op_execute_timeout_us()


def get_overflow_status(output_addr: int, output_size: int, stream: Stream | None) -> int:
    """Stream-ordered: write the device's 64-byte float overflow status to `output_addr`.
    numpy kernels never raise the hardware overflow flag, so the status is all zeros."""
    if output_size != 64:
        raise InvalidValueError(f"get_overflow_status: output_size must be 64, got {output_size!r}")
    if type(output_addr) is not int or not address.is_device(output_addr):
        raise InvalidValueError("get_overflow_status: the output buffer must be device memory from malloc")
    return memset_async(output_addr, output_size, 0, output_size, stream)


def reset_overflow_status(stream: Stream | None) -> None:
    stream_of(stream)  # nothing to clear: the status is always zero (see get_overflow_status)




# ---------------------------------------------------------------- device resource limits
# aclrtDevResLimitType: how many cube (AI) cores and vector cores kernels may use. A kernel's
# blocks run on at most that many simulated cores (KernelTask: waves of blocks, GetBlockNum
# unchanged); the built-in ops size their launches to it (core_limit). hicann/runtime
# api_impl.cc: a value above the device's cores is refused; there is no lower bound but 0.
RES_CUBE_CORE, RES_VECTOR_CORE = 0, 1
_RES_ATTRS = {RES_CUBE_CORE: C.ACL_DEV_ATTR_CUBE_CORE_NUM, RES_VECTOR_CORE: C.ACL_DEV_ATTR_VECTOR_CORE_NUM}


def res_cores(device_id: int, kind: int) -> int:
    """The device's cores of an aclrtDevResLimitType (the limit when none is set)."""
    if kind not in _RES_ATTRS:
        raise InvalidValueError(f"type {kind!r} is not an aclrtDevResLimitType (ACL_RT_DEV_RES_CUBE_CORE 0, "
                                "ACL_RT_DEV_RES_VECTOR_CORE 1)")
    return get_device_info(device_id, _RES_ATTRS[kind])


def check_res_limit(device_id: int, kind: int, value) -> int:
    cores = res_cores(device_id, kind)
    if type(value) is not int or not 0 < value <= cores:
        raise InvalidValueError(f"value {value!r} is outside 1..{cores}, the device's cores of that type "
                                "(the value must be less than or equal to them)")
    return value


def set_device_res_limit(device_id: int, kind: int, value: int) -> None:
    device = rt.device(device_id)
    device.res_limits[kind] = check_res_limit(device_id, kind, value)


def get_device_res_limit(device_id: int, kind: int) -> int:
    device = rt.device(device_id)
    return device.res_limits.get(kind, res_cores(device_id, kind))


def reset_device_res_limit(device_id: int) -> None:
    rt.device(device_id).res_limits.clear()


def set_stream_res_limit(stream, kind: int, value: int) -> None:
    """The stream's own limit (it may exceed the device's: hicann/runtime does not check)."""
    s = stream_of(stream)
    check_res_limit(s.device.id, kind, value)
    if s.res_limits is None:
        s.res_limits = {}
    s.res_limits[kind] = value


def get_stream_res_limit(stream, kind: int) -> int:
    """The stream's limit if it has one, else its device's."""
    s = stream_of(stream)
    if s.res_limits and kind in s.res_limits:
        return s.res_limits[kind]
    return get_device_res_limit(s.device.id, kind)


def reset_stream_res_limit(stream) -> None:
    stream_of(stream).res_limits = None


_res_thread = threading.local()  # the stream whose limits the calling thread took


def use_stream_res_in_current_thread(stream) -> None:
    """The calling thread answers get_res_in_current_thread with `stream`'s limits (api_impl.cc
    UseStreamResInCurrentThread; None: the current context's default stream)."""
    _res_thread.stream = stream_of(stream)


def unuse_stream_res_in_current_thread(stream) -> None:
    """Stop using `stream`'s limits, if it is the stream the thread took."""
    s = stream_of(stream)
    if getattr(_res_thread, "stream", None) is s:
        _res_thread.stream = None


def get_res_in_current_thread(kind: int) -> int:
    """The limit the calling thread works under: its taken stream's, else its device's."""
    s = getattr(_res_thread, "stream", None)
    if s is not None and not s.destroyed:
        return get_stream_res_limit(s, kind)
    return get_device_res_limit(get_device(), kind)


def core_limit(stream, kind: int = RES_CUBE_CORE) -> int:
    """How many cores a kernel launched on `stream` may use (its limit, else its device's, else
    all of them); for launchers sizing their block count."""
    s = stream_of(stream)
    own = s.res_limits
    if own and kind in own:
        return own[kind]
    limit = s.device.res_limits.get(kind)
    return limit if limit is not None else res_cores(s.device.id, kind)
