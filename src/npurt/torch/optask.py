"""OpTask: an aten op (or a piece of one) queued on a stream, and the current-stream rule.

`launch` queues `fn(*args, **kwargs)` on the current stream of npu:`index` and records the
stream's use of the blocks it touches (npurt's stream-ordered free); when the task runs,
every ref among its arguments becomes a host view (refs.py). `run_sync` does the same and
waits for the result (ops whose result is not a tensor, or whose shape depends on the data).

The current stream of a device, in a thread: the thread's current stream there, else (in
autograd's engine threads) the stream backward was called on, else the device's default
stream.
"""
from __future__ import annotations

import threading

import torch

from .. import streams as _streams
from ..runtime import Task, current_stream_on
from ..runtime import constants as C
from .refs import info_of, read_view, span, write_view


class OpTask(Task):
    """An aten op (or a piece of one) queued on a stream: `fn(*args, **kwargs)` with every ref
    replaced by its host view. `reads` and `writes` are the refs it reads and writes (an
    in-place argument is in both)."""

    __slots__ = ("fn", "args", "kwargs", "name", "reads", "writes", "post", "cheap")
    kind = "kernel"
    batchable = True   # run() reads host views only: a graph replay may batch it
    error_code = C.ACL_ERROR_RT_AICORE_EXCEPTION

    def __init__(self, fn, args, kwargs, name, reads, writes, post=None):
        self.fn, self.args, self.kwargs, self.name = fn, args, kwargs, name
        self.reads, self.writes, self.post = reads, writes, post
        self.cheap = False  # the fast kernel sets it for a small op (runtime inline execution)

    def run(self) -> None:
        if _function_mode():  # run in the user's thread (its synchronize) inside a mode of theirs
            with _NoTorchFunction():  # which sees none of the task's own torch calls
                return self._run()
        self._run()

    def _run(self) -> None:
        writes = self.writes
        args = [_host(a, writes) for a in self.args]
        kwargs = {k: _host(v, writes) for k, v in self.kwargs.items()} if self.kwargs else {}
        result = self.fn(*args, **kwargs)
        if self.post is not None:
            self.post(result)

    def accesses(self) -> tuple:
        """(device address, bytes, mode) of every range the op touches, mode "r", "w" or "rw"
        (an in-place argument): the runtime's task protocol that tools such as the sanitizer read."""
        reads, writes = self.reads, self.writes
        out = [(*span(r), "rw" if _is_in(r, writes) else "r") for r in reads]
        out += [(*span(r), "w") for r in writes if not _is_in(r, reads)]
        return tuple(out)

    def describe(self) -> str:
        return f"kernel {self.name}"

    def details(self) -> dict:
        """For tools (the profiler): the aten op's name and the bytes it reads and writes."""
        acc = self.accesses()
        return {"name": self.name, "bytes": sum(n for _, n, _ in acc),
                "bytes_written": sum(n for _, n, m in acc if "w" in m)}


class OutOpTask(OpTask):
    """The fast kernels' task: an op with one out tensor (`writes[0]`), every argument a ref it
    only reads; `fn` is the plan's `run_one_out`. The same task for tools (reads, writes,
    accesses), with the host views made straight from the refs."""

    __slots__ = ()

    def _run(self) -> None:
        out = self.writes[0]
        args = self.args
        if len(args) == 2:  # (a binary op's: no comprehension's frame)
            views = [read_view(args[0]), read_view(args[1])]
        else:
            views = [read_view(a) for a in args]
        self.fn(views, write_view(out), out[1], out[2])


_function_mode = torch._C._is_torch_function_mode_enabled
_NoTorchFunction = torch._C.DisableTorchFunction


def _host(a, writes):
    t = type(a)
    if t is tuple:
        return write_view(a) if _is_in(a, writes) else read_view(a)
    if t is list:
        return [(write_view(x) if _is_in(x, writes) else read_view(x)) if type(x) is tuple else x for x in a]
    return a


def _is_in(r, refs) -> bool:
    for x in refs:  # identity, not ==: equal tuples may be distinct tensors' refs
        if x is r:
            return True
    return False


def current_stream(index: int):
    """The runtime stream ops on npu:`index` go to in this thread (the rule in the docstring)."""
    s = current_stream_on(index)
    if s is not None:
        return s
    if BACKWARD_STREAMS:
        override = BACKWARD_STREAMS.get(index)
        # only autograd's engine threads (made by C++: threading sees them as dummies)
        if override is not None and not override.destroyed and isinstance(threading.current_thread(), _Dummy):
            return override
    ctx = info_of(index).device.default_context
    if ctx is not None and ctx.alive:
        return ctx.default_stream
    return _streams.default_runtime_stream(index)


_Dummy = threading._DummyThread
BACKWARD_STREAMS: dict = {}   # device index -> runtime stream, while a backward pass runs


def launch(index: int, fn, args, kwargs, name: str, reads: list, writes: list, blocks: list,
           post=None) -> int:
    """Queue fn(*args, **kwargs) on npu:`index`'s current stream; record the use of `blocks`."""
    stream = current_stream(index)
    # holders=: the uses are recorded with the task (a graph capture keeps them for its replays)
    return stream.enqueue(OpTask(fn, args, kwargs, name, reads, writes, post), holders=blocks)


def run_sync(index: int, fn, args, kwargs, name: str, reads, writes, blocks):
    """Run fn on host views as a task of the current stream and wait for it; its result."""
    box = []
    stream = current_stream(index)
    seq = launch(index, fn, args, kwargs, name, reads, writes, blocks, post=box.append)
    stream.synchronize(until=seq)
    if not box:  # dropped (an abort or an earlier stop-on-failure): nothing was computed
        stream.raise_error()
        raise RuntimeError(f"npu op {name} did not run: its stream {stream.stream_id} dropped it")
    return box[0]
