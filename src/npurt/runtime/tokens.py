"""Owner tokens: how a thread says "I own this stream" (scheduler.py's ownership rules).

A RUNNING stream's `runner` is its owner's token: a scheduler `Worker` for a worker thread, or
the `HostToken` a host thread makes on first use, when it runs a stream's work itself (a
synchronize that runs READY work, an inline run, see inline.py). `TLS.token` is the calling
thread's token; only the thread whose token is `runner` may run and retire the stream's tasks.
"""
from __future__ import annotations

import threading


class _ThreadToken(threading.local):
    token = None      # this thread's owner token: its Worker, or a HostToken made on first use
    reporting = False  # inside process_report (runs launch_callback functions)


TLS = _ThreadToken()


class HostToken:
    """The owner token of a thread that is not a worker (it runs streams inline)."""

    __slots__ = ("ident",)
    worker = False
    owed = None  # a host thread defers no wake-ups (see Worker.owed)

    def __init__(self) -> None:
        self.ident = threading.get_ident()


def thread_token():
    """The calling thread's owner token."""
    token = TLS.token
    if token is None:
        token = TLS.token = HostToken()
    return token


def on_worker() -> bool:
    token = TLS.token
    return token is not None and token.worker
