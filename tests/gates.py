"""Test helper: hold a stream's queued work until the test opens a gate.

A never-recorded ACL_EVENT_SYNC event is the runtime's hardware semaphore (event.cc: a wait
on it blocks until a record completes), so waiting on one holds a stream and recording it
anywhere opens the gate. Pythonic events cannot do this: like torch_npu's, a wait on one
that was never recorded adds nothing.
"""
from __future__ import annotations

import npurt
from npurt.runtime import api as rt
from npurt.runtime import constants as C


class Gate:
    """Holds `stream` (an npurt.Stream or a runtime stream) until record()."""

    def __init__(self, stream):
        runtime_stream = getattr(stream, "runtime_stream", stream)
        self.event = rt.create_event(C.ACL_EVENT_SYNC)
        rt.stream_wait_event(runtime_stream, self.event)

    def record(self, stream=None) -> None:
        """Open the gate (records on `stream`, default the current Pythonic stream)."""
        s = stream if stream is not None else npurt.current_stream()
        rt.record_event(self.event, getattr(s, "runtime_stream", s))
