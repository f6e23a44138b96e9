"""racecheck: turning two unordered accesses into a report a user can act on.

The two sides are named in program order (the order in which the host enqueued or made
them), so a hazard reads as the program meant it: "RAW" is a read that should have come
after a write. The fix depends on who the two sides are: two streams need an event, a
stream and the host need a synchronize, two host threads need a lock or a join.
"""
from __future__ import annotations

from .report import Report

HAZARDS = {(True, False): ("RAW hazard", "read after write"), (False, True): ("WAR hazard", "write after read"),
           (True, True): ("WAW hazard", "write after write")}


def _stream_of(who):
    return getattr(who, "stream_label", None)


def fix_for(first, second, first_write: bool, second_write: bool) -> str:
    s1, s2 = _stream_of(first), _stream_of(second)
    verb = "writes" if second_write else "reads"
    if s1 and s2:
        return (f"record an event on {s1} after {first.describe()} and make {s2} wait on it before "
                f"{second.describe()} (acl.rt.record_event + acl.rt.stream_wait_event; Pythonic: "
                "stream.wait_stream(other), or event.record(other) + stream.wait_event(event))")
    if s1:
        return (f"synchronize {s1} (or an event recorded after {first.describe()}) before the host {verb} "
                "this memory")
    if s2:
        return (f"the host must be done with this memory before {second.describe()} can run: make that task's "
                "stream wait for the host, e.g. by enqueueing it after the host access on the same thread")
    return "order the two host threads (a lock, or join the first before the second touches the memory)"


def race_report(old, new_who, new_write: bool, lo: int, hi: int, region) -> Report:
    """old: the shadow Access recorded earlier; the new access is (new_who, new_write, [lo, hi))."""
    lo, hi = max(lo, old.lo), min(hi, old.hi)
    sides = [(old.who, old.write), (new_who, new_write)]
    sides.sort(key=lambda side: side[0].order)
    (first, w1), (second, w2) = sides
    name, words = HAZARDS[(w1, w2)]
    owner = region.owner
    space = ("host" if owner is None or owner.device is None else f"device {owner.device.id}")
    details = []
    if owner is not None:
        details.append(f"bytes 0x{lo:x}..0x{hi:x} ({hi - lo} bytes) of {owner.describe()}")
    else:
        details.append(f"bytes 0x{lo:x}..0x{hi:x} ({hi - lo} bytes) of host memory")
    if old.owner is not None and owner is not None and old.owner is not owner:
        details.append(f"they belonged to {old.owner.describe()}, freed"
                       + (f" at {old.owner.freed_site}" if old.owner.freed_site else "")
                       + " while that work was not ordered before the free: the allocator handed them on")
    details.append(f"nothing orders the {words.split(' after ')[0]} after the "
                   f"{words.split(' after ')[1]}: no event wait, synchronize or blocking call between them")
    actors = [first.actor("write" if w1 else "read"), second.actor("write" if w2 else "read")]
    return Report("racecheck", name, f"{words} on {hi - lo} bytes of {space} memory", actors=actors,
                  details=details, fix=fix_for(first, second, w1, w2), address=lo, nbytes=hi - lo,
                  device=None if owner is None or owner.device is None else owner.device.id,
                  key=(first.site, second.site, w1, w2))
