"""Progress of long work, drawn only on a terminal.

    with progress("converting net.onnx", total=3) as p:
        parse(); p.advance(description="converting")
        convert(); p.advance(description="writing net.om")
        write(); p.advance()

One helper for every long operation npurt runs (`npurt atc`, loading a model, `npurt plot`,
the bench's stages, the demo): a bar with the elapsed time on stderr, drawn with rich
(`pip install rich`) or, without it, as one plain line rewritten in place. Nothing is drawn
when stderr is not a terminal (pipes, CI logs, tests), so output that is read by programs never
holds control characters, nor for work that ends within `delay` seconds. This module imports
nothing of npurt: every layer may use it.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time



def _rich():
    """rich.progress, imported when something is first drawn (None without rich: the plain line)."""
    try:
        import rich.progress
    except ImportError:
        return None
    return rich.progress


def on_terminal() -> bool:
    """True when stderr is a terminal a person reads."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):     # replaced or closed stderr
        return False


class Progress:
    """One running piece of work: `advance()` a step, `update()` the description."""

    def __init__(self, description: str, total: float | None, draw: bool, delay: float):
        self.description, self.total, self.completed = description, total, 0.0
        self._draw, self._delay, self._start = draw, delay, time.monotonic()
        self._bar = self._task = None
        self._lock = threading.Lock()

    def advance(self, steps: float = 1, description: str | None = None) -> None:
        with self._lock:
            self.completed += steps
            if description is not None:
                self.description = description
            self._show()

    def update(self, description: str | None = None, completed: float | None = None) -> None:
        with self._lock:
            if description is not None:
                self.description = description
            if completed is not None:
                self.completed = completed
            self._show()

    @property
    def drawn(self) -> bool:
        """Whether anything was drawn (only on a terminal, for work longer than the delay)."""
        return self._bar is not None

    def _show(self) -> None:
        if not self._draw or time.monotonic() - self._start < self._delay:
            return
        rich = _rich() if self._bar is None else None
        if self._bar is True or (self._bar is None and rich is None):
            done = f" {self.completed:g}/{self.total:g}" if self.total else ""
            sys.stderr.write(f"\r  {self.description}{done} ({time.monotonic() - self._start:.0f} s)\x1b[K")
            sys.stderr.flush()
            self._bar = True
            return
        if self._bar is None:
            self._bar = rich.Progress(rich.TextColumn("  {task.description}"), rich.BarColumn(),
                                      rich.MofNCompleteColumn() if self.total else rich.TextColumn(""),
                                      rich.TimeElapsedColumn(), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.description, total=self.total)
        self._bar.update(self._task, description=self.description, completed=self.completed)

    def close(self) -> None:
        with self._lock:
            if self._bar is True:
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()
            elif self._bar is not None:
                self._bar.stop()


@contextlib.contextmanager
def progress(description: str, total: float | None = None, delay: float = 0.5):
    """A Progress for the work in the block; drawn on a terminal only, and only once the work
    has taken `delay` seconds; erased when the block ends."""
    p = Progress(description, total, on_terminal(), delay)
    timer = None
    if p._draw:        # a step longer than the delay is shown while it runs, not after it
        timer = threading.Timer(delay, p.update)
        timer.daemon = True
        timer.start()
    try:
        yield p
    finally:
        if timer is not None:
            timer.cancel()
        p.close()
