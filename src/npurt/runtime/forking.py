"""What a child of os.fork() gets: a fresh, uninitialized runtime.

A forked child has one thread (the one that forked): the parent's device workers, watchdog
and core-pool threads do not exist in it, and a lock one of them held at the fork stays held
forever. Using the parent's runtime there would hang. So, in the child (`os.register_at_fork`):

* every lock and condition at module level in npurt (the runtime's, and those of its clients:
  the graph engine, collectives, tools) is reinitialized, as CPython does for its own;
* the runtime forgets the parent's devices, contexts, streams, events and memory: the
  parent's objects are marked destroyed and its handles are stale, so using them is a clear
  error (ACL_ERROR_RT_INVALID_HANDLE, or not initialized) that names the fork and the
  'spawn' start method, never a hang;
* the runtime is uninitialized: `acl.init()` starts a new one with devices of its own
  (simulated devices are memory of the process: the child's are not the parent's), and the
  Pythonic API initializes on first use, as in a new process.

multiprocessing's 'spawn' (and 'forkserver') start methods give workers a new interpreter,
which needs none of this.
"""
from __future__ import annotations

import os
import sys
import threading

from . import errors

_SYNC_TYPES = (type(threading.Lock()), type(threading.RLock()), threading.Condition, threading.Event,
               threading.Semaphore)


def reinit_module_locks() -> None:
    """Reinitialize every module-level lock of npurt's modules (held or not)."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "npurt" or name.startswith("npurt.")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, _SYNC_TYPES):
                value._at_fork_reinit()


def _after_fork_in_child() -> None:
    from .runtime import RUNTIME
    parent = os.getppid()
    reinit_module_locks()
    errors.FORKED_FROM = parent
    RUNTIME.reset_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
