"""The SoC catalog and the settings read from the environment (issue 2, scope 1)."""
from __future__ import annotations

import pytest

from npurt.driver import DEFAULT_SOC, SOCS, soc_by_name
from npurt.runtime import constants as C
from npurt.runtime.config import Settings, parse_visible_devices
from npurt.runtime.errors import InvalidDeviceError, InvalidValueError
from npurt.runtime.runtime import RUNTIME

GiB = 1 << 30


# ---------------------------------------------------------------- catalog
def test_catalog_has_a_910b_training_part_with_real_figures():
    spec = SOCS["Ascend910B3"]
    assert spec.memory_kind == "HBM"
    assert spec.memory_bytes == 64 * GiB
    assert spec.aicore_num == 20 and spec.vector_core_num == 40
    assert spec.max_streams == 1984
    assert spec.memory_bandwidth > spec.host_link_bandwidth > 0


def test_catalog_has_a_310p_inference_part_with_ddr_memory():
    spec = SOCS["Ascend310P3"]
    assert spec.memory_kind == "DDR"
    assert spec.memory_bytes == 24 * GiB
    assert spec.max_streams == 1024
    assert spec.aicore_num == 8


def test_default_soc_is_the_910b():
    assert DEFAULT_SOC == "Ascend910B3"
    assert Settings().soc == "Ascend910B3"


def test_soc_lookup_ignores_case():
    assert soc_by_name("ascend310p3") is SOCS["Ascend310P3"]


def test_unknown_soc_lookup_lists_the_known_names():
    with pytest.raises(KeyError) as info:
        soc_by_name("Ascend999")
    for name in SOCS:
        assert name in str(info.value)


# ---------------------------------------------------------------- NPURT_SOC / device count
def test_npurt_soc_selects_the_simulated_soc(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "Ascend310P3")
    fresh_runtime.init()
    assert fresh_runtime.get_soc_name() == "Ascend310P3"
    fresh_runtime.set_device(0)
    assert fresh_runtime.current_device().spec.memory_bytes == 24 * GiB


def test_default_soc_name_without_setting(fresh_runtime, monkeypatch):
    monkeypatch.delenv("NPURT_SOC", raising=False)
    fresh_runtime.init()
    assert fresh_runtime.get_soc_name() == "Ascend910B3"


def test_unknown_npurt_soc_fails_init_with_invalid_param(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "NotAChip")
    with pytest.raises(InvalidValueError) as info:
        fresh_runtime.init()
    assert info.value.code == C.ACL_ERROR_INVALID_PARAM
    assert "Ascend910B3" in str(info.value)  # says what would be accepted
    assert not RUNTIME.initialized
    monkeypatch.delenv("NPURT_SOC")
    fresh_runtime.init()  # and a corrected environment initializes fine
    assert RUNTIME.initialized


def test_default_device_count_is_two(fresh_runtime, monkeypatch):
    monkeypatch.delenv("NPURT_DEVICE_COUNT", raising=False)
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    fresh_runtime.init()
    assert fresh_runtime.get_device_count() == 2


def test_npurt_device_count_sets_the_number_of_devices(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_DEVICE_COUNT", "4")
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    fresh_runtime.init()
    assert fresh_runtime.get_device_count() == 4
    fresh_runtime.set_device(3)
    assert fresh_runtime.get_device() == 3


@pytest.mark.parametrize("raw", ["0", "-1", "two"])
def test_bad_npurt_device_count_is_an_invalid_param_error(fresh_runtime, monkeypatch, raw):
    monkeypatch.setenv("NPURT_DEVICE_COUNT", raw)
    with pytest.raises(InvalidValueError) as info:
        fresh_runtime.init()
    assert "NPURT_DEVICE_COUNT" in str(info.value)


def test_bad_memcpy_kind_setting_is_an_invalid_param_error(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_MEMCPY_KIND", "guess")
    with pytest.raises(InvalidValueError, match="NPURT_MEMCPY_KIND"):
        fresh_runtime.init()


@pytest.mark.parametrize("name, raw", [("NPURT_MAX_STREAMS", "0"), ("NPURT_MAX_STREAMS", "-3"),
                                       ("NPURT_MAX_STREAMS", "many"), ("NPURT_WORKERS", "x"),
                                       ("NPURT_HANG_WARNING_S", "soon")])
def test_bad_numeric_settings_are_invalid_param_errors_naming_the_variable(fresh_runtime, monkeypatch,
                                                                          name, raw):
    monkeypatch.setenv(name, raw)
    with pytest.raises(InvalidValueError, match=name):
        fresh_runtime.init()
    assert not RUNTIME.initialized


def test_settings_read_every_variable(monkeypatch):
    for name, value in {"NPURT_SOC": "Ascend910A", "NPURT_DEVICE_COUNT": "3",
                        "ASCEND_RT_VISIBLE_DEVICES": "2,0", "NPURT_MEMCPY_KIND": "strict",
                        "NPURT_LAUNCH_BLOCKING": "1", "NPURT_TASK_STACKS": "1",
                        "NPURT_MAX_STREAMS": "77", "NPURT_POISON_FREED": "1",
                        "NPURT_WORKERS": "3"}.items():
        monkeypatch.setenv(name, value)
    s = Settings.from_env()
    assert (s.soc, s.physical_devices, s.visible_devices, s.memcpy_kind) == ("Ascend910A", 3, [2, 0], "strict")
    assert s.launch_blocking and s.task_stacks and s.poison_freed
    assert (s.max_streams, s.workers) == (77, 3)


def test_settings_defaults_without_environment(monkeypatch):
    for name in ("NPURT_SOC", "NPURT_DEVICE_COUNT", "ASCEND_RT_VISIBLE_DEVICES", "NPURT_MEMCPY_KIND",
                 "NPURT_LAUNCH_BLOCKING", "ASCEND_LAUNCH_BLOCKING", "NPURT_TASK_STACKS",
                 "NPURT_MAX_STREAMS", "NPURT_POISON_FREED", "NPURT_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    s = Settings.from_env()
    assert (s.soc, s.physical_devices, s.visible_devices) == ("Ascend910B3", 2, [0, 1])
    assert s.memcpy_kind == "address"  # copies go by address, as on the hardware
    assert not (s.launch_blocking or s.task_stacks or s.poison_freed)
    assert s.max_streams is None


# ---------------------------------------------------------------- ASCEND_RT_VISIBLE_DEVICES
@pytest.mark.parametrize("raw, physical, expected", [
    (None, 3, [0, 1, 2]),          # unset: all devices
    ("2,0", 3, [2, 0]),            # order is the user's
    (" 1 , 0 ", 2, [1, 0]),        # spaces are tolerated
    ("1,x,0", 2, [1]),             # stops at the first entry that is not a number
    ("0,5,1", 2, [0]),             # ... or out of range
    ("1,1,0", 2, [1]),             # ... or repeated
    ("-1,0", 2, []),               # ... even when it is the first
    ("", 2, []),                   # set but empty: nothing visible
])
def test_visible_devices_are_read_up_to_the_first_invalid_entry(raw, physical, expected):
    assert parse_visible_devices(raw, physical) == expected


def test_visible_devices_renumber_logical_ids(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_DEVICE_COUNT", "2")
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "1")
    fresh_runtime.init()
    assert fresh_runtime.get_device_count() == 1
    fresh_runtime.set_device(0)
    ptr = fresh_runtime.malloc(64)
    # logical device 0 is physical device 1: its addresses lie in physical window 1
    assert (ptr - (1 << 48)) >> 40 == 1
    assert fresh_runtime.pointer_get_attributes(ptr)["location"]["id"] == 0


def test_device_hidden_by_visible_devices_is_invalid(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_DEVICE_COUNT", "2")
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "1")
    fresh_runtime.init()
    with pytest.raises(InvalidDeviceError) as info:
        fresh_runtime.set_device(1)
    assert info.value.code == C.ACL_ERROR_RT_INVALID_DEVICEID


def test_user_and_logic_device_ids_follow_visible_devices(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_DEVICE_COUNT", "3")
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "2,0")
    fresh_runtime.init()
    assert [fresh_runtime.get_logic_dev_id_by_user_dev_id(u) for u in (0, 1)] == [2, 0]
    assert [fresh_runtime.get_user_dev_id_by_logic_dev_id(p) for p in (2, 0)] == [0, 1]
    with pytest.raises(InvalidDeviceError):
        fresh_runtime.get_user_dev_id_by_logic_dev_id(1)  # physical 1 is hidden


def test_user_and_logic_device_ids_are_the_identity_without_the_variable(fresh_runtime, monkeypatch):
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    fresh_runtime.init()
    assert fresh_runtime.get_logic_dev_id_by_user_dev_id(1) == 1
    assert fresh_runtime.get_user_dev_id_by_logic_dev_id(1) == 1
