"""Top-level `acl` functions: init/finalize, SoC name, recent error message, hardware
size query, and the "other APIs" (versions, fp16 helpers, app_log). The graph engine's
top-level functions (data buffers, data type sizes, tensor descs) are in _tensor.py."""
from __future__ import annotations

import logging

import numpy as np

from .. import __version__
from .. import runtime as api  # the runtime's operations: its published surface
from ..runtime import constants as C
from ._wrap import Group

acl = Group("acl")
_log = logging.getLogger("npurt.acl.app_log")


# ---------------------------------------------------------------- init / finalize
@acl.ret(args="|s")
def init(config_path=None):
    """Initialize (reads an optional JSON config). A second call returns
    ACL_ERROR_REPEAT_INITIALIZE (100002), which callers may ignore."""
    api.init(config_path)


@acl.ret(args=None)
def finalize():
    """Tear everything down. Without a prior init: ACL_ERROR_REPEAT_FINALIZE (100037)."""
    api.finalize()


@acl.one(0, args=None)
def finalize_reference():
    """Drop one init reference; deinitializes at zero. Returns the references left."""
    return api.finalize_reference()


@acl.value(None, args=None)
def get_soc_name():
    """The simulated SoC's name (e.g. "Ascend910B3"); the runtime starts if it is not up."""
    return api.get_soc_name()


@acl.value(None, args=None)
def get_recent_err_msg():
    """The text of the calling thread's latest failure (None if there is none, as the C
    function returns NULL then); reading clears it."""
    return api.get_recent_err_msg() or None


@acl.one(0, args="Ii")
def get_device_capability(device_id, device_info):
    """ACL_DEVICE_INFO_AI_CORE_NUM (0), _VECTOR_CORE_NUM (1) or _L2_SIZE (2) of a device."""
    return api.get_hardware_info(device_id, device_info)


# ---------------------------------------------------------------- other APIs
PYACL_VERSION = (1, 0, 0)  # the pyACL interface version this facade implements


@acl.many(0, 0, 0, args=None)
def get_version():
    """Deprecated: (major, minor, patch) of the pyACL interface."""
    return PYACL_VERSION


@acl.one("", args="s")
def get_version_str(pkg_name):
    """Version string of a package: "runtime" (the CANN release npurt models,
    constants.CANN_VERSION), "npurt" (npurt's own), "driver" / "firmware" (the simulated
    NPU's); other packages are not installed (ACL_ERROR_INVALID_FILE)."""
    if pkg_name == "runtime":
        return C.CANN_VERSION
    if pkg_name == "npurt":
        return __version__
    if pkg_name in ("driver", "firmware"):
        return f"npurt-simulated-{__version__}"
    raise api.NpuError(f"package {pkg_name!r} is not installed (npurt provides 'runtime', 'driver', "
                          "'firmware')", C.ACL_ERROR_INVALID_FILE)


@acl.one(0, args="i")
def get_cann_attribute(cann_attr):
    """1 if an optional CANN feature (aclCannAttr) is available: none is, here."""
    if cann_attr < 0:
        raise ValueError(f"cann_attr must be a non-negative int (aclCannAttr), got {cann_attr!r}")
    return 0


@acl.many([], 0, args=None)
def get_cann_attribute_list():
    """(list of supported aclCannAttr features, count): empty."""
    return [], 0


@acl.value(0.0, args="H")
def float16_to_float(value):
    """An aclFloat16 (its 16 bits as an int) as a Python float."""
    return float(np.array(value, np.uint16).view(np.float16))


@acl.value(0, args="f")
def float_to_float16(value):
    """A float rounded to aclFloat16; its 16 bits as an int."""
    return int(np.array(value, np.float16).view(np.uint16))


_LOG_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR}


@acl.value(None, args="is")
def app_log(log_level, message):
    """Log `message` at 0 DEBUG, 1 INFO, 2 WARNING, 3 ERROR (logger "npurt.acl.app_log")."""
    if log_level not in _LOG_LEVELS:
        raise ValueError(f"log_level must be 0 (DEBUG), 1 (INFO), 2 (WARNING) or 3 (ERROR), got {log_level!r}")
    _log.log(_LOG_LEVELS[log_level], "%s", message)


__all__ = list(acl.names)
