"""What torch_npu checks when it initializes ACL (its first `set_device` / `init`): the user's
acl.json (TORCH_ACL_INIT_CONFIG_PATH) and ACL_OP_INIT_MODE.

As torch_npu (torch_npu/csrc/core/npu/sys_ctrl/npu_sys_ctrl.cpp GetAclConfigJsonPath,
torch_npu/csrc/core/npu/register/OptionsManager.cpp GetAclOpInitMode), checked once per
process, and a failure raises RuntimeError every time it is asked again:

* TORCH_ACL_INIT_CONFIG_PATH set: the path must resolve ("... is invalid"), open ("Failed to
  open user acl json") and parse as JSON ("Failed to parse user acl json", an empty file
  included). Then the set_device mode decides (torch_npu/csrc/core/npu/NPUFunctions.cpp
  is_lazy_set_device: lazy on CANN 8.3.RC1 and later). npurt reports CANN 9.1.0
  (npurt.torch.cann_version), so it is in the lazy mode, as torch_npu on that CANN: the file
  must hold a `"defaultDevice"` object ("lacks 'defaultDevice' object") whose `default_device`
  is the string "0" ("requires 'defaultDevice.default_device' to be \"0\""). In the non-lazy
  mode (a CANN below 8.3.RC1) a `defaultDevice` key is refused instead ("contains
  'defaultDevice'"). The file's other settings (dump, profiling) configure CANN's tools; npurt
  takes them as read.
* ACL_OP_INIT_MODE outside 0, 1, 2: the warning "Get env ACL_OP_INIT_MODE not in [0, 1, 2], so
  reset it to the default value N." N is torch_npu's default (OptionsManager::GetAclOpInitMode):
  1 on a 910B with CANN 8.3.RC1 or later (npurt's 910B3 and 9.1.0), else 0.
"""
from __future__ import annotations

import json
import os
import warnings

from ..runtime import fork_safe_lock
from . import cann_version

LAZY_BASE = "8.3.RC1"   # the first CANN of torch_npu's lazy set_device mode
_lock = fork_safe_lock()
_state: dict = {}


def is_lazy_set_device() -> bool:
    """torch_npu's is_lazy_set_device: the reported CANN is 8.3.RC1 or later."""
    return cann_version.is_gte(LAZY_BASE)


def default_op_init_mode() -> int:
    """torch_npu's default ACL_OP_INIT_MODE on npurt's 910B3: 1 from CANN 8.3.RC1 on, else 0."""
    return 1 if is_lazy_set_device() else 0


def _check_config(path: str) -> None:
    real = os.path.realpath(path)
    if not path or not os.path.exists(real):
        raise RuntimeError(f"TORCH_ACL_INIT_CONFIG_PATH {path} is invalid. Please set the environment variable "
                           "'TORCH_ACL_INIT_CONFIG_PATH' to a valid JSON config file path.")
    try:
        with open(real, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise RuntimeError(f"Failed to open user acl json {real}. Please ensure the file exists and has read "
                           "permission.") from err
    try:
        config = json.loads(text)
    except ValueError as err:
        raise RuntimeError(f"Failed to parse user acl json {real}. Please check that the file contains valid "
                           f"JSON syntax. Error: {err}") from None
    has_default = isinstance(config, dict) and "defaultDevice" in config
    if is_lazy_set_device():
        default = config["defaultDevice"] if has_default else None
        if not isinstance(default, dict):
            raise RuntimeError(f"User acl json {real} lacks 'defaultDevice' object, required for lazy set_device "
                               "mode. Please add: \"defaultDevice\": {\"default_device\": \"0\"}")
        if default.get("default_device") != "0":
            raise RuntimeError(f"User acl json {real} requires 'defaultDevice.default_device' to be \"0\" in lazy "
                               "set_device mode. Please set: \"defaultDevice\": {\"default_device\": \"0\"}")
    elif has_default:
        raise RuntimeError(f"User acl json {real} contains 'defaultDevice' which is not expected in non-lazy "
                           "set_device mode. Please remove the 'defaultDevice' field from your JSON config.")


def _check_op_init_mode() -> None:
    value = os.environ.get("ACL_OP_INIT_MODE")
    if value is None:
        return
    try:
        mode = int(value.strip() or "0")  # strtol: no digits reads as 0
    except ValueError:
        mode = 0
    if mode not in (0, 1, 2):
        warnings.warn(f"Get env ACL_OP_INIT_MODE not in [0, 1, 2], so reset it to the default value "
                      f"{default_op_init_mode()}.")


def check() -> None:
    """Run torch_npu's ACL-initialization checks (once); raise the failure they found."""
    if "error" in _state:
        raise RuntimeError(_state["error"])
    if _state.get("done"):
        return
    with _lock:
        if not _state.get("done"):
            _state["done"] = True
            _check_op_init_mode()
            path = os.environ.get("TORCH_ACL_INIT_CONFIG_PATH")
            if path is not None:
                try:
                    _check_config(path)
                except RuntimeError as err:
                    _state["error"] = str(err)
                    raise
