"""The buggy programs `npurt demo` runs to show npurt's reports (its second part).

Each is a few lines a user could have written, with a bug that real NPUs punish with a crash,
corrupted numbers or a hang, or that works there by accident (a memcpy kind contradicting
its addresses is copied by address). npurt reports each one: an error code with a message, a
warning, a timeout that says what the wait is stuck behind, or (with the sanitizer) a race
report.
"""
from __future__ import annotations

import itertools
import textwrap
import warnings

from .. import acl
from ..runtime import HOOKS
from ..tools.sanitizer import Sanitizer

PRELUDE = "import numpy as np\nimport npurt\nimport npurt.acl as acl\nfrom npurt.acl import constants as C\n"

# (title, program, a word the report must contain[, cleanup run after the report, not shown])
BUGS = [
    ("the host dereferences a device pointer", """\
dev, ret = acl.rt.malloc(256, 0)
data = acl.util.ptr_to_bytes(dev, 256)           # device memory is not host memory
acl.rt.free(dev)
""", "device address"),
    ("a copy in the wrong direction", """\
dev, ret = acl.rt.malloc(256, 0)
host = np.ones(64, np.float32)
ret = acl.rt.memcpy(dev, 256, host.ctypes.data, 256, C.ACL_MEMCPY_DEVICE_TO_HOST)   # it is host to device
acl.rt.free(dev)
""", "contradicts the addresses"),
    ("a use after free", """\
dev, ret = acl.rt.malloc(256, 0)
ret = acl.rt.free(dev)
host = np.empty(64, np.float32)
ret = acl.rt.memcpy(host.ctypes.data, 256, dev, 256, C.ACL_MEMCPY_DEVICE_TO_HOST)
""", "freed"),
    ("a wait for an event nobody records", """\
stream, ret = acl.rt.create_stream()
event, ret = acl.rt.create_event_with_flag(C.ACL_EVENT_SYNC)
ret = acl.rt.stream_wait_event(stream, event)               # nobody ever records it
ret = acl.rt.synchronize_stream_with_timeout(stream, 200)   # an NPU hangs here
""", "never been recorded", "acl.rt.stream_abort(stream); acl.rt.destroy_stream(stream); acl.rt.destroy_event(event)"),
]

_RUNS = itertools.count(1)

RACE = ("two streams and no event between them", """\
a, b = npurt.Stream(), npurt.Stream()
with npurt.stream(a):
    x = npurt.ones(1 << 16)                      # written by a kernel on stream a
with npurt.stream(b):
    y = x * 2                                    # read on stream b: nothing orders it after the write
npurt.synchronize()
""", "race")


def _report(program: str, cleanup: str = "") -> str:
    """Run `program`; what npurt said about it (error, warning, last-error message)."""
    said = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        namespace: dict = {}
        try:
            exec(PRELUDE, namespace)  # noqa: S102 - our own snippets
            # a new name per run: npurt warns about a call site once, and each run is new code
            exec(compile(program, f"<demo bug {next(_RUNS)}>", "exec"), namespace)  # noqa: S102
        except Exception as exc:  # noqa: BLE001 - the report is the point
            said.append(f"{type(exc).__name__}: {exc}")
    said += [f"{w.category.__name__}: {w.message}" for w in caught]
    if namespace.get("ret"):
        said.append(f"ret = {namespace['ret']}; acl.get_recent_err_msg(): {acl.get_recent_err_msg()}")
    if cleanup:
        exec(cleanup, namespace)  # noqa: S102
    return "\n".join(said)


def _race_report(program: str) -> str:
    """The sanitizer's race report for `program`."""
    san = Sanitizer("race", echo=False).enable()
    try:
        _report(program)
    finally:
        san.disable()
    return "\n".join(r.text() for r in san.reports)


def _watched() -> bool:
    """True when a sanitizer already listens (`npurt run --sanitize`, `pytest --npurt-sanitize`)."""
    return any(isinstance(getattr(o, "__self__", None), Sanitizer) for o in HOOKS.observers)


def run_all(say) -> list[bool] | None:
    """Run every bug, print its program and npurt's report; True for each one reported.
    None when a sanitizer watches this run: the programs are wrong on purpose, so they are
    not run under it."""
    if _watched():
        say("  (not run: a sanitizer is watching this run, and these programs are wrong on purpose)")
        return None
    found = []
    cases = [(b[0], b[1], b[2], lambda p, c=(b[3] if len(b) > 3 else ""): _report(p, c)) for b in BUGS]
    cases.append((*RACE, _race_report))
    for k, (title, program, word, run) in enumerate(cases, 1):
        report = run(program)
        found.append(word in report)
        say(f"  {k}. {title}:")
        say(textwrap.indent(program.rstrip(), "       "))
        lines = (report or "(no report)").replace("========= npurt-sanitizer: ", "").splitlines()[:6]
        for i, line in enumerate(lines):
            say(textwrap.fill(line.strip(), 108, initial_indent="     npurt: " if i == 0 else "            ",
                              subsequent_indent="            "))
    return found
