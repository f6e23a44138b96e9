"""Locking that a Ctrl-C cannot wedge.

`with cond:` on a threading.Condition runs Condition.__enter__, which is Python: a
KeyboardInterrupt can be raised in it right after the lock was acquired and before the `with`
block is set up, and the lock then stays held forever (every other thread that takes it hangs).
A lock object's own __enter__ is C, and the `with` statement raises nothing between it and
the block. So conditions that host threads (which get Ctrl-C) enter are entered through their
lock: `with held(cond):`; `cond.wait()` / `notify()` inside work as usual.
"""
from __future__ import annotations

import threading


def held(cond: threading.Condition):
    """The lock of `cond`, to enter it as `with held(cond):` (see the module docstring)."""
    return cond._lock
