"""acl.rt device management (aclrtSetDevice, aclrtGetDeviceInfo, peer access, ...)."""
from __future__ import annotations

from ..runtime import api
from ._wrap import Group, stream_of

rt = Group("acl.rt")


@rt.ret
def set_device(device_id):
    """Bind `device_id` to the calling thread (creates/joins its default context)."""
    api.set_device(device_id)


@rt.ret
def reset_device(device_id):
    """Drop one set_device reference; at zero the device's resources are released."""
    api.reset_device(device_id)


@rt.ret
def reset_device_force(device_id):
    api.reset_device_force(device_id)


@rt.one(0)
def get_device():
    return api.get_device()


@rt.one(0)
def get_device_count():
    return api.get_device_count()


@rt.one(0)
def get_run_mode():
    """ACL_HOST (1): the simulated device is driven from the host."""
    return api.get_run_mode()


@rt.ret
def set_ts_device(ts_id):
    api.set_ts_device(ts_id)


@rt.ret
def synchronize_device():
    api.synchronize_device()


@rt.ret
def synchronize_device_with_timeout(timeout):
    """Milliseconds; -1 waits forever. Timeout: ACL_ERROR_RT_STREAM_SYNC_TIMEOUT."""
    api._check_timeout(timeout)
    api.synchronize_device(timeout)


@rt.one(0)
def device_can_access_peer(device_id, peer_device_id):
    return api.device_can_access_peer(device_id, peer_device_id)


@rt.ret
def device_enable_peer_access(peer_device_id, flag):
    api.device_enable_peer_access(peer_device_id, flag)


@rt.ret
def device_disable_peer_access(peer_device_id):
    api.device_disable_peer_access(peer_device_id)


@rt.one(0)
def device_peer_access_status(device_id, peer_device_id):
    return api.device_peer_access_status(device_id, peer_device_id)


@rt.one(0)
def get_device_info(device_id, attr):
    return api.get_device_info(device_id, attr)


@rt.one(0)
def get_device_capability(device_id, dev_feature_type):
    return api.get_device_capability(device_id, dev_feature_type)


@rt.one(None)
def get_device_utilization_rate(device_id):
    return api.get_device_utilization_rate(device_id)


@rt.one(0)
def query_device_status(device_id):
    return api.query_device_status(device_id)


@rt.ret
def set_device_sat_mode(mode):
    api.set_device_sat_mode(mode)


@rt.one(0)
def get_device_sat_mode():
    return api.get_device_sat_mode()


@rt.ret
def get_overflow_status(output_addr, output_size, stream):
    api.get_overflow_status(output_addr, output_size, stream_of(stream))


@rt.ret
def reset_overflow_status(stream):
    api.reset_overflow_status(stream_of(stream))


@rt.many(0, 0)
def device_get_stream_priority_range():
    return api.device_get_stream_priority_range()


@rt.one(0)
def get_devices_topo(device_id, other_device_id):
    return api.get_devices_topo(device_id, other_device_id)


@rt.one(0)
def get_user_dev_id_by_logic_dev_id(logic_dev_id):
    return api.get_user_dev_id_by_logic_dev_id(logic_dev_id)


@rt.one(0)
def get_logic_dev_id_by_user_dev_id(user_dev_id):
    return api.get_logic_dev_id_by_user_dev_id(user_dev_id)


@rt.one(None)
def device_get_uuid(device_id):
    return api.device_get_uuid(device_id)


@rt.one(0)
def device_get_bare_tgid():
    return api.device_get_bare_tgid()


@rt.ret
def device_set_limit(limit, value):
    api.device_set_limit(limit, value)


@rt.one(0)
def device_get_limit(limit):
    return api.device_get_limit(limit)


@rt.ret
def set_sys_param_opt(opt, value):
    api.set_sys_param_opt(opt, value)


@rt.one(0)
def get_sys_param_opt(opt):
    return api.get_sys_param_opt(opt)


__all__ = list(rt.names)
