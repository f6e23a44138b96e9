"""npurt's pytest plugin (the `npurt` pytest11 entry point: pytest loads it by itself once npurt
is installed). It imports nothing of npurt until a test asks for one of its parts.

Fixtures:
    npurt_runtime    a fresh runtime for the test (finalized before and after); yields `npurt`
    npurt_device     device 0 current on a fresh runtime; yields `npurt.device(0)`
    npurt_stream     a new `npurt.Stream` on that device, synchronized after the test
    npurt_faults     `npurt.faults`, cleared after the test (inject faults from the test body)

Markers:
    @pytest.mark.npurt_launch_blocking   run the test with NPURT_LAUNCH_BLOCKING=1 on a fresh
                                         runtime (every task runs at its call, so an error
                                         points at the call that caused it)
    @pytest.mark.npurt_allow_leaks       exempt a test from --npurt-leaks
    @pytest.mark.npurt_no_sanitize       exempt a test (one that seeds bugs on purpose) from
                                         --npurt-sanitize
    @pytest.mark.npurt_faults(spec, seed=None)
                                         run the test body with the faults of `spec` armed (the
                                         NPURT_FAULTS language); they are cleared after it
    @pytest.mark.npurt_schedules(n, first=1)
                                         run the test n times, under the controlled schedules of
                                         seeds first..first+n-1 (items test[schedule7], ...); a
                                         failing one replays with NPURT_SCHEDULE=random:7

Options:
    --npurt-leaks    fail a test that leaves device memory allocated: anything it allocated
                     and did not free (after its fixtures ended and a garbage collection), or
                     that a reset_device / finalize during it released as leaked. The report
                     names the line that made each allocation.
    --npurt-sanitize [--npurt-sanitize-tools race,mem,...]
                     run every test (its fixtures' setup and teardown included) under npurt's
                     sanitizer: a test whose code produced a report fails with the report as
                     its message (reports from a fixture's teardown make the teardown an error).

Each option can be set in the ini file instead (`npurt_leaks = true`, `npurt_sanitize = true`,
`npurt_sanitize_tools = "race,mem"` under [tool.pytest.ini_options]); the command line wins.
The report header names npurt's version and the simulated SoC and device count.
"""
from __future__ import annotations

import os

import pytest

_SESSION = "_npurt_sanitizer"
_LEAKS = "_npurt_leak_tracker"
_BLOCKING = "_npurt_launch_blocking_env"


def pytest_addoption(parser) -> None:
    group = parser.getgroup("npurt")
    group.addoption("--npurt-leaks", action="store_true", default=None,
                    help="fail tests that leave npurt device memory allocated (ini: npurt_leaks = true)")
    group.addoption("--npurt-sanitize", action="store_true", default=None,
                    help="run each test under npurt's sanitizer; fail tests whose code produced a report "
                         "(ini: npurt_sanitize = true)")
    group.addoption("--npurt-sanitize-tools", default=None, metavar="LIST",
                    help="sanitizer tools for --npurt-sanitize: race,mem,init,leak,sync (default all; "
                         "ini: npurt_sanitize_tools)")
    parser.addini("npurt_leaks", type="bool", default=False, help="as --npurt-leaks")
    parser.addini("npurt_sanitize", type="bool", default=False, help="as --npurt-sanitize")
    parser.addini("npurt_sanitize_tools", default="all", help="as --npurt-sanitize-tools")


def setting(config, name: str):
    """An option of the plugin: the command line's if given, else the ini file's
    ([tool.pytest.ini_options] in pyproject.toml, pytest.ini, ...)."""
    value = config.getoption(name, None)
    return config.getini(name) if value is None else value


def pytest_report_header(config) -> str:
    """One line at the top of the run: npurt's version and the simulated machine."""
    import npurt
    try:
        settings = npurt.runtime.Settings.from_env()
        machine = f"simulated {settings.spec().name}, {len(settings.visible_devices)} device(s)"
    except npurt.NpuError as exc:
        machine = f"bad setting: {exc.message}"
    return f"npurt {npurt.__version__}: {machine}"


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "npurt_launch_blocking: run the test with NPURT_LAUNCH_BLOCKING=1 "
                                       "on a fresh npurt runtime")
    config.addinivalue_line("markers", "npurt_allow_leaks: do not check this test with --npurt-leaks")
    config.addinivalue_line("markers", "npurt_no_sanitize: do not run this test under --npurt-sanitize")
    config.addinivalue_line("markers", "npurt_faults(spec, seed=None): run the test body with these npurt faults "
                                       "armed (NPURT_FAULTS language)")
    config.addinivalue_line("markers", "npurt_schedules(n, first=1): run the test under n controlled npurt "
                                       "schedules (seeds first..first+n-1)")
    if setting(config, "npurt_sanitize"):
        from npurt.tools.sanitizer.core import _parse_tools
        try:
            _parse_tools(setting(config, "npurt_sanitize_tools"))
        except ValueError as exc:
            raise pytest.UsageError(f"--npurt-sanitize-tools: {exc}") from None


# ---------------------------------------------------------------- fixtures
def _finalize() -> None:
    import gc
    import warnings

    from npurt.runtime import RUNTIME
    if RUNTIME.initialized:
        # arrays the test can no longer reach but a reference cycle still holds (a frame kept by
        # `pytest.raises(...) as e`) are freed now, not released as leaked by the finalize
        gc.collect()
        RUNTIME.finalized = False          # a test starts as a new process would: finalize is allowed
        with warnings.catch_warnings():   # what earlier code leaked is not this test's business
            warnings.simplefilter("ignore")
            RUNTIME.finalize(timeout_s=5.0)
    RUNTIME.finalized = False


@pytest.fixture
def npurt_runtime():
    """A fresh npurt runtime: finalized before the test (so environment variables set by the
    test, e.g. with monkeypatch, apply at its first use) and after it. Yields `npurt`."""
    import npurt
    _finalize()
    yield npurt
    _finalize()


@pytest.fixture
def npurt_device(npurt_runtime):
    """Device 0, current in the test's thread, on a fresh runtime. Yields `npurt.device(0)`."""
    npurt_runtime.set_device(0)
    return npurt_runtime.device(0)


@pytest.fixture
def npurt_stream(npurt_device):
    """A new npurt.Stream on device 0; synchronized after the test (a failure it reported
    fails the test's teardown)."""
    import npurt
    s = npurt.Stream(npurt_device)
    yield s
    s.synchronize()


@pytest.fixture
def npurt_faults():
    """`npurt.faults` for the test body to inject faults with; cleared after the test."""
    import npurt
    yield npurt.faults
    npurt.faults.clear()


def pytest_generate_tests(metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("npurt_schedules")
    if marker is None:
        return
    n = marker.args[0] if marker.args else marker.kwargs.get("n", 1)
    first = marker.kwargs.get("first", marker.args[1] if len(marker.args) > 1 else 1)
    if not isinstance(n, int) or n < 1 or not isinstance(first, int):
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: npurt_schedules(n, first=1) needs integers, n >= 1")
    metafunc.fixturenames.insert(0, "npurt_schedule_seed")
    metafunc.parametrize("npurt_schedule_seed", range(first, first + n), indirect=True,
                         ids=[f"schedule{seed}" for seed in range(first, first + n)])


@pytest.fixture
def npurt_schedule_seed(request):
    """The seed of this run of an npurt_schedules test; the device runs under its schedule."""
    import npurt
    seed = request.param
    npurt.faults.schedule(seed)
    try:
        yield seed
    finally:
        npurt.faults.unschedule()


# ---------------------------------------------------------------- per-test set-up and checks
def _sanitized(item) -> bool:
    return bool(setting(item.config, "npurt_sanitize")) and item.get_closest_marker("npurt_no_sanitize") is None


def _new_reports(item) -> str:
    san, seen = getattr(item, _SESSION)
    fresh = san.reports[seen:]
    setattr(item, _SESSION, (san, len(san.reports)))
    return "\n".join(r.text() for r in fresh)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    if item.get_closest_marker("npurt_launch_blocking") is not None:
        import os
        setattr(item, _BLOCKING, os.environ.get("NPURT_LAUNCH_BLOCKING"))
        os.environ["NPURT_LAUNCH_BLOCKING"] = "1"
        _finalize()
    if setting(item.config, "npurt_leaks") and item.get_closest_marker("npurt_allow_leaks") is None:
        tracker = _LeakTracker()
        tracker.start()
        setattr(item, _LEAKS, tracker)
    if _sanitized(item):
        from npurt.tools.sanitizer import Sanitizer
        san = Sanitizer(setting(item.config, "npurt_sanitize_tools"), echo=False).enable()
        setattr(item, _SESSION, (san, 0))
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    marker = item.get_closest_marker("npurt_faults")
    if marker is not None:
        import npurt
        spec = marker.args[0] if marker.args else marker.kwargs.get("spec", "")
        try:
            npurt.faults.inject(spec, marker.kwargs.get("seed"))
        except ValueError as exc:
            pytest.fail(f"npurt_faults: {exc}", pytrace=False)
        try:
            result = yield
        finally:
            npurt.faults.clear()
    else:
        result = yield
    if hasattr(item, _SESSION):
        text = _new_reports(item)
        if text:
            pytest.fail(f"npurt sanitizer reports:\n{text}", pytrace=False)
    return result


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item, nextitem):
    problems = []
    try:
        result = yield
    finally:
        session = getattr(item, _SESSION, None)
        if session is not None:
            session[0].disable()  # the end-of-session checks (leaks made by the test)
            text = _new_reports(item)
            delattr(item, _SESSION)
            if text:
                problems.append(f"npurt sanitizer reports (teardown and end of test):\n{text}")
        tracker = getattr(item, _LEAKS, None)
        if tracker is not None:
            delattr(item, _LEAKS)
            problems.append(tracker.stop())
        if hasattr(item, _BLOCKING):
            _restore_launch_blocking(getattr(item, _BLOCKING))
            delattr(item, _BLOCKING)
    problems = [p for p in problems if p]
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
    return result


def _restore_launch_blocking(before: str | None) -> None:
    import os
    if before is None:
        os.environ.pop("NPURT_LAUNCH_BLOCKING", None)
    else:
        os.environ["NPURT_LAUNCH_BLOCKING"] = before
    _finalize()


# ---------------------------------------------------------------- leak tracking
class _LeakTracker:
    """Device allocations made while a test runs, with the line that made each one."""

    def __init__(self) -> None:
        self.live: dict = {}        # (device id, addr) -> (size, where)
        self.released: list = []    # (device id, addr, size, where, reason) freed by a reset/finalize

    def start(self) -> None:
        from npurt.runtime import HOOKS
        self._observer = self.observe   # one bound method: HOOKS.remove compares by identity
        HOOKS.add(self._observer)

    def observe(self, name: str, **f) -> None:
        if name == "mem_alloc" and f["device"] is not None:
            self.live[(f["device"].id, f["addr"])] = (f["size"], _user_line())
        elif name == "mem_free" and f["device"] is not None:
            self.live.pop((f["device"].id, f["addr"]), None)
        elif name == "device_release":
            dev = f["device"].id
            for key in [k for k in self.live if k[0] == dev]:
                size, where = self.live.pop(key)
                self.released.append((dev, key[1], size, where, f["reason"]))

    def stop(self) -> str:
        import gc

        from npurt.runtime import HOOKS
        gc.collect()                 # arrays the test dropped are freed now (stream-ordered)
        HOOKS.remove(self._observer)
        rows = [(d, a, s, w, "still allocated after the test") for (d, a), (s, w) in self.live.items()]
        rows += [(d, a, s, w, f"released as leaked by {why}") for d, a, s, w, why in self.released]
        if not rows:
            return ""
        lines = [f"npurt: the test leaked {len(rows)} device allocation(s), {sum(r[2] for r in rows)} bytes:"]
        lines += [f"  device {d} 0x{a:x} ({s} B) allocated at {w}: {why}" for d, a, s, w, why in rows[:20]]
        if len(rows) > 20:
            lines.append(f"  ... and {len(rows) - 20} more")
        return "\n".join(lines)


def _user_line() -> str:
    """file:line of the first frame outside npurt (the user's call that allocated)."""
    import sys

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # npurt's own files
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith((package, "<npurt")):
        frame = frame.f_back
    return "?" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"
