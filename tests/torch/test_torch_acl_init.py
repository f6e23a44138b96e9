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
    ('{"defaultDevice": {"default_device": "0"}}', "contains 'defaultDevice'"),
])
def test_a_user_acl_json_must_parse_and_have_no_default_device_in_non_lazy_mode(tmp_path, content, message):
    path = tmp_path / "acl.json"
    path.write_text(content)
    with pytest.raises(RuntimeError, match=message):
        acl_init._check_config(str(path))
    path.write_text('{"dump": {"dump_scene": "lite_exception"}}')
    acl_init._check_config(str(path))


def test_the_first_set_device_fails_on_a_missing_acl_json_and_warns_on_a_bad_op_init_mode(tmp_path):
    script = "import npurt.torch, torch; torch.npu.set_device(0)"
    env = {**os.environ, "PYTHONPATH": os.path.abspath(SRC), "ACL_OP_INIT_MODE": "999",
           "TORCH_ACL_INIT_CONFIG_PATH": str(tmp_path / "none.json")}
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "TORCH_ACL_INIT_CONFIG_PATH" in r.stderr and "is invalid" in r.stderr
    assert "Get env ACL_OP_INIT_MODE not in [0, 1, 2]" in r.stderr
