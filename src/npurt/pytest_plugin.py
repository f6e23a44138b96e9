"""npurt's pytest plugin (the `npurt` pytest11 entry point; loaded by pytest automatically).

    pytest --npurt-sanitize [--npurt-sanitize-tools race,mem,...]

runs every test (its fixtures' setup and teardown included) under npurt's sanitizer: a
test whose code produced a report fails with the report as its message (reports from a
fixture's teardown make the teardown an error). Mark a test that seeds bugs on purpose with
`@pytest.mark.npurt_no_sanitize`. Without the option the plugin does nothing and imports
nothing of npurt.
"""
from __future__ import annotations

import pytest

_SESSION = "_npurt_sanitizer"


def pytest_addoption(parser) -> None:
    group = parser.getgroup("npurt")
    group.addoption("--npurt-sanitize", action="store_true", default=False,
                    help="run each test under npurt's sanitizer; fail tests whose code produced a report")
    group.addoption("--npurt-sanitize-tools", default="all", metavar="LIST",
                    help="sanitizer tools for --npurt-sanitize: race,mem,init,leak,sync (default all)")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "npurt_no_sanitize: do not run this test under --npurt-sanitize")
    if config.getoption("npurt_sanitize", False):
        from npurt.tools.sanitizer.core import _parse_tools
        try:
            _parse_tools(config.getoption("npurt_sanitize_tools"))
        except ValueError as exc:
            raise pytest.UsageError(f"--npurt-sanitize-tools: {exc}") from None


def _wanted(item) -> bool:
    return bool(item.config.getoption("npurt_sanitize", False)) and item.get_closest_marker("npurt_no_sanitize") is None


def _new_reports(item) -> str:
    san, seen = getattr(item, _SESSION)
    fresh = san.reports[seen:]
    setattr(item, _SESSION, (san, len(san.reports)))
    return "\n".join(r.text() for r in fresh)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    if _wanted(item):
        from npurt.tools.sanitizer import Sanitizer
        san = Sanitizer(item.config.getoption("npurt_sanitize_tools"), echo=False).enable()
        setattr(item, _SESSION, (san, 0))
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    if hasattr(item, _SESSION):
        text = _new_reports(item)
        if text:
            pytest.fail(f"npurt sanitizer reports:\n{text}", pytrace=False)
    return result


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item, nextitem):
    try:
        result = yield
    finally:
        session = getattr(item, _SESSION, None)
        if session is not None:
            session[0].disable()  # the end-of-session checks (leaks made by the test)
    if session is not None:
        text = _new_reports(item)
        delattr(item, _SESSION)
        if text:
            pytest.fail(f"npurt sanitizer reports (teardown and end of test):\n{text}", pytrace=False)
    return result
