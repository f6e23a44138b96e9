"""leakcheck: allocations still live when the device is reset, at finalize, or at exit.

Allocations are grouped by the user's line that made them, so a leak in a loop is one
report with a count. Memory a Python object owns (DeviceArray, empty_pinned; "managed") is
freed by the garbage collector: it is reported at a reset or finalize that releases it
under a live object, but not at process exit, where Python frees it as it shuts down.
"""
from __future__ import annotations

from .frames import NATIVE
from .report import Actor, Report

_WHAT = {"device": "device memory", "host": "malloc_host memory", "registered": "a host_register registration"}
_FREE = {"device": "acl.rt.free", "host": "acl.rt.free_host", "registered": "acl.rt.host_unregister"}
_FREE_C = {"device": "aclrtFree", "host": "aclrtFreeHost", "registered": "aclrtHostUnregister"}  # a native program's


def leak_reports(allocs, when: str) -> list[Report]:
    groups: dict = {}
    for a in allocs:
        groups.setdefault((a.site, a.kind, a.managed), []).append(a)
    out = []
    for (site, kind, managed), group in groups.items():
        total = sum(a.size for a in group)
        n = len(group)
        where = (f"device {group[0].device.id}" if group[0].device is not None else "the host")
        sample = ", ".join(f"0x{a.addr:x} ({a.size} B)" for a in group[:4]) + (" ..." if n > 4 else "")
        what = _WHAT.get(kind, "memory")
        if managed:
            title = f"{n} allocation{'s' if n != 1 else ''} of {what} ({total} bytes) on {where} still held by live Python objects at {when}"
            fix = "drop the arrays (del, or let them go out of scope) before resetting the device"
        else:
            title = f"{n} allocation{'s' if n != 1 else ''} of {what} ({total} bytes) on {where} never freed before {when}"
            free = (_FREE_C if site is not None and site.file == NATIVE else _FREE).get(kind, "free")
            fix = f"{free} each allocation when done with it"
        actor = Actor(f"allocated ({what})", "host", site, "at")
        out.append(Report("leakcheck", "leak", title, actors=[actor], details=[f"addresses: {sample}"], fix=fix,
                          address=group[0].addr, nbytes=total,
                          device=group[0].device.id if group[0].device is not None else None,
                          key=(site, kind, when, group[0].addr)))
    return out
