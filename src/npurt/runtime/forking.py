"""What a child of os.fork() gets: a fresh, uninitialized runtime.

A forked child has one thread (the one that forked): the parent's device workers, watchdog
and core-pool threads do not exist in it, and a lock one of them held at the fork stays held
forever. Using the parent's runtime there would hang. So, in the child (`os.register_at_fork`):

* every module-level lock of npurt (the runtime's, and those of its clients: the graph
  engine, collectives, tools, faces) is reinitialized, as CPython does for its own: each
  is made by `fork_safe_lock()`, which keeps a list of them (tests/runtime/test_fork.py holds every
  module of npurt to it);
* the runtime (which registered with `on_fork_child`) forgets the parent's devices, contexts, streams, events and memory: the
  parent's objects are marked destroyed and its handles are stale, so using them is a clear
  error (ACL_ERROR_RT_INVALID_HANDLE, or not initialized) that names the fork and the
  'spawn' start method, never a hang;
* the runtime is uninitialized: `acl.init()` starts a new one, which attaches to the devices
  of its device namespace like any new process (shared with the parent unless
  NPURT_SHARED_DEVICES=0: then the child's are its own, not the parent's), and the
  Pythonic API initializes on first use, as in a new process.

multiprocessing's 'spawn' (and 'forkserver') start methods give workers a new interpreter,
which needs none of this.
"""
from __future__ import annotations

import os
import threading
from typing import Callable

from . import errors

_LOCKS: list = []                  # every fork_safe_lock() made
_IN_CHILD: list[Callable[[], None]] = []   # on_fork_child handlers, in registration order


def fork_safe_lock(kind=threading.Lock):
    """A module-level lock (or RLock, Condition) that a forked child gets back unlocked."""
    lock = kind()
    _LOCKS.append(lock)
    return lock


def on_fork_child(fn: Callable[[], None]) -> None:
    """Run fn() in the child of every later os.fork(), after the locks are reinitialized."""
    _IN_CHILD.append(fn)


def reinit_module_locks() -> None:
    """Reinitialize every lock made by fork_safe_lock (held or not)."""
    for lock in _LOCKS:
        lock._at_fork_reinit()


def _after_fork_in_child() -> None:
    parent = os.getppid()
    reinit_module_locks()
    errors.FORKED_FROM = parent
    for fn in _IN_CHILD:
        fn()


os.register_at_fork(after_in_child=_after_fork_in_child)
