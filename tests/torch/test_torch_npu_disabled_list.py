"""scripts/torch_npu_disabled.py: torch_npu's CI list of disabled tests is read and matched with
torch_npu's rule (torch_npu/testing/__init__.py `_check_if_enable_npu`), so the conformance count
leaves out exactly the tests torch_npu's own CI does not run."""
from __future__ import annotations

import importlib.util
import json
import pathlib

_PATH = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "torch_npu_disabled.py"
_spec = importlib.util.spec_from_file_location("torch_npu_disabled", _PATH)
disabled = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(disabled)


def _table(tmp_path, entries):
    path = tmp_path / "disabled.json"
    path.write_text(json.dumps(entries))
    return disabled.load(str(path))


def test_an_entry_disables_its_method_in_its_class_and_classes_named_after_it(tmp_path):
    table = _table(tmp_path, {"test_streams (__main__.TestNpu)": ["", [""]]})
    assert disabled.is_disabled(table, "TestNpu", "test_streams")
    assert disabled.is_disabled(table, "TestNpuMultiNpu", "test_streams")  # startswith, as torch_npu
    assert not disabled.is_disabled(table, "TestStream", "test_streams")
    assert not disabled.is_disabled(table, "TestNpu", "test_streams_other")


def test_privateuse1_and_npu_class_names_are_one_another(tmp_path):
    table = _table(tmp_path, {"test_copy (__main__.TestTorchDeviceTypePRIVATEUSE1)": ["", [""]],
                              "test_view (__main__.TestViewNPU)": ["", [""]]})
    assert disabled.is_disabled(table, "TestTorchDeviceTypeNPU", "test_copy")
    assert disabled.is_disabled(table, "TestViewPRIVATEUSE1", "test_view")


def test_a_parametrized_test_matches_by_its_name_without_device_and_dtype(tmp_path):
    table = _table(tmp_path, {"test_copy_ (__main__.TestTorchDeviceTypePRIVATEUSE1)": ["", [""]]})
    assert disabled.is_disabled(table, "TestTorchDeviceTypePRIVATEUSE1", "test_copy__npu_float32", "test_copy_")
    assert not disabled.is_disabled(table, "TestTorchDeviceTypePRIVATEUSE1", "test_copy__npu_float32")


def test_910a_only_and_malformed_entries_disable_nothing(tmp_path):
    table = _table(tmp_path, {"test_a (__main__.TestNpu)": ["", ["910A"]],
                              "test_b": ["", [""]], "test_c (__main__.TestNpu)": [""]})
    assert table == {}
