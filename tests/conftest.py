"""Shared fixtures: a fresh runtime per test, so every test starts from a known state."""
from __future__ import annotations

import importlib.util
import os
import signal
import sys

import pytest

# processes of one device namespace share the simulated devices: this pytest process (an
# xdist worker too) and the programs its tests start get a namespace of their own, so test
# runs never see each other's devices (tests/isolation.py gives each fresh interpreter its own)
os.environ["NPURT_DEVICE_NAMESPACE"] = f"pytest-{os.getpid()}"

# the Ctrl-C tests (runtime/test_interrupts.py, ge/test_model_execution_stops.py, the
# reliability suite's interrupt scenarios) need SIGINT to reach Python as KeyboardInterrupt. A
# shell without job control starts a background command (`.ci/run &`) with SIGINT ignored, a
# child inherits that, and then neither the signal nor _thread.interrupt_main does anything:
# the tests would report swallowed interrupts and hang. Give SIGINT back its default here, as
# an interactive terminal has it; the programs the tests start inherit the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from npurt import runtime as _rt  # noqa: E402
from npurt.runtime.runtime import RUNTIME

# tests/torch needs PyTorch (an optional extra). Without it, `import torch` would find that
# very directory as a namespace package (tests/ is on sys.path), so leave it out instead,
# and make `import torch` in the other tests (importorskip, the bench) the ImportError it is.
_torch = importlib.util.find_spec("torch")
collect_ignore = [] if _torch is not None and _torch.origin is not None else ["torch"]
if _torch is not None and _torch.origin is None:
    sys.modules["torch"] = None

from isolation import IsolatedCases, run_isolated  # noqa: E402,F401 - (tests import them from isolation)

SCALE = float(os.environ.get("NPURT_TEST_SCALE", "1"))


def _finalize_quietly() -> None:
    """Tear the runtime down and forget acl.finalize's "finalized" mark: a new process state."""
    if RUNTIME.initialized:
        RUNTIME.finalized = False
        RUNTIME.finalize(timeout_s=5.0)
    RUNTIME.finalized = False


@pytest.fixture
def fresh_runtime(monkeypatch):
    """An uninitialized runtime; env settings may be changed with monkeypatch before init."""
    _finalize_quietly()
    yield _rt
    _finalize_quietly()


@pytest.fixture
def rt(fresh_runtime):
    """The runtime API, initialized, with device 0 set on the calling thread."""
    fresh_runtime.init()
    fresh_runtime.set_device(0)
    return fresh_runtime


@pytest.fixture
def scale() -> float:
    """Multiplier for sizes of slow tests (env NPURT_TEST_SCALE, default 1)."""
    return SCALE


@pytest.fixture
def isolated():
    """run_isolated as a fixture: isolated(code, timeout=60) -> (returncode, output)."""
    return run_isolated
