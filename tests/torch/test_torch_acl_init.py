"""torch_npu's ACL-initialization checks at the first set_device (torch_npu/csrc/core/npu/
sys_ctrl/npu_sys_ctrl.cpp, register/OptionsManager.cpp): TORCH_ACL_INIT_CONFIG_PATH, ACL_OP_INIT_MODE."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from npurt.torch import acl_init

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")


@pytest.mark.parametrize("content, message", [
    ("not a json{{{", "Failed to parse user acl json"), ("", "Failed to parse user acl json"),
    ('{"dump": {"dump_scene": "lite_exception"}}', "lacks 'defaultDevice' object"),
    ('{"defaultDevice": "not_an_object"}', "lacks 'defaultDevice' object"),
    ('{"defaultDevice": {"default_device": "1"}}', "requires 'defaultDevice.default_device' to be"),
    ('{"defaultDevice": {"default_device": 0}}', "requires 'defaultDevice.default_device' to be"),
])
def test_a_user_acl_json_must_parse_and_name_default_device_0_in_lazy_mode(tmp_path, content, message):
    # npurt reports CANN 9.1.0, so torch_npu's lazy set_device mode (CANN >= 8.3.RC1) applies
    assert acl_init.is_lazy_set_device() and acl_init.default_op_init_mode() == 1
    path = tmp_path / "acl.json"
    path.write_text(content)
    with pytest.raises(RuntimeError, match=message):
        acl_init._check_config(str(path))
    path.write_text('{"dump": {"dump_scene": "lite_exception"}, "defaultDevice": {"default_device": "0"}}')
    acl_init._check_config(str(path))


def test_a_default_device_is_refused_in_non_lazy_mode(tmp_path, monkeypatch):
    monkeypatch.setattr(acl_init, "is_lazy_set_device", lambda: False)
    path = tmp_path / "acl.json"
    path.write_text('{"defaultDevice": {"default_device": "0"}}')
    with pytest.raises(RuntimeError, match="contains 'defaultDevice'"):
        acl_init._check_config(str(path))
    path.write_text('{"dump": {"dump_scene": "lite_exception"}}')
    acl_init._check_config(str(path))
    assert acl_init.default_op_init_mode() == 0

def test_the_first_set_device_fails_on_a_missing_acl_json_and_warns_on_a_bad_op_init_mode(tmp_path):
    script = "import npurt.torch, torch; torch.npu.set_device(0)"
    env = {**os.environ, "PYTHONPATH": os.path.abspath(SRC), "ACL_OP_INIT_MODE": "999",
           "TORCH_ACL_INIT_CONFIG_PATH": str(tmp_path / "none.json")}
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "TORCH_ACL_INIT_CONFIG_PATH" in r.stderr and "is invalid" in r.stderr
    assert "Get env ACL_OP_INIT_MODE not in [0, 1, 2], so reset it to the default value 1." in r.stderr
