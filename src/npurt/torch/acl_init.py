"""What torch_npu checks when it initializes ACL (its first `set_device` / `init`): the user's
acl.json (TORCH_ACL_INIT_CONFIG_PATH) and ACL_OP_INIT_MODE.

As torch_npu (torch_npu/csrc/core/npu/sys_ctrl/npu_sys_ctrl.cpp GetAclConfigJsonPath,
torch_npu/csrc/core/npu/register/OptionsManager.cpp GetAclOpInitMode), checked once per
process, and a failure raises RuntimeError every time it is asked again:

* TORCH_ACL_INIT_CONFIG_PATH set: the path must resolve ("... is invalid"), open ("Failed to
  open user acl json") and parse as JSON ("Failed to parse user acl json", an empty file
  included). torch_npu's lazy set_device mode (CANN 8.3.RC1 and later) requires
  `"defaultDevice": {"default_device": "0"}`; npurt reports no CANN version (npurt.torch.shim
  _C), so it is in the non-lazy mode, where a `defaultDevice` key is refused ("contains
  'defaultDevice'"). The file's other settings (dump, profiling) configure CANN's tools; npurt
  takes them as read.
* ACL_OP_INIT_MODE outside 0, 1, 2: the warning "Get env ACL_OP_INIT_MODE not in [0, 1, 2], so
  reset it to the default value 0." (0: the default on a 910B without a known CANN version).
"""
from __future__ import annotations

import json
import os
import warnings

from ..runtime import fork_safe_lock

DEFAULT_OP_INIT_MODE = 0
_lock = fork_safe_lock()
_state: dict = {}


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
    if isinstance(config, dict) and "defaultDevice" in config:
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
                      f"{DEFAULT_OP_INIT_MODE}.")


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
