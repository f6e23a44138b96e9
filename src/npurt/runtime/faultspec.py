"""Fault specs: the text of a fault spec (the grammar in faults.py's docstring: NPURT_FAULTS,
`npurt run --faults`, `npurt.faults`, the `npurt_faults` marker) parsed into armed entries,
`Fault`s with their `Trigger`s, or refused with a FaultSpecError that points at the place.
faults.py holds the registry that counts events and fires them.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from . import constants as C

ALIASES = {
    "oom": C.ACL_ERROR_RT_MEMORY_ALLOCATION,
    "aicore": C.ACL_ERROR_RT_AICORE_EXCEPTION,
    "vector": C.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION,
    "trap": C.ACL_ERROR_RT_AICORE_TRAP_EXCEPTION,
    "uce": C.ACL_ERROR_RT_DEVICE_MEM_ERROR,
    "timeout": C.ACL_ERROR_RT_AICORE_TIMEOUT,
    "lost": C.ACL_ERROR_RT_LOST_HEARTBEAT,
}
HANG = -1    # the code of a task that never finishes by itself
SILENT = -2  # hccl: the rank stops answering
DEAD = -3    # hccl: the rank dies

# task kinds by the words a spec may use; anything else must be an exact kind from KNOWN_KINDS
KIND_GROUPS = {
    "kernel": lambda k: k == "kernel",
    "copy": lambda k: k.startswith("memcpy") or k == "strided_copy",
    "set": lambda k: k == "memset_async",
    "model": lambda k: k in ("model_execute", "op_execute"),
    "collective": lambda k: k.startswith("hccl_"),
    "host": lambda k: k in ("host_func", "launch_callback"),
    "any": lambda k: True,
}
KNOWN_KINDS = ("kernel", "memcpy_async", "memcpy2d_async", "memset_async", "strided_copy", "reduce_async",
               "host_func", "launch_callback", "record_event", "stream_wait_event", "reset_event", "nop",
               "model_execute", "op_execute")

_WHEN = re.compile(r"(?:(\d+)(\+)?|\*(\d+)|(\d+(?:\.\d+)?)%|(\d+(?:\.\d+)?)(ms|s))$")
_SIZE = re.compile(r"(\d+)([KMG]i?B?|B)?$", re.I)


class FaultSpecError(ValueError):
    """A fault spec that cannot be armed. `position` is the offset in the spec of what is
    wrong; the message shows it with a caret."""

    def __init__(self, spec: str, position: int, why: str):
        self.spec, self.position, self.why = spec, position, why
        super().__init__(f"bad fault spec at position {position}: {why}\n  {spec}\n  {' ' * position}^")


@dataclass
class Trigger:
    """When among the events a fault counts it fires."""
    mode: str          # "nth", "from", "every", "prob", "after"
    n: int = 1
    p: float = 0.0
    t: float = 0.0

    def fires(self, count: int, rng: random.Random, elapsed: float, fired: int) -> bool:
        if self.mode == "nth":
            return count == self.n
        if self.mode == "from":
            return count >= self.n
        if self.mode == "every":
            return count % self.n == 0
        if self.mode == "prob":
            return rng.random() * 100 < self.p
        return elapsed >= self.t and not fired  # "after": the first event past T

    def __str__(self) -> str:
        return {"nth": f"{self.n}", "from": f"{self.n}+", "every": f"*{self.n}", "prob": f"{self.p:g}%",
                "after": f"{self.t:g}s"}[self.mode]


@dataclass
class Fault:
    """One armed entry."""
    text: str                 # the entry as written
    target: str               # "api", "task", "alloc", "device", "hccl"
    name: str                 # operation name, task kind word, "alloc", or the device id
    trigger: Trigger
    code: int | None          # None: the task's own error code
    stream: int | None = None
    device: int | None = None
    budget: int | None = None
    events: int = 0           # events counted
    injected: int = 0         # faults injected

    def matches_task(self, task) -> bool:
        stream = task.stream
        if self.device is not None and stream.device.id != self.device:
            return False
        if self.stream is not None and stream.stream_id != self.stream:
            return False
        if self.target == "device":
            return stream.device.id == int(self.name)
        kind = task.kind
        group = KIND_GROUPS.get(self.name)
        return group(kind) if group is not None else kind == self.name


def resolve_operation(name: str, operations) -> str | None:
    """The runtime operation a spec's API name means: `malloc`, `acl.rt.malloc`,
    `npurt.runtime.malloc` and C's `aclrtMalloc` all mean `malloc`; None if there is none."""
    for prefix in ("npurt.runtime.", "npurt.", "acl.rt.", "acl.", "rt."):
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    else:
        m = re.match(r"acl(?:rt)?([A-Z]\w*)$", name)
        if m:  # the C spelling: CamelCase after the acl / aclrt prefix
            name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", m.group(1)).lower()
    return name if name in operations else None


def parse(spec: str, operations=()) -> tuple[list[Fault], int | None]:
    """Parse a spec into faults (and its seed, if it gives one). Raises FaultSpecError with
    the position of the first mistake; an API name that is not a runtime operation is one."""
    faults: list[Fault] = []
    seed = None
    pos = 0
    for raw in spec.split(";"):
        start = pos + len(raw) - len(raw.lstrip())
        pos += len(raw) + 1
        entry = raw.strip()
        if not entry:
            continue
        if entry.startswith("seed="):
            value = entry[5:]
            if not re.fullmatch(r"-?\d+", value):
                raise FaultSpecError(spec, start + 5, f"seed must be an integer, got {value!r}")
            seed = int(value)
            continue
        faults.append(_parse_entry(spec, start, entry, operations))
    return faults, seed


def _parse_entry(spec: str, start: int, entry: str, operations) -> Fault:
    head, *options = entry.split(",")
    code_text = None
    if "=" in head:
        head, code_text = head.split("=", 1)
    target_text, _, when_text = head.partition("@")
    target_text = target_text.strip()
    where_when = start + len(target_text) + 1
    where_code = start + len(head) + 1
    if not target_text:
        raise FaultSpecError(spec, start, "an entry needs a target (an API name, task:KIND, alloc or device:N)")
    if target_text.startswith("task:"):
        target, name = "task", target_text[5:]
        if name not in KIND_GROUPS and name not in KNOWN_KINDS:
            raise FaultSpecError(spec, start + 5, f"unknown task kind {name!r}; use one of "
                                 f"{', '.join(KIND_GROUPS)} or an exact kind ({', '.join(KNOWN_KINDS)})")
    elif target_text == "alloc":
        target, name = "alloc", "alloc"
    elif target_text.startswith("device:"):
        target, name = "device", target_text[7:]
        if not name.isdigit():
            raise FaultSpecError(spec, start + 7, f"device:N needs a device id, got {name!r}")
    elif target_text.startswith("hccl:"):
        target, name = "hccl", target_text[5:]
        if not name.isdigit():
            raise FaultSpecError(spec, start + 5, f"hccl:RANK needs a rank number, got {name!r}")
    else:
        target = "api"
        name = resolve_operation(target_text, operations)
        if name is None:
            import difflib
            close = difflib.get_close_matches(target_text.split(".")[-1], list(operations), 3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise FaultSpecError(spec, start, f"{target_text!r} is not a runtime operation (nor task:KIND, "
                                 f"alloc, device:N){hint}")
    trigger = Trigger("nth", 1)
    if when_text:
        m = _WHEN.match(when_text.strip())
        if not m:
            raise FaultSpecError(spec, where_when, f"bad trigger {when_text!r}: use N, N+, *N, P% or Ts/Tms")
        if m.group(1):
            trigger = Trigger("from" if m.group(2) else "nth", int(m.group(1)))
        elif m.group(3):
            trigger = Trigger("every", int(m.group(3)))
        elif m.group(4):
            trigger = Trigger("prob", p=float(m.group(4)))
        else:
            trigger = Trigger("after", t=float(m.group(5)) / (1000 if m.group(6) == "ms" else 1))
        if trigger.mode in ("nth", "from", "every") and trigger.n < 1:
            raise FaultSpecError(spec, where_when, "counts start at 1")
    code = None
    if code_text is not None:
        code = _parse_code(spec, where_code, code_text.strip(), target)
    elif target == "api":
        raise FaultSpecError(spec, start + len(head), f"{target_text}: say which code the call returns "
                             f"(e.g. {target_text}@1=207001)")
    elif target == "hccl":
        raise FaultSpecError(spec, start + len(head), f"{target_text}: say what the rank does: =silent or =dead")
    fault = Fault(entry, target, name, trigger, code)
    opos = start + len(head) + (len(code_text) + 1 if code_text is not None else 0) + 1
    for opt in options:
        key, eq, value = opt.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            raise FaultSpecError(spec, opos, f"option {opt!r} must be key=value")
        if key in ("stream", "device") and target in ("task", "device") and value.isdigit():
            setattr(fault, key, int(value))
        elif key == "budget" and target == "alloc" and _SIZE.match(value):
            m = _SIZE.match(value)
            unit = (m.group(2) or "B").upper()[:1]
            fault.budget = int(m.group(1)) * {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit]
        elif key == "device" and target == "alloc" and value.isdigit():
            fault.device = int(value)
        else:
            raise FaultSpecError(spec, opos, f"option {opt.strip()!r} does not apply to {target_text}")
        opos += len(opt) + 1
    if fault.budget is not None and not when_text:
        fault.trigger = Trigger("from", 1)  # a budget holds for every allocation past it
    return fault


def _parse_code(spec: str, pos: int, text: str, target: str) -> int:
    if target == "hccl":
        if text not in ("silent", "dead"):
            raise FaultSpecError(spec, pos, f"a rank's fault is silent or dead, got {text!r}")
        return SILENT if text == "silent" else DEAD
    if text in ("silent", "dead"):
        raise FaultSpecError(spec, pos, f"{text} is for hccl:RANK entries")
    if text == "hang":
        if target != "task":
            raise FaultSpecError(spec, pos, "only a task can hang")
        return HANG
    if text in ALIASES:
        return ALIASES[text]
    if re.fullmatch(r"\d+", text):
        code = int(text)
        if code == 0:
            raise FaultSpecError(spec, pos, "0 is success, not a fault")
        return code
    value = getattr(C, text, None)
    if text.startswith(("ACL_ERROR", "ACL_RT")) and type(value) is int:
        return value
    raise FaultSpecError(spec, pos, f"bad code {text!r}: an aclError number, an ACL_ERROR_* name or one of "
                         f"{', '.join([*ALIASES, 'hang'])}")
