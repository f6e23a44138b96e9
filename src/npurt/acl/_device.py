"""acl.rt device management (aclrtSetDevice, aclrtGetDeviceInfo, peer access, ...).

Each wrapper declares the PyArg_ParseTuple format of the real one (python/pyACL/rt/
rt_device.cpp, rt_memory.cpp for peer access, rt_context.cpp for the overflow status and
system parameters, rt_synchronize.cpp for synchronize_device_with_timeout).
"""
from __future__ import annotations

from .. import runtime as api  # the runtime's operations: its published surface
from ..runtime import constants as C
from ._wrap import Group, stream_of

rt = Group("acl.rt")


@rt.ret(args="i")
def set_device(device_id):
    """Bind `device_id` to the calling thread (creates/joins its default context)."""
    api.set_device(device_id)


@rt.ret(args="i")
def reset_device(device_id):
    """Drop one set_device reference; at zero the device's resources are released."""
    api.reset_device(device_id)


@rt.ret(args="i")
def reset_device_force(device_id):
    api.reset_device_force(device_id)


@rt.one(0, args=None)
def get_device():
    return api.get_device()


@rt.one(0, args=None)
def get_device_count():
    return api.get_device_count()


@rt.one(C.ACL_HOST, args=None)
def get_run_mode():
    """ACL_HOST (1): the simulated device is driven from the host."""
    return api.get_run_mode()


@rt.ret(args="i")
def set_ts_device(ts_id):
    api.set_ts_device(ts_id)


@rt.ret(args=None)
def synchronize_device():
    api.synchronize_device()


@rt.ret(args="i", message="acl.rt.synchronize_device_with_timeout args parse failed!")
def synchronize_device_with_timeout(timeout):
    """Milliseconds; -1 waits forever. Timeout: ACL_ERROR_RT_STREAM_SYNC_TIMEOUT."""
    api.synchronize_device(timeout)


@rt.one(0, args="ii")
def device_can_access_peer(device_id, peer_device_id):
    return api.device_can_access_peer(device_id, peer_device_id)


@rt.ret(args="iI")
def device_enable_peer_access(peer_device_id, flag):
    api.device_enable_peer_access(peer_device_id, flag)


@rt.ret(args="i")
def device_disable_peer_access(peer_device_id):
    api.device_disable_peer_access(peer_device_id)


@rt.one(0, args="ii")
def device_peer_access_status(device_id, peer_device_id):
    return api.device_peer_access_status(device_id, peer_device_id)


@rt.one(0, args="II")
def get_device_info(device_id, attr):
    return api.get_device_info(device_id, attr)


@rt.one(0, args="iI")
def get_device_capability(device_id, dev_feature_type):
    return api.get_device_capability(device_id, dev_feature_type)


# on failure the real wrapper still builds the dict, from a zeroed aclrtUtilizationInfo
_NO_UTILIZATION = {"cube_utilization": 0, "vector_utilization": 0, "aicpu_utilization": 0,
                   "memory_utilization": 0, "utilization_extend": 0}


@rt.one(_NO_UTILIZATION, args="i")
def get_device_utilization_rate(device_id):
    return api.get_device_utilization_rate(device_id)


@rt.one(C.ACL_RT_DEVICE_STATUS_END, args="i")
def query_device_status(device_id):
    return api.query_device_status(device_id)


@rt.ret(args="i")
def set_device_sat_mode(mode):
    api.set_device_sat_mode(mode)


@rt.one(C.ACL_RT_OVERFLOW_MODE_SATURATION, args=None)
def get_device_sat_mode():
    return api.get_device_sat_mode()


@rt.ret(args="kkS", message="acl.rt.get_overflow_status args parse failed!")
def get_overflow_status(output_addr, output_size, stream):
    api.get_overflow_status(output_addr, output_size, stream)


@rt.ret(args="S", message="acl.rt.reset_overflow_status args parse failed!")
def reset_overflow_status(stream):
    api.reset_overflow_status(stream)


@rt.many(0, 0, args=None)
def device_get_stream_priority_range():
    return api.device_get_stream_priority_range()


# the real wrapper's message names another function (a slip in rt_device.cpp, kept)
@rt.one(0, args="II", message="acl.rt.reset_device_res_limit args parse failed")
def get_devices_topo(device_id, other_device_id):
    return api.get_devices_topo(device_id, other_device_id)


@rt.one(0, args="i")
def get_user_dev_id_by_logic_dev_id(logic_dev_id):
    return api.get_user_dev_id_by_logic_dev_id(logic_dev_id)


@rt.one(0, args="i")
def get_logic_dev_id_by_user_dev_id(user_dev_id):
    return api.get_logic_dev_id_by_user_dev_id(user_dev_id)


@rt.one(0, args="i")
def get_logic_dev_id_by_phy_dev_id(phy_dev_id):
    return api.get_logic_dev_id_by_phy_dev_id(phy_dev_id)


@rt.one(0, args="i")
def get_phy_dev_id_by_logic_dev_id(logic_dev_id):
    return api.get_phy_dev_id_by_logic_dev_id(logic_dev_id)


@rt.one({"bytes": [0] * 16}, args="i")
def device_get_uuid(device_id):
    """{"bytes": [16 ints]} (each a signed char, as the real wrapper builds the list)."""
    return api.device_get_uuid(device_id)


@rt.one(0, args=None)
def device_get_bare_tgid():
    return api.device_get_bare_tgid()


# not in the real module's method table (documented for C only): npurt's formats follow
# the C signatures aclrtDeviceSetLimit(aclrtDeviceLimit, size_t) / aclrtDeviceGetLimit
@rt.ret(args="ik")
def device_set_limit(limit, value):
    api.device_set_limit(limit, value)


@rt.one(0, args="i")
def device_get_limit(limit):
    return api.device_get_limit(limit)


@rt.ret(args="il", message="acl.rt.set_sys_param_opt args parse faild")
def set_sys_param_opt(opt, value):
    api.set_sys_param_opt(opt, value)


@rt.one(0, args="i", message="acl.rt.get_sys_param_opt args parse faild")
def get_sys_param_opt(opt):
    return api.get_sys_param_opt(opt)




# device and stream resource limits (aclrtDevResLimitType): cores kernels may use; formats of
# rt_device.cpp / rt_stream.cpp
@rt.one(0, args="iI")
def get_device_res_limit(device_id, type):  # noqa: A002 - the C parameter's name
    return api.get_device_res_limit(device_id, type)


@rt.ret(args="iII")
def set_device_res_limit(device_id, type, value):  # noqa: A002
    api.set_device_res_limit(device_id, type, value)


@rt.ret(args="i")
def reset_device_res_limit(device_id):
    api.reset_device_res_limit(device_id)


@rt.one(0, args="ki", message="acl.rt.get_stream_res_limit parse failed")
def get_stream_res_limit(stream, type):  # noqa: A002
    return api.get_stream_res_limit(stream_of(stream), type)


@rt.ret(args="kiI", message="acl.rt.set_stream_res_limit parse failed")
def set_stream_res_limit(stream, type, value):  # noqa: A002
    api.set_stream_res_limit(stream_of(stream), type, value)


@rt.ret(args="k", message="acl.rt.reset_stream_res_limit parse failed")
def reset_stream_res_limit(stream):
    api.reset_stream_res_limit(stream_of(stream))


@rt.ret(args="k", message="acl.rt.use_stream_res_in_current_thread parse failed")
def use_stream_res_in_current_thread(stream):
    api.use_stream_res_in_current_thread(stream_of(stream))


@rt.ret(args="k", message="acl.rt.unuse_stream_res_in_current_thread parse failed")
def unuse_stream_res_in_current_thread(stream):
    api.unuse_stream_res_in_current_thread(stream_of(stream))


@rt.one(0, args="i", message="acl.rt.get_res_in_current_thread parse failed")
def get_res_in_current_thread(type):  # noqa: A002
    return api.get_res_in_current_thread(type)


__all__ = list(rt.names)
