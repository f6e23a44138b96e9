"""torch_npu's device controls (torch_npu/npu/npu_config.py, utils.py, __init__.py): core
limits, the synchronization debug mode, the op timeout, the compatible-implementation switch,
get_device_capability."""
from __future__ import annotations

import warnings

import pytest
import torch

from npurt.torch import npu_config


@pytest.mark.parametrize("bad", ["0", 0.0, None, True])
def test_the_device_of_a_limit_must_be_an_int(bad):
    with pytest.raises(TypeError, match="device must be an int"):
        torch.npu.get_device_limit(bad)
    with pytest.raises(AssertionError, match="Invalid device id"):
        torch.npu.get_device_limit(99)


def test_a_device_limit_is_set_once_and_read_back():
    limits = torch.npu.get_device_limit(1)
    assert set(limits) == {"cube_core_num", "vector_core_num"} and limits["cube_core_num"] > 1
    once = npu_config._CallOnce(npu_config.set_device_limit.func)  # a fresh one: the module's may be spent
    once(1, cube_num=limits["cube_core_num"] - 1)
    assert torch.npu.get_device_limit(1)["cube_core_num"] == limits["cube_core_num"] - 1
    with pytest.raises(RuntimeError, match="already been called"):
        once(1, cube_num=1)
    once.func(1, cube_num=limits["cube_core_num"])  # restore


def test_a_stream_limit_is_the_streams_own():
    s = torch.npu.Stream()
    torch.npu.set_stream_limit(s, vector_num=2)
    assert torch.npu.get_stream_limit(s)["vector_core_num"] == 2
    torch.npu.reset_stream_limit(s)
    assert torch.npu.get_stream_limit(s)["vector_core_num"] == torch.npu.get_device_limit(0)["vector_core_num"]
    with pytest.raises(AssertionError, match="stream should be torch_npu.npu.Stream"):
        torch.npu.get_stream_limit(object())


def test_the_sync_debug_mode_warns_or_raises_on_a_synchronizing_operation():
    x = torch.ones(3, device="npu")
    assert torch.npu.get_sync_debug_mode() == 0
    try:
        torch.npu.set_sync_debug_mode("warn")
        assert torch.npu.get_sync_debug_mode() == 1
        with pytest.warns(UserWarning, match="called a synchronizing NPU operation"):
            x.cpu()
        torch.npu.set_sync_debug_mode(2)
        with pytest.raises(RuntimeError, match="called a synchronizing NPU operation"):
            torch.npu.current_stream().synchronize()
        with pytest.raises(RuntimeError, match="expected one of 0,1,2"):
            torch.npu.set_sync_debug_mode(3)
        with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
            torch.npu.set_sync_debug_mode("loud")
        assert torch.npu.get_sync_debug_mode() == 2
    finally:
        torch.npu.set_sync_debug_mode(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.cpu().tolist() == [1.0] * 3


def test_the_op_timeout_is_a_uint32_of_milliseconds():
    torch.npu.set_op_timeout_ms(1000)
    with pytest.raises(OverflowError, match="can't convert negative value to unsigned int"):
        torch.npu.set_op_timeout_ms(-1)
    with pytest.raises(RuntimeError, match="Overflow when unpacking"):
        torch.npu.set_op_timeout_ms(2 ** 32)
    torch.npu.set_op_timeout_ms(0)


def test_the_compatible_impl_switch_reads_back():
    before = torch.npu.are_compatible_impl_enabled()
    torch.npu.use_compatible_impl(True)
    assert torch.npu.are_compatible_impl_enabled() is True
    torch.npu.use_compatible_impl(False)
    assert torch.npu.are_compatible_impl_enabled() is False
    torch.npu.use_compatible_impl(before)


def test_device_capability_is_none_unless_the_variable_names_one(monkeypatch):
    monkeypatch.delenv("TORCH_NPU_DEVICE_CAPABILITY", raising=False)
    with pytest.warns(UserWarning):
        assert torch.npu.get_device_capability() is None
    monkeypatch.setenv("TORCH_NPU_DEVICE_CAPABILITY", "8.0")
    with pytest.warns(UserWarning):
        assert torch.npu.get_device_capability(0) == (8, 0)
    monkeypatch.setenv("TORCH_NPU_DEVICE_CAPABILITY", "8.a")
    with pytest.warns(UserWarning, match="can't parse"):
        assert torch.npu.get_device_capability() is None
