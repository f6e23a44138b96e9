"""Shared fixtures: a fresh runtime per test, so every test starts from a known state."""
from __future__ import annotations

import os

import pytest

from npurt import runtime as _rt
from npurt.runtime.runtime import RUNTIME

SCALE = float(os.environ.get("NPURT_TEST_SCALE", "1"))


def _finalize_quietly() -> None:
    if RUNTIME.initialized:
        RUNTIME.finalize(timeout_s=5.0)


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
