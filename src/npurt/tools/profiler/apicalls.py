"""Host API call spans: the front ends' public functions, wrapped only while a profile runs.

`install(sink)` replaces each public function the front ends offer in the runtime's
`API_SURFACES` (the pyACL facade: `acl`, `acl.rt`, `acl.util` and its other groups except
`acl.prof`; the Pythonic API: `npurt.*`, `npurt.ops.*`, the methods and operators of Stream,
Event and DeviceArray) with a wrapper that appends (thread, level, name, t0, t1) to `sink`; `uninstall()` puts the
originals back. With no profile running nothing is wrapped, so the API costs nothing extra.

Only the outermost call on a thread is recorded (DeviceArray.__matmul__ calling
npurt.ops.matmul is one call: the one the application made). Code that bound a function
to a name of its own before the profile started (`from acl.rt import malloc`) calls the
original and is not seen.
"""
from __future__ import annotations

import threading
import types
from time import perf_counter_ns

from ...runtime import API_SURFACES, is_fast_entry

_ident = threading.get_ident
# operators of the Pythonic classes that do device work or move data
_OPERATORS = {"__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__", "__iadd__", "__isub__", "__imul__",
              "__itruediv__", "__getitem__", "__setitem__", "__array__", "__await__"}


class _Depth(threading.local):
    depth = 0


_tls = _Depth()
_installed: list = []   # (owner, attribute, original)
_listening: list = []   # the API_SURFACES listener of the running install


def _wrap(fn, level: str, name: str, sink: list, threads: dict, limit: int, dropped: dict):
    def call(*args, **kwargs):
        tls = _tls
        if tls.depth:
            return fn(*args, **kwargs)
        tls.depth = 1
        t0 = perf_counter_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            t1 = perf_counter_ns()
            tls.depth = 0
            tid = _ident()
            if tid not in threads:
                threads[tid] = threading.current_thread().name
            if len(sink) < limit:
                sink.append((tid, level, name, t0, t1))
            else:
                dropped["calls"] += 1

    call.__wrapped__ = fn
    call.__name__, call.__qualname__, call.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return call


def _targets_of(entry) -> list:
    """(owner, attribute, level, shown name) of what one offered namespace or class holds."""
    level, owner, prefix = entry
    out = []
    is_class = isinstance(owner, type)
    for attr, obj in list(vars(owner).items()):
        function = isinstance(obj, types.FunctionType) or is_fast_entry(obj)  # (acl.rt.malloc: a C entry)
        if function and (not attr.startswith("_") or (is_class and attr in _OPERATORS)):
            out.append((owner, attr, level, f"{prefix}.{attr}"))
    return out


def _targets():
    """(owner, attribute, level, shown name) of everything the faces offered (API_SURFACES)."""
    return [t for entry in list(API_SURFACES.entries) for t in _targets_of(entry)]


def install(sink: list, threads: dict, limit: int = 1 << 62, dropped: dict | None = None) -> None:
    """Wrap every target so that calls append to `sink` (and name their thread in `threads`),
    at most `limit` of them (the others are counted in dropped["calls"])."""
    dropped = {"calls": 0} if dropped is None else dropped
    if _installed or _listening:
        raise RuntimeError("API call spans are already being recorded")

    def wrap_all(targets) -> None:
        for owner, attr, level, name in targets:
            original = getattr(owner, attr)
            _installed.append((owner, attr, original))
            setattr(owner, attr, _wrap(original, level, name, sink, threads, limit, dropped))

    wrap_all(_targets())

    def offered(entry) -> None:  # a face imported while the profile runs
        wrap_all(_targets_of(entry))

    _listening.append(offered)
    API_SURFACES.listen(offered)


def uninstall() -> None:
    while _listening:
        API_SURFACES.unlisten(_listening.pop())
    while _installed:
        owner, attr, original = _installed.pop()
        setattr(owner, attr, original)
