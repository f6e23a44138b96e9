"""scripts/torch_npu_ci_skips.py: a skip leaves the conformance count only when its reason holds
on torch_npu's own CI too (slow, an unconditional @unittest.skip, ROCm- or CUDA-only); a skip
npurt causes (a device count, the SoC, a CANN version, a missing feature) stays in it."""
from __future__ import annotations

import importlib.util
import pathlib

_PATH = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "torch_npu_ci_skips.py"
_spec = importlib.util.spec_from_file_location("torch_npu_ci_skips", _PATH)
ci_skips = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ci_skips)

SOURCE = '''
import unittest
from unittest import skip

class TestA(TestCase):
    @unittest.skip("CANN doesn't support now.")
    def test_unconditional(self): ...

    @skip("outdated")
    def test_bare_skip(self): ...

    @unittest.skipIf(not TEST_WITH_ROCM, "ROCm-only test")
    def test_rocm_only(self): ...

    @unittest.skipIf(TEST_WITH_ROCM, "not on ROCm")
    def test_skipped_on_rocm(self): ...

    @unittest.skipIf(not TEST_MULTINPU, "only one NPU detected")
    def test_two_devices(self): ...

    @SupportedDevices(['Ascend950'])
    def test_soc(self): ...

    @unittest.skip("parametrized")
    def test_param(self, x): ...

    def test_param_other(self): ...

    @slowTest
    def test_slow(self): ...

@unittest.skip("whole class")
class TestB(TestCase):
    def test_in_skipped_class(self): ...
'''


def _classify(node, message):
    return ci_skips.classify(ci_skips.decorated(SOURCE), ci_skips.test_names(SOURCE), node, message)


def test_unconditional_rocm_only_and_slow_skips_hold_on_its_ci_too():
    assert _classify("t.py::TestA::test_unconditional", "CANN doesn't support now.") == "unconditional"
    assert _classify("t.py::TestA::test_bare_skip", "outdated") == "unconditional"
    assert _classify("t.py::TestA::test_rocm_only", "ROCm-only test") == "rocm-only"
    assert _classify("t.py::TestA::test_slow", ci_skips.SLOW_MESSAGE) == "slow"
    assert _classify("t.py::TestB::test_in_skipped_class", "whole class") == "unconditional"


def test_skips_npurt_causes_stay_in_the_count():
    assert _classify("t.py::TestA::test_two_devices", "only one NPU detected") is None
    assert _classify("t.py::TestA::test_soc", "Only run on ['Ascend950'], current device is Ascend910B.") is None
    assert _classify("t.py::TestA::test_skipped_on_rocm", "not on ROCm") is None
    # a runtime skipTest in a test without such a decorator
    assert _classify("t.py::TestA::test_param_other", "Backend doesn't support it") is None


def test_the_message_must_be_the_decorators_reason():
    # the test carries @unittest.skip but skipped for something else first: not counted apart
    assert _classify("t.py::TestA::test_unconditional", "only one NPU detected") is None


def test_a_parametrized_instance_matches_its_function_not_a_longer_sibling():
    assert _classify("t.py::TestA::test_param_x_1", "parametrized") == "unconditional"
    assert _classify("t.py::TestA::test_param_other", "parametrized") is None


PRIVATEUSE1_SOURCE = '''
import unittest
from torch.testing._internal.common_utils import TEST_PRIVATEUSE1, TEST_WITH_ROCM

TEST_NPUMALLOCASYNC = TEST_PRIVATEUSE1
TEST_MULTINPU = TEST_PRIVATEUSE1 and device_count() >= 2
TEST_LARGE_TENSOR = TEST_PRIVATEUSE1
if TEST_PRIVATEUSE1:
    TEST_LARGE_TENSOR = total_memory() >= 12e9

class TestA(TestCase):
    @unittest.skipIf(TEST_NPUMALLOCASYNC, "setContextRecorder not supported by NPUMallocAsync")
    def test_alias(self): ...

    @unittest.skipIf(TEST_NPUMALLOCASYNC or TEST_WITH_ROCM, "temporarily disabled for async")
    def test_alias_or(self): ...

    @unittest.skipIf(TEST_MULTINPU, "Testing on one NPU is sufficient")
    def test_machine_flag(self): ...

    @unittest.skipIf(TEST_LARGE_TENSOR, "reassigned")
    def test_reassigned(self): ...

    @unittest.skipIf(not TEST_NPUMALLOCASYNC, "the negation")
    def test_negated(self): ...

@unittest.skipIf(TEST_NPUMALLOCASYNC or TEST_WITH_ROCM, "NYI")
class TestB(TestCase):
    def test_in_class(self): ...
'''


def _classify_p1(node, message):
    return ci_skips.classify(ci_skips.decorated(PRIVATEUSE1_SOURCE), ci_skips.test_names(PRIVATEUSE1_SOURCE), node,
                             message)


def test_a_skip_on_test_privateuse1_or_a_plain_alias_of_it_holds_on_its_ci_too():
    # test/test_npu.py: TEST_NPUMALLOCASYNC = TEST_PRIVATEUSE1, true on every NPU machine
    assert _classify_p1("t.py::TestA::test_alias", "setContextRecorder not supported by NPUMallocAsync") == "privateuse1"
    assert _classify_p1("t.py::TestA::test_alias_or", "temporarily disabled for async") == "privateuse1"
    assert _classify_p1("t.py::TestB::test_in_class", "NYI") == "privateuse1"


def test_flags_that_read_the_machine_stay_in_the_count():
    assert _classify_p1("t.py::TestA::test_machine_flag", "Testing on one NPU is sufficient") is None
    assert _classify_p1("t.py::TestA::test_reassigned", "reassigned") is None
    assert _classify_p1("t.py::TestA::test_negated", "the negation") is None
