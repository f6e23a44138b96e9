"""Ctrl-C during a synchronous model execution in the main thread.

Python handles a signal between bytecodes only, so a KeyboardInterrupt can never reach a
main thread that runs a model inside ONNX Runtime's one long call. While such a call runs,
`stopping_on_ctrl_c(stop)` points the interpreter's signal wakeup fd (the byte CPython's C
handler writes the moment a signal arrives, whatever the thread is doing) at a pipe that a
daemon thread reads; on SIGINT it calls `stop()`, which terminates the run. The run then
fails and the main thread, back in Python, raises the KeyboardInterrupt as usual.

It stays out of the way of a program that uses the wakeup fd itself (asyncio does): if one
is set, nothing is changed and Ctrl-C reaches the run only when it ends, as before. A
SIGINT handler set to SIG_IGN / SIG_DFL is respected (nothing is stopped).
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading

log = logging.getLogger("npurt.ge")


class _Watcher:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pipe: tuple[int, int] | None = None
        self.stop = None  # what to call on SIGINT (the run in progress), or None

    def fd(self) -> int:
        with self.lock:
            if self.pipe is None:
                r, w = os.pipe()
                os.set_blocking(w, False)
                self.pipe = (r, w)
                threading.Thread(target=self._loop, args=(r,), daemon=True, name="npurt-ctrl-c").start()
            return self.pipe[1]

    def _loop(self, r: int) -> None:
        while True:
            try:
                data = os.read(r, 64)
            except OSError:
                return
            stop = self.stop
            if stop is not None and signal.SIGINT in data:
                try:
                    stop()
                except Exception:  # noqa: BLE001 - the thread never dies
                    log.exception("npurt: stopping a model run on Ctrl-C failed")

    def after_fork(self) -> None:
        self.__init__()  # the thread is gone in the child; it makes its own pipe


WATCHER = _Watcher()
os.register_at_fork(after_in_child=WATCHER.after_fork)


@contextlib.contextmanager
def stopping_on_ctrl_c(stop):
    """Call stop() if SIGINT arrives while the block runs (main thread only; see above)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
        yield
        return
    fd = WATCHER.fd()
    old = signal.set_wakeup_fd(fd, warn_on_full_buffer=False)
    if old != -1 and old != fd:  # the program's own wakeup fd: leave it
        signal.set_wakeup_fd(old)
        yield
        return
    outer, WATCHER.stop = WATCHER.stop, stop  # a nested call (old == fd) restores the outer one
    try:
        yield
    finally:
        WATCHER.stop = outer
        signal.set_wakeup_fd(old if old == fd else -1)
