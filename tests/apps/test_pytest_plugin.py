"""npurt's pytest plugin, as a project that tests its NPU code with pytest uses it: fixtures for
a fresh runtime, a device and a stream, a launch-blocking marker, and --npurt-leaks."""
from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TESTS = '''
import numpy as np
import pytest

def test_runtime_is_fresh(npurt_runtime):
    from npurt.runtime.runtime import RUNTIME
    assert not RUNTIME.initialized
    assert npurt_runtime.ones(2).cpu().tolist() == [1, 1]

def test_device_is_current(npurt_device):
    import npurt
    assert npurt_device == npurt.device(0) and npurt.current_device() == 0

def test_stream_is_on_the_device(npurt_stream):
    import npurt
    with npurt.stream(npurt_stream):
        x = npurt.zeros(4)
    assert x.device == 0 and npurt_stream.device == 0

@pytest.mark.npurt_launch_blocking
def test_marker_makes_launches_blocking(npurt_device):
    from npurt.runtime.runtime import RUNTIME
    import npurt
    npurt.ones(2)
    assert RUNTIME.settings.launch_blocking

def test_without_the_marker_launches_are_queued(npurt_device):
    from npurt.runtime.runtime import RUNTIME
    import npurt
    npurt.ones(2)
    assert not RUNTIME.settings.launch_blocking

KEPT = []

def test_keeps_an_array(npurt_runtime):
    KEPT.append(npurt_runtime.zeros(1000))

def test_mallocs_and_resets(npurt_runtime):
    import npurt.acl as acl
    acl.init()
    acl.rt.set_device(0)
    ptr, ret = acl.rt.malloc(4096, 0)
    acl.rt.reset_device(0)

def test_frees_what_it_made(npurt_runtime):
    x = npurt_runtime.zeros(1000)
    y = x + 1
    del x, y

@pytest.mark.npurt_allow_leaks
def test_allowed_to_leak(npurt_runtime):
    KEPT.append(npurt_runtime.zeros(10))
'''


def _line(path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_fixtures_marker_and_npurt_leaks_in_a_project_using_them(pytester):
    path = pytester.makepyfile(TESTS)
    # -rN: no short summary, whose length pytest changes under CI=true (full messages there)
    result = pytester.runpytest_inprocess("-q", "-rN", "-p", "no:cacheprovider", "--npurt-leaks",
                                          "-W", "ignore::ResourceWarning")
    result.assert_outcomes(passed=9, errors=2)   # every test passes; two leak, failing their teardown
    out = result.stdout.str()
    assert "ERROR at teardown of test_keeps_an_array" in out and "ERROR at teardown of test_mallocs_and_resets" in out
    kept, malloc = _line(path, "KEPT.append(npurt_runtime.zeros(1000))"), _line(path, "acl.rt.malloc(4096, 0)")
    assert f"device 0 0x" in out and f"(4000 B) allocated at {path}:{kept}: released as leaked by acl.finalize" in out
    assert f"(4096 B) allocated at {path}:{malloc}: released as leaked by reset_device(0)" in out
    assert out.count("npurt: the test leaked 1 device allocation(s)") == 2


def test_the_plugin_is_registered_for_pytest(pytestconfig):
    assert pytestconfig.pluginmanager.has_plugin("npurt")
    assert any(m.startswith("npurt_launch_blocking") for m in pytestconfig.getini("markers"))


RAISES = '''
import pytest

def test_keeps_an_array_alive_through_pytest_raises(npurt_runtime):
    x = npurt_runtime.zeros(1000)
    with pytest.raises(ValueError) as e:       # e's traceback holds this frame, and x with it
        raise ValueError("on purpose")
    assert "on purpose" in str(e.value)
'''


def test_npurt_leaks_collects_garbage_before_the_runtime_is_finalized(pytester):
    pytester.makepyfile(RAISES)
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", "--npurt-leaks")
    result.assert_outcomes(passed=1)
    assert "leaked" not in result.stdout.str()


def test_the_options_can_be_set_in_pyproject(pytester):
    pytester.makepyfile(TESTS)
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\nnpurt_leaks = true\n")
    result = pytester.runpytest_inprocess("-q", "-rN", "-p", "no:cacheprovider", "-W", "ignore::ResourceWarning")
    result.assert_outcomes(passed=9, errors=2)          # as with --npurt-leaks on the command line


def test_the_report_header_names_the_version_and_the_simulated_machine(pytester, monkeypatch):
    import npurt
    pytester.makepyfile("def test_nothing():\n    pass\n")
    monkeypatch.setenv("NPURT_DEVICE_COUNT", "3")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([f"npurt {npurt.__version__}: simulated Ascend910B3, 3 device(s)"])
