"""Warnings npurt gives the user: leaked device memory and host waits that look hung.

Both are shown by default (a plain ResourceWarning is not) and point at the user's line: the
first frame outside the npurt package, e.g. the `reset_device` that released leaked
allocations or the `synchronize` that is stuck. `-W` options and `warnings` filters still
decide what is shown.
"""
from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class LeakWarning(ResourceWarning):
    """Device memory still allocated when its device was reset or the runtime finalized."""


class HangWarning(RuntimeWarning):
    """A host wait has lasted NPURT_HANG_WARNING_S seconds; says what it is stuck behind."""


if not sys.warnoptions:  # as Python's own defaults: only when the user chose nothing with -W
    warnings.filterwarnings("default", category=LeakWarning)


def user_stacklevel() -> int:
    """The stacklevel, for a warnings.warn called by our caller, of the first frame outside npurt."""
    frame, level = sys._getframe(2), 1
    while frame is not None and frame.f_code.co_filename.startswith((_PACKAGE, "<npurt")):  # generated wrappers too
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 1


def warn_user(message: str, category: type[Warning]) -> None:
    """warnings.warn(message, category) attributed to the user's line."""
    warnings.warn(message, category, stacklevel=user_stacklevel() + 1)
