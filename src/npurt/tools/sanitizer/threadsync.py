"""Happens-before through Python's own thread synchronization.

A program often tells one thread that device work finished through plain Python: a done
callback sets a `threading.Event` the main thread waits on, a worker thread is joined, a
result travels through a `queue.Queue`. The runtime sees none of it, so while a sanitizer
is on these are wrapped (as ThreadSanitizer wraps pthreads): starting a thread passes the
parent's clock to the child; `join`, `Event.wait`, `Condition.wait` and `Queue.get` pass
the clock of whoever finished, set, notified or put. Calls from npurt's own code are left
alone. Locks (`threading.Lock`) are C objects and are not followed: hand device results
between threads through one of the above.
"""
from __future__ import annotations

import queue
import sys
import threading

from .clocks import join as _join
from .frames import _is_internal

_ATTR = "_npurt_sanitizer_vc"
_active: list = []   # the enabled sanitizers
_saved: list = []    # (class, name, original) while installed


def _user_call() -> bool:
    return not _is_internal(sys._getframe(2).f_code)


def _publish(obj) -> None:
    """`obj` carries the calling thread's clock from now on (per sanitizer)."""
    vcs = dict(getattr(obj, _ATTR, None) or {})
    for san in list(_active):
        with san.lock:
            vc = san.host().snapshot()
            old = vcs.get(id(san))
            vcs[id(san)] = vc if old is None else _join(old, vc)
    setattr(obj, _ATTR, vcs)


def _learn(obj) -> None:
    vcs = getattr(obj, _ATTR, None)
    if not vcs:
        return
    for san in list(_active):
        vc = vcs.get(id(san))
        if vc is not None:
            with san.lock:
                san.host().learn(vc)
                san.published()


def inherit(san, host) -> None:
    """A new thread starts knowing what its parent knew when it called start()."""
    vc = (getattr(threading.current_thread(), _ATTR, None) or {}).get(id(san))
    if vc is not None:
        host.learn(vc)


def _start(orig):
    def start(self, *a, **k):
        if _user_call():
            _publish(self)
        return orig(self, *a, **k)
    return start


def _joined(orig):
    def join(self, *a, **k):
        out = orig(self, *a, **k)
        if not self.is_alive() and _user_call():
            for san in list(_active):
                with san.lock:
                    child = san.hosts.get(self.ident)
                    if child is not None:
                        san.host().learn(child.vc)
                        san.published()
        return out
    return join


def _setter(orig):
    def wrapped(self, *a, **k):
        if _user_call():
            _publish(self)
        return orig(self, *a, **k)
    return wrapped


def _waiter(orig):
    def wrapped(self, *a, **k):
        out = orig(self, *a, **k)
        if out is not False and _user_call():
            _learn(self)
        return out
    return wrapped


_PATCHES = [(threading.Thread, "start", _start), (threading.Thread, "join", _joined),
            (threading.Event, "set", _setter), (threading.Event, "wait", _waiter),
            (threading.Condition, "notify", _setter), (threading.Condition, "notify_all", _setter),
            (threading.Condition, "wait", _waiter), (queue.Queue, "put", _setter), (queue.Queue, "get", _waiter)]


def install(san) -> None:
    _active.append(san)
    if not _saved:
        for cls, name, make in _PATCHES:
            orig = cls.__dict__[name]
            _saved.append((cls, name, orig))
            setattr(cls, name, make(orig))


def uninstall(san) -> None:
    if san in _active:
        _active.remove(san)
    if not _active:
        for cls, name, orig in reversed(_saved):
            setattr(cls, name, orig)
        _saved.clear()
